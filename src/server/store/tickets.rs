//! Tickets once sold: reading them, their reveals and completion, the credit of their win, and
//! settlement ticket by ticket. A sale itself is each engine's hot path (`sqlite`, `postgres`).

use super::error::Failure;
use super::postings::Transfer;
use super::rows::{self, Columns};
use super::sql::{self, TICKET_COLUMNS};
use super::tx::{Tx, Value};
use super::{
    Completion, DuePlace, Sale, SaleRequest, SettleReport, Store, StoreError, TicketRecord, Unsettled, cents,
    json_list, plan,
};

impl Store {
    /// A ticket of this player; another player's is "not found", never "forbidden".
    pub async fn ticket(&self, player_id: &str, ticket_id: &str) -> Result<TicketRecord, StoreError> {
        self.read((player_id.to_owned(), ticket_id.to_owned()), |tx, (player, id)| Box::pin(ticket(tx, player, id)))
            .await
    }

    /// The player's last tickets, newest first; with `before`, those sold before that ticket of theirs
    /// (the next page: a cursor that new sales do not shift).
    pub async fn history(
        &self,
        player_id: &str,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<TicketRecord>, StoreError> {
        let args = (player_id.to_owned(), limit, before.map(str::to_owned));
        self.read(args, |tx, (player, limit, before)| Box::pin(history(tx, player, *limit, before.as_deref()))).await
    }

    /// Adds uncovered zones to a ticket of this player, enforcing « Jouez » (`play::apply_reveal`),
    /// each stamped `now` less its `seconds_ago` ([`plan::reveal`]); a finished ticket is
    /// [`StoreError::Finished`].
    pub async fn reveal(
        &self,
        player_id: &str,
        ticket_id: &str,
        zones: Vec<usize>,
        seconds_ago: Vec<u32>,
        now: i64,
    ) -> Result<TicketRecord, StoreError> {
        let args = (player_id.to_owned(), ticket_id.to_owned(), zones, seconds_ago, now);
        self.write(args, |tx, (player, id, zones, ago, now)| {
            Box::pin(async move {
                let t = ticket(tx, player, id).await?;
                let Some(after) = plan::reveal(&t, zones, ago, *now)? else { return Ok(t) };
                if !set_revealed(tx, &t, &after, None).await? {
                    // Another reveal or the completion changed it since it was read: start again.
                    return Err(Failure::Conflict("the ticket changed under a reveal".into()));
                }
                Ok(after)
            })
        })
        .await
    }

    /// Ends a game and credits its win once. « Jouez » needs every zone uncovered; « Auto » uncovers
    /// what remains. Completing a finished ticket again is [`StoreError::Finished`] and changes nothing.
    pub async fn complete(&self, player_id: &str, ticket_id: &str, now: i64) -> Result<Completion, StoreError> {
        self.write((player_id.to_owned(), ticket_id.to_owned(), now), |tx, (player, id, now)| {
            Box::pin(async move {
                let t = ticket(tx, player, id).await?;
                if !set_revealed(tx, &t, &plan::completion(&t, *now)?, Some(*now)).await? {
                    return Err(Failure::Conflict("the ticket changed under its completion".into()));
                }
                credit_win(tx, id, *now).await?;
                Ok(Completion { ticket: ticket(tx, player, id).await?, balance: tx.balance(player).await? })
            })
        })
        .await
    }

    /// When the oldest ticket still to credit was sold, if any, and how many were sold by `due_before`.
    pub async fn unsettled(&self, due_before: i64) -> Result<Unsettled, StoreError> {
        self.read(due_before, |tx, due_before| {
            Box::pin(async move {
                let row = tx.query_one(sql::UNSETTLED, &[(*due_before).into()]).await?;
                Ok(Unsettled { oldest_sale: row.optional_int(0)?, due: row.int(1)?.max(0) as u64 })
            })
        })
        .await
    }

    /// Settles a batch ticket by ticket, each in a savepoint of one unit: one that fails is reported
    /// and the others are settled all the same.
    pub(super) async fn settle_one_by_one(
        &self,
        sold_before: i64,
        after: (i64, String),
        limit: usize,
        now: i64,
    ) -> Result<SettleReport, StoreError> {
        let limit = i64::try_from(limit).map_err(|e| StoreError::Backend(e.to_string()))?;
        self.write((sold_before, after, limit, now), |tx, (sold_before, (after_sold, after_id), limit, now)| {
            Box::pin(async move {
                let params = [(*sold_before).into(), (*after_sold).into(), after_id.into(), (*limit).into()];
                let due = tx
                    .query(sql::DUE_TICKETS, &params)
                    .await?
                    .iter()
                    .map(rows::due_place)
                    .collect::<Result<Vec<DuePlace>, _>>()?;
                let mut report = SettleReport::default();
                for place in due {
                    tx.execute("SAVEPOINT one", &[]).await?;
                    let settled = match credit_win(tx, &place.ticket_id, *now).await {
                        Ok(credited) => Ok(credited),
                        Err(Failure::Store(e)) => Err(e),
                        Err(other) => return Err(other),
                    };
                    let close = if settled.is_ok() { "RELEASE SAVEPOINT one" } else { "ROLLBACK TO SAVEPOINT one" };
                    tx.execute(close, &[]).await?;
                    if settled.is_err() {
                        tx.execute("RELEASE SAVEPOINT one", &[]).await?;
                    }
                    report.count(place, settled);
                }
                Ok(report)
            })
        })
        .await
    }
}

pub(super) async fn ticket(tx: &mut dyn Tx, player: &str, id: &str) -> Result<TicketRecord, Failure> {
    let row = tx
        .query_opt(
            &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = $1 AND player_id = $2"),
            &[id.into(), player.into()],
        )
        .await?;
    Ok(rows::ticket(&row.ok_or(StoreError::NotFound("ticket"))?)?)
}

/// A player's tickets newest first: by sale time, and within a second by the running total of stakes
/// each kept (a wallet's grows with every sale), so that both engines page alike.
async fn history(
    tx: &mut dyn Tx,
    player: &str,
    limit: u32,
    before: Option<&str>,
) -> Result<Vec<TicketRecord>, Failure> {
    let cursor: [Value; 3] = match before {
        None => [i64::MAX.into(), i64::MAX.into(), Value::Null],
        Some(id) => {
            let row = tx
                .query_opt(
                    "SELECT sold_at, stake_total, id FROM tickets WHERE id = $1 AND player_id = $2",
                    &[id.into(), player.into()],
                )
                .await?
                .ok_or(StoreError::NotFound("ticket"))?;
            [row.int(0)?.into(), row.int(1)?.into(), row.text(2)?.into()]
        }
    };
    let [sold_at, total, id] = cursor;
    let page = tx
        .query(
            &format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = $1 \
                 AND (sold_at < $2 OR (sold_at = $2 AND (stake_total < $3 OR (stake_total = $3 AND id < $4)))) \
                 ORDER BY sold_at DESC, stake_total DESC, id DESC LIMIT $5"
            ),
            &[player.into(), sold_at, total, id, limit.into()],
        )
        .await?;
    Ok(page.iter().map(rows::ticket).collect::<Result<_, _>>()?)
}

