//! Responsible gaming's units of work, once for both engines: the guard's deposits and refusals,
//! limits and their raises, pauses, reality checks, the record, and the national ban file.

use super::sql::{self, DEPOSIT_BASES, DEPOSIT_OLDEST, DEPOSIT_REACHING, STAKE_BASES, STAKE_OLDEST, STAKE_REACHING};
use super::{
    Actor, ChangeKind, FOREVER, Flow, GUARD_COLUMNS, Guard, Pause, PauseKind, PendingRaise, PlaySummary,
    ResponsibleEvent, Span, Standing, StandingFacts, event_from, guard_from, raise_from, window_starts,
};
use crate::money::Cents;
use crate::rules::prize_table::TICKET_PRICE;
use crate::server::store::error::{Already, Failure};
use crate::server::store::postings::{Account, Transfer};
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Tx, Value};
use crate::server::store::{Credit, Funding, SaleRequest, Store, StoreError, cents, sql_amount};

impl Store {
    /// Money into a wallet from outside the game, if its guard allows it; returns the new balance.
    pub async fn credit(&self, player_id: &str, credit: Credit, now: i64) -> Result<Cents, StoreError> {
        self.write((player_id.to_owned(), credit, now), |tx, (player, credit, now)| {
            Box::pin(deposit(tx, player, credit, *now))
        })
        .await
    }

    /// The player's limits and what is left of each, pending raises, any pause, the reality-check interval.
    pub async fn standing(&self, player_id: &str, now: i64) -> Result<Standing, StoreError> {
        self.read((player_id.to_owned(), now), |tx, (player, now)| Box::pin(standing(tx, player, *now))).await
    }

    /// Sets one limit (`None`: none): a first or lower one at once, cancelling a pending raise of it; a
    /// higher one or none is asked, to be confirmed from 48 h on. Returns how it applies.
    pub async fn change_limit(
        &self,
        player_id: &str,
        flow: Flow,
        span: Span,
        wanted: Option<Cents>,
        now: i64,
    ) -> Result<ChangeKind, StoreError> {
        let args = (player_id.to_owned(), flow, span, wanted, now);
        self.write(args, |tx, (player, flow, span, wanted, now)| {
            Box::pin(change_limit(tx, player, *flow, *span, *wanted, *now))
        })
        .await
    }

    /// Applies a pending raise the player confirms, from 48 h after it was asked until it lapses.
    pub async fn confirm_raise(&self, player_id: &str, flow: Flow, span: Span, now: i64) -> Result<(), StoreError> {
        self.write((player_id.to_owned(), flow, span, now), |tx, (player, flow, span, now)| {
            Box::pin(confirm_raise(tx, player, *flow, *span, *now))
        })
        .await
    }

    /// Takes away (and records) the raises that lapsed unconfirmed by `now`; how many this call took.
    pub async fn lapse_raises(&self, now: i64) -> Result<usize, StoreError> {
        self.write(now, |tx, now| Box::pin(lapse_raises(tx, *now))).await
    }

    /// A break, self-exclusion or closure until `pause.until`, at once: every session of the player ends,
    /// and nothing can be staked or deposited before then. Nothing shortens it: a pause that ends
    /// sooner than the one in force is [`StoreError::AlreadyPaused`].
    pub async fn pause(&self, player_id: &str, pause: Pause, actor: Actor, now: i64) -> Result<(), StoreError> {
        self.write((player_id.to_owned(), pause, actor, now), |tx, (player, p, actor, now)| {
            Box::pin(pause_player(tx, player, *p, *actor, *now))
        })
        .await
    }

    /// The player's record from `since` on, oldest first.
    pub async fn responsible_events(&self, player_id: &str, since: i64) -> Result<Vec<ResponsibleEvent>, StoreError> {
        self.read((player_id.to_owned(), since), |tx, (player, since)| {
            Box::pin(async move {
                let rows = tx.query(sql::EVENTS, &[player.into(), (*since).into()]).await?;
                Ok(rows.iter().map(event_from).collect::<Result<_, _>>()?)
            })
        })
        .await
    }

    /// The minutes between the player's reality checks; the current sessions' next one comes that long
    /// after `now` at the latest.
    pub async fn set_reality_interval(&self, player_id: &str, minutes: u32, now: i64) -> Result<(), StoreError> {
        self.write((player_id.to_owned(), minutes, now), |tx, (player, minutes, now)| {
            Box::pin(async move {
                if tx
                    .execute(
                        "UPDATE players SET reality_minutes = $2 WHERE id = $1",
                        &[player.into(), (*minutes).into()],
                    )
                    .await?
                    != 1
                {
                    return Err(StoreError::NotFound("player").into());
                }
                tx.execute(sql::SOONER_REALITY_CHECKS, &[player.into(), (now + i64::from(*minutes) * 60).into()])
                    .await?;
                record(
                    tx,
                    player,
                    *now,
                    Actor::Player,
                    "reality_interval_set",
                    &serde_json::json!({ "minutes": minutes }).to_string(),
                )
                .await
            })
        })
        .await
    }

