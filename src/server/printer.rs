//! Prints a sold ticket's signed payload from what the store keeps: the ticket's serial, owner, lot and
//! time of sale, and its block's seed and design. Composition is seeded by (block seed, index) and
//! Ed25519 signatures are deterministic, so the same ticket prints the same payload every time: nothing
//! but the facts is stored, and any ticket can be reprinted for an audit.
//!
//! Each block's seed and design are read from the store once and kept.

use super::error::ApiError;
use super::store::{Store, TicketRecord};
use crate::block::{Hash, Seed, compose_ticket};
use crate::composer::Design;
use crate::payload::{FORMAT_VERSION, Jwks, TicketClaims, TicketSigner};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

struct Press {
    seed: Seed,
    design: Arc<Design>,
}

pub struct Printer {
    signer: TicketSigner,
    presses: RwLock<HashMap<(u32, u32), Arc<Press>>>,
    designs: RwLock<HashMap<Hash, Arc<Design>>>,
}

impl Printer {
    pub fn new(signer: TicketSigner) -> Printer {
        Printer { signer, presses: RwLock::default(), designs: RwLock::default() }
    }

    pub fn jwks(&self) -> Jwks {
        self.signer.jwks()
    }

    /// The signed payload of a sold ticket.
    pub async fn payload(&self, store: &dyn Store, ticket: &TicketRecord) -> Result<String, ApiError> {
        let press = self.press(store, ticket.serial.emission, ticket.serial.block).await?;
        let zones = compose_ticket(&press.design, &press.seed, ticket.serial.index, ticket.lot)
            .map_err(|e| ApiError::Internal(format!("block {}: its design cannot print its lot: {e}", ticket.serial)))?;
        let claims = TicketClaims {
            v: FORMAT_VERSION,
            jti: ticket.id.clone(),
            sub: ticket.owner.clone(),
            iat: ticket.sold_at,
            serial: ticket.serial,
            zones,
            lot_cents: ticket.lot,
        };
        Ok(self.signer.sign(&claims))
    }

    async fn press(&self, store: &dyn Store, emission: u32, block: u32) -> Result<Arc<Press>, ApiError> {
        if let Some(press) = read(&self.presses).get(&(emission, block)) {
            return Ok(press.clone());
        }
        let record = store.block(emission, block).await?;
        let design = self.design(store, &record.design_hash).await?;
        let press = Arc::new(Press { seed: record.seed, design });
        write(&self.presses).insert((emission, block), press.clone());
        Ok(press)
    }

    async fn design(&self, store: &dyn Store, hash: &Hash) -> Result<Arc<Design>, ApiError> {
        if let Some(design) = read(&self.designs).get(hash) {
            return Ok(design.clone());
        }
        let design = Design::from_toml(&store.design_text(hash).await?)
            .map_err(|e| ApiError::Internal(format!("a stored design no longer validates: {e}")))?;
        let design = Arc::new(design);
        write(&self.designs).insert(*hash, design.clone());
        Ok(design)
    }
}

// The maps only ever gain entries that are never changed: one poisoned by a panic is still whole.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}
