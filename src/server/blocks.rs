//! Emissions and blocks: making them (from fresh 256-bit seeds), publishing their commitments, and
//! auditing them. A block's seed stays secret until the block is sold out and closed.

use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::store::{BlockRecord, NewBlock, Store};
use super::{AppState, os_random};
use crate::block::{AuditReport, Block, Commitment, audit, hex};
use crate::composer::Design;
use crate::rules::prize_table::PRIZE_TABLE;
use axum::extract::State;
use serde::Serialize;

/// Makes an emission of `blocks` blocks with `design_text` and stores them; returns the emission number.
/// Emissions are the operator's to make (`vegas emission create`): two made at once would both be
/// given the same number, and the second refused by the store.
pub async fn create_emission(store: &Store, design_text: &str, blocks: u32, now: i64) -> Result<u32, String> {
    let design = std::sync::Arc::new(Design::from_toml(design_text).map_err(|e| e.to_string())?);
    let emission = store.next_emission().await.map_err(|e| e.to_string())?;
    for number in 1..=blocks {
        let seed = os_random::<32>();
        let making = design.clone();
        let block = off_the_executor(move || Block::make(&making, emission, number, &seed)).await?;
        let root = block.root;
        let new = NewBlock {
            emission,
            block: number,
            seed,
            root,
            design_hash: block.design_hash,
            design_text: design_text.to_owned(),
            scheme: design.scheme,
            lots: block.lots,
            kept_level: block.kept_level,
            now,
        };
        store.insert_block(new).await.map_err(|e| e.to_string())?;
        tracing::info!(emission, block = number, root = %hex(&root), "block made");
    }
    Ok(emission)
}

/// Recomputes a stored block from its seed and checks it against its commitment.
pub async fn audit_stored(store: &Store, emission: u32, block: u32) -> Result<AuditReport, String> {
    let row = store.block(emission, block).await.map_err(|e| e.to_string())?;
    let text = store.design_text(&row.design_hash).await.map_err(|e| e.to_string())?;
    let design = Design::from_toml_for(&text, row.scheme).map_err(|e| e.to_string())?;
    let commitment = Commitment { root: row.root, design_hash: row.design_hash };
    off_the_executor(move || audit(&design, emission, block, &row.seed, &commitment)).await
}

/// Runs seconds of CPU work (a whole block) on the blocking pool, not on the async executor.
async fn off_the_executor<T: Send + 'static, E: ToString + Send + 'static>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PrizeLine {
    count: u32,
    lot_cents: u64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BlockInfo {
    emission: u32,
    block: u32,
    size: u32,
    sold: u32,
    open: bool,
    /// How the block's tickets are composed and committed: 2 (salted leaves) for every block made
    /// since December 2026, 1 before (see ARCHITECTURE.md, « Provable fairness »).
    scheme: u32,
    /// SHA-256 Merkle root over every ticket's leaf, committed before the first sale.
    root: String,
    design_sha256: String,
    prize_table: Vec<PrizeLine>,
    /// Revealed only once the block is closed (sold out or withdrawn from sale), so anyone can then
    /// recompute and audit it.
    seed: Option<String>,
}

impl From<BlockRecord> for BlockInfo {
    fn from(b: BlockRecord) -> BlockInfo {
        BlockInfo {
            emission: b.emission,
            block: b.block,
            size: b.size,
            sold: b.sold,
            open: !b.ended(),
            scheme: b.scheme.number(),
            root: hex(&b.root),
            design_sha256: hex(&b.design_hash),
            prize_table: PRIZE_TABLE.iter().map(|t| PrizeLine { count: t.count, lot_cents: t.lot.0 }).collect(),
            seed: b.ended().then(|| hex(&b.seed)),
        }
    }
}

/// A block's commitment and what recomputes it once its seed is out: the design it was composed with.
#[derive(Serialize, utoipa::ToSchema)]
pub struct BlockCommitment {
    #[serde(flatten)]
    info: BlockInfo,
    /// The design file's text (its SHA-256 is `design_sha256`).
    design: String,
}

/// `GET /api/blocks`: every block's public facts.
#[utoipa::path(get, path = "/api/blocks", tag = "public", security(()), responses((status = 200, description =
    "Every block, its commitment and prize table; a closed block's seed", body = Vec<BlockInfo>),
        super::error::AnyRequestRefusals))]
pub async fn list(State(state): State<AppState>) -> Result<ApiJson<Vec<BlockInfo>>, ApiError> {
    Ok(ApiJson(state.store.blocks().await?.into_iter().map(BlockInfo::from).collect()))
}

/// `GET /api/blocks/{emission}/{block}`: one block's commitment, published before its first sale, with
/// its design; its seed once it is closed. `vegas verify` reads this document.
#[utoipa::path(get, path = "/api/blocks/{emission}/{block}", tag = "public", security(()),
    params(("emission" = u32, Path, description = "The emission's number"), ("block" = u32, Path, description =
        "The block's number in its emission")),
    responses(
        (status = 200, description = "The block's commitment and design; its seed once closed", body = BlockCommitment),
        (status = 404, description = "No such block", body = ErrorBody),
        super::error::AnyRequestRefusals,
    ))]
pub async fn one(
    State(state): State<AppState>,
    ApiPath((emission, block)): ApiPath<(u32, u32)>,
) -> Result<ApiJson<BlockCommitment>, ApiError> {
    let record = state.store.block(emission, block).await?;
    let design = state.store.design_text(&record.design_hash).await?;
    Ok(ApiJson(BlockCommitment { info: record.into(), design }))
}
