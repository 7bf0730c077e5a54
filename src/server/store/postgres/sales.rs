//! Sales grouped per instance, as SQLite's writer groups them: the sales that arrive while others are
//! being written wait together, and are then sold in one transaction of a few multi-row statements
//! (one lookup of their keys, one debit of their wallets, a claim of as many indices, one insert of
//! their tickets and stakes), so that PostgreSQL spends one commit and a handful of statements on a
//! group rather than on each sale.
//!
//! A group is only a faster path to the same result. A sale it cannot settle plainly is taken out
//! and sold alone, by the one-sale unit of work, after the group: a key already used (a replay, or a
//! reuse), a key twice in the group, a wallet that cannot pay for all its sales in the group. If the
//! group's transaction fails as a whole (a conflict with another instance, the blocks sold out, a
//! lost connection), every sale of it is sold alone. Sold alone, a sale whose group did commit
//! replays its ticket: keys are unique, so nothing is ever sold or debited twice.

use super::tx::{LAYOUT, PgTx};
use super::{Claimed, Core, Isolation, RETRIES, claim, int, lots_of};
use crate::block::lot_of;
use crate::payload::Serial;
use crate::rules::prize_table::TICKET_PRICE;
use crate::server::store::error::Failure;
use crate::server::store::postings::{Account, Transfer};
use crate::server::store::responsible::sql::{self, stake_base};
use crate::server::store::responsible::units::take_stake;
use crate::server::store::responsible::window_starts;
use crate::server::store::tickets::replay;
use crate::server::store::{Sale, SaleRequest, StoreError, TicketRecord, cents, sql_amount};
use deadpool_postgres::Transaction;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock};
use tokio::sync::{Mutex, mpsc, oneshot};

/// A sale's debit, through the wallet's guard.
static TAKE_STAKE: LazyLock<String> = LazyLock::new(|| sql::take_stake(&LAYOUT));
/// The guard of a group's debit.
static GROUP_GUARD: LazyLock<String> = LazyLock::new(sql::group_guard);

/// Groups written at once by one instance: enough to keep PostgreSQL busy while one commits.
const GROUPERS: usize = 4;
/// The most sales in one group.
const GROUP: usize = 64;

/// The running totals of the stakes of each player of `$1` at each window's start (`$2`, `$3`, `$4`).
static GROUP_STAKE_BASES: &str = concat!(
    "SELECT ",
    stake_base!("p.id", "$2"),
    ", ",
    stake_base!("p.id", "$3"),
    ", ",
    stake_base!("p.id", "$4"),
    " FROM unnest($1::TEXT[]) WITH ORDINALITY AS p(id, n) ORDER BY p.n"
);

pub(super) struct PendingSale {
    pub request: SaleRequest,
    pub answer: oneshot::Sender<Result<Sale, StoreError>>,
}

/// Starts the groupers; they stop when the returned sender (the store) is dropped.
pub(super) fn start(core: Core) -> mpsc::Sender<PendingSale> {
    let (sender, receiver) = mpsc::channel(GROUPERS * GROUP * 4);
    let receiver = Arc::new(Mutex::new(receiver));
    for _ in 0..GROUPERS {
        let (core, receiver) = (core.clone(), receiver.clone());
        tokio::spawn(async move {
            loop {
                let mut group = Vec::with_capacity(GROUP);
                if receiver.lock().await.recv_many(&mut group, GROUP).await == 0 {
                    return;
                }
                core.sell_group(group).await;
            }
        });
    }
    sender
}

