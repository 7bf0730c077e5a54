//! The PostgreSQL engine, for several server instances sharing one database.
//!
//! Every unit of work is one READ COMMITTED transaction on a pooled connection (deadpool-postgres), and
//! every statement in it is safe with other instances writing at once: the row a statement changes is
//! locked by it, and its `WHERE` is checked again on the row's newest version after any wait. A unit
//! that PostgreSQL aborts to break a deadlock is run again whole. The schema is versioned
//! (`migrations/`, refinery), applied under an advisory lock so that instances starting together do
//! not race.
//!
//! How a sale takes a ticket without a row every sale waits on: a block's indices are cut into
//! [`STRIPES`] stripes, each with its own counter. A sale locks a free stripe of the lowest open block
//! (`FOR UPDATE SKIP LOCKED`: a stripe another sale holds is passed over), takes its next index, and
//! credits the stake to the block's stakes shard of that stripe, which no other sale holds meanwhile.
//! Only when every stripe of the block is held does a sale wait, for the first to be free. What remains
//! of the sale order: a block's tickets are sold before the next block's, and each stripe's in order;
//! across stripes, indices interleave (lots are shuffled anyway, so no index is worth more than another).
//!
//! Sales arriving together are sold together, in one transaction of multi-row statements ([`sales`]),
//! and due tickets are settled in batches of two statements ([`settle`]).

use super::error::Failure;
use super::postings::Transfer;
use super::rows::LotsCache;
use super::tx::{Access, Work, WorkFn};
use super::{Sale, SaleRequest, StoreError, sql_amount};
use crate::block::LotCode;
use deadpool_postgres::{GenericClient, Pool, Transaction};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::error::SqlState;
use tx::PgTx;

mod sales;
mod settle;
mod tx;

mod embedded {
    refinery::embed_migrations!("src/server/store/postgres/migrations");
}

/// Counter rows per block, and shards per account of the game's own: more than the transactions that
/// sell at once, so that they seldom meet on one.
pub const STRIPES: u32 = 32;
/// A unit of work that met a conflict (a deadlock PostgreSQL broke, a row changed since it was read) is
/// run again, after a short random pause that grows, this many times.
const RETRIES: u32 = 20;
/// The key of the advisory lock held while migrating.
const MIGRATION_LOCK: i64 = 0x7665_6761_735f_6d69;

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        match e.code() {
            Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE => {
                Failure::Conflict(e.to_string())
            }
            Some(code) if *code == SqlState::UNIQUE_VIOLATION => Failure::Duplicate(describe(&e)),
            _ if unreachable(&e) => Failure::Store(StoreError::Unavailable(describe(&e))),
            _ => Failure::Store(backend(describe(&e))),
        }
    }
}

/// The server went away or cannot write now: its connection closed, a connection exception (class
/// 08), a shutdown or crash (57P01–57P03), or a server that has become read-only (25006: a demoted
/// primary). A failover passes through these; the request is told to come back, not that we failed.
fn unreachable(e: &tokio_postgres::Error) -> bool {
    e.is_closed()
        || e.code().is_some_and(|code| {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                    SqlState::READ_ONLY_SQL_TRANSACTION,
                ]
                .contains(code)
        })
        || (e.code().is_none()
            && e.as_db_error().is_none()
            && std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()))
}

/// What PostgreSQL said, rather than tokio-postgres's bare "db error".
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("postgres: {e}"))
}

/// A unit of work on a transaction itself (the engine's own, with PostgreSQL's arrays), with its
/// arguments.
type TransactionFn<A, T> = for<'a> fn(&'a Transaction<'a>, &'a A) -> Work<'a, T>;

pub struct PostgresStore {
    core: Core,
    /// Where a sale waits to be sold with the others waiting (see [`sales`]).
    sales: mpsc::Sender<sales::PendingSale>,
}

/// What a unit of work needs, shared by the store and its sale groupers.
#[derive(Clone)]
struct Core {
    pool: Pool,
    lots: Arc<LotsCache>,
    open: Arc<OpenBlock>,
}

/// A block's lots, from the cache or read once.
async fn lots_of(
    cache: &LotsCache,
    client: &impl GenericClient,
    emission: u32,
    block: u32,
) -> Result<Arc<Vec<LotCode>>, Failure> {
    if let Some(lots) = cache.get(emission, block) {
        return Ok(lots);
    }
    let row = client
        .query_one("SELECT lots FROM blocks WHERE emission = $1 AND block = $2", &[&int(emission)?, &int(block)?])
        .await?;
    Ok(cache.keep(emission, block, row.get(0)))
}

