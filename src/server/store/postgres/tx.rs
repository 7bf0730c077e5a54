//! [`Tx`] on PostgreSQL: statements in the unit of work's transaction (or, for a read, on a pooled
//! connection). A parameter is sent as the column it meets expects (an `INTEGER`, a `BIGINT`, a
//! `BOOLEAN`), and a `BOOLEAN` is read as 0 or 1, so that the statements need no casts.

use super::{STRIPES, shard_of, stripe_start};
use crate::server::store::StoreError;
use crate::server::store::error::Failure;
use crate::server::store::postings::{Account, Transfer};
use crate::server::store::tx::{Layout, Row, Tx, Value};
use bytes::BytesMut;
use deadpool_postgres::GenericClient;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A wallet's guard row is its one shard of `balances`; the game's own accounts have [`STRIPES`].
pub(super) static LAYOUT: Layout = Layout {
    wallet_table: "balances",
    wallet_key: "account = $1 AND shard = 0",
    wallet_of_player: "balances a ON a.account = 'wallet:' || p.id AND a.shard = 0",
    stored_balances: "SELECT account, CAST(SUM(balance) AS BIGINT) FROM balances GROUP BY account",
};

/// A unit of work on a transaction, or a read on a connection.
pub(super) struct PgTx<'a, C>(pub &'a C);

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(n) if *ty == Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
            Value::Int(n) if *ty == Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
            Value::Int(n) if *ty == Type::BOOL => (*n != 0).to_sql(ty, out),
            Value::Int(n) => n.to_sql(ty, out),
            Value::Text(s) => s.as_str().to_sql(ty, out),
            Value::Bytes(b) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT2, Type::INT4, Type::INT8, Type::BOOL, Type::TEXT, Type::VARCHAR, Type::BYTEA].contains(ty)
    }

    to_sql_checked!();
}

fn value(row: &tokio_postgres::Row, i: usize) -> Result<Value, tokio_postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?.map_or(Value::Null, |n| Value::Int(n.into()))
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?.map_or(Value::Null, |n| Value::Int(n.into()))
    } else if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.map_or(Value::Null, Value::Int)
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?.map_or(Value::Null, |b| Value::Int(b.into()))
    } else if *ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)?.map_or(Value::Null, Value::Bytes)
    } else {
        row.try_get::<_, Option<String>>(i)?.map_or(Value::Null, Value::Text)
    })
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

#[async_trait::async_trait]
impl<C: GenericClient + Sync> Tx for PgTx<'_, C> {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

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
        let player =
            [&t.debit, &t.credit].into_iter().find_map(|a| if let Account::Wallet(p) = a { Some(*p) } else { None });
        let spread = shard_of(player.or(t.reason).unwrap_or_default().as_bytes());
        let shard = |a: &Account| if matches!(a, Account::Wallet(_)) { 0 } else { spread };
        super::transfer(self.0, t, (shard(&t.debit), shard(&t.credit)), now).await
    }

    async fn shift(&mut self, account: &Account<'_>, delta: i64, spread: &str) -> Result<(), Failure> {
        let shifted = self
            .0
            .execute(
                "UPDATE balances SET balance = balance + $2 WHERE account = $1 AND shard = $3",
                &[&account.id(), &delta, &shard_of(spread.as_bytes())],
            )
            .await?;
        if shifted != 1 {
            return Err(StoreError::Backend(format!("no account {}", account.id())).into());
        }
        Ok(())
    }

    /// Opens an account with its balance rows: one for a wallet, [`STRIPES`] for the game's own.
    async fn open_account(&mut self, account: &Account<'_>) -> Result<(), Failure> {
        let (id, wallet) = (account.id(), matches!(account, Account::Wallet(_)));
        self.0
            .execute("INSERT INTO accounts (id, kind) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&id, &account.kind()])
            .await?;
        let shards = if wallet { 1 } else { STRIPES as i32 };
        self.0
            .execute(
                "INSERT INTO balances (account, shard, wallet) SELECT $1, s, $2 FROM generate_series(0, $3 - 1) s ON \
                    CONFLICT DO NOTHING",
                &[&id, &wallet, &shards],
            )
            .await?;
        Ok(())
    }

    /// The wallet's row locked for this unit, unless another holds it (`SKIP LOCKED`): every sale,
    /// credit and debit of the wallet updates that row.
    async fn hold_wallet(&mut self, wallet: &str) -> Result<bool, Failure> {
        Ok(self
            .0
            .query_opt("SELECT 1 FROM balances WHERE account = $1 AND shard = 0 FOR UPDATE SKIP LOCKED", &[&wallet])
            .await?
            .is_some())
    }

    /// A block's indices cut into [`STRIPES`] counters, each sold from on its own.
    async fn open_sales(&mut self, emission: u32, block: u32, size: u32, now: i64) -> Result<(), Failure> {
        let (emission, block) = (super::int(emission)?, super::int(block)?);
        for stripe in 0..STRIPES {
            let (start, stop) = (super::int(stripe_start(stripe, size))?, super::int(stripe_start(stripe + 1, size))?);
            self.0
                .execute(
                    "INSERT INTO block_stripes (emission, block, stripe, start, next, stop, exhausted_at) \
                     VALUES ($1, $2, $3, $4::INTEGER, $4::INTEGER, $5::INTEGER, CASE WHEN $4::INTEGER = $5::INTEGER \
                     THEN $6::BIGINT END)",
                    &[&emission, &block, &super::int(stripe)?, &start, &stop, &now],
                )
                .await?;
        }
        Ok(())
    }
}
