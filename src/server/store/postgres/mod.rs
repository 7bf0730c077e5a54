//! The store on PostgreSQL, for several server instances sharing one database.
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
//! Sales arriving together are sold together, in one transaction of multi-row statements ([`sales`]);
//! the one-sale unit of work here sells what a group leaves.

use super::ledger::{self, Account, BlockTally, LedgerFacts, Transfer};
use super::responsible as rg;
use super::rows::{self, Columns, LotsCache};
use super::sql::{self, BLOCK_QUERY, TICKET_COLUMNS};
use super::{
    BlockRecord, Completion, Credentials, Credit, DuePlace, NewBlock, NewPlayer, PlayerRecord, PurgeReport, Sale, SaleRequest, SettleReport, SigningKeyRecord,
    Store, StoreError, TicketRecord, Unsettled, cents, hashes, json_list, plan, sql_amount, why_not_registered,
};
use crate::block::{Hash, LotCode, lot_of};
use crate::money::Cents;
use crate::payload::Serial;
use crate::server::names::PlayerName;
use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool, Transaction};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

mod responsible;
mod sales;
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

/// Why a unit of work stopped: a store error to report, or a conflict PostgreSQL asks to retry.
enum Failure {
    Store(StoreError),
    Retry(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        match e.code() {
            Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE => Failure::Retry(e.to_string()),
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
                || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW, SqlState::READ_ONLY_SQL_TRANSACTION].contains(code)
        })
        || (e.code().is_none() && e.as_db_error().is_none() && std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()))
}

/// What PostgreSQL said, rather than tokio-postgres's bare "db error".
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

/// Outside a unit of work there is nothing to run again: a conflict is reported.
impl From<Failure> for StoreError {
    fn from(e: Failure) -> StoreError {
        match e {
            Failure::Store(e) => e,
            Failure::Retry(why) => StoreError::Backend(why),
        }
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("postgres: {e}"))
}

type Work<'a, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + Send + 'a>>;

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
async fn lots_of(cache: &LotsCache, client: &impl GenericClient, emission: u32, block: u32) -> Result<Arc<Vec<LotCode>>, Failure> {
    if let Some(lots) = cache.get(emission, block) {
        return Ok(lots);
    }
    let row = client.query_one("SELECT lots FROM blocks WHERE emission = $1 AND block = $2", &[&int(emission)?, &int(block)?]).await?;
    Ok(cache.keep(emission, block, row.get(0)))
}

impl Columns for Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.try_get(i).map_err(|e| backend(describe(&e)))
    }

    fn int(&self, i: usize) -> Result<i64, StoreError> {
        let read = if *self.columns()[i].type_() == Type::INT4 { self.try_get::<_, i32>(i).map(i64::from) } else { self.try_get(i) };
        read.map_err(|e| backend(describe(&e)))
    }

    fn optional_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        self.try_get(i).map_err(|e| backend(describe(&e)))
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        self.try_get(i).map_err(|e| backend(describe(&e)))
    }
}

/// The record of each row (`read` is one of `rows`' readers).
fn all<T>(rows: &[Row], read: impl Fn(&Row) -> Result<T, StoreError>) -> Result<Vec<T>, StoreError> {
    rows.iter().map(read).collect()
}

impl PostgresStore {
    /// Connects to `url` (a `postgres://` URL) with a pool of `connections`, and migrates the schema.
    pub async fn connect(url: &str, connections: usize) -> Result<PostgresStore, StoreError> {
        let config: tokio_postgres::Config = url.parse().map_err(|e| StoreError::Backend(format!("the database URL: {e}")))?;
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
        for account in [Account::Cash, Account::Demo, Account::Withdrawals] {
            open_account(&client, &account).await?;
        }
        Ok(PostgresStore { sales: sales::start(core.clone()), core })
    }

    /// Settles a batch ticket by ticket, each in a savepoint of one transaction: one that fails is
    /// reported and the others settled all the same.
    async fn settle_one_by_one(&self, sold_before: i64, (after_sold, after_id): (i64, &str), limit: i64, now: i64) -> Result<SettleReport, StoreError> {
        let due_unlocked = format!("{} FOR UPDATE SKIP LOCKED", sql::DUE_TICKETS);
        self.core
            .unit(|tx| {
                let (due_unlocked, after_id) = (due_unlocked.clone(), after_id.to_owned());
                Box::pin(async move {
                    let due = all(&tx.query(&due_unlocked, &[&sold_before, &after_sold, &after_id, &limit]).await?, rows::due_place)?;
                    let mut report = SettleReport::default();
                    for place in due {
                        tx.batch_execute("SAVEPOINT one").await?;
                        let settled = match credit_win(tx, &place.ticket_id, now).await {
                            Ok(credited) => Ok(credited),
                            Err(Failure::Retry(why)) => return Err(Failure::Retry(why)),
                            Err(Failure::Store(e)) => Err(e),
                        };
                        tx.batch_execute(if settled.is_ok() { "RELEASE SAVEPOINT one" } else { "ROLLBACK TO SAVEPOINT one" }).await?;
                        report.count(place, settled);
                    }
                    Ok(report)
                })
            })
            .await
    }
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

    /// Runs `work` in one transaction and commits it; runs it again if PostgreSQL aborted it to break a
    /// deadlock or a serialization conflict (it left no trace then).
    async fn unit<T: Send>(&self, work: impl for<'a> Fn(&'a Transaction<'a>) -> Work<'a, T> + Send + Sync) -> Result<T, StoreError> {
        self.unit_retried(RETRIES, work).await
    }

