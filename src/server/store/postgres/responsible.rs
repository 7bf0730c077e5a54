//! Responsible gaming on PostgreSQL: the statements of [`crate::server::store::responsible`], each safe
//! under concurrency on its own (the guard in the `WHERE` of the statement that moves the money; limits
//! changed by compare-and-set, run again on a conflict).

use super::{Failure, sql_amount};
use crate::money::Cents;
use crate::rules::prize_table::TICKET_PRICE;
use crate::server::store::back_office;
use crate::server::store::ledger::{Account, Transfer};
use crate::server::store::responsible::{
    self as rg, Actor, ChangeKind, DEPOSIT_BASES, DEPOSIT_OLDEST, DEPOSIT_REACHING, Flow, Guard, Pause, PauseKind, PendingRaise, STAKE_BASES, STAKE_OLDEST,
    STAKE_REACHING, Span, Standing, StandingFacts,
};
use crate::server::store::{Credit, Funding, StoreError, cents};
use deadpool_postgres::{GenericClient, Transaction};
use std::sync::LazyLock;

/// A wallet's guard row: its one balance shard.
const WALLET: &str = "balances WHERE account = $1 AND shard = 0";
static TAKE_STAKE: LazyLock<String> = LazyLock::new(|| rg::take_stake(WALLET));
static GIVE_DEPOSIT: LazyLock<String> = LazyLock::new(|| rg::give_deposit(WALLET));
static READ_GUARD: LazyLock<String> = LazyLock::new(|| rg::read_guard(WALLET));
static PAUSE_WALLET: LazyLock<String> = LazyLock::new(|| rg::pause_wallet(WALLET));

/// The guard of a group's debit (see `sales`).
pub(super) static GROUP_GUARD: LazyLock<String> = LazyLock::new(rg::group_guard);

fn flow_key(flow: Flow, player: &str) -> String {
    match flow {
        Flow::Stake => player.to_owned(),
        Flow::Deposit => Account::Wallet(player).id(),
    }
}

async fn three(client: &impl GenericClient, sql: &str, key: &str, at: [i64; 3]) -> Result<[Option<i64>; 3], Failure> {
    let row = client.query_one(&client.prepare_cached(sql).await?, &[&key, &at[0], &at[1], &at[2]]).await?;
    Ok([row.try_get(0)?, row.try_get(1)?, row.try_get(2)?])
}

pub(super) async fn bases(client: &impl GenericClient, flow: Flow, player: &str, now: i64) -> Result<[i64; 3], Failure> {
    let sql = if flow == Flow::Stake { STAKE_BASES } else { DEPOSIT_BASES };
    Ok(three(client, sql, &flow_key(flow, player), rg::window_starts(now)).await?.map(|b| b.unwrap_or(0)))
}

async fn guard(client: &impl GenericClient, player: &str) -> Result<Option<Guard>, Failure> {
    let row = client.query_opt(&client.prepare_cached(&READ_GUARD).await?, &[&Account::Wallet(player).id()]).await?;
    Ok(row.map(|r| rg::guard_from(&r)).transpose()?)
}

async fn pause_kind(client: &impl GenericClient, player: &str) -> Result<Option<PauseKind>, Failure> {
    let row = client.query_opt("SELECT pause_kind FROM players WHERE id = $1", &[&player]).await?;
    Ok(row.and_then(|r| r.get::<_, Option<String>>(0)).as_deref().and_then(PauseKind::parse))
}

/// Why the guard refused `amount` of `flow`, read after the refusal.
pub(super) async fn why_refused(
    client: &impl GenericClient,
    player: &str,
    flow: Flow,
    amount: Cents,
    bases: [i64; 3],
    now: i64,
    required: bool,
) -> Result<StoreError, Failure> {
    let Some(guard) = guard(client, player).await? else {
        return Ok(if flow == Flow::Stake { StoreError::InsufficientFunds { balance: Cents::ZERO, price: amount } } else { StoreError::NotFound("player") });
    };
    let refused = rg::refusal(&guard, flow, amount, bases, now, required);
    let pause = if matches!(refused, Err(rg::Refused::Paused)) { pause_kind(client, player).await? } else { None };
    let mut reaching = Vec::new();
    if let Err(rg::Refused::Limits(binding)) = &refused {
        let sql = client.prepare_cached(if flow == Flow::Stake { STAKE_REACHING } else { DEPOSIT_REACHING }).await?;
        for b in binding {
            reaching.push(client.query_one(&sql, &[&flow_key(flow, player), &(now - b.span.seconds()), &b.need]).await?.try_get(0)?);
        }
    }
    Ok(rg::explain(refused, flow, amount, &guard, pause, &reaching))
}

