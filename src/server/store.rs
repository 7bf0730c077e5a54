//! The server's store: embedded SQLite (WAL) in the data directory.
//!
//! The interface is this module's functions, each taking a connection and doing one whole unit of work;
//! every one that moves money runs in a single `BEGIN IMMEDIATE` transaction, so a sale (debit, ticket,
//! idempotency key) or a settlement (win credit) happens entirely or not at all. Another backend
//! (PostgreSQL) would implement these same functions. The balance is never stored: it is the sum of the
//! player's ledger rows, and a unique index forbids a second stake or a second win for one ticket.

use super::error::ApiError;
use crate::block::{Block, LotCode, Seed};
use crate::money::Cents;
use crate::play::Mode;
use crate::rules::prize_table::{BLOCK_SIZE, TICKET_PRICE};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use std::path::Path;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE,
    password_hash TEXT,
    guest INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake', 'win')),
    amount_cents INTEGER NOT NULL,
    ticket_id TEXT REFERENCES tickets(id),
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_player ON ledger(player_id);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_once_per_ticket ON ledger(ticket_id, kind) WHERE ticket_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS designs (
    hash BLOB PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS blocks (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    seed BLOB NOT NULL,
    root BLOB NOT NULL,
    design_hash BLOB NOT NULL REFERENCES designs(hash),
    lots BLOB NOT NULL,
    sold INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    closed_at INTEGER,
    PRIMARY KEY (emission, block)
);
CREATE TABLE IF NOT EXISTS tickets (
    id TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('jouez', 'auto')),
    payload TEXT NOT NULL,
    lot_cents INTEGER NOT NULL,
    revealed TEXT NOT NULL DEFAULT '[]',
    sold_at INTEGER NOT NULL,
    credited_at INTEGER,
    finished_at INTEGER,
    UNIQUE (emission, block, idx)
);
CREATE INDEX IF NOT EXISTS tickets_player ON tickets(player_id, sold_at);
CREATE TABLE IF NOT EXISTS idempotency (
    player_id TEXT NOT NULL,
    key TEXT NOT NULL,
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    PRIMARY KEY (player_id, key)
);
"#;

