//! Responsible gaming, once for both engines: limits (« modérateurs ») on stakes and deposits over
//! rolling windows, raises that wait, breaks and self-exclusion, and the record of it all. This module
//! holds the rules as data and pure decisions; [`sql`] the statements, [`units`] the units of work.
//!
//! A wallet's own row is its guard. The statement that takes a stake ([`sql::take_stake`]) or makes a
//! deposit ([`sql::give_deposit`]) checks in its own `WHERE` the limits in force, the wallet's running
//! total and any pause, so that the check and the move are one statement: safe under concurrency on
//! its own, as the balance check is (PostgreSQL re-evaluates the `WHERE` on the newest version of a
//! row it waited for). What a rolling window holds is the wallet's running total now minus the total
//! kept by its last stake (or deposit) at or before the window's start: those rows were written long
//! before, never change, and are found by one index seek ([`sql::STAKE_BASES`], [`sql::DEPOSIT_BASES`]).

pub(super) mod sql;
pub(super) mod units;

use super::StoreError;
pub use crate::api::{
    Flow, LimitRefusal, LimitState, Pause, PauseKind, PendingRaise, PlaySummary, ResponsibleEvent, Span, Standing,
};
use crate::money::Cents;

impl Span {
    pub const ALL: [Span; 3] = [Span::Day, Span::Week, Span::Month];

    /// Its length: 24 h, 7 × 24 h, 30 × 24 h.
    pub fn seconds(self) -> i64 {
        match self {
            Span::Day => 86_400,
            Span::Week => 7 * 86_400,
            Span::Month => 30 * 86_400,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Span::Day => "day",
            Span::Week => "week",
            Span::Month => "month",
        }
    }

    pub fn parse(text: &str) -> Option<Span> {
        Span::ALL.into_iter().find(|s| s.as_str() == text)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl Flow {
    pub const ALL: [Flow; 2] = [Flow::Stake, Flow::Deposit];

    pub fn as_str(self) -> &'static str {
        match self {
            Flow::Stake => "stake",
            Flow::Deposit => "deposit",
        }
    }

    pub fn parse(text: &str) -> Option<Flow> {
        Flow::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// The wallet row's running total of this flow.
    fn total_column(self) -> &'static str {
        match self {
            Flow::Stake => "staked",
            Flow::Deposit => "deposited",
        }
    }

    /// The wallet row's column holding this limit.
    pub fn limit_column(self, span: Span) -> &'static str {
        match (self, span) {
            (Flow::Stake, Span::Day) => "stake_day",
            (Flow::Stake, Span::Week) => "stake_week",
            (Flow::Stake, Span::Month) => "stake_month",
            (Flow::Deposit, Span::Day) => "deposit_day",
            (Flow::Deposit, Span::Week) => "deposit_week",
            (Flow::Deposit, Span::Month) => "deposit_month",
        }
    }
}

/// A raise or a removal waits this long before the player may confirm it (décret 2010-518 art. 16).
pub const RAISE_DELAY: i64 = 48 * 3600;
/// Then the player has this long to confirm it; unconfirmed, it lapses.
pub const CONFIRM_WINDOW: i64 = 7 * 86_400;

impl PauseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PauseKind::Break => "break",
            PauseKind::Exclusion => "exclusion",
            PauseKind::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<PauseKind> {
        [PauseKind::Break, PauseKind::Exclusion, PauseKind::Closed].into_iter().find(|k| k.as_str() == text)
    }
}

/// A closed account is paused until the end of time.
pub const FOREVER: i64 = i64::MAX;

/// Who did something the record keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    Player,
    /// The operator, from the command line.
    Operator,
    /// The server itself (a raise that lapsed).
    Server,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Player => "player",
            Actor::Operator => "operator",
            Actor::Server => "server",
        }
    }
}

/// The limits in force on one wallet, by flow and span; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitSet {
    pub stake: [Option<Cents>; 3],
    pub deposit: [Option<Cents>; 3],
}

