//! The embedded store: SQLite in WAL mode with `synchronous=FULL` (a commit is on disk before it is
//! acknowledged), one writer thread with group commit ([`writer`]), and a pool of read-only connections
//! that never wait for it. The schema is versioned (`migrations/`, applied by refinery on open), so an
//! existing data directory is migrated when the server starts.

mod checkpoint;
mod page_cache;
mod responsible;
mod tx;
mod vfs;
mod writer;

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
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OptionalExtension, Row, ffi, params};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use writer::{Writer, WriterContext};

mod embedded {
    refinery::embed_migrations!("src/server/store/sqlite/migrations");
}

/// The file in the data directory.
pub const FILE_NAME: &str = "vegas.sqlite3";
const READERS: u32 = 8;
const PAGE_SIZE: i64 = 1024;
/// How long a connection waits for another process's write lock (the CLI beside a running server).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Backend(format!("sqlite: {e}"))
    }
}

/// A block's lots, from the cache or read once.
fn lots_of(cache: &LotsCache, conn: &Connection, emission: u32, block: u32) -> Result<Arc<Vec<LotCode>>, StoreError> {
    if let Some(lots) = cache.get(emission, block) {
        return Ok(lots);
    }
    let lots = conn.prepare_cached("SELECT lots FROM blocks WHERE emission = ?1 AND block = ?2")?.query_row(params![emission, block], |r| r.get(0))?;
    Ok(cache.keep(emission, block, lots))
}

impl Columns for Row<'_> {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.get(i)?)
    }

    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.get(i)?)
    }

    fn optional_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(i)?)
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        Ok(self.get(i)?)
    }
}

/// Every record a statement's rows give (`read` is one of `rows`' readers).
fn all<T>(
    statement: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
    read: impl Fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    statement.query_map(params, |r| Ok(read(r)))?.map(|r| r?).collect()
}

/// The record of the one row a statement gives, if any.
fn one<T>(
    statement: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
    read: impl Fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    statement.query_row(params, |r| Ok(read(r))).optional()?.transpose()
}

pub struct SqliteStore {
    writer: Writer<Arc<LotsCache>>,
    lots: Arc<LotsCache>,
    readers: r2d2::Pool<SqliteConnectionManager>,
    _checkpointer: checkpoint::Checkpointer,
    /// The database file (its WAL's size is a gauge).
    file: std::path::PathBuf,
}

fn configure(conn: &Connection, cache_mib: i64) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Indexes keyed by player are written at random places: pages kept in memory are not read again
    // from the file for every sale.
    conn.pragma_update(None, "cache_size", -1024 * cache_mib)?;
    // Each write of a group runs in a savepoint, whose journal (the pages it changed, as they were)
    // SQLite otherwise moves to a file once past 64 KiB: a settlement crediting hundreds of tickets
    // made the writer create, fill and delete a file in /var/tmp some 40 times a second, 18 000
    // `pwrite`s a second and file-system changes that the next commit's fsync had to carry. In memory
    // it is a group's changed pages at most (a few MB); it is never needed after a crash.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Adds the pages a connection found in its cache and those it had to read since the last call to
/// `vegas_sqlite_writer_pages_total{from}` (a store outgrowing the writer's cache reads more), and
/// brings `vegas_sqlite_cache_walks_avoided_total` up to date.
fn record_cache_use(conn: &Connection) {
    for (op, from) in [(ffi::SQLITE_DBSTATUS_CACHE_HIT, "cache"), (ffi::SQLITE_DBSTATUS_CACHE_MISS, "file")] {
        let (mut current, mut highest) = (0, 0);
        // SAFETY: the connection's own handle, used on its thread; the call only reads its counters
        // (and resets them).
        if unsafe { ffi::sqlite3_db_status(conn.handle(), op, &mut current, &mut highest, 1) } == ffi::SQLITE_OK {
            metrics::counter!("vegas_sqlite_writer_pages_total", "from" => from).increment(current as u64);
        }
    }
    metrics::counter!("vegas_sqlite_cache_walks_avoided_total").absolute(page_cache::walks_avoided());
}

/// Who opens the store, which decides what is done with a write-ahead log found on opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The server: a WAL there is what a crash left, copied into the database before any request.
    Server,
    /// A command run beside a server that may be selling: the WAL is the server's, left to it.
    Beside,
}