    async fn unit_retried<T: Send>(&self, retries: u32, work: impl for<'a> Fn(&'a Transaction<'a>) -> Work<'a, T> + Send + Sync) -> Result<T, StoreError> {
        let mut attempt = 0;
        loop {
            let mut client = self.connection().await?;
            let tx = client.transaction().await.map_err(Failure::from).map_err(StoreError::from)?;
            let outcome = match work(&tx).await {
                Ok(value) => tx.commit().await.map(|()| value).map_err(Failure::from),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(Failure::Retry(_)) if attempt < retries => {
                    attempt += 1;
                    let pause = rand::random_range(0..=1u64 << attempt.min(6));
                    tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                }
                Err(Failure::Retry(why)) => return Err(StoreError::Backend(format!("still in conflict after {retries} retries: {why}"))),
                Err(Failure::Store(e)) => return Err(e),
            }
        }
    }

    /// A read, or one statement that is a unit of work by itself, on a pooled connection in autocommit
    /// (no transaction around it).
    async fn autocommit<T>(&self, read: impl AsyncFnOnce(&deadpool_postgres::Client) -> Result<T, Failure>) -> Result<T, StoreError> {
        let client = self.connection().await?;
        Ok(read(&client).await?)
    }
}

fn int(n: u32) -> Result<i32, StoreError> {
    i32::try_from(n).map_err(|_| StoreError::Backend(format!("{n} is beyond what the store holds")))
}

fn unsigned(n: i32) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|_| StoreError::Backend(format!("a negative number where none can be: {n}")))
}

fn hash(bytes: Vec<u8>) -> Result<Hash, StoreError> {
    bytes.try_into().map_err(|_| StoreError::Backend("a stored hash or seed is not 32 bytes".into()))
}

/// A shard of a game account for a transfer that holds no stripe: spread by `key`, so that transfers
/// for different tickets or players seldom meet on one row.
fn shard_of(key: &[u8]) -> i32 {
    (key.iter().fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b))) % STRIPES) as i32
}

async fn save_block_tree(client: &impl GenericClient, emission: i32, block: i32, kept_level: &[Hash]) -> Result<(), Failure> {
    client
        .execute(
            "INSERT INTO block_trees (emission, block, kept_level) VALUES ($1, $2, $3) ON CONFLICT (emission, block) DO UPDATE SET kept_level = excluded.kept_level",
            &[&emission, &block, &kept_level.as_flattened()],
        )
        .await?;
    Ok(())
}

