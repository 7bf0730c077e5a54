//! Responsible gaming's SQL, which both engines run as it is.

use super::{Flow, Span};
use crate::server::store::tx::Layout;

/// The guard's condition for `amount` of `flow` at `now`, in the `WHERE` of the statement that moves
/// it: not suspended; no pause; both 7-day limits (stakes and deposits) set if `required` is not 0; and every limit set
/// still holds once the
/// amount is counted. `bases` are the running totals at each window's start ([`Span::ALL`] order);
/// `row` qualifies the columns (`b.` in a statement that names the table).
fn guard_condition(flow: Flow, row: &str, amount: &str, now: &str, required: &str, bases: [&str; 3]) -> String {
    let total = flow.total_column();
    let (stake_week, deposit_week) = (Flow::Stake.limit_column(Span::Week), Flow::Deposit.limit_column(Span::Week));
    let mut condition = format!(
        "{row}suspended_at IS NULL AND {row}paused_until <= {now} AND (CAST({required} AS BIGINT) = 0 OR \
            ({row}{stake_week} IS NOT NULL AND {row}{deposit_week} IS NOT NULL))"
    );
    for (span, base) in Span::ALL.into_iter().zip(bases) {
        let limit = flow.limit_column(span);
        condition.push_str(&format!(" AND ({row}{limit} IS NULL OR {row}{total} + {amount} - {base} <= {row}{limit})"));
    }
    condition
}

/// Takes a stake from the wallet `$1` whose guard allows it: `$2` the amount, `$3` now, `$4` whether
/// the 7-day limits are required (1) or not (0), `$5`–`$7` the stake bases. Returns the balance and the
/// running total after it; no row if the balance or the guard refused it.
pub fn take_stake(layout: &Layout) -> String {
    let guard = guard_condition(Flow::Stake, "", "$2", "$3", "$4", ["$5", "$6", "$7"]);
    let Layout { wallet_table, wallet_key, .. } = layout;
    format!(
        "UPDATE {wallet_table} SET balance = balance - $2, staked = staked + $2 \
         WHERE {wallet_key} AND balance >= $2 AND {guard} RETURNING balance, staked"
    )
}

/// Puts a deposit into the wallet `$1` whose guard allows it; the parameters as [`take_stake`]'s, with
/// the deposit bases. Returns the balance and the running total after it.
pub fn give_deposit(layout: &Layout) -> String {
    let guard = guard_condition(Flow::Deposit, "", "$2", "$3", "$4", ["$5", "$6", "$7"]);
    let Layout { wallet_table, wallet_key, .. } = layout;
    format!(
        "UPDATE {wallet_table} SET balance = balance + $2, deposited = deposited + $2 \
         WHERE {wallet_key} AND {guard} RETURNING balance, deposited"
    )
}

/// A group's debit (PostgreSQL): each wallet `b` pays `o.amount` if its guard allows it, with its bases
/// `o.day`, `o.week`, `o.month`, `$3` now and `$4` whether limits are required.
pub fn group_guard() -> String {
    guard_condition(Flow::Stake, "b.", "o.amount", "$3", "$4", ["o.day", "o.week", "o.month"])
}

/// The running total of player `$key`'s stakes at `$at`.
macro_rules! stake_base {
    ($key:literal, $at:literal) => {
        concat!(
            "COALESCE((SELECT MAX(stake_total) FROM tickets WHERE player_id = ",
            $key,
            " AND sold_at = (SELECT MAX(sold_at) FROM tickets WHERE player_id = ",
            $key,
            " AND sold_at <= ",
            $at,
            ")), 0)"
        )
    };
}
pub(crate) use stake_base;

/// The running total of wallet `$1`'s deposits at `$at`.
macro_rules! deposit_base {
    ($at:literal) => {
        concat!(
            "COALESCE((SELECT MAX(wallet_total) FROM transfers WHERE credit = $1 AND wallet_total IS NOT NULL AND \
                created_at = ",
            "(SELECT MAX(created_at) FROM transfers WHERE credit = $1 AND wallet_total IS NOT NULL AND created_at <= ",
            $at,
            ")), 0)"
        )
    };
}