impl Core {
    async fn sell_group(&self, group: Vec<PendingSale>) {
        // A key twice in one group: the second is sold alone, after, and so replays the first.
        let mut keys = HashSet::new();
        let (together, mut alone): (Vec<PendingSale>, Vec<PendingSale>) = group
            .into_iter()
            .partition(|p| keys.insert((p.request.player_id.clone(), p.request.idempotency_key.clone())));
        let requests: Vec<SaleRequest> = together.iter().map(|p| p.request.clone()).collect();
        let sold = self
            .in_transaction(0, Isolation::ReadCommitted, &(self.clone(), requests), |t, (core, requests)| {
                Box::pin(core.sell_together(t, requests))
            })
            .await;
        match sold {
            Ok(mut sales) => {
                for (pending, sale) in together.into_iter().zip(sales.iter_mut()) {
                    match sale.take() {
                        Some(sale) => {
                            // The buyer may have gone (a closed connection): nothing to tell then.
                            let _ = pending.answer.send(Ok(sale));
                        }
                        None => alone.push(pending),
                    }
                }
            }
            Err(_) => alone.extend(together),
        }
        for pending in alone {
            let core = self.clone();
            tokio::spawn(async move {
                let args = (core.clone(), pending.request);
                let sold = core
                    .in_transaction(RETRIES, Isolation::ReadCommitted, &args, |t, (core, request)| {
                        Box::pin(sell(t, core, request))
                    })
                    .await;
                let _ = pending.answer.send(sold);
            });
        }
    }