/// Replaces a ticket's uncovered zones (and their times) if they are still those of `before`
/// (compare-and-set: a write that read an older list changes nothing). Returns whether it did.
async fn set_revealed(
    tx: &mut dyn Tx,
    before: &TicketRecord,
    after: &TicketRecord,
    finished_at: Option<i64>,
) -> Result<bool, Failure> {
    let changed = tx
        .execute(
            "UPDATE tickets SET revealed = $3, revealed_at = $4, finished_at = COALESCE(finished_at, $5) \
             WHERE id = $1 AND revealed = $2 AND finished_at IS NULL",
            &[
                before.id.as_str().into(),
                json_list(&before.revealed).into(),
                json_list(&after.revealed).into(),
                json_list(&after.revealed_at).into(),
                finished_at.into(),
            ],
        )
        .await?;
    Ok(changed == 1)
}

/// Credits a ticket's win if no one has: the `UPDATE` that marks it credited is the only one to see
/// `credited_at` null. Returns whether this call credited it.
pub(super) async fn credit_win(tx: &mut dyn Tx, id: &str, now: i64) -> Result<bool, Failure> {
    let claimed = tx
        .query_opt(
            "UPDATE tickets SET credited_at = $2 WHERE id = $1 AND credited_at IS NULL RETURNING player_id, emission, \
                block, lot_cents",
            &[id.into(), now.into()],
        )
        .await?;
    let Some(row) = claimed else { return Ok(false) };
    let (player, lot) = (row.text(0)?, cents(row.int(3)?)?);
    if !lot.is_zero() {
        tx.transfer(&Transfer::win(&player, id, row.unsigned(1)?, row.unsigned(2)?, lot), now)
            .await?
            .ok_or_else(|| StoreError::Backend("the prize account refused to pay".into()))?;
    }
    Ok(true)
}

/// The sale this player's key already made, if any (a purchase sent again).
pub(super) async fn replay(tx: &mut dyn Tx, r: &SaleRequest) -> Result<Option<Sale>, Failure> {
    let sql = format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE player_id = $1 AND idempotency_key = $2");
    let Some(row) = tx.query_opt(&sql, &[r.player_id.as_str().into(), r.idempotency_key.as_str().into()]).await? else {
        return Ok(None);
    };
    let ticket = rows::ticket(&row)?;
    if ticket.mode != r.mode {
        return Err(StoreError::KeyReused.into());
    }
    Ok(Some(Sale { balance: tx.balance(&r.player_id).await?, ticket, replayed: true }))
}