    /// The session's reality check is due: recorded as shown (once per due time).
    pub async fn reality_check_shown(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        self.write((token_hash.to_owned(), false, now), |tx, (token, acknowledged, now)| {
            Box::pin(reality_check(tx, token, *acknowledged, *now))
        })
        .await
    }

    /// The player acknowledged it: the next one is due an interval from `now`.
    pub async fn acknowledge_reality_check(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        self.write((token_hash.to_owned(), true, now), |tx, (token, acknowledged, now)| {
            Box::pin(reality_check(tx, token, *acknowledged, *now))
        })
        .await
    }

    /// What the player bought since `since` and won on it.
    pub async fn play_since(&self, player_id: &str, since: i64) -> Result<PlaySummary, StoreError> {
        self.read((player_id.to_owned(), since), |tx, (player, since)| Box::pin(summary(tx, player, *since))).await
    }

    /// Replaces the national ban file with these identity keys ([`crate::server::store::Identity::key`]); every
    /// account they match is closed: paused for good, its sessions ended, its balance paid out to
    /// `cash` as a withdrawal. Returns the accounts closed, with what each was paid.
    pub async fn import_bans(&self, keys: Vec<String>, now: i64) -> Result<Vec<(String, Cents)>, StoreError> {
        self.write((keys, now), |tx, (keys, now)| Box::pin(import_bans(tx, keys, *now))).await
    }
}

/// What a flow's statements key on: the player's tickets, or the wallet's deposits.
fn flow_key(flow: Flow, player: &str) -> String {
    match flow {
        Flow::Stake => player.to_owned(),
        Flow::Deposit => Account::Wallet(player).id(),
    }
}

/// Three numbers a statement gives for `key` at three times (one per window).
async fn three(tx: &mut dyn Tx, sql: &str, key: &str, at: [i64; 3]) -> Result<[Option<i64>; 3], Failure> {
    let row = tx.query_one(sql, &[key.into(), at[0].into(), at[1].into(), at[2].into()]).await?;
    Ok([row.optional_int(0)?, row.optional_int(1)?, row.optional_int(2)?])
}

/// The running totals of `flow` at each window's start.
pub(crate) async fn bases(tx: &mut dyn Tx, flow: Flow, player: &str, now: i64) -> Result<[i64; 3], Failure> {
    let sql = if flow == Flow::Stake { STAKE_BASES } else { DEPOSIT_BASES };
    Ok(three(tx, sql, &flow_key(flow, player), window_starts(now)).await?.map(|b| b.unwrap_or(0)))
}

async fn guard(tx: &mut dyn Tx, player: &str) -> Result<Option<Guard>, Failure> {
    Ok(tx.wallet_row(player, GUARD_COLUMNS).await?.map(|r| guard_from(&r)).transpose()?)
}

async fn pause_kind(tx: &mut dyn Tx, player: &str) -> Result<Option<PauseKind>, Failure> {
    let row = tx.query_opt("SELECT pause_kind FROM players WHERE id = $1", &[player.into()]).await?;
    Ok(row.map(|r| r.optional_text(0)).transpose()?.flatten().as_deref().and_then(PauseKind::parse))
}

/// Why the guard refused `amount` of `flow`, read after the refusal.
pub(crate) async fn why_refused(
    tx: &mut dyn Tx,
    player: &str,
    flow: Flow,
    amount: Cents,
    bases: [i64; 3],
    now: i64,
    required: bool,
) -> Result<StoreError, Failure> {
    let Some(guard) = guard(tx, player).await? else {
        return Ok(if flow == Flow::Stake {
            StoreError::InsufficientFunds { balance: Cents::ZERO, price: amount }
        } else {
            StoreError::NotFound("player")
        });
    };
    let refused = super::refusal(&guard, flow, amount, bases, now, required);
    let pause = if matches!(refused, Err(super::Refused::Paused)) { pause_kind(tx, player).await? } else { None };
    let mut reaching = Vec::new();
    if let Err(super::Refused::Limits(binding)) = &refused {
        let sql = if flow == Flow::Stake { STAKE_REACHING } else { DEPOSIT_REACHING };
        for b in binding {
            let row = tx
                .query_one(sql, &[flow_key(flow, player).into(), (now - b.span.seconds()).into(), b.need.into()])
                .await?;
            reaching.push(row.optional_int(0)?);
        }
    }
    Ok(super::explain(refused, flow, amount, &guard, pause, &reaching))
}

