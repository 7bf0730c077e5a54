//! [`Tx`] on PostgreSQL: statements in the unit of work's transaction. A parameter is sent as the
//! column it meets expects (an `INTEGER` or a `BIGINT`), and a `BOOLEAN` is read as 0 or 1, so that
//! the portable statements need no casts.

use super::{Failure, shard_of};
use crate::server::store::ledger::{Account, Transfer};
use crate::server::store::tx::{Row, Tx, Value};
use bytes::BytesMut;
use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

pub(super) struct PgTx<'a, 't>(pub &'a Transaction<'t>);

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(n) if *ty == Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
            Value::Int(n) if *ty == Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
            Value::Int(n) if *ty == Type::BOOL => (*n != 0).to_sql(ty, out),
            Value::Int(n) => n.to_sql(ty, out),
            Value::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT2, Type::INT4, Type::INT8, Type::BOOL, Type::TEXT, Type::VARCHAR].contains(ty)
    }

    to_sql_checked!();
}

fn value(row: &tokio_postgres::Row, i: usize) -> Result<Value, tokio_postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?.map_or(Value::Null, |n| Value::Int(n.into()))
    } else if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?.map_or(Value::Null, |n| Value::Int(n.into()))
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?.map_or(Value::Null, |b| Value::Int(b.into()))
    } else if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.map_or(Value::Null, Value::Int)
    } else {
        row.try_get::<_, Option<String>>(i)?.map_or(Value::Null, Value::Text)
    })
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Tx for PgTx<'_, '_> {
    type Error = Failure;
    const WALLET: &'static str = "balances WHERE account = $1 AND shard = 0";
    const WALLET_OF_PLAYER: &'static str = "balances a ON a.account = 'wallet:' || p.id AND a.shard = 0";

    async fn execute(&mut self, sql: &str, values: &[Value]) -> Result<u64, Failure> {
        let statement = self.0.prepare_cached(sql).await?;
        Ok(self.0.execute(&statement, &params(values)).await?)
    }

    async fn query(&mut self, sql: &str, values: &[Value]) -> Result<Vec<Row>, Failure> {
        let statement = self.0.prepare_cached(sql).await?;
        let rows = self.0.query(&statement, &params(values)).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(Row((0..r.len()).map(|i| value(r, i)).collect::<Result<_, _>>()?));
        }
        Ok(out)
    }

    /// A wallet has one shard; the game's own account takes the shard of the wallet on the other side
    /// (a withdrawal paid, which names none, the shard of its reason), as the ledger's other moves do.
    async fn transfer(&mut self, t: &Transfer<'_>, now: i64) -> Result<Option<i64>, Failure> {
        let player = [&t.debit, &t.credit].into_iter().find_map(|a| if let Account::Wallet(p) = a { Some(*p) } else { None });
        let spread = shard_of(player.or(t.reason).unwrap_or_default().as_bytes());
        let shard = |a: &Account| if matches!(a, Account::Wallet(_)) { 0 } else { spread };
        super::transfer(self.0, t, (shard(&t.debit), shard(&t.credit)), now).await
    }

    async fn deposit(&mut self, player: &str, credit: &crate::server::store::Credit, now: i64) -> Result<crate::money::Cents, Failure> {
        super::responsible::deposit(self.0, player, credit, now).await
    }

    async fn pause(
        &mut self,
        player: &str,
        pause: crate::server::store::responsible::Pause,
        actor: crate::server::store::responsible::Actor,
        now: i64,
    ) -> Result<(), Failure> {
        super::responsible::pause(self.0, player, pause, actor, now).await
    }

    fn conflict(why: String) -> Failure {
        Failure::Retry(why)
    }
}
