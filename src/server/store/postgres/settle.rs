//! Settlement in batches on PostgreSQL: due tickets claimed and credited in two statements, whatever
//! the batch's size. A batch that fails whole is settled again ticket by ticket, by the unit every
//! engine shares (`Store::settle_due`).

use super::{Isolation, PostgresStore, RETRIES, shard_of, unsigned};
use crate::money::Cents;
use crate::server::store::error::Failure;
use crate::server::store::postings::Transfer;
use crate::server::store::sql;
use crate::server::store::{DuePlace, SettleReport, StoreError, cents, sql_amount};
use deadpool_postgres::Transaction;
use std::collections::BTreeMap;

impl PostgresStore {
    /// Credits up to `limit` due tickets after `after`, in one transaction of two statements.
    pub(in crate::server::store) async fn settle_together(
        &self,
        sold_before: i64,
        after: &(i64, String),
        limit: usize,
        now: i64,
    ) -> Result<SettleReport, StoreError> {
        let limit = i64::try_from(limit).map_err(|e| StoreError::Backend(e.to_string()))?;
        let args = (sold_before, after.clone(), limit, now);
        self.core
            .in_transaction(RETRIES, Isolation::ReadCommitted, &args, |t, (sold_before, after, limit, now)| {
                Box::pin(settle_together(t, *sold_before, after, *limit, *now))
            })
            .await
    }
}

/// Settles a batch of due tickets in two statements whatever its size: the wallets it credits are
/// locked for a few milliseconds, not for a round trip per ticket (at 2 000 sales a second, batches
/// of 128 tickets settled one by one held their wallets for over a second, and the sales of those
/// players waited that long). Tickets another instance is settling are locked: passed over, never
/// credited twice.
async fn settle_together(
    tx: &Transaction<'_>,
    sold_before: i64,
    (after_sold, after_id): &(i64, String),
    limit: i64,
    now: i64,
) -> Result<SettleReport, Failure> {
    let claim = tx
        .prepare_cached(&format!(
            "WITH due AS ({} FOR UPDATE SKIP LOCKED) \
             UPDATE tickets t SET credited_at = $5 FROM due WHERE t.id = due.id \
             RETURNING t.id, t.sold_at, t.player_id, t.emission, t.block, t.lot_cents",
            sql::DUE_TICKETS
        ))
        .await?;
    let mut claimed = tx.query(&claim, &[&sold_before, after_sold, after_id, &limit, &now]).await?;
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
                "WITH moves AS (SELECT * FROM unnest($1::TEXT[], $2::INT[], $3::BIGINT[]) AS m(account, shard, \
                    change)), \
                      locked AS (SELECT b.account, b.shard FROM balances b JOIN moves m ON m.account = b.account AND \
                      m.shard = b.shard \
                                 ORDER BY b.account, b.shard FOR UPDATE OF b), \
                      moved AS (UPDATE balances b SET balance = b.balance + m.change FROM moves m, locked l \
                                WHERE b.account = m.account AND b.shard = m.shard AND l.account = m.account AND \
                                l.shard = m.shard RETURNING 1), \
                      kept AS (INSERT INTO transfers (kind, debit, credit, amount, ticket_id, created_at) \
                               SELECT $4, w.debit, w.credit, w.amount, w.id, $9 \
                               FROM unnest($5::TEXT[], $6::TEXT[], $7::TEXT[], $8::BIGINT[]) AS w(id, debit, credit, \
                               amount) RETURNING 1) \
                 SELECT (SELECT COUNT(*) FROM moved), (SELECT COUNT(*) FROM kept)",
            )
            .await?;
        let row = tx
            .query_one(&pay, &[&accounts, &shards, &changes, &kind, &tickets, &debits, &credits, &amounts, &now])
            .await?;
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