/// Takes a ticket's stake from the player's wallet if its balance and guard allow it; returns the balance
/// and the running total of stakes after it. `statement` is [`sql::take_stake`] for the engine's layout,
/// built once by the engine, as the sale is its hot path.
pub(crate) async fn take_stake(tx: &mut dyn Tx, statement: &str, r: &SaleRequest) -> Result<(i64, i64), Failure> {
    let b = bases(tx, Flow::Stake, &r.player_id, r.now).await?;
    let price = sql_amount(TICKET_PRICE)?;
    let params = [
        Account::Wallet(&r.player_id).id().into(),
        price.into(),
        r.now.into(),
        r.limits_required.into(),
        b[0].into(),
        b[1].into(),
        b[2].into(),
    ];
    match tx.query_opt(statement, &params).await? {
        Some(taken) => Ok((taken.int(0)?, taken.int(1)?)),
        None => {
            Err(why_refused(tx, &r.player_id, Flow::Stake, TICKET_PRICE, b, r.now, r.limits_required).await?.into())
        }
    }
}

/// Money into a wallet from outside the game, if its guard allows it (both 7-day limits are required
/// for real money): the funding account pays, the wallet's running total of deposits grows, and the
/// transfer keeps it. Returns the new balance.
pub(crate) async fn deposit(tx: &mut dyn Tx, player: &str, credit: &Credit, now: i64) -> Result<Cents, Failure> {
    let t = Transfer::credit(player, credit.funding, credit.amount, &credit.reason);
    let amount = sql_amount(t.amount)?;
    let required = credit.funding == Funding::Cash;
    let b = bases(tx, Flow::Deposit, player, now).await?;
    let params =
        [t.credit.id().into(), amount.into(), now.into(), required.into(), b[0].into(), b[1].into(), b[2].into()];
    let Some(given) = tx.query_opt(&sql::give_deposit(tx.layout()), &params).await? else {
        return Err(why_refused(tx, player, Flow::Deposit, t.amount, b, now, required).await?.into());
    };
    let (balance, total) = (given.int(0)?, given.int(1)?);
    tx.shift(&t.debit, -amount, player).await?;
    tx.execute(
        "INSERT INTO transfers (kind, debit, credit, amount, reason, created_at, wallet_total) VALUES ($1, $2, $3, $4, \
            $5, $6, $7)",
        &[
            t.kind.as_str().into(),
            t.debit.id().into(),
            t.credit.id().into(),
            amount.into(),
            t.reason.into(),
            now.into(),
            total.into(),
        ],
    )
    .await?;
    Ok(cents(balance)?)
}

async fn record(
    tx: &mut dyn Tx,
    player: &str,
    now: i64,
    actor: Actor,
    kind: &str,
    detail: &str,
) -> Result<(), Failure> {
    tx.execute(sql::RECORD, &[player.into(), now.into(), actor.as_str().into(), kind.into(), detail.into()]).await?;
    Ok(())
}

async fn pending(tx: &mut dyn Tx, player: &str) -> Result<Vec<PendingRaise>, Failure> {
    let rows = tx.query(sql::RAISES, &[player.into()]).await?;
    Ok(rows.iter().map(raise_from).collect::<Result<_, _>>()?)
}

async fn pending_of(tx: &mut dyn Tx, player: &str, flow: Flow, span: Span) -> Result<Option<PendingRaise>, Failure> {
    Ok(pending(tx, player).await?.into_iter().find(|p| p.flow == flow && p.span == span))
}

fn optional_amount(amount: Option<Cents>) -> Result<Value, StoreError> {
    Ok(amount.map(sql_amount).transpose()?.into())
}

async fn standing(tx: &mut dyn Tx, player: &str, now: i64) -> Result<Standing, Failure> {
    let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
    let starts = window_starts(now);
    let reality =
        tx.query_one("SELECT reality_minutes FROM players WHERE id = $1", &[player.into()]).await?.unsigned(0)?;
    let facts = StandingFacts {
        stake_bases: bases(tx, Flow::Stake, player, now).await?,
        stake_oldest: three(tx, STAKE_OLDEST, player, starts).await?,
        deposit_bases: bases(tx, Flow::Deposit, player, now).await?,
        deposit_oldest: three(tx, DEPOSIT_OLDEST, &Account::Wallet(player).id(), starts).await?,
        pending: pending(tx, player).await?,
        pause_kind: pause_kind(tx, player).await?,
        reality_minutes: reality,
        guard,
    };
    Ok(facts.standing(now))
}

