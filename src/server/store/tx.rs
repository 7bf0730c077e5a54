//! A unit of work written once for both engines. [`Tx`] runs SQL that SQLite and PostgreSQL read
//! alike (`$n` parameters: PostgreSQL's by number, SQLite's by the name it gives each) and moves money
//! as the engine's ledger keeps it. Every unit that is not an engine's hot path (sales, settlement in
//! batches) is a function over `&mut dyn Tx`, run by [`super::Store`] as a read, a snapshot or a write.

use super::error::{Failure, StoreError};
use super::postings::{Account, Transfer};
use super::rows::Columns;
use std::future::Future;
use std::pin::Pin;

/// A parameter or a column's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(i64::from(n))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Int(i64::from(b))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_owned())
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::Text(s.clone())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Value {
        Value::Bytes(b.to_vec())
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Value {
        Value::Bytes(b)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A row read back: its columns in the order the statement names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row(pub Vec<Value>);

impl Row {
    fn column(&self, i: usize) -> Result<&Value, StoreError> {
        self.0.get(i).ok_or_else(|| StoreError::Backend(format!("no column {i}")))
    }

    pub fn optional_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.column(i)? {
            Value::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

impl Columns for Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        match self.column(i)? {
            Value::Text(s) => Ok(s.clone()),
            other => Err(StoreError::Backend(format!("column {i}: {other:?} where a text is expected"))),
        }
    }

    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.optional_int(i)?.ok_or_else(|| StoreError::Backend(format!("column {i}: null where a number is expected")))
    }

    fn optional_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.column(i)? {
            Value::Int(n) => Ok(Some(*n)),
            Value::Null => Ok(None),
            other => Err(StoreError::Backend(format!("column {i}: {other:?} where a number is expected"))),
        }
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        match self.column(i)? {
            Value::Bytes(b) => Ok(b.clone()),
            other => Err(StoreError::Backend(format!("column {i}: {other:?} where bytes are expected"))),
        }
    }
}

/// Where an engine keeps balances: the few SQL fragments the engines do not share.
#[derive(Debug)]
pub struct Layout {
    /// The table of a wallet's guard row (its balance, running totals, limits and pause: see
    /// `responsible`)…
    pub wallet_table: &'static str,
    /// …and the condition that picks it, `$1` naming the wallet's account.
    pub wallet_key: &'static str,
    /// The guard row `a` of player `p`'s wallet, to join on.
    pub wallet_of_player: &'static str,
    /// Every account's stored balance: its id, and its balance as a `BIGINT`.
    pub stored_balances: &'static str,
}

/// One unit of work (or one read) in progress on an engine.
#[async_trait::async_trait]
pub trait Tx: Send {
    fn layout(&self) -> &'static Layout;
    /// Runs a statement; the rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, Failure>;
    async fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, Failure>;
    /// Moves money as the engine's ledger does; the debited account's new balance, or `None` if a
    /// wallet could not pay it.
    async fn transfer(&mut self, transfer: &Transfer<'_>, now: i64) -> Result<Option<i64>, Failure>;
    /// Changes the balance of one of the game's own accounts (never a wallet) by `delta`: on
    /// PostgreSQL, of the shard `spread` picks, so that units for different players seldom meet.
    async fn shift(&mut self, account: &Account<'_>, delta: i64, spread: &str) -> Result<(), Failure>;
    /// Opens an account with its balance rows (opening it again changes nothing).
    async fn open_account(&mut self, account: &Account<'_>) -> Result<(), Failure>;
    /// Keeps every other unit of work from moving this wallet's money until this one ends; `false` if
    /// another unit holds it already (PostgreSQL). SQLite's one writer holds everything.
    async fn hold_wallet(&mut self, wallet: &str) -> Result<bool, Failure>;
    /// Puts a stored block on sale: its sale counters.
    async fn open_sales(&mut self, emission: u32, block: u32, size: u32, now: i64) -> Result<(), Failure>;
}

impl dyn Tx + '_ {
    /// The first row, if any.
    pub async fn query_opt(&mut self, sql: &str, params: &[Value]) -> Result<Option<Row>, Failure> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }

    /// The one row a statement always gives (an aggregate).
    pub async fn query_one(&mut self, sql: &str, params: &[Value]) -> Result<Row, Failure> {
        self.query_opt(sql, params).await?.ok_or_else(|| StoreError::Backend(format!("no row from {sql}")).into())
    }

    /// A player's wallet's balance.
    pub async fn balance(&mut self, player: &str) -> Result<crate::money::Cents, Failure> {
        let row = self.wallet_row(player, "balance").await?.ok_or(StoreError::NotFound("player"))?;
        Ok(super::cents(row.int(0)?)?)
    }

    /// A wallet's guard row's `columns`, if the wallet exists.
    pub async fn wallet_row(&mut self, player: &str, columns: &str) -> Result<Option<Row>, Failure> {
        let layout = self.layout();
        let sql = format!("SELECT {columns} FROM {} WHERE {}", layout.wallet_table, layout.wallet_key);
        self.query_opt(&sql, &[Account::Wallet(player).id().into()]).await
    }
}

/// A unit of work's future.
pub type Work<'t, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + Send + 't>>;

/// A unit of work: a function of the transaction and of its arguments (so that an engine can run it
/// again after a conflict, and SQLite's writer can run it on its own thread).
pub type WorkFn<A, T> = for<'t> fn(&'t mut dyn Tx, &'t A) -> Work<'t, T>;

/// How a unit of work is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads that need no snapshot of their own: each statement sees the newest committed data.
    Read,
    /// Reads that see one consistent snapshot, however long they take (a report, the ledger check).
    Snapshot,
    /// A change, whole or not at all, acknowledged once durable; run again after a conflict.
    Write,
}