impl PostgresStore {
    /// Connects to `url` (a `postgres://` URL) with a pool of `connections`, and migrates the schema.
    pub async fn connect(url: &str, connections: usize) -> Result<PostgresStore, StoreError> {
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| StoreError::Backend(format!("the database URL: {e}")))?;
        let manager = deadpool_postgres::Manager::from_config(
            config,
            tokio_postgres::NoTls,
            deadpool_postgres::ManagerConfig { recycling_method: deadpool_postgres::RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager).max_size(connections).build().map_err(backend)?;
        let core = Core { pool, lots: Arc::default(), open: Arc::default() };
        core.migrate().await?;
        // The accounts money enters the game from, with their shards (opening them again is a no-op).
        let client = core.connection().await?;
        for account in
            [super::postings::Account::Cash, super::postings::Account::Demo, super::postings::Account::Withdrawals]
        {
            super::tx::Tx::open_account(&mut PgTx(&client), &account).await?;
        }
        Ok(PostgresStore { sales: sales::start(core.clone()), core })
    }

    /// Runs a unit of work: a write in a READ COMMITTED transaction, run again after a conflict; a
    /// snapshot in a REPEATABLE READ one; a read on a pooled connection, statement by statement.
    pub(super) async fn run<A, T>(&self, access: Access, args: A, work: WorkFn<A, T>) -> Result<T, StoreError>
    where
        A: Send + Sync + 'static,
        T: Send + 'static,
    {
        let on_tx: TransactionFn<(WorkFn<A, T>, A), T> = |t, (work, args)| {
            Box::pin(async move {
                let mut tx = PgTx(t);
                work(&mut tx, args).await
            })
        };
        match access {
            Access::Write => self.core.in_transaction(RETRIES, Isolation::ReadCommitted, &(work, args), on_tx).await,
            Access::Snapshot => self.core.in_transaction(RETRIES, Isolation::Snapshot, &(work, args), on_tx).await,
            Access::Read => {
                let client = self.core.connection().await?;
                Ok(work(&mut PgTx(&client), &args).await?)
            }
        }
    }

    /// A purchase, sold with those waiting beside it ([`sales`]).
    pub(super) async fn sell(&self, request: SaleRequest) -> Result<Sale, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.sales
            .send(sales::PendingSale { request, answer })
            .await
            .map_err(|_| StoreError::Backend("the sale groupers stopped".into()))?;
        answered.await.map_err(|_| StoreError::Backend("a sale grouper stopped before answering".into()))?
    }

    pub(super) fn record_gauges(&self) {
        let status = self.core.pool.status();
        metrics::gauge!("vegas_db_pool_connections", "state" => "in_use")
            .set(status.size.saturating_sub(status.available) as f64);
        metrics::gauge!("vegas_db_pool_connections", "state" => "idle").set(status.available as f64);
        metrics::gauge!("vegas_db_pool_waiting").set(status.waiting as f64);
    }
}

/// What a transaction sees of the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isolation {
    /// Each statement sees what was committed when it began; a row it waited for is read again.
    ReadCommitted,
    /// One snapshot for the whole transaction, which only reads.
    Snapshot,
}

impl Core {
    /// A pooled connection; the time waited for it is a histogram (`/metrics`).
    async fn connection(&self) -> Result<deadpool_postgres::Object, StoreError> {
        let started = std::time::Instant::now();
        // No connection to a writable server (each host refused, or is a standby): a failover under way.
        let connection = self.pool.get().await.map_err(|e| StoreError::Unavailable(format!("postgres: {e}")));
        metrics::histogram!("vegas_db_pool_wait_seconds").record(started.elapsed().as_secs_f64());
        connection
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.connection().await?;
        client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await.map_err(backend)?;
        let applied = embedded::migrations::runner().run_async(&mut **client).await;
        client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await.map_err(backend)?;
        applied.map_err(|e| StoreError::Backend(format!("migrating the schema: {e}")))?;
        Ok(())
    }

    /// Runs `work` in one transaction and commits it; runs it again, up to `retries` times, if it met a
    /// conflict (it left no trace then).
    async fn in_transaction<A: Sync, T>(
        &self,
        retries: u32,
        isolation: Isolation,
        args: &A,
        work: TransactionFn<A, T>,
    ) -> Result<T, StoreError> {
        let mut attempt = 0;
        loop {
            let mut client = self.connection().await?;
            let tx = client.transaction().await.map_err(Failure::from)?;
            if isolation == Isolation::Snapshot {
                tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await
                    .map_err(Failure::from)?;
            }
            let outcome = match work(&tx, args).await {
                Ok(value) => tx.commit().await.map(|()| value).map_err(Failure::from),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(Failure::Conflict(_)) if attempt < retries => {
                    attempt += 1;
                    let pause = rand::random_range(0..=1u64 << attempt.min(6));
                    tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                }
                Err(Failure::Conflict(why)) => {
                    return Err(StoreError::Backend(format!("still in conflict after {retries} retries: {why}")));
                }
                Err(other) => return Err(other.into()),
            }
        }
    }
}

fn int(n: u32) -> Result<i32, StoreError> {
    i32::try_from(n).map_err(|_| StoreError::Backend(format!("{n} is beyond what the store holds")))
}

fn unsigned(n: i32) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|_| StoreError::Backend(format!("a negative number where none can be: {n}")))
}

/// A shard of a game account for a transfer that holds no stripe: spread by `key`, so that transfers
/// for different tickets or players seldom meet on one row.
fn shard_of(key: &[u8]) -> i32 {
    (key.iter().fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b))) % STRIPES) as i32
}