    /// Sells `requests` in the transaction `tx`; a `None` is a sale left to be sold alone.
    async fn sell_together(
        &self,
        tx: &Transaction<'_>,
        requests: &[SaleRequest],
    ) -> Result<Vec<Option<Sale>>, Failure> {
        let players: Vec<&str> = requests.iter().map(|r| r.player_id.as_str()).collect();
        let keys: Vec<&str> = requests.iter().map(|r| r.idempotency_key.as_str()).collect();
        let used = tx
            .prepare_cached(
                "SELECT player_id, idempotency_key FROM tickets \
                 WHERE (player_id, idempotency_key) IN (SELECT * FROM unnest($1::TEXT[], $2::TEXT[]))",
            )
            .await?;
        let used: HashSet<(String, String)> =
            tx.query(&used, &[&players, &keys]).await?.iter().map(|r| (r.get(0), r.get(1))).collect();
        let new: Vec<usize> = (0..requests.len())
            .filter(|&i| !used.contains(&(requests[i].player_id.clone(), requests[i].idempotency_key.clone())))
            .collect();

        // Each wallet pays for all its sales of the group, or for none (they are then sold alone, and
        // hear why). Its guard is checked in the debit itself, with the running totals of its stakes at
        // each window's start. The wallets are locked in the order of their ids, as every group locks
        // them: no deadlock.
        let price = sql_amount(TICKET_PRICE)?;
        let now = requests.iter().map(|r| r.now).max().unwrap_or_default();
        let mut owed: BTreeMap<String, (i64, &str)> = BTreeMap::new();
        for &i in &new {
            owed.entry(Account::Wallet(&requests[i].player_id).id()).or_insert((0, &requests[i].player_id)).0 += price;
        }
        let buyers: Vec<&str> = owed.values().map(|(_, player)| *player).collect();
        let [day, week, month] = window_starts(now);
        let bases = tx.prepare_cached(GROUP_STAKE_BASES).await?;
        let bases: Vec<[i64; 3]> = tx
            .query(&bases, &[&buyers, &day, &week, &month])
            .await?
            .iter()
            .map(|r| [r.get(0), r.get(1), r.get(2)])
            .collect();
        let column = |n: usize| bases.iter().map(|b| b[n]).collect::<Vec<i64>>();
        let (wallets, amounts): (Vec<&String>, Vec<i64>) = owed.iter().map(|(w, (a, _))| (w, *a)).unzip();
        // Limits bind only a real-money group, or a wallet with limits set (demo).
        let required = i64::from(requests.iter().any(|r| r.limits_required));
        let debit = tx
            .prepare_cached(&format!(
                "WITH owed AS (SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $5::BIGINT[], $6::BIGINT[], \
                    $7::BIGINT[]) AS o(account, amount, day, week, month)), \
                      locked AS (SELECT b.account FROM balances b JOIN owed o ON o.account = b.account WHERE b.shard = \
                      0 \
                                 ORDER BY b.account FOR UPDATE OF b) \
                 UPDATE balances b SET balance = b.balance - o.amount, staked = b.staked + o.amount FROM owed o, \
                 locked l \
                 WHERE b.account = o.account AND l.account = o.account AND b.shard = 0 AND b.balance >= o.amount AND \
                 {} \
                 RETURNING b.account, b.balance, b.staked",
                *GROUP_GUARD
            ))
            .await?;
        let debited =
            tx.query(&debit, &[&wallets, &amounts, &now, &required, &column(0), &column(1), &column(2)]).await?;
        let mut balances: BTreeMap<String, (i64, i64)> =
            debited.iter().map(|r| (r.get(0), (r.get(1), r.get(2)))).collect();
        let paid: Vec<usize> =
            new.into_iter().filter(|&i| balances.contains_key(&Account::Wallet(&requests[i].player_id).id())).collect();
        if paid.is_empty() {
            return Ok(requests.iter().map(|_| None).collect());
        }

        // As many indices as paid sales, from one stripe or more.
        let mut serials = Vec::with_capacity(paid.len());
        let mut stakes: Vec<(String, i32, i64)> = Vec::new();
        while serials.len() < paid.len() {
            let wanted = u32::try_from(paid.len() - serials.len()).map_err(|e| StoreError::Backend(e.to_string()))?;
            let Claimed { emission, block, stripe, start, count } = claim(tx, &self.open, now, wanted).await?;
            let lots = lots_of(&self.lots, tx, emission, block).await?;
            for index in start..start + count {
                let code = *lots
                    .get(index as usize)
                    .ok_or_else(|| StoreError::Backend(format!("block E{emission}-B{block} has no ticket {index}")))?;
                serials.push((Serial { emission, block, index }, lot_of(code)));
            }
            stakes.push((Account::Stakes { emission, block }.id(), stripe, price * i64::from(count)));
        }

        // Each wallet's balance and running total of stakes after each of its sales, from those after
        // them all.
        let mut after: Vec<(i64, i64)> = vec![(0, 0); paid.len()];
        for (n, &i) in paid.iter().enumerate().rev() {
            let wallet = balances
                .get_mut(&Account::Wallet(&requests[i].player_id).id())
                .ok_or_else(|| StoreError::Backend("a wallet paid but was not debited".into()))?;
            after[n] = *wallet;
            *wallet = (wallet.0 + price, wallet.1 - price);
        }
        let sold: Vec<&SaleRequest> = paid.iter().map(|&i| &requests[i]).collect();
        let stake_totals: Vec<i64> = after.iter().map(|(_, total)| *total).collect();
        let column = |f: fn(&SaleRequest) -> &str| sold.iter().map(|r| f(r)).collect::<Vec<&str>>();
        let (ids, buyers, sale_keys) =
            (column(|r| &r.ticket_id), column(|r| &r.player_id), column(|r| &r.idempotency_key));
        let modes: Vec<&str> = sold.iter().map(|r| r.mode.as_str()).collect();
        let times: Vec<i64> = sold.iter().map(|r| r.now).collect();
        let wallets: Vec<String> = sold.iter().map(|r| Account::Wallet(&r.player_id).id()).collect();
        let emissions = serials.iter().map(|(s, _)| int(s.emission)).collect::<Result<Vec<i32>, _>>()?;
        let blocks = serials.iter().map(|(s, _)| int(s.block)).collect::<Result<Vec<i32>, _>>()?;
        let indices = serials.iter().map(|(s, _)| int(s.index)).collect::<Result<Vec<i32>, _>>()?;
        let lots = serials.iter().map(|(_, lot)| sql_amount(*lot)).collect::<Result<Vec<i64>, _>>()?;
        let credited: Vec<String> =
            serials.iter().map(|(s, _)| Account::Stakes { emission: s.emission, block: s.block }.id()).collect();
        let (stake_accounts, stake_shards, stake_amounts): (Vec<String>, Vec<i32>, Vec<i64>) =
            stakes.into_iter().fold(Default::default(), |(mut a, mut s, mut m), (account, shard, amount)| {
                a.push(account);
                s.push(shard);
                m.push(amount);
                (a, s, m)
            });
        // One statement: the tickets, a stake transfer for each ticket inserted, the stakes' shards.
        let record = tx
            .prepare_cached(
                "WITH sold AS (INSERT INTO tickets (id, player_id, emission, block, idx, mode, lot_cents, sold_at, \
                    idempotency_key, stake_total) \
                               SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::INT[], $4::INT[], $5::INT[], \
                               $6::TEXT[], $7::BIGINT[], $8::BIGINT[], $9::TEXT[], $16::BIGINT[]) \
                               ON CONFLICT (player_id, idempotency_key) DO NOTHING RETURNING id), \
                      staked AS (INSERT INTO transfers (kind, debit, credit, amount, ticket_id, created_at) \
                                 SELECT 'stake', s.debit, s.credit, $10, s.id, s.at \
                                 FROM unnest($1::TEXT[], $11::TEXT[], $12::TEXT[], $8::BIGINT[]) AS s(id, debit, \
                                 credit, at) \
                                 JOIN sold USING (id) RETURNING 1), \
                      kept AS (UPDATE balances b SET balance = b.balance + k.amount \
                               FROM unnest($13::TEXT[], $14::INT[], $15::BIGINT[]) AS k(account, shard, amount) \
                               WHERE b.account = k.account AND b.shard = k.shard RETURNING 1) \
                 SELECT (SELECT COUNT(*) FROM sold), (SELECT COUNT(*) FROM staked), (SELECT COUNT(*) FROM kept)",
            )
            .await?;
        let row = tx
            .query_one(
                &record,
                &[
                    &ids,
                    &buyers,
                    &emissions,
                    &blocks,
                    &indices,
                    &modes,
                    &lots,
                    &times,
                    &sale_keys,
                    &price,
                    &wallets,
                    &credited,
                    &stake_accounts,
                    &stake_shards,
                    &stake_amounts,
                    &stake_totals,
                ],
            )
            .await?;
        let (tickets, transfers, shards): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        if (tickets, transfers) != (sold.len() as i64, sold.len() as i64) {
            // A key committed by another instance since the lookup: sell each one alone.
            return Err(Failure::Conflict("a key of the group was used meanwhile".into()));
        }
        if shards != stake_accounts.len() as i64 {
            return Err(StoreError::Backend("a block's stakes account has no shard for a stripe".into()).into());
        }

        let mut sales: Vec<Option<Sale>> = requests.iter().map(|_| None).collect();
        for (n, &i) in paid.iter().enumerate() {
            let (serial, lot) = serials[n];
            sales[i] = Some(Sale {
                ticket: TicketRecord::sold(&requests[i], serial, lot),
                balance: cents(after[n].0)?,
                replayed: false,
            });
        }
        Ok(sales)
    }
}

