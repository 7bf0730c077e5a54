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

/// Shown on every screen, as the law asks of gambling operators in France.
pub const RESPONSIBLE_GAMING: &str = "Jeu interdit aux mineurs (18+). Jouer comporte des risques : endettement, isolement, dépendance. Pour être aidé, appelez le 09 74 75 13 13 (appel non surtaxé).";

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