/// Opens an account with its balance rows: one for a wallet, [`STRIPES`] for the game's own.
async fn open_account(tx: &impl GenericClient, account: &Account<'_>) -> Result<(), Failure> {
    let (id, wallet) = (account.id(), matches!(account, Account::Wallet(_)));
    tx.execute("INSERT INTO accounts (id, kind) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&id, &account.kind()]).await?;
    let shards = if wallet { 1 } else { STRIPES as i32 };
    tx.execute(
        "INSERT INTO balances (account, shard, wallet) SELECT $1, s, $2 FROM generate_series(0, $3 - 1) s ON CONFLICT DO NOTHING",
        &[&id, &wallet, &shards],
    )
    .await?;
    Ok(())
}

/// Moves money, the debit from shard `debit_shard` of its account and the credit to shard
/// `credit_shard` of its. A wallet pays only what it holds, checked by the `UPDATE` that takes it.
/// Returns the debited shard's new balance, or `None` if it could not pay.
async fn transfer(tx: &Transaction<'_>, t: &Transfer<'_>, (debit_shard, credit_shard): (i32, i32), now: i64) -> Result<Option<i64>, Failure> {
    // One statement, one round trip: the credit and the record happen only if the debit did.
    let move_money = tx
        .prepare_cached(
            "WITH paid AS (UPDATE balances SET balance = balance - $3 \
                           WHERE account = $1 AND shard = $2 AND (NOT wallet OR balance >= $3) RETURNING balance), \
                  got AS (UPDATE balances SET balance = balance + $3 WHERE account = $4 AND shard = $5 AND EXISTS (SELECT 1 FROM paid) RETURNING 1), \
                  kept AS (INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at) \
                           SELECT $6, $1, $4, $3, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM paid) RETURNING 1) \
             SELECT (SELECT balance FROM paid), (SELECT COUNT(*) FROM got), (SELECT COUNT(*) FROM kept)",
        )
        .await?;
    let (debit, credit) = (t.debit.id(), t.credit.id());
    let row = tx
        .query_one(&move_money, &[&debit, &debit_shard, &sql_amount(t.amount)?, &credit, &credit_shard, &t.kind.as_str(), &t.ticket, &t.reason, &now])
        .await?;
    let Some(paid) = row.get::<_, Option<i64>>(0) else { return Ok(None) };
    if (row.get::<_, i64>(1), row.get::<_, i64>(2)) != (1, 1) {
        return Err(StoreError::Backend(format!("no account {credit} shard {credit_shard}")).into());
    }
    Ok(Some(paid))
}

async fn wallet_balance(client: &impl GenericClient, player: &str) -> Result<Cents, Failure> {
    let row = client.query_opt("SELECT balance FROM balances WHERE account = $1 AND shard = 0", &[&Account::Wallet(player).id()]).await?;
    Ok(cents(row.ok_or(StoreError::NotFound("player"))?.get(0))?)
}

async fn ticket(client: &impl GenericClient, player: &str, id: &str) -> Result<TicketRecord, Failure> {
    let row = client.query_opt(&format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = $1 AND player_id = $2"), &[&id, &player]).await?;
    Ok(rows::ticket(&row.ok_or(StoreError::NotFound("ticket"))?)?)
}

/// Replaces a ticket's uncovered zones (and their times) if they are still those of `before`
/// (compare-and-set: the `UPDATE` checks the newest version of the row). Returns whether it did.
async fn set_revealed(tx: &Transaction<'_>, before: &TicketRecord, after: &TicketRecord, finished_at: Option<i64>) -> Result<bool, Failure> {
    let changed = tx
        .execute(
            "UPDATE tickets SET revealed = $3, revealed_at = $4, finished_at = COALESCE(finished_at, $5) WHERE id = $1 AND revealed = $2 AND finished_at IS NULL",
            &[&before.id, &json_list(&before.revealed), &json_list(&after.revealed), &json_list(&after.revealed_at), &finished_at],
        )
        .await?;
    Ok(changed == 1)
}

/// Credits a ticket's win if no one has: only the `UPDATE` that finds `credited_at` null posts it.
async fn credit_win(tx: &Transaction<'_>, id: &str, now: i64) -> Result<bool, Failure> {
    let claim =
        tx.prepare_cached("UPDATE tickets SET credited_at = $2 WHERE id = $1 AND credited_at IS NULL RETURNING player_id, emission, block, lot_cents").await?;
    let Some(row) = tx.query_opt(&claim, &[&id, &now]).await? else { return Ok(false) };
    let (player, emission, block, lot): (String, u32, u32, Cents) = (row.get(0), unsigned(row.get(1))?, unsigned(row.get(2))?, cents(row.get(3))?);
    if !lot.is_zero() {
        transfer(tx, &Transfer::win(&player, id, emission, block, lot), (shard_of(id.as_bytes()), 0), now)
            .await?
            .ok_or_else(|| StoreError::Backend("the prize account refused to pay".into()))?;
    }
    Ok(true)
}

/// Settles a batch of due tickets in two statements whatever its size: the wallets it credits are
/// locked for a few milliseconds, not for a round trip per ticket (at 2 000 sales a second, batches
/// of 128 tickets settled one by one held their wallets for over a second, and the sales of those
/// players waited that long). Tickets another instance is settling are locked: passed over, never
/// credited twice.
async fn settle_together(tx: &Transaction<'_>, sold_before: i64, (after_sold, after_id): (i64, &str), limit: i64, now: i64) -> Result<SettleReport, Failure> {
    let claim = tx
        .prepare_cached(&format!(
            "WITH due AS ({} FOR UPDATE SKIP LOCKED) \
             UPDATE tickets t SET credited_at = $5 FROM due WHERE t.id = due.id \
             RETURNING t.id, t.sold_at, t.player_id, t.emission, t.block, t.lot_cents",
            sql::DUE_TICKETS
        ))
        .await?;
    let mut claimed = tx.query(&claim, &[&sold_before, &after_sold, &after_id, &limit, &now]).await?;
    claimed.sort_by(|a, b| (a.get::<_, i64>(1), a.get::<_, &str>(0)).cmp(&(b.get(1), b.get(0))));

    // Each win is a transfer from its block's prizes (the shard of its ticket) to its buyer's wallet;
    // an account's moves add up to one change of its balance.
    let mut moves: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let (mut tickets, mut debits, mut credits, mut amounts) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut kind = "";
    for row in &claimed {
        let (id, player, lot): (&str, &str, Cents) = (row.get(0), row.get(2), cents(row.get(5))?);
        if lot.is_zero() {
            continue;
        }
        let win = Transfer::win(player, id, unsigned(row.get(3))?, unsigned(row.get(4))?, lot);
        let amount = sql_amount(lot)?;
        *moves.entry((win.debit.id(), shard_of(id.as_bytes()))).or_default() -= amount;
        *moves.entry((win.credit.id(), 0)).or_default() += amount;
        kind = win.kind.as_str();
        tickets.push(id);
        debits.push(win.debit.id());
        credits.push(win.credit.id());
        amounts.push(amount);
    }
    if !tickets.is_empty() {
        let (mut accounts, mut shards, mut changes) = (Vec::new(), Vec::new(), Vec::new());
        for ((account, shard), change) in moves {
            accounts.push(account);
            shards.push(shard);
            changes.push(change);
        }
        // Balances are locked in the order of their keys, as a group of sales locks its wallets: no two
        // units of work wait on each other in a cycle.
        let pay = tx
            .prepare_cached(
                "WITH moves AS (SELECT * FROM unnest($1::TEXT[], $2::INT[], $3::BIGINT[]) AS m(account, shard, change)), \
                      locked AS (SELECT b.account, b.shard FROM balances b JOIN moves m ON m.account = b.account AND m.shard = b.shard \
                                 ORDER BY b.account, b.shard FOR UPDATE OF b), \
                      moved AS (UPDATE balances b SET balance = b.balance + m.change FROM moves m, locked l \
                                WHERE b.account = m.account AND b.shard = m.shard AND l.account = m.account AND l.shard = m.shard RETURNING 1), \
                      kept AS (INSERT INTO transfers (kind, debit, credit, amount, ticket_id, created_at) \
                               SELECT $4, w.debit, w.credit, w.amount, w.id, $9 \
                               FROM unnest($5::TEXT[], $6::TEXT[], $7::TEXT[], $8::BIGINT[]) AS w(id, debit, credit, amount) RETURNING 1) \
                 SELECT (SELECT COUNT(*) FROM moved), (SELECT COUNT(*) FROM kept)",
            )
            .await?;
        let row = tx.query_one(&pay, &[&accounts, &shards, &changes, &kind, &tickets, &debits, &credits, &amounts, &now]).await?;
        if row.get::<_, i64>(0) != accounts.len() as i64 {
            return Err(StoreError::Backend("an account a win moves money between is missing".into()).into());
        }
        if row.get::<_, i64>(1) != tickets.len() as i64 {
            return Err(StoreError::Backend("a win was not recorded".into()).into());
        }
    }
    let settled = claimed.len();
    let last = claimed.last().map(|r| DuePlace { ticket_id: r.get(0), sold_at: r.get(1) });
    Ok(SettleReport { examined: settled, settled, failed: Vec::new(), last })
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
                     AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = s.emission AND w.block = s.block) \
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
                    "WITH free AS (SELECT stripe, next FROM block_stripes WHERE emission = $2 AND block = $3 AND next < stop \
                                     AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = $2 AND w.block = $3) \
                                   ORDER BY stripe LIMIT 1 FOR UPDATE {wait}) \
                     UPDATE block_stripes t SET next = LEAST(t.next + $4, t.stop), \
                                                exhausted_at = CASE WHEN t.next + $4 >= t.stop THEN $1::BIGINT END \
                     FROM free WHERE t.emission = $2 AND t.block = $3 AND t.stripe = free.stripe AND t.next < t.stop \
                     RETURNING t.stripe, free.next, t.next"
                ))
                .await?;
            if let Some(row) = tx.query_opt(&take, &[&now, &emission, &block, &int(wanted)?]).await? {
                let (start, end) = (unsigned(row.get(1))?, unsigned(row.get(2))?);
                return Ok(Claimed { emission: unsigned(emission)?, block: unsigned(block)?, stripe: row.get(0), start, count: end - start });
            }
        }
        // Sold out or withdrawn from sale (since last seen): look for the next open block.
        *open.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
    Err(Failure::Retry("the open blocks sold out while this sale looked at them".into()))
}

