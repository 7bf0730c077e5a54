//! What anyone can check of a block from what the server publishes (`GET /api/blocks/{e}/{b}`), with no
//! access to the server's store: once the block is closed and its seed out, every ticket and the whole
//! block are recomputed from the seed and the design, and must give the committed root and the
//! regulation's prize table. `vegas verify` and the « Vérifier » page run this.

use super::{
    Audit, AuditReport, BlockError, Commitment, Hash, Scheme, Seed, audit, compose_ticket, from_hex, lot_of, merkle,
    shuffled_lots,
};
use crate::composer::{Design, DesignError};
use crate::money::Cents;
use crate::payload::Serial;
use crate::rules::Ticket;
use crate::rules::prize_table::PRIZE_TABLE;
use serde::Deserialize;

/// A block's public document, as the server publishes it.
#[derive(Debug, Clone, Deserialize)]
pub struct PublishedBlock {
    pub emission: u32,
    pub block: u32,
    pub scheme: u32,
    pub root: String,
    pub design_sha256: String,
    pub design: String,
    pub prize_table: Vec<PublishedPrize>,
    pub seed: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PublishedPrize {
    pub count: u32,
    pub lot_cents: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the block is still open: its seed is published once it is closed")]
    StillOpen,
    #[error("the document's {0} is not 32 bytes of hexadecimal")]
    NotHex(&'static str),
    #[error("the block says it was made with scheme {0}, which this verifier does not know")]
    UnknownScheme(u32),
    #[error("the design published with the block hashes to {found}, not to its design_sha256 {published}")]
    DesignHash { published: String, found: String },
    #[error("the published design does not load: {0}")]
    Design(#[from] DesignError),
    #[error("the published prize table is not the regulation's")]
    PrizeTable,
    #[error("{0}")]
    Block(#[from] BlockError),
}

/// One ticket, recomputed from the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecomputedTicket {
    pub serial: Serial,
    pub ticket: Ticket,
    pub lot: Cents,
    pub salt: Option<merkle::Salt>,
    pub leaf: Hash,
}

/// A published block, read and checked for what it says of itself.
pub struct ClosedBlock {
    emission: u32,
    block: u32,
    seed: Seed,
    commitment: Commitment,
    design: Design,
}

impl ClosedBlock {
    pub fn read(published: &PublishedBlock) -> Result<ClosedBlock, VerifyError> {
        let seed =
            from_hex(published.seed.as_deref().ok_or(VerifyError::StillOpen)?).ok_or(VerifyError::NotHex("seed"))?;
        let root = from_hex(&published.root).ok_or(VerifyError::NotHex("root"))?;
        let scheme = Scheme::from_number(published.scheme).ok_or(VerifyError::UnknownScheme(published.scheme))?;
        let design = Design::from_toml_for(&published.design, scheme)?;
        if super::hex(&design.hash) != published.design_sha256 {
            return Err(VerifyError::DesignHash {
                published: published.design_sha256.clone(),
                found: super::hex(&design.hash),
            });
        }
        let regulation: Vec<PublishedPrize> =
            PRIZE_TABLE.iter().map(|t| PublishedPrize { count: t.count, lot_cents: t.lot.0 }).collect();
        if published.prize_table != regulation {
            return Err(VerifyError::PrizeTable);
        }
        let commitment = Commitment { root, design_hash: design.hash };
        Ok(ClosedBlock { emission: published.emission, block: published.block, seed, commitment, design })
    }

    /// Ticket `index`, as the seed composes it.
    pub fn ticket(&self, index: u32) -> Result<RecomputedTicket, VerifyError> {
        let lot = shuffled_lots(&self.seed)
            .get(index as usize)
            .map(|&code| lot_of(code))
            .ok_or(BlockError::NoTicket(index))?;
        let ticket = compose_ticket(&self.design, &self.seed, index, lot).map_err(|error| BlockError::Compose {
            index,
            lot,
            error,
        })?;
        let serial = Serial { emission: self.emission, block: self.block, index };
        let salt = (self.design.scheme >= Scheme::V2).then(|| merkle::salt(&self.seed, index));
        let leaf = merkle::leaf(&mut Vec::new(), salt.as_ref(), serial, &ticket, lot);
        Ok(RecomputedTicket { serial, ticket, lot, salt, leaf })
    }

    /// The whole block: every ticket valid and read as its lot, the prize table exact, the root the
    /// committed one.
    pub fn audit(&self) -> Result<AuditReport, VerifyError> {
        Ok(audit(&self.design, self.emission, self.block, &self.seed, &self.commitment)?)
    }

    /// The same, in steps (see [`Audit`]).
    pub fn audit_in_steps(&self) -> Result<Audit<'_>, VerifyError> {
        Ok(Audit::start(&self.design, self.emission, self.block, &self.seed, &self.commitment)?)
    }

    pub fn commitment(&self) -> &Commitment {
        &self.commitment
    }
}