/// One sale alone, in its own transaction: what a group leaves.
async fn sell(tx: &Transaction<'_>, core: &Core, r: &SaleRequest) -> Result<Sale, Failure> {
    if let Some(sale) = replay(&mut PgTx(tx), r).await? {
        return Ok(sale);
    }
    // The stake first: its guard (balance, limits, pause) decides whether there is a sale at all.
    let (balance, stake_total) = take_stake(&mut PgTx(tx), &TAKE_STAKE, r).await?;
    let Claimed { emission, block, stripe, start: index, .. } = claim(tx, &core.open, r.now, 1).await?;
    let lots = lots_of(&core.lots, tx, emission, block).await?;
    let code = *lots
        .get(index as usize)
        .ok_or_else(|| StoreError::Backend(format!("block E{emission}-B{block} has no ticket {index}")))?;
    let lot = lot_of(code);
    let insert = tx
        .prepare_cached(
            "INSERT INTO tickets (id, player_id, emission, block, idx, mode, lot_cents, sold_at, idempotency_key, \
                stake_total) \
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
        return Err(Failure::Conflict("a sale with this Idempotency-Key committed meanwhile".into()));
    }
    let stake = Transfer::stake(&r.player_id, &r.ticket_id, emission, block);
    let post = tx
        .prepare_cached(
            "WITH got AS (UPDATE balances SET balance = balance + $3 WHERE account = $2 AND shard = $4 RETURNING 1) \
             INSERT INTO transfers (kind, debit, credit, amount, ticket_id, created_at) SELECT 'stake', $1, $2, $3, \
             $5, $6 FROM got",
        )
        .await?;
    if tx
        .execute(
            &post,
            &[&stake.debit.id(), &stake.credit.id(), &sql_amount(stake.amount)?, &stripe, &r.ticket_id, &r.now],
        )
        .await?
        != 1
    {
        return Err(StoreError::Backend(format!("no account {} shard {stripe}", stake.credit.id())).into());
    }
    let ticket = TicketRecord::sold(r, Serial { emission, block, index }, lot);
    Ok(Sale { ticket, balance: cents(balance)?, replayed: false })
}
