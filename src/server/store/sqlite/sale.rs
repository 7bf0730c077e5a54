//! A sale on SQLite, on the writer's thread: its one writer takes the next index of the lowest open
//! block from a single counter row, so that sales come in index order.

use super::tx::{LAYOUT, SqliteTx};
use crate::block::{LotCode, lot_of};
use crate::payload::Serial;
use crate::server::store::error::Failure;
use crate::server::store::postings::Transfer;
use crate::server::store::responsible::sql;
use crate::server::store::responsible::units::take_stake;
use crate::server::store::rows::LotsCache;
use crate::server::store::tickets::replay;
use crate::server::store::{Sale, SaleRequest, StoreError, TicketRecord, cents, sql_amount};
use rusqlite::{Connection, OptionalExtension, params};
use std::sync::{Arc, LazyLock};

static TAKE_STAKE: LazyLock<String> = LazyLock::new(|| sql::take_stake(&LAYOUT));

pub(super) fn sell(conn: &mut Connection, lots: &LotsCache, r: &SaleRequest) -> Result<Sale, StoreError> {
    Ok(futures::executor::block_on(sell_on(&mut SqliteTx(conn), lots, r))?)
}

async fn sell_on(tx: &mut SqliteTx<'_>, lots: &LotsCache, r: &SaleRequest) -> Result<Sale, Failure> {
    if let Some(sale) = replay(tx, r).await? {
        return Ok(sale);
    }
    // The stake first: its guard (balance, limits, pause) decides whether there is a sale at all.
    let (balance, stake_total) = take_stake(tx, &TAKE_STAKE, r).await?;
    let slot: Option<(u32, u32, u32)> =
        tx.0.prepare_cached(
            "UPDATE block_sales SET sold = sold + 1, closed_at = CASE WHEN sold + 1 = size THEN ?1 END \
             WHERE (emission, block) = (SELECT s.emission, s.block FROM block_sales s WHERE s.sold < s.size \
                 AND NOT EXISTS (SELECT 1 FROM block_withdrawals w WHERE w.emission = s.emission AND w.block = \
                 s.block) \
                 ORDER BY s.emission, s.block LIMIT 1) \
               AND sold < size \
             RETURNING emission, block, sold - 1",
        )?
        .query_row([r.now], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let (emission, block, index) = slot.ok_or(StoreError::SoldOut)?;
    let lot = lot_of(
        *lots_of(lots, tx.0, emission, block)?
            .get(index as usize)
            .ok_or_else(|| StoreError::Backend(format!("block E{emission}-B{block} has no ticket {index}")))?,
    );
    let inserted =
        tx.0.prepare_cached(
            "INSERT INTO tickets (id, player_id, emission, block, idx, mode, lot_cents, sold_at, idempotency_key, \
                stake_total) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (player_id, idempotency_key) DO NOTHING",
        )?
        .execute(params![
            r.ticket_id,
            r.player_id,
            emission,
            block,
            index,
            r.mode.as_str(),
            sql_amount(lot)?,
            r.now,
            r.idempotency_key,
            stake_total
        ])?;
    if inserted == 0 {
        // Only if a sale with this key was recorded since the replay check above, which one writer rules
        // out. The unique key still forbids a second ticket: this sale is undone, and a retry replays.
        return Err(StoreError::Backend("a sale with this Idempotency-Key was recorded meanwhile".into()).into());
    }
    tx.post(&Transfer::stake(&r.player_id, &r.ticket_id, emission, block), r.now)?;
    let ticket = TicketRecord::sold(r, Serial { emission, block, index }, lot);
    Ok(Sale { ticket, balance: cents(balance)?, replayed: false })
}

/// A block's lots, from the cache or read once.
fn lots_of(cache: &LotsCache, conn: &Connection, emission: u32, block: u32) -> Result<Arc<Vec<LotCode>>, Failure> {
    if let Some(lots) = cache.get(emission, block) {
        return Ok(lots);
    }
    let lots = conn
        .prepare_cached("SELECT lots FROM blocks WHERE emission = ?1 AND block = ?2")?
        .query_row(params![emission, block], |r| r.get(0))?;
    Ok(cache.keep(emission, block, lots))
}