impl SqliteStore {
    /// Opens (creating if need be) the store in `path`, migrating its schema to the newest version.
    pub fn open(path: &Path, opening: Opening) -> Result<SqliteStore, StoreError> {
        // Before the first connection starts SQLite.
        page_cache::install();
        // Measured before this connection writes to the WAL: what is there now, an earlier process left.
        let left = checkpoint::wal_bytes(path);
        // The writer's connection: its WAL appends are gathered into one write a commit (`vfs`), which
        // needs the `synchronous=FULL` set below.
        vfs::register().map_err(StoreError::Backend)?;
        let mut conn = Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), vfs::GATHERED)?;
        // A sale changes a few rows at random places (the buyer's wallet, the buyer's index entries):
        // SQLite writes each changed page whole to the WAL, so small pages write less. Only a new
        // database takes it; an existing one keeps its page size.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        migrate(&mut conn)?;
        if opening == Opening::Server && left > 0 {
            checkpoint::after_crash(&conn, left);
        }
        configure(&conn, 16)?;
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            configure(c, 1)?;
            c.pragma_update(None, "query_only", "ON")
        });
        let readers = r2d2::Pool::builder()
            .max_size(READERS)
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| StoreError::Backend(format!("cannot open the readers: {e}")))?;
        // See `checkpoint`: the writer does not checkpoint as it commits.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        grow_in_chunks(&conn)?;
        let (checkpointer, finish) = checkpoint::start(path)?;
        let lots = Arc::new(LotsCache::default());
        let writer = Writer::start(conn, lots.clone(), move |conn| {
            finish.after_commit(conn);
            record_cache_use(conn);
        })?;
        Ok(SqliteStore { writer, lots, readers, _checkpointer: checkpointer, file: path.to_owned() })
    }

    /// A read on a pooled connection. Point reads take microseconds, less than handing them to another
    /// thread would, so they run here when a connection is free; otherwise, and for reads that scan
    /// (`heavy`), on the blocking pool, off the async executor.
    async fn read<T: Send + 'static>(&self, heavy: bool, read: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static) -> Result<T, StoreError> {
        if !heavy && let Some(conn) = self.readers.try_get() {
            return read(&conn);
        }
        let pool = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let conn = pool.get().map_err(|e| StoreError::Backend(format!("no reader: {e}")))?;
            read(&conn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("read task: {e}")))?
    }

    async fn write<T: Send + 'static>(&self, write: impl FnOnce(&Connection, &LotsCache) -> Result<T, StoreError> + Send + 'static) -> Result<T, StoreError> {
        self.writer.write(move |WriterContext { conn, state }: &mut WriterContext<Arc<LotsCache>>| write(conn, state)).await
    }
}

/// Makes the database file grow 32 MiB at a time instead of a page at a time: fewer allocations for the
/// file system, and each fsync of the database has fewer new blocks to record.
pub(crate) fn grow_in_chunks(conn: &Connection) -> Result<(), StoreError> {
    let mut chunk: std::ffi::c_int = 32 << 20;
    // SAFETY: the handle is a live connection owned by `conn`, the file name is a NUL-terminated
    // literal, and SQLITE_FCNTL_CHUNK_SIZE reads one int through the pointer during the call.
    let rc = unsafe { rusqlite::ffi::sqlite3_file_control(conn.handle(), c"main".as_ptr(), rusqlite::ffi::SQLITE_FCNTL_CHUNK_SIZE, (&raw mut chunk).cast()) };
    if rc == rusqlite::ffi::SQLITE_OK { Ok(()) } else { Err(StoreError::Backend(format!("cannot set the file's growth chunk ({rc})"))) }
}

/// Applies the migrations not yet applied, with foreign keys off while tables are rebuilt (SQLite's
/// documented procedure), then, if any was, checks every foreign key. (The check reads the whole
/// database: a command run beside a live server, whose schema is already current, skips it.)
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let report = embedded::migrations::runner().run(conn).map_err(|e| StoreError::Backend(format!("migrating the schema: {e}")))?;
    if report.applied_migrations().is_empty() {
        return Ok(());
    }
    let broken: i64 = conn.query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| r.get(0))?;
    if broken > 0 {
        return Err(StoreError::Backend(format!("{broken} rows break a foreign key after migrating")));
    }
    Ok(())
}

// ---- statements shared by several writes ---------------------------------------------------------

fn balance(conn: &Connection, account: &Account) -> Result<Cents, StoreError> {
    let stored: Option<i64> = conn.prepare_cached("SELECT balance FROM accounts WHERE id = ?1")?.query_row([account.id()], |r| r.get(0)).optional()?;
    cents(stored.ok_or(StoreError::NotFound("account"))?)
}

fn open_account(conn: &Connection, account: &Account) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO accounts (id, kind) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING")?.execute(params![account.id(), account.kind()])?;
    Ok(())
}

