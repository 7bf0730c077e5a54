//! The ticket's place in its block, checked by the browser before anything is drawn: its leaf (from
//! its symbols, lot, serial and salt) and its inclusion proof must lead to the root the block
//! published before its first sale ([`crate::block::merkle`]). SHA-256 is the browser's own
//! (WebCrypto), so the download carries no hash function for it.

use crate::api::InclusionProof;
use crate::block::{Hash, from_hex, merkle};
use crate::payload::{PayloadError, TicketClaims};
use wasm_bindgen_futures::JsFuture;

async fn sha256(bytes: &[u8]) -> Result<Hash, PayloadError> {
    let subtle = web_sys::window().and_then(|w| w.crypto().ok()).ok_or(PayloadError::NotCommitted)?.subtle();
    let digest = subtle.digest_with_str_and_u8_array("SHA-256", bytes).map_err(|_| PayloadError::NotCommitted)?;
    let buffer = JsFuture::from(digest).await.map_err(|_| PayloadError::NotCommitted)?;
    js_sys::Uint8Array::new(&buffer).to_vec().try_into().map_err(|_| PayloadError::NotCommitted)
}

/// Whether the ticket of `claims` is in the tree of `root` at its serial's place.
pub async fn check(claims: &TicketClaims, proof: &InclusionProof, root: &str) -> Result<(), PayloadError> {
    let root = from_hex(root).ok_or(PayloadError::NotCommitted)?;
    let salt = match &claims.salt {
        Some(salt) => Some(from_hex(salt).ok_or(PayloadError::NotCommitted)?),
        None => None,
    };
    let path: Vec<Hash> =
        proof.path.iter().map(|h| from_hex(h)).collect::<Option<_>>().ok_or(PayloadError::NotCommitted)?;
    let (index, count) = (claims.serial.index as usize, proof.leaf_count as usize);
    let sides = merkle::sibling_sides(index, count, path.len())
        .filter(|_| proof.index == claims.serial.index)
        .ok_or(PayloadError::NotCommitted)?;
    let mut input = Vec::new();
    merkle::leaf_input(&mut input, salt.as_ref(), claims.serial, &claims.zones, claims.lot_cents);
    let mut hash = sha256(&input).await?;
    for (sibling, left) in path.iter().zip(sides) {
        let node = if left { merkle::node_input(sibling, &hash) } else { merkle::node_input(&hash, sibling) };
        hash = sha256(&node).await?;
    }
    if hash == root { Ok(()) } else { Err(PayloadError::NotCommitted) }
}
