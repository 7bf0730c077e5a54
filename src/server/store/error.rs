//! Why a store call did not do what it was asked ([`StoreError`]), and why a unit of work stopped
//! ([`Failure`]): an answer for the caller, or a conflict that the engine runs the unit again for.

use super::responsible::{Flow, LimitRefusal, Pause};
use crate::money::Cents;
use crate::play::RevealError;
use crate::server::dates::utc;

/// Why a store call did not do what it was asked. Every variant but [`StoreError::Backend`] is the
/// caller's to answer (a 4xx); `Backend` is a fault of ours, its text for the log only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The database cannot be reached or cannot take writes now (a failover under way): the request
    /// may be sent again (a purchase with its Idempotency-Key is never made twice).
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    #[error("this name is already taken")]
    NameTaken,
    #[error("not enough money: the balance is {balance}, a ticket costs {price}")]
    InsufficientFunds { balance: Cents, price: Cents },
    #[error("not enough money: the balance is {balance}, {amount} cannot be taken from it")]
    Overdraft { balance: Cents, amount: Cents },
    #[error("every block of every emission is sold out: no ticket is on sale")]
    SoldOut,
    #[error("this Idempotency-Key already bought a ticket in another mode")]
    KeyReused,
    #[error(transparent)]
    Reveal(#[from] RevealError),
    #[error("uncover every zone first; still hidden: {0:?}")]
    ZonesLeft(Vec<usize>),
    #[error("this ticket's game is over: every zone is uncovered and its win credited")]
    Finished,
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("this player already has an account")]
    NotAGuest,
    #[error("{0}")]
    LimitReached(LimitRefusal),
    #[error("the player's 7-day {} limit is not set: none before it is", .0.as_str())]
    LimitsRequired(Flow),
    #[error("play is paused ({}) until {}", .0.kind.as_str(), utc(.0.until))]
    Paused(Pause),
    #[error("play is already paused ({}) until {}, as long or longer", .0.kind.as_str(), utc(.0.until))]
    AlreadyPaused(Pause),
    #[error("this raise can be confirmed from {} on", utc(*.confirmable_at))]
    RaiseNotYet { confirmable_at: i64 },
    #[error("this raise lapsed at {}, unconfirmed", utc(*.lapsed_at))]
    RaiseLapsed { lapsed_at: i64 },
    #[error("no raise of this limit is pending")]
    NoRaisePending,
    #[error("already {0}")]
    AlreadyDone(Already),
    #[error("{0}")]
    Invalid(String),
    #[error("four eyes: whoever asked for an adjustment cannot approve or reject it; another staff member must")]
    FourEyes,
    #[error("the operator suspended this account: nothing can be staked or deposited until it is restored")]
    Suspended,
    #[error("this identity is in the national ban file (fichier des interdits de jeu)")]
    Banned,
    #[error("the store failed: {0}")]
    Backend(String),
}

/// What a change asked of the back office had already been, so that it changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Already {
    Suspended,
    NotSuspended,
    Closed,
    Decided,
    Withdrawn,
}

impl std::fmt::Display for Already {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Already::Suspended => "suspended",
            Already::NotSuspended => "not suspended",
            Already::Closed => "closed",
            Already::Decided => "decided",
            Already::Withdrawn => "withdrawn from sale",
        })
    }
}

/// Why a guest's registration changed nothing, from whether the player is (still) a guest: a guest
/// whose update was skipped asked for a name another player holds.
pub fn why_not_registered(guest: Option<bool>) -> StoreError {
    match guest {
        None => StoreError::NotFound("player"),
        Some(false) => StoreError::NotAGuest,
        Some(true) => StoreError::NameTaken,
    }
}

/// Why a unit of work stopped.
#[derive(Debug)]
pub enum Failure {
    /// An answer for the caller, or a fault of ours: the unit is undone.
    Store(StoreError),
    /// Another unit of work changed what this one read (a compare-and-set that matched nothing, a
    /// deadlock PostgreSQL broke): undone and run again. SQLite's one writer never meets one.
    Conflict(String),
    /// A unique constraint refused a row: the unit says what that means, or it is a fault.
    Duplicate(String),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

impl From<RevealError> for Failure {
    fn from(e: RevealError) -> Failure {
        Failure::Store(e.into())
    }
}

/// Outside a unit of work there is nothing to run again: a conflict left is a fault.
impl From<Failure> for StoreError {
    fn from(e: Failure) -> StoreError {
        match e {
            Failure::Store(e) => e,
            Failure::Conflict(why) => StoreError::Backend(format!("still in conflict: {why}")),
            Failure::Duplicate(what) => StoreError::Backend(format!("a unique constraint refused {what}")),
        }
    }
}