async fn sell(tx: &Transaction<'_>, lots: &LotsCache, open: &OpenBlock, r: &SaleRequest) -> Result<Sale, Failure> {
    if let Some(sale) = replay(tx, r).await? {
        return Ok(sale);
    }
    // The stake first: its guard (balance, limits, pause) decides whether there is a sale at all.
    let (balance, stake_total) = responsible::take_stake(tx, &r.player_id, r.now, r.limits_required).await?;
    let Claimed { emission, block, stripe, start: index, .. } = claim(tx, open, r.now, 1).await?;
    let lots = lots_of(lots, tx, emission, block).await?;
    let code = *lots.get(index as usize).ok_or_else(|| StoreError::Backend(format!("block E{emission}-B{block} has no ticket {index}")))?;
    let lot = lot_of(code);
    let insert = tx
        .prepare_cached(
            "INSERT INTO tickets (id, player_id, emission, block, idx, mode, lot_cents, sold_at, idempotency_key, stake_total) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (player_id, idempotency_key) DO NOTHING",
        )
        .await?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 10] = [
        &r.ticket_id,
        &r.player_id,
        &int(emission)?,
        &int(block)?,
        &int(index)?,
        &r.mode.as_str(),
        &sql_amount(lot)?,
        &r.now,
        &r.idempotency_key,
        &stake_total,
    ];
    if tx.execute(&insert, &params).await? == 0 {
        // A sale with this key committed while this one waited: undo this one, replay that one.
        return Err(Failure::Retry("a sale with this Idempotency-Key committed meanwhile".into()));
    }
    let stake = Transfer::stake(&r.player_id, &r.ticket_id, emission, block);
    let post = tx
        .prepare_cached(
            "WITH got AS (UPDATE balances SET balance = balance + $3 WHERE account = $2 AND shard = $4 RETURNING 1) \
             INSERT INTO transfers (kind, debit, credit, amount, ticket_id, created_at) SELECT 'stake', $1, $2, $3, $5, $6 FROM got",
        )
        .await?;
    if tx.execute(&post, &[&stake.debit.id(), &stake.credit.id(), &sql_amount(stake.amount)?, &stripe, &r.ticket_id, &r.now]).await? != 1 {
        return Err(StoreError::Backend(format!("no account {} shard {stripe}", stake.credit.id())).into());
    }
    let ticket = TicketRecord::sold(r, Serial { emission, block, index }, lot);
    Ok(Sale { ticket, balance: cents(balance)?, replayed: false })
}