/// Takes a ticket's stake from the player's wallet if its balance and guard allow it: the balance and
/// the running total of stakes after it.
pub(super) async fn take_stake(tx: &Transaction<'_>, player: &str, now: i64, required: bool) -> Result<(i64, i64), Failure> {
    let b = bases(tx, Flow::Stake, player, now).await?;
    let price = sql_amount(TICKET_PRICE)?;
    let take = tx.prepare_cached(&TAKE_STAKE).await?;
    match tx.query_opt(&take, &[&Account::Wallet(player).id(), &price, &now, &i64::from(required), &b[0], &b[1], &b[2]]).await? {
        Some(row) => Ok((row.get(0), row.get(1))),
        None => Err(why_refused(tx, player, Flow::Stake, TICKET_PRICE, b, now, required).await?.into()),
    }
}

/// Money into a wallet from outside the game, if its guard allows it (a deposit limit is required for
/// real money): the funding account's shard pays, the wallet's running total of deposits grows, and
/// the transfer keeps it. Returns the new balance.
pub(super) async fn deposit(tx: &Transaction<'_>, player: &str, credit: &Credit, now: i64) -> Result<Cents, Failure> {
    let t = Transfer::credit(player, credit.funding, credit.amount, &credit.reason);
    let amount = sql_amount(t.amount)?;
    let required = credit.funding == Funding::Cash;
    let b = bases(tx, Flow::Deposit, player, now).await?;
    let give = tx.prepare_cached(&GIVE_DEPOSIT).await?;
    let Some(row) = tx.query_opt(&give, &[&t.credit.id(), &amount, &now, &i64::from(required), &b[0], &b[1], &b[2]]).await? else {
        return Err(why_refused(tx, player, Flow::Deposit, t.amount, b, now, required).await?.into());
    };
    let (balance, total): (i64, i64) = (row.get(0), row.get(1));
    let paid = tx
        .execute("UPDATE balances SET balance = balance - $2 WHERE account = $1 AND shard = $3", &[&t.debit.id(), &amount, &super::shard_of(player.as_bytes())])
        .await?;
    if paid != 1 {
        return Err(StoreError::Backend(format!("no account {}", t.debit.id())).into());
    }
    tx.execute(
        "INSERT INTO transfers (kind, debit, credit, amount, reason, created_at, wallet_total) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&t.kind.as_str(), &t.debit.id(), &t.credit.id(), &amount, &t.reason, &now, &total],
    )
    .await?;
    Ok(cents(balance)?)
}

async fn record(client: &impl GenericClient, player: &str, now: i64, actor: Actor, kind: &str, detail: &str) -> Result<(), Failure> {
    client.execute(&client.prepare_cached(rg::RECORD).await?, &[&player, &now, &actor.as_str(), &kind, &detail]).await?;
    Ok(())
}

async fn pending(client: &impl GenericClient, player: &str) -> Result<Vec<PendingRaise>, Failure> {
    let rows = client.query(rg::RAISES, &[&player]).await?;
    Ok(rows.iter().map(rg::raise_from).collect::<Result<_, _>>()?)
}

async fn pending_of(client: &impl GenericClient, player: &str, flow: Flow, span: Span) -> Result<Option<PendingRaise>, Failure> {
    Ok(pending(client, player).await?.into_iter().find(|p| p.flow == flow && p.span == span))
}

fn optional_amount(amount: Option<Cents>) -> Result<Option<i64>, StoreError> {
    amount.map(sql_amount).transpose()
}