/// Moves money, the debit from shard `debit_shard` of its account and the credit to shard
/// `credit_shard` of its. A wallet pays only what it holds, checked by the `UPDATE` that takes it.
/// Returns the debited shard's new balance, or `None` if it could not pay.
async fn transfer(
    tx: &impl GenericClient,
    t: &Transfer<'_>,
    (debit_shard, credit_shard): (i32, i32),
    now: i64,
) -> Result<Option<i64>, Failure> {
    // One statement, one round trip: the credit and the record happen only if the debit did.
    let move_money = tx
        .prepare_cached(
            "WITH paid AS (UPDATE balances SET balance = balance - $3 \
                           WHERE account = $1 AND shard = $2 AND (NOT wallet OR balance >= $3) RETURNING balance), \
                  got AS (UPDATE balances SET balance = balance + $3 WHERE account = $4 AND shard = $5 AND EXISTS \
                  (SELECT 1 FROM paid) RETURNING 1), \
                  kept AS (INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at) \
                           SELECT $6, $1, $4, $3, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM paid) RETURNING 1) \
             SELECT (SELECT balance FROM paid), (SELECT COUNT(*) FROM got), (SELECT COUNT(*) FROM kept)",
        )
        .await?;
    let (debit, credit) = (t.debit.id(), t.credit.id());
    let row = tx
        .query_one(
            &move_money,
            &[
                &debit,
                &debit_shard,
                &sql_amount(t.amount)?,
                &credit,
                &credit_shard,
                &t.kind.as_str(),
                &t.ticket,
                &t.reason,
                &now,
            ],
        )
        .await?;
    let Some(paid) = row.get::<_, Option<i64>>(0) else { return Ok(None) };
    if (row.get::<_, i64>(1), row.get::<_, i64>(2)) != (1, 1) {
        return Err(StoreError::Backend(format!("no account {credit} shard {credit_shard}")).into());
    }
    Ok(Some(paid))
}

/// The lowest block with tickets left, as last seen: where sales look first.
type OpenBlock = Mutex<Option<(i32, i32)>>;

/// Tickets taken from one stripe: `count` indices from `start` on.
struct Claimed {
    emission: u32,
    block: u32,
    stripe: i32,
    start: u32,
    count: u32,
}

/// Takes up to `wanted` next indices of a free stripe of the lowest open block (fewer if the stripe
/// has fewer left).
async fn claim(tx: &Transaction<'_>, open: &OpenBlock, now: i64, wanted: u32) -> Result<Claimed, Failure> {
    for _ in 0..4 {
        let cached = *open.lock().unwrap_or_else(|p| p.into_inner());
        let (emission, block) = match cached {
            Some(open) => open,
            None => {
                let lowest = tx
                    .query_opt(
                        "SELECT s.emission, s.block FROM block_stripes s WHERE s.next < s.stop \
                     AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = s.emission AND w.block = \
                     s.block) \
                     ORDER BY s.emission, s.block LIMIT 1",
                        &[],
                    )
                    .await?;
                let lowest = lowest.map(|r| (r.get(0), r.get(1))).ok_or(StoreError::SoldOut)?;
                *open.lock().unwrap_or_else(|p| p.into_inner()) = Some(lowest);
                lowest
            }
        };
        // A stripe another sale holds is passed over; only if every one is held does this sale wait.
        // The stripe's `next` as locked is its newest: where the indices taken start.
        for wait in ["SKIP LOCKED", ""] {
            let take = tx
                .prepare_cached(&format!(
                    "WITH free AS (SELECT stripe, next FROM block_stripes WHERE emission = $2 AND block = $3 AND next \
                        < stop \
                                     AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = $2 AND \
                                     w.block = $3) \
                                   ORDER BY stripe LIMIT 1 FOR UPDATE {wait}) \
                     UPDATE block_stripes t SET next = LEAST(t.next + $4, t.stop), \
                                                exhausted_at = CASE WHEN t.next + $4 >= t.stop THEN $1::BIGINT END \
                     FROM free WHERE t.emission = $2 AND t.block = $3 AND t.stripe = free.stripe AND t.next < t.stop \
                     RETURNING t.stripe, free.next, t.next"
                ))
                .await?;
            if let Some(row) = tx.query_opt(&take, &[&now, &emission, &block, &int(wanted)?]).await? {
                let (start, end) = (unsigned(row.get(1))?, unsigned(row.get(2))?);
                return Ok(Claimed {
                    emission: unsigned(emission)?,
                    block: unsigned(block)?,
                    stripe: row.get(0),
                    start,
                    count: end - start,
                });
            }
        }
        // Sold out or withdrawn from sale (since last seen): look for the next open block.
        *open.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
    Err(Failure::Conflict("the open blocks sold out while this sale looked at them".into()))
}

/// The first index of `stripe` in a block of `size` (and, for `STRIPES`, the size).
fn stripe_start(stripe: u32, size: u32) -> u32 {
    (u64::from(stripe) * u64::from(size) / u64::from(STRIPES)) as u32
}
