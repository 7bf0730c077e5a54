//! Responsible gaming on SQLite: the statements of [`crate::server::store::responsible`] run on the
//! writer's connection (or a reader's, for what only reads).

use super::one;
use crate::money::Cents;
use crate::rules::prize_table::TICKET_PRICE;
use crate::server::store::back_office;
use crate::server::store::ledger::{Account, Transfer};
use crate::server::store::responsible::{
    self as rg, Actor, ChangeKind, DEPOSIT_BASES, DEPOSIT_OLDEST, DEPOSIT_REACHING, Flow, Guard, Pause, PauseKind, PendingRaise, STAKE_BASES, STAKE_OLDEST,
    STAKE_REACHING, Span, Standing, StandingFacts,
};
use crate::server::store::rows::Columns;
use crate::server::store::{Credit, StoreError, cents, sql_amount};
use rusqlite::{Connection, OptionalExtension, params};
use std::sync::LazyLock;

/// A wallet's guard row.
const WALLET: &str = "accounts WHERE id = $1";
static TAKE_STAKE: LazyLock<String> = LazyLock::new(|| numbered(&rg::take_stake(WALLET)));
static GIVE_DEPOSIT: LazyLock<String> = LazyLock::new(|| numbered(&rg::give_deposit(WALLET)));
static READ_GUARD: LazyLock<String> = LazyLock::new(|| numbered(&rg::read_guard(WALLET)));
static PAUSE_WALLET: LazyLock<String> = LazyLock::new(|| numbered(&rg::pause_wallet(WALLET)));
static BASES: LazyLock<[String; 2]> = LazyLock::new(|| [numbered(STAKE_BASES), numbered(DEPOSIT_BASES)]);

/// A statement written for PostgreSQL's `$n` parameters, with SQLite's `?n`. SQLite reads `$2` as a
/// parameter *named* "$2", numbered by where it first appears, not as the second.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) { '?' } else { c });
    }
    out
}

/// A cached statement of [`numbered`] text.
pub(super) fn prepare<'c>(conn: &'c Connection, sql: &str) -> Result<rusqlite::CachedStatement<'c>, StoreError> {
    Ok(conn.prepare_cached(&numbered(sql))?)
}

/// What a flow's statements key on: the player's tickets, or the wallet's deposits.
fn flow_key(flow: Flow, player: &str) -> String {
    match flow {
        Flow::Stake => player.to_owned(),
        Flow::Deposit => Account::Wallet(player).id(),
    }
}

fn three(conn: &Connection, sql: &str, key: &str, at: [i64; 3]) -> Result<[Option<i64>; 3], StoreError> {
    Ok(prepare(conn, sql)?.query_row(params![key, at[0], at[1], at[2]], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?]))?)
}

fn bases(conn: &Connection, flow: Flow, player: &str, now: i64) -> Result<[i64; 3], StoreError> {
    let sql = &BASES[usize::from(flow == Flow::Deposit)];
    let at = rg::window_starts(now);
    let bases: [Option<i64>; 3] =
        prepare(conn, sql)?.query_row(params![flow_key(flow, player), at[0], at[1], at[2]], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?]))?;
    Ok(bases.map(|b| b.unwrap_or(0)))
}

fn guard(conn: &Connection, player: &str) -> Result<Option<Guard>, StoreError> {
    one(&mut conn.prepare_cached(&READ_GUARD)?, [Account::Wallet(player).id()], |r| rg::guard_from(r))
}

fn pause_kind(conn: &Connection, player: &str) -> Result<Option<PauseKind>, StoreError> {
    let kind: Option<String> = prepare(conn, "SELECT pause_kind FROM players WHERE id = $1")?.query_row([player], |r| r.get(0)).optional()?.flatten();
    Ok(kind.as_deref().and_then(PauseKind::parse))
}