/// The sale this player's key already made, if any.
async fn replay(tx: &Transaction<'_>, r: &SaleRequest) -> Result<Option<Sale>, Failure> {
    let find = tx.prepare_cached(&format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = $1 AND idempotency_key = $2")).await?;
    let Some(row) = tx.query_opt(&find, &[&r.player_id, &r.idempotency_key]).await? else { return Ok(None) };
    let ticket = rows::ticket(&row)?;
    if ticket.mode != r.mode {
        return Err(StoreError::KeyReused.into());
    }
    Ok(Some(Sale { balance: wallet_balance(tx, &r.player_id).await?, ticket, replayed: true }))
}

async fn ledger_facts(tx: &Transaction<'_>, lots: &LotsCache) -> Result<LedgerFacts, Failure> {
    let sums = tx.query(sql::TRANSFER_SUMS, &[]).await?.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    // The game's own accounts are sharded: an account's balance is the sum of its rows.
    let stored = tx.query("SELECT account, SUM(balance)::BIGINT FROM balances GROUP BY account", &[]).await?.iter().map(|r| (r.get(0), r.get(1))).collect();
    let transfers: i64 = tx.query_one(sql::TRANSFER_COUNT, &[]).await?.get(0);
    let mut blocks = Vec::new();
    for row in tx.query(sql::BLOCK_SALES, &[]).await? {
        let (emission, block, sold) = (row.unsigned(0)?, row.unsigned(1)?, row.int(2)?);
        let mut tally = BlockTally::new(lots_of(lots, tx, emission, block).await?);
        for t in tx.query(sql::BLOCK_TICKETS, &[&int(emission)?, &int(block)?]).await? {
            tally.add(t.unsigned(0)?, t.get(1), t.get(2));
        }
        blocks.push(tally.facts(emission, block, u64::try_from(sold).map_err(backend)?, &stored)?);
    }
    let mut counts = ledger::Counts::default();
    for (count, query) in counts.iter_mut().zip(sql::ledger_counts()) {
        *count = u64::try_from(tx.query_one(&query, &[]).await?.get::<_, i64>(0)).map_err(backend)?;
    }
    let pending: i64 = tx.query_one(sql::PENDING_WITHDRAWALS, &[]).await?.get(0);
    Ok(LedgerFacts::new(ledger::accounts(sums, &stored), u64::try_from(transfers).map_err(backend)?, blocks, counts, pending))
}

#[async_trait]
impl Store for PostgresStore {
    async fn create_player(&self, player: NewPlayer, now: i64) -> Result<PlayerRecord, StoreError> {
        self.core
            .unit(|tx| {
                let player = player.clone();
                Box::pin(async move {
                    let identity_key = player.identity.as_ref().map(|i| i.key());
                    if let Some(key) = &identity_key
                        && responsible::banned(tx, key).await?
                    {
                        return Err(StoreError::Banned.into());
                    }
                    let identity = player.identity.as_ref();
                    let inserted = tx
                        .execute(
                            "INSERT INTO players (id, name, name_key, password_hash, guest, created_at, first_name, last_name, birth_date, identity_key) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
                            &[
                                &player.id,
                                &player.name.as_ref().map(|n| &n.shown),
                                &player.name.as_ref().map(|n| &n.key),
                                &player.password_hash,
                                &player.guest,
                                &now,
                                &identity.map(|i| &i.first_name),
                                &identity.map(|i| &i.last_name),
                                &identity.map(|i| &i.birth_date),
                                &identity_key,
                            ],
                        )
                        .await?;
                    if inserted == 0 {
                        let error = if player.name.is_some() { StoreError::NameTaken } else { StoreError::AlreadyExists(format!("player {}", player.id)) };
                        return Err(error.into());
                    }
                    open_account(tx, &Account::Wallet(&player.id)).await?;
                    if let Some(credit) = &player.opening_credit {
                        responsible::deposit(tx, &player.id, credit, now).await?;
                    }
                    Ok(PlayerRecord { balance: wallet_balance(tx, &player.id).await?, id: player.id, name: player.name.map(|n| n.shown), guest: player.guest })
                })
            })
            .await
    }

    async fn player(&self, id: &str) -> Result<PlayerRecord, StoreError> {
        self.core
            .autocommit(async |client| {
                let row = client.query_opt("SELECT name, guest FROM players WHERE id = $1", &[&id]).await?.ok_or(StoreError::NotFound("player"))?;
                Ok(PlayerRecord { balance: wallet_balance(client, id).await?, id: id.to_owned(), name: row.get(0), guest: row.get(1) })
            })
            .await
    }

    async fn credentials(&self, name_key: &str) -> Result<Option<Credentials>, StoreError> {
        self.core
            .autocommit(async |client| {
                let row = client.query_opt("SELECT id, password_hash FROM players WHERE name_key = $1 AND password_hash IS NOT NULL", &[&name_key]).await?;
                Ok(row.map(|r| Credentials { player_id: r.get(0), password_hash: r.get(1) }))
            })
            .await
    }

    async fn create_session(&self, token_hash: &str, player_id: &str, now: i64, expires_at: i64) -> Result<(), StoreError> {
        self.core
            .autocommit(async |client| {
                if client.execute(rg::CREATE_SESSION, &[&token_hash, &player_id, &now, &expires_at]).await? != 1 {
                    return Err(StoreError::NotFound("player").into());
                }
                Ok(())
            })
            .await
    }

    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<rg::SessionRecord>, StoreError> {
        self.core
            .autocommit(async |client| {
                let find = client.prepare_cached(rg::SESSION).await?;
                Ok(client.query_opt(&find, &[&token_hash, &now]).await?.map(|r| rg::session_from(&r)).transpose()?)
            })
            .await
    }

    async fn register_guest(&self, player_id: &str, name: PlayerName, password_hash: String) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let (player, name, hash) = (player_id.to_owned(), name.clone(), password_hash.clone());
                Box::pin(async move {
                    let updated = tx
                        .execute(
                            "UPDATE players SET name = $2, name_key = $3, password_hash = $4, guest = FALSE WHERE id = $1 AND guest",
                            &[&player, &name.shown, &name.key, &hash],
                        )
                        .await;
                    match updated {
                        Ok(1) => Ok(()),
                        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(StoreError::NameTaken.into()),
                        Err(e) => Err(e.into()),
                        Ok(_) => {
                            let guest = tx.query_opt("SELECT guest FROM players WHERE id = $1", &[&player]).await?.map(|r| r.get::<_, bool>(0));
                            Err(why_not_registered(guest).into())
                        }
                    }
                })
            })
            .await
    }

    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        self.core
            .autocommit(async |client| {
                client.execute("DELETE FROM sessions WHERE token_hash = $1", &[&token_hash]).await?;
                Ok(())
            })
            .await
    }

    async fn credit(&self, player_id: &str, credit: Credit, now: i64) -> Result<Cents, StoreError> {
        self.core
            .unit(|tx| {
                let (player, credit) = (player_id.to_owned(), credit.clone());
                Box::pin(async move { responsible::deposit(tx, &player, &credit, now).await })
            })
            .await
    }

    async fn sell(&self, request: SaleRequest) -> Result<Sale, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.sales.send(sales::PendingSale { request, answer }).await.map_err(|_| StoreError::Backend("the sale groupers stopped".into()))?;
        answered.await.map_err(|_| StoreError::Backend("a sale grouper stopped before answering".into()))?
    }

    async fn reveal(&self, player_id: &str, ticket_id: &str, zones: Vec<usize>, seconds_ago: Vec<u32>, now: i64) -> Result<TicketRecord, StoreError> {
        self.core
            .unit(|tx| {
                let (player, id, zones, seconds_ago) = (player_id.to_owned(), ticket_id.to_owned(), zones.clone(), seconds_ago.clone());
                Box::pin(async move {
                    let t = ticket(tx, &player, &id).await?;
                    let Some(after) = plan::reveal(&t, &zones, &seconds_ago, now)? else { return Ok(t) };
                    if !set_revealed(tx, &t, &after, None).await? {
                        // Another reveal or the completion changed it since it was read: start again.
                        return Err(Failure::Retry("the ticket changed under a reveal".into()));
                    }
                    Ok(after)
                })
            })
            .await
    }

    async fn complete(&self, player_id: &str, ticket_id: &str, now: i64) -> Result<Completion, StoreError> {
        self.core
            .unit(|tx| {
                let (player, id) = (player_id.to_owned(), ticket_id.to_owned());
                Box::pin(async move {
                    let t = ticket(tx, &player, &id).await?;
                    if !set_revealed(tx, &t, &plan::completion(&t, now)?, Some(now)).await? {
                        return Err(Failure::Retry("the ticket changed under its completion".into()));
                    }
                    credit_win(tx, &id, now).await?;
                    Ok(Completion { ticket: ticket(tx, &player, &id).await?, balance: wallet_balance(tx, &player).await? })
                })
            })
            .await
    }

    async fn purge(&self, now: i64, stale_before: i64, limit: usize) -> Result<PurgeReport, StoreError> {
        let sessions = self.core.unit(|tx| Box::pin(async move { Ok(tx.execute("DELETE FROM sessions WHERE expires_at <= $1", &[&now]).await?) })).await?;
        let limit = i64::try_from(limit).map_err(backend)?;
        let stale: Vec<String> = self
            .core
            .autocommit(async |client| Ok(client.query(sql::STALE_GUESTS, &[&stale_before, &limit]).await?.iter().map(|r| r.get(0)).collect()))
            .await?;
        let mut guests = 0;
        for id in stale {
            let purged = self
                .core
                .unit(|tx| {
                    let id = id.clone();
                    Box::pin(async move {
                        let wallet = Account::Wallet(&id).id();
                        // Every sale, credit and debit of this guest updates its wallet's row: while this
                        // unit holds it, none can land. Another instance purging the guest holds it: it is
                        // left to that one.
                        if tx.query_opt("SELECT 1 FROM balances WHERE account = $1 AND shard = 0 FOR UPDATE SKIP LOCKED", &[&wallet]).await?.is_none() {
                            return Ok(false);
                        }
                        // Read again under that lock: money moved or a ticket bought since the list was
                        // made keeps the guest.
                        if tx.query_opt(sql::STILL_STALE_GUEST, &[&stale_before, &id]).await?.is_none() {
                            return Ok(false);
                        }
                        let given: i64 = tx.query_one(sql::DEMO_GIVEN, &[&wallet]).await?.get(0);
                        // Only what demo money gave the wallet is in it (no ticket, no real money): else keep it.
                        if tx.execute("DELETE FROM balances WHERE account = $1 AND shard = 0 AND balance = $2", &[&wallet, &given]).await? != 1 {
                            return Err(Failure::Store(StoreError::Backend(format!("the wallet of {id} holds more than its demo money"))));
                        }
                        tx.execute("DELETE FROM transfers WHERE kind = 'demo' AND credit = $1", &[&wallet]).await?;
                        let demo_shard = shard_of(id.as_bytes());
                        tx.execute("UPDATE balances SET balance = balance + $2 WHERE account = $1 AND shard = $3", &[&Account::Demo.id(), &given, &demo_shard])
                            .await?;
                        tx.execute("DELETE FROM accounts WHERE id = $1", &[&wallet]).await?;
                        Ok(tx.execute("DELETE FROM players WHERE id = $1", &[&id]).await? == 1)
                    })
                })
                .await;
            match purged {
                Ok(true) => guests += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(guest = %id, error = %e, "a stale guest was kept"),
            }
        }
        Ok(PurgeReport { sessions: usize::try_from(sessions).map_err(backend)?, guests })
    }

    async fn settle_due(&self, sold_before: i64, after: Option<DuePlace>, limit: usize, now: i64) -> Result<SettleReport, StoreError> {
        let limit = i64::try_from(limit).map_err(backend)?;
        let (after_sold, after_id) = DuePlace::start(after);
        let together = self
            .core
            .unit(|tx| {
                let after_id = after_id.clone();
                Box::pin(async move { settle_together(tx, sold_before, (after_sold, &after_id), limit, now).await })
            })
            .await;
        match together {
            Ok(report) => Ok(report),
            // One ticket the batch cannot settle (its block's prizes account gone) fails the batch: each
            // is tried again alone, so that the others are settled and it is reported.
            Err(e) => {
                tracing::debug!(error = %e, "a settlement batch failed as a whole; settling its tickets one by one");
                self.settle_one_by_one(sold_before, (after_sold, &after_id), limit, now).await
            }
        }
    }

    async fn unsettled(&self, due_before: i64) -> Result<Unsettled, StoreError> {
        self.core
            .autocommit(async |client| {
                let row = client.query_one(sql::UNSETTLED, &[&due_before]).await?;
                Ok(Unsettled { oldest_sale: row.get(0), due: row.get::<_, i64>(1).max(0) as u64 })
            })
            .await
    }

    fn record_gauges(&self) {
        let status = self.core.pool.status();
        metrics::gauge!("vegas_db_pool_connections", "state" => "in_use").set(status.size.saturating_sub(status.available) as f64);
        metrics::gauge!("vegas_db_pool_connections", "state" => "idle").set(status.available as f64);
        metrics::gauge!("vegas_db_pool_waiting").set(status.waiting as f64);
    }

    async fn ticket(&self, player_id: &str, ticket_id: &str) -> Result<TicketRecord, StoreError> {
        self.core.autocommit(async |client| ticket(client, player_id, ticket_id).await).await
    }

    async fn history(&self, player_id: &str, limit: u32, before: Option<&str>) -> Result<Vec<TicketRecord>, StoreError> {
        self.core
            .autocommit(async |client| {
                // Newest first by sale; a page goes on below its cursor's place in that order.
                let cursor: i64 = match before {
                    None => i64::MAX,
                    Some(id) => client
                        .query_opt("SELECT seq FROM tickets WHERE id = $1 AND player_id = $2", &[&id, &player_id])
                        .await?
                        .ok_or(StoreError::NotFound("ticket"))?
                        .get(0),
                };
                let page = client
                    .query(
                        &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"),
                        &[&player_id, &cursor, &i64::from(limit)],
                    )
                    .await?;
                Ok(all(&page, rows::ticket)?)
            })
            .await
    }

    async fn insert_block(&self, block: NewBlock) -> Result<(), StoreError> {
        self.core.unit(|tx| {
            let block = block.clone();
            Box::pin(async move {
                tx.execute("INSERT INTO designs (hash, text) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&block.design_hash.as_slice(), &block.design_text])
                    .await?;
                let (emission, number) = (int(block.emission)?, int(block.block)?);
                let inserted = tx
                    .execute(
                        "INSERT INTO blocks (emission, block, seed, root, design_hash, lots, created_at, scheme) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
                        &[&emission, &number, &block.seed.as_slice(), &block.root.as_slice(), &block.design_hash.as_slice(), &block.lots, &block.now, &(block.scheme.number() as i32)],
                    )
                    .await?;
                if inserted == 0 {
                    return Err(StoreError::AlreadyExists(format!("block E{}-B{}", block.emission, block.block)).into());
                }
                let size = u32::try_from(block.lots.len()).map_err(backend)?;
                for stripe in 0..STRIPES {
                    let (start, stop) = (int(stripe_start(stripe, size))?, int(stripe_start(stripe + 1, size))?);
                    tx.execute(
                        "INSERT INTO block_stripes (emission, block, stripe, start, next, stop, exhausted_at) VALUES ($1, $2, $3, $4::INTEGER, $4::INTEGER, $5::INTEGER, CASE WHEN $4::INTEGER = $5::INTEGER THEN $6::BIGINT END)",
                        &[&emission, &number, &int(stripe)?, &start, &stop, &block.now],
                    )
                    .await?;
                }
                open_account(tx, &Account::Stakes { emission: block.emission, block: block.block }).await?;
                open_account(tx, &Account::Prizes { emission: block.emission, block: block.block }).await?;
                save_block_tree(tx, emission, number, &block.kept_level).await?;
                Ok(())
            })
        })
        .await
    }

    async fn next_emission(&self) -> Result<u32, StoreError> {
        self.core.autocommit(async |client| Ok(unsigned(client.query_one("SELECT COALESCE(MAX(emission), 0) + 1 FROM blocks", &[]).await?.get(0))?)).await
    }

    async fn blocks(&self) -> Result<Vec<BlockRecord>, StoreError> {
        self.core.autocommit(async |client| Ok(all(&client.query(&format!("{BLOCK_QUERY} ORDER BY b.emission, b.block"), &[]).await?, rows::block)?)).await
    }

    async fn block(&self, emission: u32, block: u32) -> Result<BlockRecord, StoreError> {
        self.core
            .autocommit(async |client| {
                let row = client.query_opt(&format!("{BLOCK_QUERY} WHERE b.emission = $1 AND b.block = $2"), &[&int(emission)?, &int(block)?]).await?;
                Ok(rows::block(&row.ok_or(StoreError::NotFound("block"))?)?)
            })
            .await
    }

    async fn block_tree(&self, emission: u32, block: u32) -> Result<Option<Vec<Hash>>, StoreError> {
        let (emission, block) = (int(emission)?, int(block)?);
        self.core
            .autocommit(async |client| {
                let row = client.query_opt("SELECT kept_level FROM block_trees WHERE emission = $1 AND block = $2", &[&emission, &block]).await?;
                Ok(row.map(|row| hashes(row.get(0))).transpose()?)
            })
            .await
    }

    async fn save_block_tree(&self, emission: u32, block: u32, kept_level: Vec<Hash>) -> Result<(), StoreError> {
        let (emission, block) = (int(emission)?, int(block)?);
        self.core.autocommit(async |client| Ok(save_block_tree(client, emission, block, &kept_level).await?)).await
    }

    async fn design_text(&self, hash: &Hash) -> Result<String, StoreError> {
        self.core
            .autocommit(async |client| {
                let row = client.query_opt("SELECT text FROM designs WHERE hash = $1", &[&hash.as_slice()]).await?;
                Ok(row.ok_or(StoreError::NotFound("design"))?.get(0))
            })
            .await
    }

    async fn ledger_facts(&self) -> Result<LedgerFacts, StoreError> {
        // One snapshot for every fact, even while instances sell.
        self.core
            .unit(|tx| {
                let lots = self.core.lots.clone();
                Box::pin(async move {
                    tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").await?;
                    ledger_facts(tx, &lots).await
                })
            })
            .await
    }

    async fn standing(&self, player_id: &str, now: i64) -> Result<rg::Standing, StoreError> {
        self.core.autocommit(async |client| responsible::standing(client, player_id, now).await).await
    }

    async fn change_limit(&self, player_id: &str, flow: rg::Flow, span: rg::Span, wanted: Option<Cents>, now: i64) -> Result<rg::ChangeKind, StoreError> {
        self.core
            .unit(|tx| {
                let owned = player_id.to_owned();
                Box::pin(async move { responsible::change_limit(tx, &owned, flow, span, wanted, now).await })
            })
            .await
    }

    async fn confirm_raise(&self, player_id: &str, flow: rg::Flow, span: rg::Span, now: i64) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let owned = player_id.to_owned();
                Box::pin(async move { responsible::confirm_raise(tx, &owned, flow, span, now).await })
            })
            .await
    }

    async fn lapse_raises(&self, now: i64) -> Result<usize, StoreError> {
        self.core.unit(|tx| Box::pin(responsible::lapse_raises(tx, now))).await
    }

    async fn pause(&self, player_id: &str, pause: rg::Pause, actor: rg::Actor, now: i64) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let owned = player_id.to_owned();
                Box::pin(async move { responsible::pause(tx, &owned, pause, actor, now).await })
            })
            .await
    }

    async fn responsible_events(&self, player_id: &str, since: i64) -> Result<Vec<rg::ResponsibleEvent>, StoreError> {
        self.core.autocommit(async |client| responsible::events(client, player_id, since).await).await
    }

    async fn set_reality_interval(&self, player_id: &str, minutes: u32, now: i64) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let owned = player_id.to_owned();
                Box::pin(async move { responsible::set_reality_interval(tx, &owned, minutes, now).await })
            })
            .await
    }

    async fn reality_check_shown(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let owned = token_hash.to_owned();
                Box::pin(async move { responsible::reality_check(tx, &owned, false, now).await })
            })
            .await
    }

    async fn acknowledge_reality_check(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        self.core
            .unit(|tx| {
                let owned = token_hash.to_owned();
                Box::pin(async move { responsible::reality_check(tx, &owned, true, now).await })
            })
            .await
    }

    async fn play_since(&self, player_id: &str, since: i64) -> Result<rg::PlaySummary, StoreError> {
        self.core.autocommit(async |client| responsible::summary(client, player_id, since).await).await
    }

    async fn import_bans(&self, keys: Vec<String>, now: i64) -> Result<Vec<(String, Cents)>, StoreError> {
        self.core
            .unit(|tx| {
                let keys = keys.clone();
                Box::pin(async move { responsible::import_bans(tx, &keys, now).await })
            })
            .await
    }

    async fn back_office(&self, op: super::back_office::Op, now: i64) -> Result<super::back_office::Done, StoreError> {
        self.core
            .unit(|t| {
                let op = op.clone();
                Box::pin(async move { super::back_office::run(&mut tx::PgTx(t), &op, now).await })
            })
            .await
    }

    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        self.core
            .autocommit(async |client| {
                let rows = client.query("SELECT kid, secret, created_at FROM signing_keys ORDER BY created_at, kid", &[]).await?;
                Ok(rows
                    .iter()
                    .map(|r| Ok(SigningKeyRecord { kid: r.get(0), secret: hash(r.get(1))?, created_at: r.get(2) }))
                    .collect::<Result<_, StoreError>>()?)
            })
            .await
    }

    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        self.core
            .autocommit(async |client| {
                client
                    .execute(
                        "INSERT INTO signing_keys (kid, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                        &[&key.kid, &key.secret.as_slice(), &key.created_at],
                    )
                    .await?;
                Ok(())
            })
            .await
    }
}

/// The first index of `stripe` in a block of `size` (and, for `STRIPES`, the size).
fn stripe_start(stripe: u32, size: u32) -> u32 {
    (u64::from(stripe) * u64::from(size) / u64::from(STRIPES)) as u32
}