impl LimitSet {
    pub fn get(&self, flow: Flow, span: Span) -> Option<Cents> {
        match flow {
            Flow::Stake => self.stake[span.index()],
            Flow::Deposit => self.deposit[span.index()],
        }
    }

    pub fn set(&mut self, flow: Flow, span: Span, limit: Option<Cents>) {
        match flow {
            Flow::Stake => self.stake[span.index()] = limit,
            Flow::Deposit => self.deposit[span.index()] = limit,
        }
    }
}

/// What a wallet's guard row holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guard {
    pub balance: Cents,
    pub staked: Cents,
    pub deposited: Cents,
    pub limits: LimitSet,
    pub paused_until: i64,
    /// Staff suspended the account (the back office) at this time; restoring it clears it.
    pub suspended_at: Option<i64>,
}

impl Guard {
    fn total(&self, flow: Flow) -> Cents {
        match flow {
            Flow::Stake => self.staked,
            Flow::Deposit => self.deposited,
        }
    }
}

/// The columns of a wallet's guard row, as [`guard_from`] reads them.
pub const GUARD_COLUMNS: &str = "balance, staked, deposited, stake_day, stake_week, stake_month, deposit_day, \
    deposit_week, deposit_month, paused_until, suspended_at";

/// A guard row, from the columns of [`GUARD_COLUMNS`].
pub fn guard_from(r: &impl crate::server::store::rows::Columns) -> Result<Guard, StoreError> {
    let limit = |i| r.optional_int(i)?.map(crate::server::store::cents).transpose();
    Ok(Guard {
        balance: crate::server::store::cents(r.int(0)?)?,
        staked: crate::server::store::cents(r.int(1)?)?,
        deposited: crate::server::store::cents(r.int(2)?)?,
        limits: LimitSet { stake: [limit(3)?, limit(4)?, limit(5)?], deposit: [limit(6)?, limit(7)?, limit(8)?] },
        paused_until: r.int(9)?,
        suspended_at: r.optional_int(10)?,
    })
}

/// Each window's start at `now`, in [`Span::ALL`] order: what was counted at or before it is out.
pub fn window_starts(now: i64) -> [i64; 3] {
    Span::ALL.map(|span| now - span.seconds())
}

/// Why a stake or a deposit the guard refused was refused, from the guard row read after it (the
/// balance last: a player past a limit hears of the limit). `Ok` if nothing in the guard refuses it.
pub fn refusal(
    guard: &Guard,
    flow: Flow,
    amount: Cents,
    bases: [i64; 3],
    now: i64,
    required: bool,
) -> Result<(), Refused> {
    if guard.suspended_at.is_some() {
        return Err(Refused::Suspended);
    }
    if guard.paused_until > now {
        return Err(Refused::Paused);
    }
    // Real money: nothing is credited and nothing sold before both 7-day limits are set; the one
    // missing is named (the flow's own first).
    if required
        && let Some(missing) = [flow, other(flow)].into_iter().find(|f| guard.limits.get(*f, Span::Week).is_none())
    {
        return Err(Refused::LimitsRequired(missing));
    }
    let total = guard.total(flow).0 as i64;
    let binding: Vec<Binding> = Span::ALL
        .into_iter()
        .zip(bases)
        .filter_map(|(span, base)| {
            let limit = guard.limits.get(flow, span)?;
            let used = Cents(u64::try_from(total - base).unwrap_or(0));
            (used.0 + amount.0 > limit.0).then_some(Binding {
                span,
                limit,
                used,
                need: total + amount.0 as i64 - limit.0 as i64,
            })
        })
        .collect();
    if binding.is_empty() { Ok(()) } else { Err(Refused::Limits(binding)) }
}

/// What refused a move, before the store looks up when the allowance frees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Suspended,
    Paused,
    /// This 7-day limit is not set.
    LimitsRequired(Flow),
    Limits(Vec<Binding>),
}

