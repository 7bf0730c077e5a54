//! [`Tx`] on SQLite: statements on the writer's connection (or a reader's), ready at once.

use super::responsible::prepare;
use crate::server::store::StoreError;
use crate::server::store::ledger::Transfer;
use crate::server::store::tx::{Row, Tx, Value};
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

pub(super) struct SqliteTx<'c>(pub &'c Connection);

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

fn value(v: ValueRef<'_>) -> Result<Value, StoreError> {
    match v {
        ValueRef::Null => Ok(Value::Null),
        ValueRef::Integer(n) => Ok(Value::Int(n)),
        ValueRef::Text(t) => Ok(Value::Text(String::from_utf8_lossy(t).into_owned())),
        other => Err(StoreError::Backend(format!("a column of type {:?} where a number or a text is expected", other.data_type()))),
    }
}

impl Tx for SqliteTx<'_> {
    type Error = StoreError;
    const WALLET: &'static str = "accounts WHERE id = $1";
    const WALLET_OF_PLAYER: &'static str = "accounts a ON a.id = 'wallet:' || p.id";

    async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        Ok(prepare(self.0, sql)?.execute(rusqlite::params_from_iter(params))? as u64)
    }

    async fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut statement = prepare(self.0, sql)?;
        let width = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(Row((0..width).map(|i| value(r.get_ref(i)?)).collect::<Result<_, StoreError>>()?));
        }
        Ok(out)
    }

    async fn transfer(&mut self, transfer: &Transfer<'_>, now: i64) -> Result<Option<i64>, StoreError> {
        super::transfer(self.0, transfer, now)
    }

    async fn deposit(&mut self, player: &str, credit: &crate::server::store::Credit, now: i64) -> Result<crate::money::Cents, StoreError> {
        super::responsible::deposit(self.0, player, credit, now)
    }

    async fn pause(
        &mut self,
        player: &str,
        pause: crate::server::store::responsible::Pause,
        actor: crate::server::store::responsible::Actor,
        now: i64,
    ) -> Result<(), StoreError> {
        super::responsible::pause(self.0, player, pause, actor, now)
    }

    fn conflict(why: String) -> StoreError {
        // One writer: nothing can take a place between this unit's read and its write.
        StoreError::Backend(why)
    }
}

/// Runs a portable unit of work on this connection: its futures are ready at once.
pub(super) fn run<T>(conn: &Connection, work: impl AsyncFnOnce(&mut SqliteTx<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
    futures::executor::block_on(work(&mut SqliteTx(conn)))
}
