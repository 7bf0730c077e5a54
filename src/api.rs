//! The JSON the ticket server answers and the web game reads: one definition for both sides.

use crate::play::Mode;
use crate::rules::Surface;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TicketState {
    /// Not yet credited: the player is (or was) scratching it.
    Playing,
    /// Credited by the server after the player left it; it can still be scratched to the end.
    Settled,
    /// Every zone uncovered and the win credited.
    Finished,
}

/// A ticket as the API shows it to its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct TicketView {
    pub id: String,
    pub serial: String,
    pub mode: Mode,
    /// The signed payload (compact JWS): the browser verifies it before drawing anything.
    pub payload: String,
    /// Uncovered zones (0–11), in the order they were uncovered.
    pub revealed: Vec<usize>,
    /// When each of them was uncovered (unix seconds), in the same order; empty for a ticket played
    /// before the server kept these times.
    pub revealed_at: Vec<i64>,
    pub first_surface: Option<Surface>,
    pub state: TicketState,
    /// The win, once credited; hidden before, so that nothing leaks ahead of the scratching.
    pub win_cents: Option<u64>,
    pub sold_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct TicketAndBalance {
    pub ticket: TicketView,
    pub balance_cents: i64,
}

/// A ticket's inclusion proof in its block's Merkle tree (`GET /api/tickets/{id}/proof`). The root it
/// leads to is not in it: check it against the block's published commitment (`GET /api/blocks/{e}/{b}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct InclusionProof {
    /// The ticket's place in its block: its leaf's index.
    pub index: u32,
    /// Leaves in the tree: the block's size.
    pub leaf_count: u32,
    /// Sibling hashes in hex, from the leaf up.
    pub path: Vec<String>,
}

/// What the game reads of a block's commitment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedRoot {
    /// SHA-256 Merkle root in hex.
    pub root: String,
}

/// What went wrong, as every error answer of the API names it (its `error` field): the server
/// answers with these, and the web app branches on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    InvalidJson,
    InvalidIdentity,
    Unauthorized,
    BadCredentials,
    NotFound,
    MethodNotAllowed,
    InsufficientFunds,
    SoldOut,
    NameTaken,
    Overdraft,
    IdempotencyKeyReused,
    FirstSurfaceUnfinished,
    ZonesLeft,
    TicketFinished,
    AlreadyExists,
    AlreadyRegistered,
    AlreadyPaused,
    RaiseNotYet,
    RaiseLapsed,
    AlreadyDone,
    DemoMoney,
    DemoOff,
    PayloadTooLarge,
    TimedOut,
    RateLimited,
    Busy,
    Unavailable,
    LimitReached,
    LimitsRequired,
    Paused,
    RealityCheckDue,
    Banned,
    Suspended,
    FourEyes,
    UnderAge,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 37] = [
        ErrorCode::BadRequest,
        ErrorCode::InvalidJson,
        ErrorCode::InvalidIdentity,
        ErrorCode::Unauthorized,
        ErrorCode::BadCredentials,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::InsufficientFunds,
        ErrorCode::SoldOut,
        ErrorCode::NameTaken,
        ErrorCode::Overdraft,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::FirstSurfaceUnfinished,
        ErrorCode::ZonesLeft,
        ErrorCode::TicketFinished,
        ErrorCode::AlreadyExists,
        ErrorCode::AlreadyRegistered,
        ErrorCode::AlreadyPaused,
        ErrorCode::RaiseNotYet,
        ErrorCode::RaiseLapsed,
        ErrorCode::AlreadyDone,
        ErrorCode::DemoMoney,
        ErrorCode::DemoOff,
        ErrorCode::PayloadTooLarge,
        ErrorCode::TimedOut,
        ErrorCode::RateLimited,
        ErrorCode::Busy,
        ErrorCode::Unavailable,
        ErrorCode::LimitReached,
        ErrorCode::LimitsRequired,
        ErrorCode::Paused,
        ErrorCode::RealityCheckDue,
        ErrorCode::Banned,
        ErrorCode::Suspended,
        ErrorCode::FourEyes,
        ErrorCode::UnderAge,
        ErrorCode::Internal,
    ];

    /// The code as it is written in an answer.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidIdentity => "invalid_identity",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::BadCredentials => "bad_credentials",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::InsufficientFunds => "insufficient_funds",
            ErrorCode::SoldOut => "sold_out",
            ErrorCode::NameTaken => "name_taken",
            ErrorCode::Overdraft => "overdraft",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::FirstSurfaceUnfinished => "first_surface_unfinished",
            ErrorCode::ZonesLeft => "zones_left",
            ErrorCode::TicketFinished => "ticket_finished",
            ErrorCode::AlreadyExists => "already_exists",
            ErrorCode::AlreadyRegistered => "already_registered",
            ErrorCode::AlreadyPaused => "already_paused",
            ErrorCode::RaiseNotYet => "raise_not_yet",
            ErrorCode::RaiseLapsed => "raise_lapsed",
            ErrorCode::AlreadyDone => "already_done",
            ErrorCode::DemoMoney => "demo_money",
            ErrorCode::DemoOff => "demo_off",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::TimedOut => "timed_out",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Busy => "busy",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::LimitReached => "limit_reached",
            ErrorCode::LimitsRequired => "limits_required",
            ErrorCode::Paused => "paused",
            ErrorCode::RealityCheckDue => "reality_check_due",
            ErrorCode::Banned => "banned",
            ErrorCode::Suspended => "suspended",
            ErrorCode::FourEyes => "four_eyes",
            ErrorCode::UnderAge => "under_age",
            ErrorCode::Internal => "internal",
        }
    }

    /// The code an answer names, if it is one of ours.
    pub fn parse(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|code| code.as_str() == text)
    }
}