fn save_block_tree(conn: &Connection, emission: u32, block: u32, kept_level: &[Hash]) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO block_trees (emission, block, kept_level) VALUES (?1, ?2, ?3) ON CONFLICT (emission, block) DO UPDATE SET kept_level = excluded.kept_level")?
        .execute(params![emission, block, kept_level.as_flattened()])?;
    Ok(())
}

/// Moves money: the debited wallet must hold it (checked by the same `UPDATE` that takes it), both
/// balances change with the transfer row. Returns the debited account's new balance, or `None` if it
/// could not pay.
fn transfer(conn: &Connection, t: &Transfer, now: i64) -> Result<Option<i64>, StoreError> {
    let paid: Option<i64> = conn
        .prepare_cached("UPDATE accounts SET balance = balance - ?2 WHERE id = ?1 AND (kind <> 'wallet' OR balance >= ?2) RETURNING balance")?
        .query_row(params![t.debit.id(), sql_amount(t.amount)?], |r| r.get(0))
        .optional()?;
    if paid.is_some() {
        post(conn, t, now)?;
    }
    Ok(paid)
}

/// The rest of a transfer whose debit is done: the credit, and the transfer's row.
fn post(conn: &Connection, t: &Transfer, now: i64) -> Result<(), StoreError> {
    let amount = sql_amount(t.amount)?;
    let credited = conn.prepare_cached("UPDATE accounts SET balance = balance + ?2 WHERE id = ?1")?.execute(params![t.credit.id(), amount])?;
    if credited != 1 {
        return Err(StoreError::Backend(format!("no account {}", t.credit.id())));
    }
    conn.prepare_cached("INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?
        .execute(params![t.kind.as_str(), t.debit.id(), t.credit.id(), amount, t.ticket, t.reason, now])?;
    Ok(())
}

fn ticket(conn: &Connection, player_id: &str, ticket_id: &str) -> Result<TicketRecord, StoreError> {
    let mut find = conn.prepare_cached(&format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = ?1 AND player_id = ?2"))?;
    one(&mut find, params![ticket_id, player_id], |r| rows::ticket(r))?.ok_or(StoreError::NotFound("ticket"))
}

/// Replaces a ticket's uncovered zones (and their times) if they are still those of `before`
/// (compare-and-set: a write that read an older list changes nothing). Returns whether it did.
fn set_revealed(conn: &Connection, before: &TicketRecord, after: &TicketRecord, finished_at: Option<i64>) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE tickets SET revealed = ?3, revealed_at = ?4, finished_at = COALESCE(finished_at, ?5) WHERE id = ?1 AND revealed = ?2 AND finished_at IS NULL",
        )?
        .execute(params![before.id, json_list(&before.revealed), json_list(&after.revealed), json_list(&after.revealed_at), finished_at])?;
    Ok(changed == 1)
}

