//! A unit of work written once for both backends: [`Tx`] runs SQL that both dialects read alike
//! (`$n` parameters; SQLite's backend numbers them) and moves money as the backend's ledger does.
//! What is not on a sale's path (the back office) is written against it, so that each backend only
//! says how it runs a statement.
//!
//! SQLite's implementation never waits: its futures are ready at once, and the writer thread drives
//! them with `block_on` inside its savepoint. PostgreSQL's run in its transaction and may ask for the
//! unit to be run again ([`Tx::conflict`]).

use super::StoreError;
use super::ledger::Transfer;

/// A parameter or a column's value: what the back office's statements bind and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
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

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
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

impl super::rows::Columns for Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        match self.0.get(i) {
            Some(Value::Text(s)) => Ok(s.clone()),
            other => Err(StoreError::Backend(format!("column {i}: {other:?} where a text is expected"))),
        }
    }

    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.optional_int(i)?.ok_or_else(|| StoreError::Backend(format!("column {i}: null where a number is expected")))
    }

    fn optional_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.0.get(i) {
            Some(Value::Int(n)) => Ok(Some(*n)),
            Some(Value::Null) => Ok(None),
            other => Err(StoreError::Backend(format!("column {i}: {other:?} where a number is expected"))),
        }
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        Err(StoreError::Backend(format!("column {i}: bytes are not read through a portable unit of work")))
    }
}

impl Row {
    pub fn optional_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            _ => super::rows::Columns::text(self, i).map(Some),
        }
    }
}

/// One unit of work (or one read) in progress on a backend. Its futures are as `Send` as the
/// backend's: PostgreSQL's are (a unit may move between threads), SQLite's need not be (its writer
/// thread drives them to the end at once).
#[allow(async_fn_in_trait)]
pub trait Tx {
    /// What a failure is on this backend; a [`StoreError`] becomes one.
    type Error: From<StoreError>;

    /// A wallet's guard row, `$1` naming the wallet's account (see `responsible`).
    const WALLET: &'static str;
    /// The guard row `a` of player `p`'s wallet, to join on.
    const WALLET_OF_PLAYER: &'static str;

    async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, Self::Error>;
    async fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, Self::Error>;
    /// Moves money as the backend's ledger does; the debited account's new balance, or `None` if a
    /// wallet could not pay it.
    async fn transfer(&mut self, transfer: &Transfer<'_>, now: i64) -> Result<Option<i64>, Self::Error>;
    /// Real money paid in by the operator, through the wallet's guard (`responsible`); the new balance.
    async fn deposit(&mut self, player: &str, credit: &super::Credit, now: i64) -> Result<crate::money::Cents, Self::Error>;
    /// A break, exclusion or closure, as the backend's `responsible` makes one (sessions ended, recorded).
    async fn pause(&mut self, player: &str, pause: super::responsible::Pause, actor: super::responsible::Actor, now: i64) -> Result<(), Self::Error>;
    /// Another unit of work took what this one meant to write: it is to be run again.
    fn conflict(why: String) -> Self::Error;

    async fn query_opt(&mut self, sql: &str, params: &[Value]) -> Result<Option<Row>, Self::Error> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }
}