pub(super) async fn standing(client: &impl GenericClient, player: &str, now: i64) -> Result<Standing, Failure> {
    let guard = guard(client, player).await?.ok_or(StoreError::NotFound("player"))?;
    let starts = rg::window_starts(now);
    let reality: i32 = client.query_one("SELECT reality_minutes FROM players WHERE id = $1", &[&player]).await?.get(0);
    let facts = StandingFacts {
        stake_bases: bases(client, Flow::Stake, player, now).await?,
        stake_oldest: three(client, STAKE_OLDEST, player, starts).await?,
        deposit_bases: bases(client, Flow::Deposit, player, now).await?,
        deposit_oldest: three(client, DEPOSIT_OLDEST, &Account::Wallet(player).id(), starts).await?,
        pending: pending(client, player).await?,
        pause_kind: pause_kind(client, player).await?,
        reality_minutes: u32::try_from(reality).map_err(|e| StoreError::Backend(e.to_string()))?,
        guard,
    };
    Ok(facts.standing(now))
}

/// Writes limit `(flow, span)` of the player's wallet from `current` to `wanted`; a limit changed since
/// it was read is a conflict, and the unit runs again.
async fn set_limit(tx: &Transaction<'_>, player: &str, flow: Flow, span: Span, wanted: Option<Cents>, current: Option<Cents>) -> Result<(), Failure> {
    let sql = rg::set_limit(WALLET, flow, span);
    if tx.execute(&sql, &[&Account::Wallet(player).id(), &optional_amount(wanted)?, &optional_amount(current)?]).await? != 1 {
        return Err(Failure::Retry("a limit changed under its change".into()));
    }
    Ok(())
}

pub(super) async fn change_limit(tx: &Transaction<'_>, player: &str, flow: Flow, span: Span, wanted: Option<Cents>, now: i64) -> Result<ChangeKind, Failure> {
    let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
    let current = guard.limits.get(flow, span);
    let plan = rg::plan_change(flow, span, current, wanted, pending_of(tx, player, flow, span).await?.as_ref(), now);
    if plan.cancel_pending {
        tx.execute(rg::DROP_RAISE, &[&player, &flow.as_str(), &span.as_str()]).await?;
    }
    if let Some(set) = plan.set {
        set_limit(tx, player, flow, span, set, current).await?;
    }
    if let Some(ask) = &plan.ask {
        let amount = optional_amount(ask.amount_cents.map(Cents))?;
        tx.execute(rg::ASK_RAISE, &[&player, &flow.as_str(), &span.as_str(), &amount, &now]).await?;
    }
    for (kind, detail) in &plan.events {
        record(tx, player, now, Actor::Player, kind, detail).await?;
    }
    Ok(plan.kind)
}

pub(super) async fn confirm_raise(tx: &Transaction<'_>, player: &str, flow: Flow, span: Span, now: i64) -> Result<(), Failure> {
    let raise = pending_of(tx, player, flow, span).await?.ok_or(StoreError::NoRaisePending)?;
    raise.confirmable(now)?;
    let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
    let (current, wanted) = (guard.limits.get(flow, span), raise.amount_cents.map(Cents));
    // Taken away by this unit only: another confirmation of it finds none and fails.
    if tx.query_opt(rg::DROP_RAISE, &[&player, &flow.as_str(), &span.as_str()]).await?.is_none() {
        return Err(StoreError::NoRaisePending.into());
    }
    set_limit(tx, player, flow, span, wanted, current).await?;
    record(tx, player, now, Actor::Player, "raise_confirmed", &rg::limit_detail(flow, span, wanted, current)).await
}

pub(super) async fn lapse_raises(tx: &Transaction<'_>, now: i64) -> Result<usize, Failure> {
    let lapsed = tx.query(rg::LAPSED_RAISES, &[&(now - rg::RAISE_DELAY - rg::CONFIRM_WINDOW)]).await?;
    let mut count = 0;
    for row in &lapsed {
        let (raise, player): (PendingRaise, String) = (rg::raise_from(row)?, row.get(4));
        // Taken away only if still the raise read: one confirmed or asked again meanwhile stays.
        if tx.execute(rg::DROP_LAPSED, &[&player, &raise.flow.as_str(), &raise.span.as_str(), &raise.asked_at]).await? == 1 {
            let detail = rg::limit_detail(raise.flow, raise.span, raise.amount_cents.map(Cents), None);
            record(tx, &player, raise.lapses_at, Actor::Server, "raise_lapsed", &detail).await?;
            count += 1;
        }
    }
    Ok(count)
}