/// Shown on every screen, as the law asks of gambling operators in France.
pub const RESPONSIBLE_GAMING: &str = "Jeu interdit aux mineurs (18+). Jouer comporte des risques : endettement, \
    isolement, dépendance. Pour être aidé, appelez le 09 74 75 13 13 (appel non surtaxé).";

/// The signed-in player.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct Me {
    pub id: String,
    pub name: Option<String>,
    pub guest: bool,
    pub demo: bool,
    /// Wins count only once credited.
    pub balance_cents: i64,
}

// Responsible gaming (« Jeu responsable »): see `server::store::responsible` for what enforces it.

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    /// Tickets bought.
    Stake,
    /// Money put into the wallet.
    Deposit,
}

/// A rolling window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Span {
    Day,
    Week,
    Month,
}

/// Why play stops for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PauseKind {
    /// A break the player took (« pause »).
    Break,
    /// A self-exclusion (« auto-exclusion »).
    Exclusion,
    /// The account is closed (the national ban file matched it): for good.
    Closed,
}

/// A stake or deposit refused by a limit, as the player is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct LimitRefusal {
    pub flow: Flow,
    /// The window whose limit refuses it (of several, the one that frees last).
    pub span: Span,
    pub limit_cents: u64,
    /// What the window still allows now.
    pub left_cents: u64,
    /// When enough frees up for the amount (unix seconds); none if the limit is below it.
    pub frees_at: Option<i64>,
}

/// A raise (or removal) of a limit asked and not yet applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct PendingRaise {
    pub flow: Flow,
    pub span: Span,
    /// The limit asked for; none: the limit removed.
    pub amount_cents: Option<u64>,
    pub asked_at: i64,
    /// From when the player may confirm it.
    pub confirmable_at: i64,
    /// When it lapses if not confirmed.
    pub lapses_at: i64,
}

/// One limit as the player sees it: in force, used in its window, left, when more frees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct LimitState {
    pub flow: Flow,
    pub span: Span,
    /// None: no limit.
    pub limit_cents: Option<u64>,
    /// Counted in the window now.
    pub used_cents: u64,
    /// What the window still allows (none if no limit).
    pub left_cents: Option<u64>,
    /// When the oldest amount counted in the window leaves it.
    pub next_frees_at: Option<i64>,
}

/// A player's responsible-gaming standing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct Standing {
    pub limits: Vec<LimitState>,
    pub pending: Vec<PendingRaise>,
    /// A break, exclusion or closure in force.
    pub paused: Option<Pause>,
    /// Minutes between reality checks.
    pub reality_minutes: u32,
}

/// A pause in force (or asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct Pause {
    pub kind: PauseKind,
    /// Unix seconds; a closed account's is `i64::MAX`.
    pub until: i64,
}

/// One entry of the record, as the player and the operator read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct ResponsibleEvent {
    pub at: i64,
    /// `player`, `operator` or `server`.
    pub actor: String,
    /// `limit_lowered`, `raise_asked`, `raise_confirmed`, `raise_lapsed`, `raise_cancelled`, `break`,
    /// `exclusion`, `ban_file_match`, `reality_check_shown`, `reality_check_acknowledged`,
    /// `reality_interval_set`.
    pub kind: String,
    /// What changed, as JSON.
    #[cfg_attr(not(target_arch = "wasm32"), schema(value_type = Object))]
    pub detail: serde_json::Value,
}

/// What the reality check sums up: the session's play so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct PlaySummary {
    pub tickets: u64,
    pub staked_cents: u64,
    /// Wins credited on the session's tickets.
    pub won_cents: u64,
}

/// A reality check: how long the session has lasted and what it played (net = staked − won).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct RealityCheck {
    pub session_seconds: i64,
    pub tickets: u64,
    pub staked_cents: u64,
    /// Wins credited on the session's tickets.
    pub won_cents: u64,
    /// Staked minus won.
    pub net_cents: i64,
}

impl RealityCheck {
    pub fn new(session_seconds: i64, play: PlaySummary) -> RealityCheck {
        let net_cents = play.staked_cents as i64 - play.won_cents as i64;
        RealityCheck {
            session_seconds,
            tickets: play.tickets,
            staked_cents: play.staked_cents,
            won_cents: play.won_cents,
            net_cents,
        }
    }
}

/// The session as the game shows it beside the balance (`GET /api/responsible/session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct PlaySession {
    pub started_at: i64,
    /// When its next reality check is due.
    pub reality_due_at: i64,
    /// It is due now: show it; no purchase until it is acknowledged.
    pub reality_check_due: bool,
    pub check: RealityCheck,
}

/// A withdrawal the player asked for, as the player sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct WithdrawalInfo {
    pub id: i64,
    pub amount_cents: u64,
    pub asked_at: i64,
    /// `pending` (out of the wallet, waiting for the operator), `paid` or `refused` (back in the wallet).
    pub state: String,
    pub decided_at: Option<i64>,
    /// Why it was refused, or the payment's reference.
    pub reason: Option<String>,
}

/// A withdrawal asked, with the wallet's balance after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct WithdrawalAsked {
    pub withdrawal: WithdrawalInfo,
    pub balance_cents: u64,
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// Each code reads back as itself, and is written as serde writes it in an answer.
    #[test]
    fn every_error_code_is_written_and_read_one_way() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(code.as_str()));
        }
        assert_eq!(ErrorCode::parse("no_such_code"), None);
    }
}
