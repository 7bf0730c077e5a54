//! [`Tx`] on SQLite: statements on the writer's connection (or a reader's), ready at once. A `$n`
//! parameter is bound by the name SQLite gives it, so the statements are PostgreSQL's text as it is.

use crate::server::store::error::Failure;
use crate::server::store::postings::{Account, Transfer};
use crate::server::store::tx::{Layout, Row, Tx, Value};
use crate::server::store::{StoreError, sql_amount};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{CachedStatement, Connection, ErrorCode, OptionalExtension, params};

/// A wallet's guard row is its row of `accounts`, which holds every account's balance.
pub(super) static LAYOUT: Layout = Layout {
    wallet_table: "accounts",
    wallet_key: "id = $1",
    wallet_of_player: "accounts a ON a.id = 'wallet:' || p.id",
    stored_balances: "SELECT id, balance FROM accounts",
};

/// A unit of work on a connection. Held by `&mut`, so that a unit's future may be `Send` as every
/// engine's must; SQLite's is always driven to its end on the thread that owns the connection.
pub(super) struct SqliteTx<'c>(pub &'c mut Connection);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Backend(format!("sqlite: {e}"))
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        match e.sqlite_error() {
            Some(f)
                if f.code == ErrorCode::ConstraintViolation
                    && [rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE, rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY]
                        .contains(&f.extended_code) =>
            {
                Failure::Duplicate(e.to_string())
            }
            _ => Failure::Store(e.into()),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(n) => ValueRef::Integer(*n),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Bytes(b) => ValueRef::Blob(b),
        }))
    }
}

fn value(v: ValueRef<'_>) -> Result<Value, StoreError> {
    match v {
        ValueRef::Null => Ok(Value::Null),
        ValueRef::Integer(n) => Ok(Value::Int(n)),
        ValueRef::Text(t) => Ok(Value::Text(String::from_utf8_lossy(t).into_owned())),
        ValueRef::Blob(b) => Ok(Value::Bytes(b.to_vec())),
        ValueRef::Real(r) => Err(StoreError::Backend(format!("a real number ({r}) where none is stored"))),
    }
}

/// Binds each parameter of `statement` by its name: `$3` takes the third value.
fn bind(statement: &mut CachedStatement<'_>, params: &[Value]) -> Result<(), Failure> {
    for index in 1..=statement.parameter_count() {
        let n = statement.parameter_name(index).and_then(|name| name.strip_prefix('$')?.parse::<usize>().ok());
        let value = n
            .and_then(|n| params.get(n.checked_sub(1)?))
            .ok_or_else(|| StoreError::Backend(format!("parameter {index} of a statement has no value")))?;
        statement.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

impl SqliteTx<'_> {
    /// Moves money: the debited wallet must hold it (checked by the same `UPDATE` that takes it), both
    /// balances change with the transfer row. Returns the debited account's new balance, or `None` if
    /// it could not pay.
    pub(super) fn move_money(&mut self, t: &Transfer<'_>, now: i64) -> Result<Option<i64>, Failure> {
        let paid: Option<i64> = self
            .0
            .prepare_cached(
                "UPDATE accounts SET balance = balance - ?2 WHERE id = ?1 AND (kind <> 'wallet' OR balance \
                >= ?2) RETURNING balance",
            )?
            .query_row(params![t.debit.id(), sql_amount(t.amount)?], |r| r.get(0))
            .optional()?;
        if paid.is_some() {
            self.post(t, now)?;
        }
        Ok(paid)
    }

    /// The rest of a transfer whose debit is done: the credit, and the transfer's row.
    pub(super) fn post(&mut self, t: &Transfer<'_>, now: i64) -> Result<(), Failure> {
        let amount = sql_amount(t.amount)?;
        self.add_to(&t.credit, amount)?;
        self.0
            .prepare_cached(
                "INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at) VALUES \
                (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![t.kind.as_str(), t.debit.id(), t.credit.id(), amount, t.ticket, t.reason, now])?;
        Ok(())
    }

    fn add_to(&mut self, account: &Account<'_>, delta: i64) -> Result<(), Failure> {
        let changed = self
            .0
            .prepare_cached("UPDATE accounts SET balance = balance + ?2 WHERE id = ?1")?
            .execute(params![account.id(), delta])?;
        if changed != 1 {
            return Err(StoreError::Backend(format!("no account {}", account.id())).into());
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Tx for SqliteTx<'_> {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, Failure> {
        let mut statement = self.0.prepare_cached(sql)?;
        bind(&mut statement, params)?;
        // Stepped through whatever it returns: a statement with `RETURNING` is run whole too.
        let mut rows = statement.raw_query();
        while rows.next()?.is_some() {}
        drop(rows);
        drop(statement);
        Ok(self.0.changes())
    }

    async fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, Failure> {
        let mut statement = self.0.prepare_cached(sql)?;
        bind(&mut statement, params)?;
        let width = statement.column_count();
        let mut rows = statement.raw_query();
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(Row((0..width).map(|i| value(r.get_ref(i)?)).collect::<Result<_, StoreError>>()?));
        }
        Ok(out)
    }

    async fn transfer(&mut self, transfer: &Transfer<'_>, now: i64) -> Result<Option<i64>, Failure> {
        self.move_money(transfer, now)
    }

    async fn shift(&mut self, account: &Account<'_>, delta: i64, _spread: &str) -> Result<(), Failure> {
        self.add_to(account, delta)
    }

    async fn open_account(&mut self, account: &Account<'_>) -> Result<(), Failure> {
        self.0
            .prepare_cached("INSERT INTO accounts (id, kind) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING")?
            .execute(params![account.id(), account.kind()])?;
        Ok(())
    }

    async fn hold_wallet(&mut self, _wallet: &str) -> Result<bool, Failure> {
        // One writer: nothing else moves money while this unit runs.
        Ok(true)
    }

    async fn open_sales(&mut self, emission: u32, block: u32, size: u32, _now: i64) -> Result<(), Failure> {
        self.0
            .prepare_cached("INSERT INTO block_sales (emission, block, size) VALUES (?1, ?2, ?3)")?
            .execute(params![emission, block, size])?;
        Ok(())
    }
}