/// The running total of player `$1`'s stakes at each window's start (`$2`, `$3`, `$4`: the last ticket
/// sold at or before it; of tickets sold in the same second, the one sold last).
pub const STAKE_BASES: &str =
    concat!("SELECT ", stake_base!("$1", "$2"), ", ", stake_base!("$1", "$3"), ", ", stake_base!("$1", "$4"));

/// The running total of wallet `$1`'s deposits at each window's start (`$2`, `$3`, `$4`).
pub const DEPOSIT_BASES: &str =
    concat!("SELECT ", deposit_base!("$2"), ", ", deposit_base!("$3"), ", ", deposit_base!("$4"));

/// When player `$1`'s first stake in the window (after `$2`) whose running total is at least `$3` was
/// sold: once it leaves the window, `$3` is free again.
pub const STAKE_REACHING: &str =
    "SELECT MIN(sold_at) FROM tickets WHERE player_id = $1 AND sold_at > $2 AND stake_total >= $3";
/// The same for the deposits into wallet `$1`.
pub const DEPOSIT_REACHING: &str = "SELECT MIN(created_at) FROM transfers WHERE credit = $1 AND wallet_total IS NOT \
    NULL AND created_at > $2 AND wallet_total >= $3";

/// Player `$1`'s pending raises.
pub const RAISES: &str =
    "SELECT flow, span, amount, asked_at FROM limit_raises WHERE player_id = $1 ORDER BY flow, span";
/// Asks a raise for player `$1` of limit (`$2` flow, `$3` span) to `$4` (null: removed) at `$5`, in place
/// of any pending one.
pub const ASK_RAISE: &str = "INSERT INTO limit_raises (player_id, flow, span, amount, asked_at) VALUES ($1, $2, $3, \
    $4, $5) \
     ON CONFLICT (player_id, flow, span) DO UPDATE SET amount = excluded.amount, asked_at = excluded.asked_at";
/// Takes player `$1`'s pending raise of (`$2`, `$3`) away, returning what it was.
pub const DROP_RAISE: &str =
    "DELETE FROM limit_raises WHERE player_id = $1 AND flow = $2 AND span = $3 RETURNING flow, span, amount, asked_at";
/// Raises asked at or before `$1`: lapsed, unconfirmed.
/// Read by [`raise_from`], the player last.
pub const LAPSED_RAISES: &str =
    "SELECT flow, span, amount, asked_at, player_id FROM limit_raises WHERE asked_at <= $1 ORDER BY asked_at LIMIT 256";
/// Takes raise (`$1`, `$2`, `$3`) away if it is still the one asked at `$4`.
pub const DROP_LAPSED: &str =
    "DELETE FROM limit_raises WHERE player_id = $1 AND flow = $2 AND span = $3 AND asked_at = $4";

/// Sets the limit `(flow, span)` of wallet `$1` to `$2` if it still is `$3` (compare-and-set: a change
/// that read an older limit changes nothing).
pub fn set_limit(layout: &Layout, flow: Flow, span: Span) -> String {
    let column = flow.limit_column(span);
    format!(
        "UPDATE {} SET {column} = $2 WHERE {} AND {column} IS NOT DISTINCT FROM $3",
        layout.wallet_table, layout.wallet_key
    )
}

/// Pauses wallet `$1` until `$2`, if it is not paused as long already.
pub fn pause_wallet(layout: &Layout) -> String {
    format!("UPDATE {} SET paused_until = $2 WHERE {} AND paused_until < $2", layout.wallet_table, layout.wallet_key)
}

/// When the oldest stake of player `$1` still in each window (after `$2`, `$3`, `$4`) was made.
pub const STAKE_OLDEST: &str = "SELECT (SELECT MIN(sold_at) FROM tickets WHERE player_id = $1 AND sold_at > $2), \
     (SELECT MIN(sold_at) FROM tickets WHERE player_id = $1 AND sold_at > $3), \
     (SELECT MIN(sold_at) FROM tickets WHERE player_id = $1 AND sold_at > $4)";
/// The same for the deposits into wallet `$1`.
pub const DEPOSIT_OLDEST: &str = "SELECT (SELECT MIN(created_at) FROM transfers WHERE credit = $1 AND wallet_total \
    IS NOT NULL AND created_at > \
        $2), \
     (SELECT MIN(created_at) FROM transfers WHERE credit = $1 AND wallet_total IS NOT NULL AND created_at > $3), \
     (SELECT MIN(created_at) FROM transfers WHERE credit = $1 AND wallet_total IS NOT NULL AND created_at > $4)";