pub(super) async fn pause(tx: &Transaction<'_>, player: &str, pause: Pause, actor: Actor, now: i64) -> Result<(), Failure> {
    if tx.execute(&tx.prepare_cached(&PAUSE_WALLET).await?, &[&Account::Wallet(player).id(), &pause.until]).await? == 0 {
        let guard = guard(tx, player).await?.ok_or(StoreError::NotFound("player"))?;
        let kind = pause_kind(tx, player).await?.unwrap_or(PauseKind::Break);
        return Err(StoreError::AlreadyPaused(Pause { kind, until: guard.paused_until }).into());
    }
    tx.execute("UPDATE players SET pause_kind = $2 WHERE id = $1", &[&player, &pause.kind.as_str()]).await?;
    tx.execute("DELETE FROM sessions WHERE player_id = $1", &[&player]).await?;
    record(tx, player, now, actor, pause.kind.as_str(), &serde_json::json!({ "until": pause.until }).to_string()).await
}

pub(super) async fn events(client: &impl GenericClient, player: &str, since: i64) -> Result<Vec<rg::ResponsibleEvent>, Failure> {
    let rows = client.query(rg::EVENTS, &[&player, &since]).await?;
    Ok(rows.iter().map(rg::event_from).collect::<Result<_, _>>()?)
}

pub(super) async fn set_reality_interval(tx: &Transaction<'_>, player: &str, minutes: u32, now: i64) -> Result<(), Failure> {
    let stored = i32::try_from(minutes).map_err(|e| StoreError::Backend(e.to_string()))?;
    if tx.execute("UPDATE players SET reality_minutes = $2 WHERE id = $1", &[&player, &stored]).await? != 1 {
        return Err(StoreError::NotFound("player").into());
    }
    tx.execute(rg::SOONER_REALITY_CHECKS, &[&player, &(now + i64::from(minutes) * 60)]).await?;
    record(tx, player, now, Actor::Player, "reality_interval_set", &serde_json::json!({ "minutes": minutes }).to_string()).await
}

pub(super) async fn reality_check(tx: &Transaction<'_>, token_hash: &str, acknowledge: bool, now: i64) -> Result<(), Failure> {
    let sql = if acknowledge { rg::ACKNOWLEDGE_REALITY_CHECK } else { rg::SHOW_REALITY_CHECK };
    let Some(row) = tx.query_opt(sql, &[&token_hash, &now]).await? else { return Ok(()) };
    let (player, started): (String, i64) = (row.get(0), row.get(1));
    let detail = rg::reality_detail(now - started, summary(tx, &player, started).await?);
    record(tx, &player, now, Actor::Player, if acknowledge { "reality_check_acknowledged" } else { "reality_check_shown" }, &detail).await
}

pub(super) async fn summary(client: &impl GenericClient, player: &str, since: i64) -> Result<rg::PlaySummary, Failure> {
    let row = client.query_one(rg::PLAY_SINCE, &[&player, &since]).await?;
    let tickets = u64::try_from(row.get::<_, i64>(0)).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(rg::PlaySummary { tickets, staked_cents: tickets * TICKET_PRICE.0, won_cents: cents(row.get(1))?.0 })
}

pub(super) async fn import_bans(tx: &Transaction<'_>, keys: &[String], now: i64) -> Result<Vec<(String, Cents)>, Failure> {
    tx.execute("DELETE FROM banned_identities", &[]).await?;
    tx.execute("INSERT INTO banned_identities (identity_key, imported_at) SELECT DISTINCT k, CAST($2 AS BIGINT) FROM unnest($1::TEXT[]) k", &[&keys, &now])
        .await?;
    let matched: Vec<String> = tx.query(rg::BANNED_OPEN_ACCOUNTS, &[]).await?.iter().map(|r| r.get(0)).collect();
    let mut closed = Vec::new();
    for player in matched {
        let paid = back_office::close_account(&mut super::tx::PgTx(tx), &player, "closed: in the national ban file", "ban_file_match", now).await?;
        closed.push((player, paid));
    }
    Ok(closed)
}

pub(super) async fn banned(client: &impl GenericClient, identity_key: &str) -> Result<bool, Failure> {
    Ok(client.query_opt("SELECT 1 FROM banned_identities WHERE identity_key = $1", &[&identity_key]).await?.is_some())
}
