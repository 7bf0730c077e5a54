//! The back office's store: staff and their sessions ([`staff`]), the audit log ([`audit`]),
//! suspensions, closures and what staff read of a player ([`accounts`]), withdrawals and adjustments
//! under four eyes ([`cashier`]), and the daily summary ([`reports`]). Written once against
//! [`super::tx::Tx`], like every unit of work.
//!
//! Every staff action and configuration change appends one row to `audit_log` in the unit of work
//! that makes the change: the change and its record are one.

mod accounts;
mod audit;
mod cashier;
mod reports;
mod staff;

pub use accounts::{PlayerSummary, SessionSummary, StatementLine};
pub(crate) use audit::append;
pub use audit::{AuditEntry, AuditNote, ChainBreak, GENESIS, entry_hash, verify_chain};
pub use cashier::{Adjustment, AdjustmentState, Withdrawal, WithdrawalState};
pub use reports::{DaySummary, TierCount};
pub use staff::{NewStaff, StaffRecord};

/// What a staff member may do: each route checks it (`server::back_office`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Manages staff and blocks.
    Admin,
    /// Moves money: adjustments, withdrawals, closing an account.
    Finance,
    /// Reads players, suspends and restores them; moves no money.
    Support,
    /// Reads everything, changes nothing.
    Auditor,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Admin, Role::Finance, Role::Support, Role::Auditor];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Finance => "finance",
            Role::Support => "support",
            Role::Auditor => "auditor",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text)
    }
}