/// Credits a ticket's win if no one has: the `UPDATE` that marks it credited is the only one to see
/// `credited_at` null. Returns whether this call credited it.
fn credit_win(conn: &Connection, ticket_id: &str, now: i64) -> Result<bool, StoreError> {
    let claimed: Option<(String, u32, u32, i64)> = conn
        .prepare_cached("UPDATE tickets SET credited_at = ?2 WHERE id = ?1 AND credited_at IS NULL RETURNING player_id, emission, block, lot_cents")?
        .query_row(params![ticket_id, now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let Some((player, emission, block, lot)) = claimed else { return Ok(false) };
    let lot = cents(lot)?;
    if !lot.is_zero() {
        transfer(conn, &Transfer::win(&player, ticket_id, emission, block, lot), now)?
            .ok_or_else(|| StoreError::Backend("the prize account refused to pay".into()))?;
    }
    Ok(true)
}

fn with_savepoint<T>(conn: &Connection, work: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
    conn.execute_batch("SAVEPOINT one")?;
    let result = work();
    conn.execute_batch(if result.is_ok() { "RELEASE one" } else { "ROLLBACK TO one; RELEASE one" })?;
    result
}

// ---- the sale ------------------------------------------------------------------------------------

fn sell(conn: &Connection, lots: &LotsCache, r: &SaleRequest) -> Result<Sale, StoreError> {
    let wallet = Account::Wallet(&r.player_id);
    let replay = |conn: &Connection| -> Result<Option<Sale>, StoreError> {
        let mut find = conn.prepare_cached(&format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = ?1 AND idempotency_key = ?2"))?;
        let Some(ticket) = one(&mut find, params![r.player_id, r.idempotency_key], |r| rows::ticket(r))? else {
            return Ok(None);
        };
        if ticket.mode != r.mode {
            return Err(StoreError::KeyReused);
        }
        Ok(Some(Sale { balance: balance(conn, &wallet)?, ticket, replayed: true }))
    };
    if let Some(sale) = replay(conn)? {
        return Ok(sale);
    }
    // The stake first: its guard (balance, limits, pause) decides whether there is a sale at all.
    let (balance, stake_total) = responsible::take_stake(conn, &r.player_id, r.now, r.limits_required)?;
    let slot: Option<(u32, u32, u32)> = conn
        .prepare_cached(
            "UPDATE block_sales SET sold = sold + 1, closed_at = CASE WHEN sold + 1 = size THEN ?1 END \
             WHERE (emission, block) = (SELECT s.emission, s.block FROM block_sales s WHERE s.sold < s.size \
                 AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = s.emission AND w.block = s.block) ORDER BY s.emission, s.block LIMIT 1) \
               AND sold < size \
             RETURNING emission, block, sold - 1",
        )?
        .query_row([r.now], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let (emission, block, index) = slot.ok_or(StoreError::SoldOut)?;
    let lot = lot_of(
        *lots_of(lots, conn, emission, block)?
            .get(index as usize)
            .ok_or_else(|| StoreError::Backend(format!("block E{emission}-B{block} has no ticket {index}")))?,
    );
    let inserted = conn
        .prepare_cached(
            "INSERT INTO tickets (id, player_id, emission, block, idx, mode, lot_cents, sold_at, idempotency_key, stake_total) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (player_id, idempotency_key) DO NOTHING",
        )?
        .execute(params![r.ticket_id, r.player_id, emission, block, index, r.mode.as_str(), sql_amount(lot)?, r.now, r.idempotency_key, stake_total])?;
    if inserted == 0 {
        // Only if a sale with this key was recorded since the replay check above, which one writer rules
        // out. The unique key still forbids a second ticket: this sale is undone, and a retry replays.
        return Err(StoreError::Backend("a sale with this Idempotency-Key was recorded meanwhile".into()));
    }
    post(conn, &Transfer::stake(&r.player_id, &r.ticket_id, emission, block), r.now)?;
    let ticket = TicketRecord::sold(r, Serial { emission, block, index }, lot);
    Ok(Sale { ticket, balance: cents(balance)?, replayed: false })
}

// ---- the ledger check's facts --------------------------------------------------------------------

fn ledger_facts(conn: &Connection, lots: &LotsCache) -> Result<LedgerFacts, StoreError> {
    let sums = conn.prepare(sql::TRANSFER_SUMS)?.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let stored = conn.prepare("SELECT id, balance FROM accounts")?.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    let transfers = conn.query_row(sql::TRANSFER_COUNT, [], |r| r.get(0))?;
    let sales: Vec<(u32, u32, u64)> = conn.prepare(sql::BLOCK_SALES)?.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut blocks = Vec::new();
    for (emission, block, sold) in sales {
        let mut tally = BlockTally::new(lots_of(lots, conn, emission, block)?);
        let mut tickets = conn.prepare(sql::BLOCK_TICKETS)?;
        let mut tickets = tickets.query(params![emission, block])?;
        while let Some(t) = tickets.next()? {
            tally.add(t.get(0)?, t.get(1)?, t.get(2)?);
        }
        blocks.push(tally.facts(emission, block, sold, &stored)?);
    }
    let mut counts = ledger::Counts::default();
    for (count, query) in counts.iter_mut().zip(sql::ledger_counts()) {
        *count = conn.query_row(&query, [], |r| r.get(0))?;
    }
    let pending = conn.query_row(sql::PENDING_WITHDRAWALS, [], |r| r.get(0))?;
    Ok(LedgerFacts::new(ledger::accounts(sums, &stored), transfers, blocks, counts, pending))
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_player(&self, player: NewPlayer, now: i64) -> Result<PlayerRecord, StoreError> {
        self.write(move |conn, _| {
            let identity_key = player.identity.as_ref().map(|i| i.key());
            if let Some(key) = &identity_key
                && responsible::banned(conn, key)?
            {
                return Err(StoreError::Banned);
            }
            let identity = player.identity.as_ref();
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO players (id, name, name_key, password_hash, guest, created_at, first_name, last_name, birth_date, identity_key) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    player.id,
                    player.name.as_ref().map(|n| &n.shown),
                    player.name.as_ref().map(|n| &n.key),
                    player.password_hash,
                    player.guest,
                    now,
                    identity.map(|i| &i.first_name),
                    identity.map(|i| &i.last_name),
                    identity.map(|i| &i.birth_date),
                    identity_key,
                ])?;
            if inserted == 0 {
                return Err(if player.name.is_some() { StoreError::NameTaken } else { StoreError::AlreadyExists(format!("player {}", player.id)) });
            }
            let wallet = Account::Wallet(&player.id);
            open_account(conn, &wallet)?;
            if let Some(credit) = &player.opening_credit {
                responsible::deposit(conn, &player.id, credit, now)?;
            }
            Ok(PlayerRecord { balance: balance(conn, &wallet)?, id: player.id, name: player.name.map(|n| n.shown), guest: player.guest })
        })
        .await
    }

    async fn player(&self, id: &str) -> Result<PlayerRecord, StoreError> {
        let id = id.to_owned();
        self.read(false, move |conn| {
            let row: Option<(Option<String>, bool)> =
                conn.prepare_cached("SELECT name, guest FROM players WHERE id = ?1")?.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            let (name, guest) = row.ok_or(StoreError::NotFound("player"))?;
            Ok(PlayerRecord { balance: balance(conn, &Account::Wallet(&id))?, id, name, guest })
        })
        .await
    }

    async fn credentials(&self, name_key: &str) -> Result<Option<Credentials>, StoreError> {
        let name = name_key.to_owned();
        self.read(false, move |conn| {
            Ok(conn
                .prepare_cached("SELECT id, password_hash FROM players WHERE name_key = ?1 AND password_hash IS NOT NULL")?
                .query_row([name], |r| Ok(Credentials { player_id: r.get(0)?, password_hash: r.get(1)? }))
                .optional()?)
        })
        .await
    }

    async fn create_session(&self, token_hash: &str, player_id: &str, now: i64, expires_at: i64) -> Result<(), StoreError> {
        let (token_hash, player_id) = (token_hash.to_owned(), player_id.to_owned());
        self.write(move |conn, _| {
            if responsible::prepare(conn, rg::CREATE_SESSION)?.execute(params![token_hash, player_id, now, expires_at])? != 1 {
                return Err(StoreError::NotFound("player"));
            }
            Ok(())
        })
        .await
    }

    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<rg::SessionRecord>, StoreError> {
        let token_hash = token_hash.to_owned();
        self.read(false, move |conn| one(&mut responsible::prepare(conn, rg::SESSION)?, params![token_hash, now], |r| rg::session_from(r))).await
    }

    async fn register_guest(&self, player_id: &str, name: PlayerName, password_hash: String) -> Result<(), StoreError> {
        let player_id = player_id.to_owned();
        self.write(move |conn, _| {
            // A name another player holds makes the update skip the row, as not being a guest does.
            let updated = conn
                .prepare_cached("UPDATE OR IGNORE players SET name = ?2, name_key = ?3, password_hash = ?4, guest = 0 WHERE id = ?1 AND guest")?
                .execute(params![player_id, name.shown, name.key, password_hash])?;
            if updated == 1 {
                return Ok(());
            }
            let guest: Option<bool> = conn.prepare_cached("SELECT guest FROM players WHERE id = ?1")?.query_row([&player_id], |r| r.get(0)).optional()?;
            Err(why_not_registered(guest))
        })
        .await
    }

    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        let token_hash = token_hash.to_owned();
        self.write(move |conn, _| {
            conn.prepare_cached("DELETE FROM sessions WHERE token_hash = ?1")?.execute([token_hash])?;
            Ok(())
        })
        .await
    }

    async fn credit(&self, player_id: &str, credit: Credit, now: i64) -> Result<Cents, StoreError> {
        let player_id = player_id.to_owned();
        self.write(move |conn, _| responsible::deposit(conn, &player_id, &credit, now)).await
    }

    async fn sell(&self, request: SaleRequest) -> Result<Sale, StoreError> {
        self.write(move |conn, lots| sell(conn, lots, &request)).await
    }

    async fn reveal(&self, player_id: &str, ticket_id: &str, zones: Vec<usize>, seconds_ago: Vec<u32>, now: i64) -> Result<TicketRecord, StoreError> {
        let (player_id, ticket_id) = (player_id.to_owned(), ticket_id.to_owned());
        self.write(move |conn, _| {
            let t = ticket(conn, &player_id, &ticket_id)?;
            let Some(after) = plan::reveal(&t, &zones, &seconds_ago, now)? else { return Ok(t) };
            // The writer runs one write at a time, so the list read above is still current.
            if !set_revealed(conn, &t, &after, None)? {
                return Err(StoreError::Backend("the ticket changed under a reveal".into()));
            }
            Ok(after)
        })
        .await
    }

    async fn complete(&self, player_id: &str, ticket_id: &str, now: i64) -> Result<Completion, StoreError> {
        let (player_id, ticket_id) = (player_id.to_owned(), ticket_id.to_owned());
        self.write(move |conn, _| {
            let t = ticket(conn, &player_id, &ticket_id)?;
            if !set_revealed(conn, &t, &plan::completion(&t, now)?, Some(now))? {
                return Err(StoreError::Backend("the ticket changed under its completion".into()));
            }
            credit_win(conn, &t.id, now)?;
            Ok(Completion { ticket: ticket(conn, &player_id, &ticket_id)?, balance: balance(conn, &Account::Wallet(&player_id))? })
        })
        .await
    }

    async fn purge(&self, now: i64, stale_before: i64, limit: usize) -> Result<PurgeReport, StoreError> {
        self.write(move |conn, _| {
            let sessions = conn.prepare_cached("DELETE FROM sessions WHERE expires_at <= ?1")?.execute([now])?;
            let stale: Vec<String> = conn
                .prepare_cached(sql::STALE_GUESTS)?
                .query_map(params![stale_before, i64::try_from(limit).unwrap_or(i64::MAX)], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let mut guests = 0;
            for id in stale {
                let wallet = Account::Wallet(&id).id();
                let given: i64 = conn.prepare_cached(sql::DEMO_GIVEN)?.query_row([&wallet], |r| r.get(0))?;
                // Only what demo money gave the wallet is in it (no ticket, no real money): else keep it.
                if balance(conn, &Account::Wallet(&id))? != cents(given)? {
                    continue;
                }
                conn.prepare_cached("DELETE FROM transfers WHERE kind = 'demo' AND credit = ?1")?.execute([&wallet])?;
                conn.prepare_cached("UPDATE accounts SET balance = balance + ?2 WHERE id = ?1")?.execute(params![Account::Demo.id(), given])?;
                conn.prepare_cached("DELETE FROM accounts WHERE id = ?1")?.execute([&wallet])?;
                guests += conn.prepare_cached("DELETE FROM players WHERE id = ?1")?.execute([&id])?;
            }
            Ok(PurgeReport { sessions, guests })
        })
        .await
    }

    async fn settle_due(&self, sold_before: i64, after: Option<DuePlace>, limit: usize, now: i64) -> Result<SettleReport, StoreError> {
        self.write(move |conn, _| {
            let (after_sold, after_id) = DuePlace::start(after);
            let due = all(&mut conn.prepare_cached(sql::DUE_TICKETS)?, params![sold_before, after_sold, after_id, limit], |r| rows::due_place(r))?;
            let mut report = SettleReport::default();
            for place in due {
                let settled = with_savepoint(conn, || credit_win(conn, &place.ticket_id, now));
                report.count(place, settled);
            }
            Ok(report)
        })
        .await
    }

    async fn unsettled(&self, due_before: i64) -> Result<Unsettled, StoreError> {
        self.read(false, move |conn| {
            let (oldest_sale, due) = conn.prepare_cached(sql::UNSETTLED)?.query_row([due_before], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?)))?;
            Ok(Unsettled { oldest_sale, due: due.max(0) as u64 })
        })
        .await
    }

    fn record_gauges(&self) {
        metrics::gauge!("vegas_sqlite_wal_bytes").set(checkpoint::wal_bytes(&self.file) as f64);
    }

    async fn ticket(&self, player_id: &str, ticket_id: &str) -> Result<TicketRecord, StoreError> {
        let (player_id, ticket_id) = (player_id.to_owned(), ticket_id.to_owned());
        self.read(false, move |conn| ticket(conn, &player_id, &ticket_id)).await
    }

    async fn history(&self, player_id: &str, limit: u32, before: Option<&str>) -> Result<Vec<TicketRecord>, StoreError> {
        let (player_id, before) = (player_id.to_owned(), before.map(str::to_owned));
        self.read(false, move |conn| {
            // Newest first by (sold_at, rowid); a page goes on below its cursor's place in that order.
            let cursor: (i64, i64) = match before {
                None => (i64::MAX, i64::MAX),
                Some(id) => conn
                    .prepare_cached("SELECT sold_at, rowid FROM tickets WHERE id = ?1 AND player_id = ?2")?
                    .query_row(params![id, player_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?
                    .ok_or(StoreError::NotFound("ticket"))?,
            };
            let mut page = conn.prepare_cached(&format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = ?1 AND (sold_at, rowid) < (?2, ?3) ORDER BY sold_at DESC, rowid DESC LIMIT ?4"
            ))?;
            all(&mut page, params![player_id, cursor.0, cursor.1, limit], |r| rows::ticket(r))
        })
        .await
    }

    async fn insert_block(&self, block: NewBlock) -> Result<(), StoreError> {
        self.write(move |conn, _| {
            conn.prepare_cached("INSERT INTO designs (hash, text) VALUES (?1, ?2) ON CONFLICT DO NOTHING")?
                .execute(params![block.design_hash.as_slice(), block.design_text])?;
            let inserted = conn
                .prepare_cached("INSERT INTO blocks (emission, block, seed, root, design_hash, lots, created_at, scheme) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING")?
                .execute(params![block.emission, block.block, block.seed.as_slice(), block.root.as_slice(), block.design_hash.as_slice(), block.lots, block.now, block.scheme.number()])?;
            if inserted == 0 {
                return Err(StoreError::AlreadyExists(format!("block E{}-B{}", block.emission, block.block)));
            }
            conn.prepare_cached("INSERT INTO block_sales (emission, block, size) VALUES (?1, ?2, ?3)")?.execute(params![block.emission, block.block, block.lots.len()])?;
            save_block_tree(conn, block.emission, block.block, &block.kept_level)?;
            open_account(conn, &Account::Stakes { emission: block.emission, block: block.block })?;
            open_account(conn, &Account::Prizes { emission: block.emission, block: block.block })?;
            Ok(())
        })
        .await
    }

    async fn block_tree(&self, emission: u32, block: u32) -> Result<Option<Vec<Hash>>, StoreError> {
        self.read(false, move |conn| {
            let level: Option<Vec<u8>> = conn
                .prepare_cached("SELECT kept_level FROM block_trees WHERE emission = ?1 AND block = ?2")?
                .query_row(params![emission, block], |r| r.get(0))
                .optional()?;
            level.as_deref().map(hashes).transpose()
        })
        .await
    }

    async fn save_block_tree(&self, emission: u32, block: u32, kept_level: Vec<Hash>) -> Result<(), StoreError> {
        self.write(move |conn, _| save_block_tree(conn, emission, block, &kept_level)).await
    }

    async fn next_emission(&self) -> Result<u32, StoreError> {
        self.read(false, |conn| Ok(conn.query_row("SELECT COALESCE(MAX(emission), 0) + 1 FROM blocks", [], |r| r.get(0))?)).await
    }

    async fn blocks(&self) -> Result<Vec<BlockRecord>, StoreError> {
        self.read(true, |conn| all(&mut conn.prepare_cached(&format!("{BLOCK_QUERY} ORDER BY b.emission, b.block"))?, [], |r| rows::block(r))).await
    }

    async fn block(&self, emission: u32, block: u32) -> Result<BlockRecord, StoreError> {
        self.read(false, move |conn| {
            let mut find = conn.prepare_cached(&format!("{BLOCK_QUERY} WHERE b.emission = ?1 AND b.block = ?2"))?;
            one(&mut find, params![emission, block], |r| rows::block(r))?.ok_or(StoreError::NotFound("block"))
        })
        .await
    }

    async fn design_text(&self, hash: &Hash) -> Result<String, StoreError> {
        let hash = *hash;
        self.read(false, move |conn| {
            conn.prepare_cached("SELECT text FROM designs WHERE hash = ?1")?
                .query_row([hash.as_slice()], |r| r.get(0))
                .optional()?
                .ok_or(StoreError::NotFound("design"))
        })
        .await
    }

    async fn standing(&self, player_id: &str, now: i64) -> Result<rg::Standing, StoreError> {
        let player = player_id.to_owned();
        self.read(false, move |conn| responsible::standing(conn, &player, now)).await
    }

    async fn change_limit(&self, player_id: &str, flow: rg::Flow, span: rg::Span, wanted: Option<Cents>, now: i64) -> Result<rg::ChangeKind, StoreError> {
        let player = player_id.to_owned();
        self.write(move |conn, _| responsible::change_limit(conn, &player, flow, span, wanted, now)).await
    }

    async fn confirm_raise(&self, player_id: &str, flow: rg::Flow, span: rg::Span, now: i64) -> Result<(), StoreError> {
        let player = player_id.to_owned();
        self.write(move |conn, _| responsible::confirm_raise(conn, &player, flow, span, now)).await
    }

    async fn lapse_raises(&self, now: i64) -> Result<usize, StoreError> {
        self.write(move |conn, _| responsible::lapse_raises(conn, now)).await
    }

    async fn pause(&self, player_id: &str, pause: rg::Pause, actor: rg::Actor, now: i64) -> Result<(), StoreError> {
        let player = player_id.to_owned();
        self.write(move |conn, _| responsible::pause(conn, &player, pause, actor, now)).await
    }

    async fn responsible_events(&self, player_id: &str, since: i64) -> Result<Vec<rg::ResponsibleEvent>, StoreError> {
        let player = player_id.to_owned();
        self.read(false, move |conn| responsible::events(conn, &player, since)).await
    }

    async fn set_reality_interval(&self, player_id: &str, minutes: u32, now: i64) -> Result<(), StoreError> {
        let player = player_id.to_owned();
        self.write(move |conn, _| responsible::set_reality_interval(conn, &player, minutes, now)).await
    }

    async fn reality_check_shown(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        let token = token_hash.to_owned();
        self.write(move |conn, _| responsible::reality_check(conn, &token, false, now)).await
    }

    async fn acknowledge_reality_check(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        let token = token_hash.to_owned();
        self.write(move |conn, _| responsible::reality_check(conn, &token, true, now)).await
    }

    async fn play_since(&self, player_id: &str, since: i64) -> Result<rg::PlaySummary, StoreError> {
        let player = player_id.to_owned();
        self.read(false, move |conn| responsible::summary(conn, &player, since)).await
    }

    async fn import_bans(&self, keys: Vec<String>, now: i64) -> Result<Vec<(String, Cents)>, StoreError> {
        self.write(move |conn, _| responsible::import_bans(conn, &keys, now)).await
    }

    async fn back_office(&self, op: super::back_office::Op, now: i64) -> Result<super::back_office::Done, StoreError> {
        if op.reads_only() {
            return self.read(false, move |conn| tx::run(conn, async |tx| super::back_office::run(tx, &op, now).await)).await;
        }
        self.write(move |conn, _| tx::run(conn, async |tx| super::back_office::run(tx, &op, now).await)).await
    }

    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        self.read(false, |conn| {
            Ok(conn
                .prepare_cached("SELECT kid, secret, created_at FROM signing_keys ORDER BY created_at, kid")?
                .query_map([], |r| Ok(SigningKeyRecord { kid: r.get(0)?, secret: r.get(1)?, created_at: r.get(2)? }))?
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        self.write(move |conn, _| {
            conn.prepare_cached("INSERT INTO signing_keys (kid, secret, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")?.execute(params![
                key.kid,
                key.secret.as_slice(),
                key.created_at
            ])?;
            Ok(())
        })
        .await
    }

    async fn ledger_facts(&self) -> Result<LedgerFacts, StoreError> {
        // One read transaction: every fact comes from the same snapshot, even while the server sells.
        let lots = self.lots.clone();
        self.read(true, move |conn| {
            conn.execute_batch("BEGIN")?;
            let facts = ledger_facts(conn, &lots);
            conn.execute_batch("COMMIT")?;
            facts
        })
        .await
    }
}

/// What [`backup`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    pub bytes: u64,
    pub tickets: i64,
}

/// Copies the store in `database` to `dest`, consistent as of one instant, while a server may be selling:
/// `VACUUM INTO` reads one snapshot (a read transaction, which blocks no writer) and writes a compact
/// copy. SQLite's page-by-page backup would start over at every write another process makes, and
/// never end under a steady stream of sales. The copy is written beside `dest` owner-only (it holds the
/// store's secrets), checked, flushed to disk, and only then renamed to `dest`: a copy found under
/// that name is whole. `dest` must not exist.
pub fn backup(database: &Path, dest: &Path) -> Result<BackupReport, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |what: &str, e: std::io::Error| StoreError::Backend(format!("{what} {}: {e}", dest.display()));
    if dest.exists() {
        return Err(StoreError::Backend(format!("{} exists already: a backup never overwrites a file", dest.display())));
    }
    if !database.exists() {
        return Err(StoreError::Backend(format!("no store in {}", database.display())));
    }
    let mut partial = dest.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    // VACUUM INTO fills an empty file it finds: made here, owner-only, before any byte is in it.
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial).map_err(|e| io("cannot create the copy of", e))?;
    let copied = (|| -> Result<BackupReport, StoreError> {
        let conn = Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let target = partial.to_str().ok_or_else(|| StoreError::Backend("the backup's path is not UTF-8".into()))?;
        conn.execute("VACUUM INTO ?1", [target])?;
        let copy = Connection::open_with_flags(&partial, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let check: String = copy.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(StoreError::Backend(format!("the copy fails SQLite's check: {check}")));
        }
        let tickets = copy.query_row("SELECT COUNT(*) FROM tickets", [], |r| r.get(0))?;
        drop(copy);
        let file = std::fs::File::open(&partial).map_err(|e| io("cannot reopen", e))?;
        file.sync_all().map_err(|e| io("cannot flush", e))?;
        Ok(BackupReport { bytes: file.metadata().map_err(|e| io("cannot read", e))?.len(), tickets })
    })();
    let report = match copied {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, dest).map_err(|e| io("cannot name the copy", e))?;
    // The rename itself is durable once the directory is flushed.
    let folder = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(folder).and_then(|d| d.sync_all()).map_err(|e| io("cannot flush the folder of", e))?;
    Ok(report)
}