/// Appends an event: `$1` player, `$2` at, `$3` actor, `$4` kind, `$5` detail (JSON text).
pub const RECORD: &str =
    "INSERT INTO responsible_events (player_id, at, actor, kind, detail) VALUES ($1, $2, $3, $4, $5)";
/// Player `$1`'s events from `$2` on, oldest first.
pub const EVENTS: &str =
    "SELECT at, actor, kind, detail FROM responsible_events WHERE player_id = $1 AND at >= $2 ORDER BY at, id";

/// Tickets player `$1` bought since `$2`, what they staked (3 € each) and the wins credited on them.
pub const PLAY_SINCE: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN credited_at IS NOT NULL THEN lot_cents \
    ELSE 0 END), 0) AS BIGINT) \
     FROM tickets WHERE player_id = $1 AND sold_at >= $2";

/// A session `$1` of player `$2` from `$3` to `$4`, its reality check due after the player's interval.
pub const CREATE_SESSION: &str = "INSERT INTO sessions (token_hash, player_id, started_at, expires_at, reality_due_at) \
     SELECT $1, $2, $3, $4, CAST($3 AS BIGINT) + reality_minutes * 60 FROM players WHERE id = $2";
/// Session `$1`, if unexpired at `$2`.
pub const SESSION: &str =
    "SELECT player_id, started_at, reality_due_at FROM sessions WHERE token_hash = $1 AND expires_at > $2";
/// Brings player `$1`'s sessions' next reality check to `$2` at the latest.
pub const SOONER_REALITY_CHECKS: &str =
    "UPDATE sessions SET reality_due_at = $2 WHERE player_id = $1 AND reality_due_at > $2";
/// Marks session `$1`'s due reality check (at `$2`) as shown, once per due time.
pub const SHOW_REALITY_CHECK: &str = "UPDATE sessions SET reality_told_at = reality_due_at \
     WHERE token_hash = $1 AND reality_due_at <= $2 AND reality_told_at IS DISTINCT FROM reality_due_at RETURNING \
     player_id, started_at";
/// Acknowledges session `$1`'s due reality check at `$2`: the next one an interval later.
pub const ACKNOWLEDGE_REALITY_CHECK: &str = "UPDATE sessions SET reality_due_at = CAST($2 AS BIGINT) + (SELECT \
    p.reality_minutes * 60 FROM players p WHERE \
        p.id = sessions.player_id) \
     WHERE token_hash = $1 AND reality_due_at <= $2 RETURNING player_id, started_at";
/// The open accounts the ban file lists.
pub const BANNED_OPEN_ACCOUNTS: &str = "SELECT p.id FROM players p JOIN banned_identities b ON b.identity_key = \
    p.identity_key WHERE p.closed_at IS NULL ORDER BY p.id";

#[cfg(test)]
mod tests {
    use super::*;

    const SQLITE: Layout =
        Layout { wallet_table: "accounts", wallet_key: "id = $1", wallet_of_player: "", stored_balances: "" };
    const POSTGRES: Layout = Layout {
        wallet_table: "balances",
        wallet_key: "account = $1 AND shard = 0",
        wallet_of_player: "",
        stored_balances: "",
    };

    #[test]
    fn the_guard_checks_every_window_in_the_statement_that_moves_the_money() {
        let sql = take_stake(&SQLITE);
        assert!(
            sql.starts_with(
                "UPDATE accounts SET balance = balance - $2, staked = staked + $2 WHERE id = $1 AND \
                balance >= $2 AND suspended_at IS NULL AND paused_until <= $3"
            ),
            "{sql}"
        );
        for (limit, base) in [("stake_day", "$5"), ("stake_week", "$6"), ("stake_month", "$7")] {
            assert!(sql.contains(&format!("({limit} IS NULL OR staked + $2 - {base} <= {limit})")), "{sql}");
        }
        assert!(
            give_deposit(&POSTGRES)
                .contains("WHERE account = $1 AND shard = 0 AND suspended_at IS NULL AND paused_until <= $3")
        );
    }
}