fn other(flow: Flow) -> Flow {
    match flow {
        Flow::Stake => Flow::Deposit,
        Flow::Deposit => Flow::Stake,
    }
}

/// A limit the amount would pass: the running total must reach `need` at a window's start for the
/// amount to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub span: Span,
    pub limit: Cents,
    pub used: Cents,
    pub need: i64,
}

/// The error a refused move is answered with: `pause_kind` read if it was a pause, and for each
/// binding limit when its first reaching amount was counted ([`sql::STAKE_REACHING`], [`sql::DEPOSIT_REACHING`]).
pub fn explain(
    refused: Result<(), Refused>,
    flow: Flow,
    amount: Cents,
    guard: &Guard,
    pause_kind: Option<PauseKind>,
    reaching: &[Option<i64>],
) -> StoreError {
    match refused {
        Err(Refused::Suspended) => StoreError::Suspended,
        Err(Refused::Paused) => {
            StoreError::Paused(Pause { kind: pause_kind.unwrap_or(PauseKind::Break), until: guard.paused_until })
        }
        Err(Refused::LimitsRequired(missing)) => StoreError::LimitsRequired(missing),
        Err(Refused::Limits(binding)) => {
            let refusals = binding.iter().zip(reaching).map(|(b, at)| b.refusal(flow, amount, *at)).collect();
            binding_longest(refusals)
                .map_or_else(|| StoreError::Backend("a limit refused, but none binds".into()), StoreError::LimitReached)
        }
        Ok(()) => match flow {
            Flow::Stake => StoreError::InsufficientFunds { balance: guard.balance, price: amount },
            Flow::Deposit => StoreError::Backend("the guard refused a deposit it allows".into()),
        },
    }
}

impl std::fmt::Display for LimitRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let over = match self.span {
            Span::Day => "24 h",
            Span::Week => "7 days",
            Span::Month => "30 days",
        };
        write!(
            f,
            "the {} limit over {over} ({}) allows {} more",
            self.flow.as_str(),
            Cents(self.limit_cents),
            Cents(self.left_cents)
        )?;
        match self.frees_at {
            Some(at) => write!(f, "; more frees up at {}", crate::server::dates::utc(at)),
            None => write!(f, ", never enough for this amount"),
        }
    }
}

impl Binding {
    /// This limit's refusal, `first_reaching` being when the first amount counted in the window that
    /// brings the running total to `need` was counted (from [`sql::STAKE_REACHING`] or [`sql::DEPOSIT_REACHING`]).
    pub fn refusal(&self, flow: Flow, amount: Cents, first_reaching: Option<i64>) -> LimitRefusal {
        let frees_at = if amount > self.limit { None } else { first_reaching.map(|at| at + self.span.seconds()) };
        LimitRefusal {
            flow,
            span: self.span,
            limit_cents: self.limit.0,
            left_cents: self.limit.0.saturating_sub(self.used.0),
            frees_at,
        }
    }
}

/// Of the limits that refuse a move, the one the player must wait for longest (never, first).
pub fn binding_longest(refusals: Vec<LimitRefusal>) -> Option<LimitRefusal> {
    refusals.into_iter().max_by_key(|r| r.frees_at.unwrap_or(i64::MAX))
}

/// How a change of limit applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A first limit or a lower one: at once.
    AtOnce,
    /// A higher limit or none: after [`RAISE_DELAY`], once confirmed.
    Raise,
    /// The limit already is what is asked.
    Same,
}

/// How changing `current` to `wanted` applies (`None`: no limit).
pub fn change_kind(current: Option<Cents>, wanted: Option<Cents>) -> ChangeKind {
    match (current, wanted) {
        (a, b) if a == b => ChangeKind::Same,
        (None, Some(_)) => ChangeKind::AtOnce,
        (Some(a), Some(b)) if b < a => ChangeKind::AtOnce,
        _ => ChangeKind::Raise,
    }
}

