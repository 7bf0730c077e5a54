//! Emissions and blocks: making them (from fresh 256-bit seeds), publishing their commitments, and
//! auditing them. A block's seed stays secret until the block is sold out and closed.

use super::error::{ApiError, ApiJson};
use super::{AppState, now, os_random, store};
use crate::block::{AuditReport, Block, Commitment, audit, hex};
use crate::composer::Design;
use crate::rules::prize_table::{BLOCK_SIZE, PRIZE_TABLE};
use axum::extract::State;
use rusqlite::Connection;
use serde::Serialize;

/// Makes an emission of `blocks` blocks with `design_text` and stores them; returns the emission number.
pub fn create_emission(conn: &mut Connection, design_text: &str, blocks: u32) -> Result<u32, String> {
    let design = Design::from_toml(design_text).map_err(|e| e.to_string())?;
    let emission = store::next_emission(conn).map_err(|e| e.to_string())?;
    for number in 1..=blocks {
        let seed = os_random::<32>();
        let block = Block::make(&design, emission, number, &seed).map_err(|e| e.to_string())?;
        store::insert_block(conn, &block, &seed, design_text, now()).map_err(|e| e.to_string())?;
        tracing::info!(emission, block = number, root = %hex(&block.root), "block made");
    }
    Ok(emission)
}

/// Recomputes a stored block from its seed and checks it against its commitment.
pub fn audit_stored(conn: &Connection, emission: u32, block: u32) -> Result<AuditReport, String> {
    let row = store::block(conn, emission, block).map_err(|e| e.to_string())?;
    let design = Design::from_toml(&store::design_text(conn, &row.design_hash).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    audit(&design, emission, block, &row.seed, &Commitment { root: row.root, design_hash: row.design_hash }).map_err(|e| e.to_string())
}

#[derive(Serialize)]
pub struct PrizeLine {
    count: u32,
    lot_cents: u64,
}

#[derive(Serialize)]
pub struct BlockInfo {
    emission: u32,
    block: u32,
    size: u32,
    sold: u32,
    open: bool,
    /// SHA-256 Merkle root over every ticket, committed before the first sale.
    root: String,
    design_sha256: String,
    prize_table: Vec<PrizeLine>,
    /// Revealed only once the block is closed, so anyone can then recompute and audit it.
    seed: Option<String>,
}

/// `GET /api/blocks`: every block's public facts.
pub async fn list(State(state): State<AppState>) -> Result<ApiJson<Vec<BlockInfo>>, ApiError> {
    let rows = state.db(|c| store::blocks(c)).await?;
    let prize_table = || PRIZE_TABLE.iter().map(|t| PrizeLine { count: t.count, lot_cents: t.lot.0 }).collect();
    Ok(ApiJson(
        rows.into_iter()
            .map(|b| BlockInfo {
                emission: b.emission,
                block: b.block,
                size: BLOCK_SIZE,
                sold: b.sold,
                open: !b.closed,
                root: hex(&b.root),
                design_sha256: hex(&b.design_hash),
                prize_table: prize_table(),
                seed: b.closed.then(|| hex(&b.seed)),
            })
            .collect(),
    ))
}