/// Writes limit `(flow, span)` of the player's wallet from `current` to `wanted`; a limit changed since
/// it was read is a conflict, and the unit runs again.
async fn set_limit(
    tx: &mut dyn Tx,
    player: &str,
    flow: Flow,
    span: Span,
    wanted: Option<Cents>,
    current: Option<Cents>,
) -> Result<(), Failure> {
    let sql = sql::set_limit(tx.layout(), flow, span);
    if tx
        .execute(&sql, &[Account::Wallet(player).id().into(), optional_amount(wanted)?, optional_amount(current)?])
        .await?
        != 1
    {
        return Err(Failure::Conflict("a limit changed under its change".into()));
    }
    Ok(())
}

async fn change_limit(
    tx: &mut dyn Tx,
    player: &str,
    flow: Flow,
    span: Span,
    wanted: Option<Cents>,
    now: i64,
) -> Result<ChangeKind, Failure> {
    let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
    let current = guard.limits.get(flow, span);
    let plan = super::plan_change(flow, span, current, wanted, pending_of(tx, player, flow, span).await?.as_ref(), now);
    if plan.cancel_pending {
        tx.execute(sql::DROP_RAISE, &[player.into(), flow.as_str().into(), span.as_str().into()]).await?;
    }
    if let Some(set) = plan.set {
        set_limit(tx, player, flow, span, set, current).await?;
    }
    if let Some(ask) = &plan.ask {
        let amount = optional_amount(ask.amount_cents.map(Cents))?;
        tx.execute(sql::ASK_RAISE, &[player.into(), flow.as_str().into(), span.as_str().into(), amount, now.into()])
            .await?;
    }
    for (kind, detail) in &plan.events {
        record(tx, player, now, Actor::Player, kind, detail).await?;
    }
    Ok(plan.kind)
}

async fn confirm_raise(tx: &mut dyn Tx, player: &str, flow: Flow, span: Span, now: i64) -> Result<(), Failure> {
    let raise = pending_of(tx, player, flow, span).await?.ok_or(StoreError::NoRaisePending)?;
    raise.confirmable(now)?;
    let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
    let (current, wanted) = (guard.limits.get(flow, span), raise.amount_cents.map(Cents));
    // Taken away by this unit only: another confirmation of it finds none and fails.
    if tx.query_opt(sql::DROP_RAISE, &[player.into(), flow.as_str().into(), span.as_str().into()]).await?.is_none() {
        return Err(StoreError::NoRaisePending.into());
    }
    set_limit(tx, player, flow, span, wanted, current).await?;
    record(tx, player, now, Actor::Player, "raise_confirmed", &super::limit_detail(flow, span, wanted, current)).await
}

async fn lapse_raises(tx: &mut dyn Tx, now: i64) -> Result<usize, Failure> {
    let lapsed = tx.query(sql::LAPSED_RAISES, &[(now - super::RAISE_DELAY - super::CONFIRM_WINDOW).into()]).await?;
    let mut count = 0;
    for row in &lapsed {
        let (raise, player) = (raise_from(row)?, row.text(4)?);
        // Taken away only if still the raise read: one confirmed or asked again meanwhile stays.
        let params =
            [player.as_str().into(), raise.flow.as_str().into(), raise.span.as_str().into(), raise.asked_at.into()];
        if tx.execute(sql::DROP_LAPSED, &params).await? == 1 {
            let detail = super::limit_detail(raise.flow, raise.span, raise.amount_cents.map(Cents), None);
            record(tx, &player, raise.lapses_at, Actor::Server, "raise_lapsed", &detail).await?;
            count += 1;
        }
    }
    Ok(count)
}

/// A pause as [`Store::pause`] makes one: the wallet's guard paused (only ever lengthened), every
/// session ended, the event recorded.
pub(crate) async fn pause_player(
    tx: &mut dyn Tx,
    player: &str,
    pause: Pause,
    actor: Actor,
    now: i64,
) -> Result<(), Failure> {
    let paused =
        tx.execute(&sql::pause_wallet(tx.layout()), &[Account::Wallet(player).id().into(), pause.until.into()]).await?;
    if paused == 0 {
        let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
        let kind = pause_kind(tx, player).await?.unwrap_or(PauseKind::Break);
        return Err(StoreError::AlreadyPaused(Pause { kind, until: guard.paused_until }).into());
    }
    tx.execute("UPDATE players SET pause_kind = $2 WHERE id = $1", &[player.into(), pause.kind.as_str().into()])
        .await?;
    tx.execute("DELETE FROM sessions WHERE player_id = $1", &[player.into()]).await?;
    record(tx, player, now, actor, pause.kind.as_str(), &serde_json::json!({ "until": pause.until }).to_string()).await
}