impl PendingRaise {
    pub fn new(flow: Flow, span: Span, amount: Option<Cents>, asked_at: i64) -> PendingRaise {
        let confirmable_at = asked_at + RAISE_DELAY;
        PendingRaise {
            flow,
            span,
            amount_cents: amount.map(|a| a.0),
            asked_at,
            confirmable_at,
            lapses_at: confirmable_at + CONFIRM_WINDOW,
        }
    }

    /// Whether it may be confirmed at `now`: not before its 48 h, not once lapsed.
    pub fn confirmable(&self, now: i64) -> Result<(), StoreError> {
        if now < self.confirmable_at {
            Err(StoreError::RaiseNotYet { confirmable_at: self.confirmable_at })
        } else if now >= self.lapses_at {
            Err(StoreError::RaiseLapsed { lapsed_at: self.lapses_at })
        } else {
            Ok(())
        }
    }
}

/// The wallet's limits as they stand at `now`, `bases` and `oldest` being, per flow, the totals at each
/// window's start and when the oldest amount still in each window was counted.
pub fn limit_states(guard: &Guard, bases: [(Flow, [i64; 3], [Option<i64>; 3]); 2]) -> Vec<LimitState> {
    let mut states = Vec::new();
    for (flow, bases, oldest) in bases {
        for ((span, base), oldest) in Span::ALL.into_iter().zip(bases).zip(oldest) {
            let used = u64::try_from(guard.total(flow).0 as i64 - base).unwrap_or(0);
            let limit = guard.limits.get(flow, span).map(|l| l.0);
            states.push(LimitState {
                flow,
                span,
                limit_cents: limit,
                used_cents: used,
                left_cents: limit.map(|l| l.saturating_sub(used)),
                next_frees_at: oldest.filter(|_| used > 0).map(|at| at + span.seconds()),
            });
        }
    }
    states
}

/// A limit raise read back from the columns of [`sql::RAISES`].
pub fn raise_from(r: &impl crate::server::store::rows::Columns) -> Result<PendingRaise, StoreError> {
    let (flow, span) = (r.text(0)?, r.text(1)?);
    let flow = Flow::parse(&flow).ok_or_else(|| StoreError::Backend(format!("a raise of flow {flow:?}")))?;
    let span = Span::parse(&span).ok_or_else(|| StoreError::Backend(format!("a raise over {span:?}")))?;
    Ok(PendingRaise::new(flow, span, r.optional_int(2)?.map(crate::server::store::cents).transpose()?, r.int(3)?))
}

/// What changes when a limit is changed: the statements a backend runs, and the events it records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitPlan {
    pub kind: ChangeKind,
    /// The limit to write at once (`AtOnce`).
    pub set: Option<Option<Cents>>,
    /// A raise to ask (`Raise`).
    pub ask: Option<PendingRaise>,
    /// A pending raise of the same limit to take away (a lower limit, or the same again, cancels it).
    pub cancel_pending: bool,
    /// `(kind, detail)` to record, in order.
    pub events: Vec<(&'static str, String)>,
}

/// How changing limit `(flow, span)` from `current` to `wanted` at `now` goes, `pending` being the raise
/// of it already asked, if any.
pub fn plan_change(
    flow: Flow,
    span: Span,
    current: Option<Cents>,
    wanted: Option<Cents>,
    pending: Option<&PendingRaise>,
    now: i64,
) -> LimitPlan {
    let kind = change_kind(current, wanted);
    let mut events = Vec::new();
    let cancel_pending = pending.is_some() && kind != ChangeKind::Raise;
    if cancel_pending {
        events.push((
            "raise_cancelled",
            limit_detail(flow, span, pending.and_then(|p| p.amount_cents).map(Cents), current),
        ));
    }
    let (set, ask) = match kind {
        ChangeKind::AtOnce => {
            events.push((
                if current.is_none() { "limit_set" } else { "limit_lowered" },
                limit_detail(flow, span, wanted, current),
            ));
            (Some(wanted), None)
        }
        ChangeKind::Raise => {
            events.push(("raise_asked", limit_detail(flow, span, wanted, current)));
            (None, Some(PendingRaise::new(flow, span, wanted, now)))
        }
        ChangeKind::Same => (None, None),
    };
    LimitPlan { kind, set, ask, cancel_pending, events }
}