/// Why the guard refused `amount` of `flow`, read after the refusal.
fn why_refused(conn: &Connection, player: &str, flow: Flow, amount: Cents, bases: [i64; 3], now: i64, required: bool) -> Result<StoreError, StoreError> {
    let Some(guard) = guard(conn, player)? else {
        return Ok(if flow == Flow::Stake { StoreError::InsufficientFunds { balance: Cents::ZERO, price: amount } } else { StoreError::NotFound("player") });
    };
    let refused = rg::refusal(&guard, flow, amount, bases, now, required);
    let pause = if matches!(refused, Err(rg::Refused::Paused)) { pause_kind(conn, player)? } else { None };
    let mut reaching = Vec::new();
    if let Err(rg::Refused::Limits(binding)) = &refused {
        let sql = if flow == Flow::Stake { STAKE_REACHING } else { DEPOSIT_REACHING };
        for b in binding {
            reaching.push(prepare(conn, sql)?.query_row(params![flow_key(flow, player), now - b.span.seconds(), b.need], |r| r.get(0))?);
        }
    }
    Ok(rg::explain(refused, flow, amount, &guard, pause, &reaching))
}

/// Takes a ticket's stake from the player's wallet if its balance and guard allow it: the balance and
/// the running total of stakes after it.
pub(super) fn take_stake(conn: &Connection, player: &str, now: i64, required: bool) -> Result<(i64, i64), StoreError> {
    let b = bases(conn, Flow::Stake, player, now)?;
    let price = sql_amount(TICKET_PRICE)?;
    let taken = conn
        .prepare_cached(&TAKE_STAKE)?
        .query_row(params![Account::Wallet(player).id(), price, now, i64::from(required), b[0], b[1], b[2]], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    match taken {
        Some(taken) => Ok(taken),
        None => Err(why_refused(conn, player, Flow::Stake, TICKET_PRICE, b, now, required)?),
    }
}

/// Money into a wallet from outside the game, if its guard allows it (a deposit limit is required for
/// real money): the funding account pays, the wallet's running total of deposits grows, and the
/// transfer keeps it.
pub(super) fn deposit(conn: &Connection, player: &str, credit: &Credit, now: i64) -> Result<Cents, StoreError> {
    let t = Transfer::credit(player, credit.funding, credit.amount, &credit.reason);
    let amount = sql_amount(t.amount)?;
    let required = credit.funding == crate::server::store::Funding::Cash;
    let b = bases(conn, Flow::Deposit, player, now)?;
    let given: Option<(i64, i64)> = conn
        .prepare_cached(&GIVE_DEPOSIT)?
        .query_row(params![t.credit.id(), amount, now, i64::from(required), b[0], b[1], b[2]], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((balance, total)) = given else { return Err(why_refused(conn, player, Flow::Deposit, t.amount, b, now, required)?) };
    prepare(conn, "UPDATE accounts SET balance = balance - $2 WHERE id = $1")?.execute(params![t.debit.id(), amount])?;
    prepare(conn, "INSERT INTO transfers (kind, debit, credit, amount, reason, created_at, wallet_total) VALUES ($1, $2, $3, $4, $5, $6, $7)")?
        .execute(params![t.kind.as_str(), t.debit.id(), t.credit.id(), amount, t.reason, now, total])?;
    cents(balance)
}

fn record(conn: &Connection, player: &str, now: i64, actor: Actor, kind: &str, detail: &str) -> Result<(), StoreError> {
    prepare(conn, rg::RECORD)?.execute(params![player, now, actor.as_str(), kind, detail])?;
    Ok(())
}

fn pending(conn: &Connection, player: &str) -> Result<Vec<PendingRaise>, StoreError> {
    super::all(&mut prepare(conn, rg::RAISES)?, [player], |r| rg::raise_from(r))
}

pub(super) fn standing(conn: &Connection, player: &str, now: i64) -> Result<Standing, StoreError> {
    let guard = guard(conn, player)?.ok_or(StoreError::NotFound("player"))?;
    let starts = rg::window_starts(now);
    let reality: i64 = prepare(conn, "SELECT reality_minutes FROM players WHERE id = $1")?.query_row([player], |r| r.get(0))?;
    let facts = StandingFacts {
        stake_bases: bases(conn, Flow::Stake, player, now)?,
        stake_oldest: three(conn, STAKE_OLDEST, player, starts)?,
        deposit_bases: bases(conn, Flow::Deposit, player, now)?,
        deposit_oldest: three(conn, DEPOSIT_OLDEST, &Account::Wallet(player).id(), starts)?,
        pending: pending(conn, player)?,
        pause_kind: pause_kind(conn, player)?,
        reality_minutes: u32::try_from(reality).map_err(|e| StoreError::Backend(e.to_string()))?,
        guard,
    };
    Ok(facts.standing(now))
}

pub(super) fn change_limit(conn: &Connection, player: &str, flow: Flow, span: Span, wanted: Option<Cents>, now: i64) -> Result<ChangeKind, StoreError> {
    let guard = guard(conn, player)?.ok_or(StoreError::NotFound("player"))?;
    let current = guard.limits.get(flow, span);
    let pending = pending(conn, player)?.into_iter().find(|p| p.flow == flow && p.span == span);
    let plan = rg::plan_change(flow, span, current, wanted, pending.as_ref(), now);
    if plan.cancel_pending {
        prepare(conn, rg::DROP_RAISE)?.query_row(params![player, flow.as_str(), span.as_str()], |_| Ok(())).optional()?;
    }
    if let Some(set) = plan.set {
        let (set, current) = (set.map(sql_amount).transpose()?, current.map(sql_amount).transpose()?);
        if prepare(conn, &rg::set_limit(WALLET, flow, span))?.execute(params![Account::Wallet(player).id(), set, current])? != 1 {
            return Err(StoreError::Backend("a limit changed under its change".into()));
        }
    }
    if let Some(ask) = &plan.ask {
        let amount = ask.amount_cents.map(|a| sql_amount(Cents(a))).transpose()?;
        prepare(conn, rg::ASK_RAISE)?.execute(params![player, flow.as_str(), span.as_str(), amount, now])?;
    }
    for (kind, detail) in &plan.events {
        record(conn, player, now, Actor::Player, kind, detail)?;
    }
    Ok(plan.kind)
}

pub(super) fn confirm_raise(conn: &Connection, player: &str, flow: Flow, span: Span, now: i64) -> Result<(), StoreError> {
    let raise = pending(conn, player)?.into_iter().find(|p| p.flow == flow && p.span == span).ok_or(StoreError::NoRaisePending)?;
    raise.confirmable(now)?;
    let guard = guard(conn, player)?.ok_or(StoreError::NotFound("player"))?;
    let (current, wanted) = (guard.limits.get(flow, span), raise.amount_cents.map(Cents));
    prepare(conn, rg::DROP_RAISE)?.query_row(params![player, flow.as_str(), span.as_str()], |_| Ok(()))?;
    let (set, before) = (wanted.map(sql_amount).transpose()?, current.map(sql_amount).transpose()?);
    prepare(conn, &rg::set_limit(WALLET, flow, span))?.execute(params![Account::Wallet(player).id(), set, before])?;
    record(conn, player, now, Actor::Player, "raise_confirmed", &rg::limit_detail(flow, span, wanted, current))
}

pub(super) fn lapse_raises(conn: &Connection, now: i64) -> Result<usize, StoreError> {
    let mut read = prepare(conn, rg::LAPSED_RAISES)?;
    let lapsed = super::all(&mut read, [now - rg::RAISE_DELAY - rg::CONFIRM_WINDOW], |r| Ok((rg::raise_from(r)?, r.text(4)?)))?;
    for (raise, player) in &lapsed {
        prepare(conn, rg::DROP_LAPSED)?.execute(params![player, raise.flow.as_str(), raise.span.as_str(), raise.asked_at])?;
        record(conn, player, raise.lapses_at, Actor::Server, "raise_lapsed", &rg::limit_detail(raise.flow, raise.span, raise.amount_cents.map(Cents), None))?;
    }
    Ok(lapsed.len())
}

pub(super) fn pause(conn: &Connection, player: &str, pause: Pause, actor: Actor, now: i64) -> Result<(), StoreError> {
    if conn.prepare_cached(&PAUSE_WALLET)?.execute(params![Account::Wallet(player).id(), pause.until])? == 0 {
        let guard = guard(conn, player)?.ok_or(StoreError::NotFound("player"))?;
        return Err(StoreError::AlreadyPaused(Pause { kind: pause_kind(conn, player)?.unwrap_or(PauseKind::Break), until: guard.paused_until }));
    }
    prepare(conn, "UPDATE players SET pause_kind = $2 WHERE id = $1")?.execute(params![player, pause.kind.as_str()])?;
    prepare(conn, "DELETE FROM sessions WHERE player_id = $1")?.execute([player])?;
    record(conn, player, now, actor, pause.kind.as_str(), &serde_json::json!({ "until": pause.until }).to_string())
}

pub(super) fn events(conn: &Connection, player: &str, since: i64) -> Result<Vec<rg::ResponsibleEvent>, StoreError> {
    super::all(&mut prepare(conn, rg::EVENTS)?, params![player, since], |r| rg::event_from(r))
}

pub(super) fn set_reality_interval(conn: &Connection, player: &str, minutes: u32, now: i64) -> Result<(), StoreError> {
    if prepare(conn, "UPDATE players SET reality_minutes = $2 WHERE id = $1")?.execute(params![player, minutes])? != 1 {
        return Err(StoreError::NotFound("player"));
    }
    prepare(conn, rg::SOONER_REALITY_CHECKS)?.execute(params![player, now + i64::from(minutes) * 60])?;
    record(conn, player, now, Actor::Player, "reality_interval_set", &serde_json::json!({ "minutes": minutes }).to_string())
}

pub(super) fn reality_check(conn: &Connection, token_hash: &str, acknowledge: bool, now: i64) -> Result<(), StoreError> {
    let sql = if acknowledge { rg::ACKNOWLEDGE_REALITY_CHECK } else { rg::SHOW_REALITY_CHECK };
    let Some((player, started)) = prepare(conn, sql)?.query_row(params![token_hash, now], |r| Ok((r.get::<_, String>(0)?, r.get(1)?))).optional()? else {
        return Ok(());
    };
    let detail = rg::reality_detail(now - started, summary(conn, &player, started)?);
    record(conn, &player, now, Actor::Player, if acknowledge { "reality_check_acknowledged" } else { "reality_check_shown" }, &detail)
}

pub(super) fn summary(conn: &Connection, player: &str, since: i64) -> Result<rg::PlaySummary, StoreError> {
    let (tickets, won): (i64, i64) = prepare(conn, rg::PLAY_SINCE)?.query_row(params![player, since], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let tickets = u64::try_from(tickets).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(rg::PlaySummary { tickets, staked_cents: tickets * TICKET_PRICE.0, won_cents: cents(won)?.0 })
}

pub(super) fn import_bans(conn: &Connection, keys: &[String], now: i64) -> Result<Vec<(String, Cents)>, StoreError> {
    prepare(conn, "DELETE FROM banned_identities")?.execute([])?;
    for key in keys {
        prepare(conn, "INSERT INTO banned_identities (identity_key, imported_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")?.execute(params![key, now])?;
    }
    let matched: Vec<String> = conn.prepare_cached(rg::BANNED_OPEN_ACCOUNTS)?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    let mut closed = Vec::new();
    for player in matched {
        let paid = super::tx::run(conn, async |tx| back_office::close_account(tx, &player, "closed: in the national ban file", "ban_file_match", now).await)?;
        closed.push((player, paid));
    }
    Ok(closed)
}

/// Whether a registration's identity is in the ban file.
pub(super) fn banned(conn: &Connection, identity_key: &str) -> Result<bool, StoreError> {
    Ok(prepare(conn, "SELECT 1 FROM banned_identities WHERE identity_key = $1")?.query_row([identity_key], |_| Ok(())).optional()?.is_some())
}