pub fn open(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

fn immediate(conn: &mut Connection) -> Result<Transaction<'_>, ApiError> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

// ---- players, sessions, ledger ---------------------------------------------------------------------

pub struct PlayerRow {
    pub id: String,
    pub name: Option<String>,
    pub guest: bool,
}

/// Creates a player with an optional opening deposit, in one transaction.
pub fn create_player(
    conn: &mut Connection,
    player: &PlayerRow,
    password_hash: Option<&str>,
    deposit: Cents,
    now: i64,
) -> Result<(), ApiError> {
    let tx = immediate(conn)?;
    let inserted = tx.execute(
        "INSERT INTO players (id, name, password_hash, guest, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO NOTHING",
        params![player.id, player.name, password_hash, player.guest, now],
    )?;
    if inserted == 0 {
        return Err(ApiError::Conflict("name_taken", "this name is already taken".into()));
    }
    if !deposit.is_zero() {
        insert_ledger(&tx, &player.id, "deposit", deposit.0 as i64, None, now)?;
    }
    tx.commit()?;
    Ok(())
}

pub fn deposit(conn: &mut Connection, player_id: &str, amount: Cents, now: i64) -> Result<i64, ApiError> {
    let tx = immediate(conn)?;
    insert_ledger(&tx, player_id, "deposit", amount.0 as i64, None, now)?;
    let balance = balance(&tx, player_id)?;
    tx.commit()?;
    Ok(balance)
}

pub fn credentials(conn: &Connection, name: &str) -> Result<Option<(String, String)>, ApiError> {
    Ok(conn
        .query_row("SELECT id, password_hash FROM players WHERE name = ?1 AND password_hash IS NOT NULL", [name], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

pub fn player(conn: &Connection, id: &str) -> Result<PlayerRow, ApiError> {
    conn.query_row("SELECT id, name, guest FROM players WHERE id = ?1", [id], |r| {
        Ok(PlayerRow { id: r.get(0)?, name: r.get(1)?, guest: r.get(2)? })
    })
    .optional()?
    .ok_or(ApiError::NotFound("player"))
}

pub fn create_session(conn: &Connection, token_hash: &str, player_id: &str, expires_at: i64) -> Result<(), ApiError> {
    conn.execute("INSERT INTO sessions (token_hash, player_id, expires_at) VALUES (?1, ?2, ?3)", params![token_hash, player_id, expires_at])?;
    Ok(())
}

pub fn session_player(conn: &Connection, token_hash: &str, now: i64) -> Result<Option<String>, ApiError> {
    Ok(conn
        .query_row("SELECT player_id FROM sessions WHERE token_hash = ?1 AND expires_at > ?2", params![token_hash, now], |r| r.get(0))
        .optional()?)
}

pub fn delete_session(conn: &Connection, token_hash: &str) -> Result<(), ApiError> {
    conn.execute("DELETE FROM sessions WHERE token_hash = ?1", [token_hash])?;
    Ok(())
}

fn insert_ledger(tx: &Transaction, player_id: &str, kind: &str, amount: i64, ticket: Option<&str>, now: i64) -> Result<(), ApiError> {
    tx.execute(
        "INSERT INTO ledger (player_id, kind, amount_cents, ticket_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![player_id, kind, amount, ticket, now],
    )?;
    Ok(())
}

/// The balance is the ledger's sum, never a stored number.
pub fn balance(conn: &Connection, player_id: &str) -> Result<i64, ApiError> {
    Ok(conn.query_row("SELECT COALESCE(SUM(amount_cents), 0) FROM ledger WHERE player_id = ?1", [player_id], |r| r.get(0))?)
}

// ---- designs and blocks -------------------------------------------------------------------------

pub fn insert_block(conn: &mut Connection, block: &Block, seed: &Seed, design_text: &str, now: i64) -> Result<(), ApiError> {
    let tx = immediate(conn)?;
    tx.execute("INSERT OR IGNORE INTO designs (hash, text) VALUES (?1, ?2)", params![block.design_hash.as_slice(), design_text])?;
    tx.execute(
        "INSERT INTO blocks (emission, block, seed, root, design_hash, lots, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![block.emission, block.block, seed.as_slice(), block.root.as_slice(), block.design_hash.as_slice(), block.lots, now],
    )?;
    tx.commit()?;
    Ok(())
}

pub fn next_emission(conn: &Connection) -> Result<u32, ApiError> {
    Ok(conn.query_row("SELECT COALESCE(MAX(emission), 0) + 1 FROM blocks", [], |r| r.get(0))?)
}

pub struct BlockRow {
    pub emission: u32,
    pub block: u32,
    pub sold: u32,
    pub seed: Seed,
    pub root: [u8; 32],
    pub design_hash: [u8; 32],
    pub closed: bool,
}

fn block_row(r: &rusqlite::Row) -> rusqlite::Result<BlockRow> {
    Ok(BlockRow {
        emission: r.get(0)?,
        block: r.get(1)?,
        sold: r.get(2)?,
        seed: r.get(3)?,
        root: r.get(4)?,
        design_hash: r.get(5)?,
        closed: r.get::<_, Option<i64>>(6)?.is_some(),
    })
}

const BLOCK_COLUMNS: &str = "emission, block, sold, seed, root, design_hash, closed_at";

pub fn blocks(conn: &Connection) -> Result<Vec<BlockRow>, ApiError> {
    let mut stmt = conn.prepare(&format!("SELECT {BLOCK_COLUMNS} FROM blocks ORDER BY emission, block"))?;
    let rows = stmt.query_map([], block_row)?.collect::<Result<_, _>>()?;
    Ok(rows)
}

pub fn block(conn: &Connection, emission: u32, block: u32) -> Result<BlockRow, ApiError> {
    conn.query_row(&format!("SELECT {BLOCK_COLUMNS} FROM blocks WHERE emission = ?1 AND block = ?2"), params![emission, block], block_row)
        .optional()?
        .ok_or(ApiError::NotFound("block"))
}

pub fn block_lots(conn: &Connection, emission: u32, block: u32) -> Result<Vec<LotCode>, ApiError> {
    Ok(conn.query_row("SELECT lots FROM blocks WHERE emission = ?1 AND block = ?2", params![emission, block], |r| r.get(0))?)
}

pub fn design_text(conn: &Connection, hash: &[u8; 32]) -> Result<String, ApiError> {
    Ok(conn.query_row("SELECT text FROM designs WHERE hash = ?1", [hash.as_slice()], |r| r.get(0))?)
}

// ---- tickets ------------------------------------------------------------------------------------

/// What a sale needs from the open block to print ticket `index`.
pub struct SaleSlot {
    pub emission: u32,
    pub block: u32,
    pub index: u32,
    pub seed: Seed,
    pub design_hash: [u8; 32],
}

/// Everything a sale writes, once the ticket is printed and signed.
pub struct NewTicket {
    pub id: String,
    pub player_id: String,
    pub mode: &'static str,
    pub payload: String,
    pub lot: Cents,
}

pub enum Sale {
    /// The idempotency key was seen before: the ticket it bought.
    Replay(String),
    Sold(String),
}

/// One purchase, in one transaction: replay an idempotency key, or check the balance, take the next
/// unsold ticket of the open block (opening the next block when one sells out), debit 3 € and record it.
/// `print` composes and signs the ticket for its slot; it runs inside the transaction, so a failure
/// there leaves no trace.
pub fn sell(
    conn: &mut Connection,
    player_id: &str,
    idempotency_key: &str,
    now: i64,
    print: impl FnOnce(&Connection, &SaleSlot) -> Result<NewTicket, ApiError>,
) -> Result<Sale, ApiError> {
    let tx = immediate(conn)?;
    let seen: Option<String> = tx
        .query_row("SELECT ticket_id FROM idempotency WHERE player_id = ?1 AND key = ?2", params![player_id, idempotency_key], |r| r.get(0))
        .optional()?;
    if let Some(ticket) = seen {
        return Ok(Sale::Replay(ticket));
    }
    let price = TICKET_PRICE.0 as i64;
    let balance = balance(&tx, player_id)?;
    if balance < price {
        return Err(ApiError::InsufficientFunds { balance, price });
    }
    let slot = tx
        .query_row(
            "SELECT emission, block, sold, seed, design_hash FROM blocks WHERE sold < ?1 ORDER BY emission, block LIMIT 1",
            [BLOCK_SIZE],
            |r| Ok(SaleSlot { emission: r.get(0)?, block: r.get(1)?, index: r.get(2)?, seed: r.get(3)?, design_hash: r.get(4)? }),
        )
        .optional()?
        .ok_or(ApiError::SoldOut)?;
    let ticket = print(&tx, &slot)?;
    tx.execute(
        "INSERT INTO tickets (id, player_id, emission, block, idx, mode, payload, lot_cents, sold_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![ticket.id, player_id, slot.emission, slot.block, slot.index, ticket.mode, ticket.payload, ticket.lot.0 as i64, now],
    )?;
    let closes = slot.index + 1 == BLOCK_SIZE;
    tx.execute(
        "UPDATE blocks SET sold = sold + 1, closed_at = CASE WHEN ?3 THEN ?4 END WHERE emission = ?1 AND block = ?2",
        params![slot.emission, slot.block, closes, now],
    )?;
    insert_ledger(&tx, player_id, "stake", -price, Some(&ticket.id), now)?;
    tx.execute("INSERT INTO idempotency (player_id, key, ticket_id) VALUES (?1, ?2, ?3)", params![player_id, idempotency_key, ticket.id])?;
    tx.commit()?;
    Ok(Sale::Sold(ticket.id))
}

#[derive(Debug, Clone)]
pub struct TicketRow {
    pub id: String,
    pub emission: u32,
    pub block: u32,
    pub index: u32,
    pub mode: Mode,
    pub payload: String,
    pub lot: Cents,
    pub revealed: Vec<usize>,
    pub sold_at: i64,
    pub credited_at: Option<i64>,
    pub finished_at: Option<i64>,
}

const TICKET_COLUMNS: &str = "id, emission, block, idx, mode, payload, lot_cents, revealed, sold_at, credited_at, finished_at";

fn ticket_row(r: &rusqlite::Row) -> rusqlite::Result<TicketRow> {
    let revealed: String = r.get(7)?;
    let mode: String = r.get(4)?;
    let mode = Mode::parse(&mode).ok_or_else(|| rusqlite::Error::InvalidColumnType(4, "mode".into(), rusqlite::types::Type::Text))?;
    Ok(TicketRow {
        id: r.get(0)?,
        emission: r.get(1)?,
        block: r.get(2)?,
        index: r.get(3)?,
        mode,
        payload: r.get(5)?,
        lot: Cents(r.get::<_, i64>(6)? as u64),
        revealed: serde_json::from_str(&revealed).unwrap_or_default(),
        sold_at: r.get(8)?,
        credited_at: r.get(9)?,
        finished_at: r.get(10)?,
    })
}

/// A ticket of this player; another player's ticket is "not found", never "forbidden".
pub fn ticket(conn: &Connection, player_id: &str, id: &str) -> Result<TicketRow, ApiError> {
    conn.query_row(&format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = ?1 AND player_id = ?2"), params![id, player_id], ticket_row)
        .optional()?
        .ok_or(ApiError::NotFound("ticket"))
}

pub fn history(conn: &Connection, player_id: &str, limit: u32) -> Result<Vec<TicketRow>, ApiError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = ?1 ORDER BY sold_at DESC, rowid DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![player_id, limit], ticket_row)?.collect::<Result<_, _>>()?;
    Ok(rows)
}

pub fn set_revealed(conn: &Connection, id: &str, revealed: &[usize]) -> Result<(), ApiError> {
    conn.execute("UPDATE tickets SET revealed = ?2 WHERE id = ?1", params![id, serde_json::to_string(revealed).expect("a list of numbers")])?;
    Ok(())
}

/// Credits a ticket's win exactly once (the first of the player's `complete` and the server's
/// settlement), and marks it finished if `finish`. Returns whether this call credited it.
pub fn settle(conn: &mut Connection, id: &str, finish: bool, now: i64) -> Result<bool, ApiError> {
    let tx = immediate(conn)?;
    let (player_id, lot, credited): (String, i64, Option<i64>) =
        tx.query_row("SELECT player_id, lot_cents, credited_at FROM tickets WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let credits = credited.is_none();
    if credits {
        if lot > 0 {
            insert_ledger(&tx, &player_id, "win", lot, Some(id), now)?;
        }
        tx.execute("UPDATE tickets SET credited_at = ?2 WHERE id = ?1", params![id, now])?;
    }
    if finish {
        tx.execute("UPDATE tickets SET finished_at = COALESCE(finished_at, ?2) WHERE id = ?1", params![id, now])?;
    }
    tx.commit()?;
    Ok(credits)
}

/// Tickets sold before `sold_before` and still not credited: the ones the server settles by itself.
pub fn abandoned(conn: &Connection, sold_before: i64) -> Result<Vec<String>, ApiError> {
    let mut stmt = conn.prepare("SELECT id FROM tickets WHERE credited_at IS NULL AND sold_at <= ?1")?;
    let ids = stmt.query_map([sold_before], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(ids)
}