/// The standing a player reads, from what the backend looked up.
pub struct StandingFacts {
    pub guard: Guard,
    pub stake_bases: [i64; 3],
    pub stake_oldest: [Option<i64>; 3],
    pub deposit_bases: [i64; 3],
    pub deposit_oldest: [Option<i64>; 3],
    pub pending: Vec<PendingRaise>,
    pub pause_kind: Option<PauseKind>,
    pub reality_minutes: u32,
}

impl StandingFacts {
    pub fn standing(self, now: i64) -> Standing {
        let limits = limit_states(
            &self.guard,
            [
                (Flow::Stake, self.stake_bases, self.stake_oldest),
                (Flow::Deposit, self.deposit_bases, self.deposit_oldest),
            ],
        );
        let paused = (self.guard.paused_until > now)
            .then(|| Pause { kind: self.pause_kind.unwrap_or(PauseKind::Break), until: self.guard.paused_until });
        // A raise past its time is shown lapsed until the server's round takes it away: not pending.
        let pending = self.pending.into_iter().filter(|p| now < p.lapses_at).collect();
        Standing { limits, pending, paused, reality_minutes: self.reality_minutes }
    }
}

/// An event from the columns of [`sql::EVENTS`].
pub fn event_from(r: &impl crate::server::store::rows::Columns) -> Result<ResponsibleEvent, StoreError> {
    Ok(ResponsibleEvent { at: r.int(0)?, actor: r.text(1)?, kind: r.text(2)?, detail: r.json(3)? })
}

/// A limit's detail in the record.
pub fn limit_detail(flow: Flow, span: Span, amount: Option<Cents>, before: Option<Cents>) -> String {
    serde_json::json!({ "flow": flow, "span": span, "limit_cents": amount.map(|a| a.0), "before_cents": before.map(|a|
        a.0) })
    .to_string()
}

/// A reality check's detail in the record: how long the session has lasted and what it played.
pub fn reality_detail(seconds: i64, play: PlaySummary) -> String {
    serde_json::json!({ "session_seconds": seconds, "play": play }).to_string()
}

/// The session of a token, as the server checks it on each request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub player_id: String,
    pub started_at: i64,
    /// When its next reality check is due.
    pub reality_due_at: i64,
}

/// A session from the columns of [`sql::SESSION`].
pub fn session_from(r: &impl crate::server::store::rows::Columns) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord { player_id: r.text(0)?, started_at: r.int(1)?, reality_due_at: r.int(2)? })
}

/// The minutes a reality check may come after.
pub const REALITY_INTERVALS: [u32; 3] = [15, 30, 60];

#[cfg(test)]
mod tests {
    use super::*;

    /// A guard with this 7-day stake limit, and a 7-day deposit limit far away.
    fn guard(staked: u64, week: Option<u64>) -> Guard {
        let mut limits = LimitSet::default();
        limits.set(Flow::Stake, Span::Week, week.map(Cents));
        limits.set(Flow::Deposit, Span::Week, Some(Cents(10_000_000)));
        Guard { balance: Cents(10_000), staked: Cents(staked), limits, ..Guard::default() }
    }