async fn reality_check(tx: &mut dyn Tx, token_hash: &str, acknowledge: bool, now: i64) -> Result<(), Failure> {
    let sql = if acknowledge { sql::ACKNOWLEDGE_REALITY_CHECK } else { sql::SHOW_REALITY_CHECK };
    let Some(row) = tx.query_opt(sql, &[token_hash.into(), now.into()]).await? else { return Ok(()) };
    let (player, started) = (row.text(0)?, row.int(1)?);
    let detail = super::reality_detail(now - started, summary(tx, &player, started).await?);
    record(
        tx,
        &player,
        now,
        Actor::Player,
        if acknowledge { "reality_check_acknowledged" } else { "reality_check_shown" },
        &detail,
    )
    .await
}

async fn summary(tx: &mut dyn Tx, player: &str, since: i64) -> Result<PlaySummary, Failure> {
    let row = tx.query_one(sql::PLAY_SINCE, &[player.into(), since.into()]).await?;
    let tickets = u64::try_from(row.int(0)?).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(PlaySummary { tickets, staked_cents: tickets * TICKET_PRICE.0, won_cents: cents(row.int(1)?)?.0 })
}

/// Ban-file rows inserted by one statement: well under both engines' limit on parameters.
const BANS_AT_ONCE: usize = 500;

async fn import_bans(tx: &mut dyn Tx, keys: &[String], now: i64) -> Result<Vec<(String, Cents)>, Failure> {
    tx.execute("DELETE FROM banned_identities", &[]).await?;
    for chunk in keys.chunks(BANS_AT_ONCE) {
        let rows: Vec<String> = (0..chunk.len()).map(|i| format!("(${}, $1)", i + 2)).collect();
        let sql = format!(
            "INSERT INTO banned_identities (identity_key, imported_at) VALUES {} ON CONFLICT DO NOTHING",
            rows.join(", ")
        );
        let params: Vec<Value> = std::iter::once(now.into()).chain(chunk.iter().map(Value::from)).collect();
        tx.execute(&sql, &params).await?;
    }
    let matched = tx.query(sql::BANNED_OPEN_ACCOUNTS, &[]).await?;
    let mut closed = Vec::new();
    for row in matched {
        let player = row.text(0)?;
        let paid = close_account(tx, &player, "closed: in the national ban file", "ban_file_match", now).await?;
        closed.push((player, paid));
    }
    Ok(closed)
}

/// Whether a registration's identity is in the ban file.
pub(crate) async fn banned(tx: &mut dyn Tx, identity_key: &str) -> Result<bool, Failure> {
    Ok(tx.query_opt("SELECT 1 FROM banned_identities WHERE identity_key = $1", &[identity_key.into()]).await?.is_some())
}

/// Closes an open account for good: its whole balance paid out to `cash` (a withdrawal, `why`), closed
/// forever (sessions ended, nothing staked or deposited again), and `event` in the player's record.
/// What it paid out. Shared by the ban file's import and staff.
pub(crate) async fn close_account(
    tx: &mut dyn Tx,
    player: &str,
    why: &str,
    event: &str,
    now: i64,
) -> Result<Cents, Failure> {
    if tx
        .execute("UPDATE players SET closed_at = $2 WHERE id = $1 AND closed_at IS NULL", &[player.into(), now.into()])
        .await?
        == 0
    {
        let exists = tx.query_opt("SELECT 1 FROM players WHERE id = $1", &[player.into()]).await?.is_some();
        return Err(
            if exists { StoreError::AlreadyDone(Already::Closed) } else { StoreError::NotFound("player") }.into()
        );
    }
    let paid = tx.balance(player).await?;
    if !paid.is_zero() {
        tx.transfer(&Transfer::withdrawal(player, paid, why), now)
            .await?
            .ok_or_else(|| StoreError::Backend("a wallet could not pay out its own balance".into()))?;
    }
    let closed = Pause { kind: PauseKind::Closed, until: FOREVER };
    pause_player(tx, player, closed, Actor::Operator, now).await?;
    let detail = serde_json::json!({ "paid_out_cents": paid.0 }).to_string();
    tx.execute(sql::RECORD, &[player.into(), now.into(), Actor::Operator.as_str().into(), event.into(), detail.into()])
        .await?;
    Ok(paid)
}