    #[test]
    fn a_stake_is_refused_by_the_limit_it_would_pass_and_frees_one_window_after_the_first_stake_that_must_leave() {
        // 9 € staked in the week, limit 10 €: a 3 € ticket needs the total at the window's start to be 2 €.
        let refused = refusal(&guard(900, Some(1_000)), Flow::Stake, Cents(300), [0, 0, 0], 1_000_000, true);
        let Err(Refused::Limits(binding)) = refused else { panic!("{refused:?}") };
        assert_eq!(binding, vec![Binding { span: Span::Week, limit: Cents(1_000), used: Cents(900), need: 200 }]);
        let told = binding[0].refusal(Flow::Stake, Cents(300), Some(999_000));
        assert_eq!(
            told,
            LimitRefusal {
                flow: Flow::Stake,
                span: Span::Week,
                limit_cents: 1_000,
                left_cents: 100,
                frees_at: Some(999_000 + 7 * 86_400)
            }
        );
        // Once 3 € left the window (a base of 300), it fits.
        assert_eq!(refusal(&guard(900, Some(1_000)), Flow::Stake, Cents(300), [0, 300, 0], 1_000_000, true), Ok(()));
        // Below the price, it never frees.
        assert_eq!(
            Binding { span: Span::Week, limit: Cents(200), used: Cents(0), need: 100 }
                .refusal(Flow::Stake, Cents(300), Some(5))
                .frees_at,
            None
        );
    }

    #[test]
    fn a_pause_comes_first_then_the_required_limits_then_the_limits() {
        let mut paused = guard(0, Some(1_000));
        paused.paused_until = 2_000;
        assert_eq!(refusal(&paused, Flow::Stake, Cents(300), [0; 3], 1_999, true), Err(Refused::Paused));
        assert_eq!(
            refusal(&paused, Flow::Stake, Cents(300), [0; 3], 2_000, true),
            Ok(()),
            "a pause ends at its second"
        );
        assert_eq!(
            refusal(&guard(0, None), Flow::Stake, Cents(300), [0; 3], 0, true),
            Err(Refused::LimitsRequired(Flow::Stake))
        );
        let mut stake_only = guard(0, Some(1_000));
        stake_only.limits.set(Flow::Deposit, Span::Week, None);
        assert_eq!(
            refusal(&stake_only, Flow::Stake, Cents(300), [0; 3], 0, true),
            Err(Refused::LimitsRequired(Flow::Deposit)),
            "both"
        );
        assert_eq!(
            refusal(&guard(0, None), Flow::Stake, Cents(300), [0; 3], 0, false),
            Ok(()),
            "demo mode requires none"
        );
        assert_eq!(refusal(&guard(0, None), Flow::Deposit, Cents(300), [0; 3], 0, false), Ok(()));
    }

    #[test]
    fn lowering_or_a_first_limit_is_at_once_and_raising_or_removing_waits() {
        assert_eq!(change_kind(None, Some(Cents(100))), ChangeKind::AtOnce);
        assert_eq!(change_kind(Some(Cents(100)), Some(Cents(50))), ChangeKind::AtOnce);
        assert_eq!(change_kind(Some(Cents(100)), Some(Cents(150))), ChangeKind::Raise);
        assert_eq!(change_kind(Some(Cents(100)), None), ChangeKind::Raise);
        assert_eq!(change_kind(Some(Cents(100)), Some(Cents(100))), ChangeKind::Same);
        assert_eq!(change_kind(None, None), ChangeKind::Same);
    }

    #[test]
    fn a_raise_is_confirmable_from_48_hours_and_lapses_a_week_later() {
        let raise = PendingRaise::new(Flow::Stake, Span::Week, Some(Cents(5_000)), 1_000);
        assert_eq!(
            raise.confirmable(1_000 + 48 * 3600 - 60),
            Err(StoreError::RaiseNotYet { confirmable_at: 1_000 + 48 * 3600 })
        );
        assert_eq!(raise.confirmable(1_000 + 48 * 3600), Ok(()));
        assert_eq!(
            raise.confirmable(raise.lapses_at),
            Err(StoreError::RaiseLapsed { lapsed_at: 1_000 + 48 * 3600 + 7 * 86_400 })
        );
    }
}
