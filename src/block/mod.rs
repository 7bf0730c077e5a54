//! Blocks of 1 500 000 tickets, made from a 256-bit secret seed so that the whole block can be
//! recomputed and audited.
//!
//! - Lots: the prize table's lots plus 1 154 471 zeros, shuffled with [`fisher_yates`] drawing from
//!   ChaCha20 keyed by the seed, on stream [`SHUFFLE_STREAM`].
//! - Ticket `i`: composed from its lot with ChaCha20 keyed by the seed on stream `i`.
//! - Commitment: a SHA-256 Merkle tree over every ticket's salted leaf (see [`merkle`]), its root fixed
//!   and published before the first sale; the seed (and so every salt) is revealed once the block is
//!   closed.
//!
//! Making a block evaluates every ticket it composes: a block in which the composer and the evaluator
//! disagree on a single ticket is never made. [`audit`] redoes it all from the seed.

pub mod merkle;
pub mod published;

use crate::composer::{ComposeError, Design, compose, compose_pattern, fisher_yates};
use crate::money::Cents;
use crate::payload::Serial;
use crate::rules::prize_table::{BLOCK_SIZE, LOSERS_PER_BLOCK, PRIZE_TABLE};
use crate::rules::{InvalidTicket, Ticket};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
#[cfg(not(target_arch = "wasm32"))]
use rayon::prelude::*;
use std::collections::BTreeMap;

pub type Seed = [u8; 32];
pub type Hash = [u8; 32];

pub use crate::composer::Scheme;

/// The ChaCha20 stream the lot shuffle draws from; tickets use streams `0..BLOCK_SIZE`.
pub const SHUFFLE_STREAM: u64 = u64::MAX;

/// Lots of a block in a compact form: `0` loses, `k` is `PRIZE_TABLE[k - 1]`.
pub type LotCode = u8;

pub fn lot_of(code: LotCode) -> Cents {
    code.checked_sub(1).map_or(Cents::ZERO, |k| PRIZE_TABLE[usize::from(k)].lot)
}

/// The code of a lot: `None` for an amount the prize table does not have (0 € has code 0).
pub fn lot_code(lot: Cents) -> Option<LotCode> {
    if lot.is_zero() {
        return Some(0);
    }
    PRIZE_TABLE.iter().position(|t| t.lot == lot).map(|k| k as LotCode + 1)
}

/// The block's lots, in sale order.
pub fn shuffled_lots(seed: &Seed) -> Vec<LotCode> {
    let mut lots = Vec::with_capacity(BLOCK_SIZE as usize);
    lots.resize(LOSERS_PER_BLOCK as usize, 0);
    for (k, tier) in PRIZE_TABLE.iter().enumerate() {
        lots.extend(std::iter::repeat_n(k as LotCode + 1, tier.count as usize));
    }
    let mut rng = ChaCha20Rng::from_seed(*seed);
    rng.set_stream(SHUFFLE_STREAM);
    fisher_yates(&mut lots, &mut rng);
    lots
}

/// What one ticket prints: its lot, whose pattern the design draws by weight; or, in a QA deck, one
/// pattern of the design, named by QA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Lot(Cents),
    /// An index into [`Design::patterns`].
    Pattern(usize),
}

impl Entry {
    pub fn lot(self, design: &Design) -> Cents {
        match self {
            Entry::Lot(lot) => lot,
            Entry::Pattern(i) => design.patterns().get(i).map_or(Cents::ZERO, |p| p.lot),
        }
    }
}

/// The symbols of ticket `index`, whose lot the shuffle fixed.
pub fn compose_ticket(design: &Design, seed: &Seed, index: u32, lot: Cents) -> Result<Ticket, ComposeError> {
    compose_entry(design, seed, index, Entry::Lot(lot))
}

/// The symbols of ticket `index`, printing `entry`.
pub fn compose_entry(design: &Design, seed: &Seed, index: u32, entry: Entry) -> Result<Ticket, ComposeError> {
    let mut rng = ChaCha20Rng::from_seed(*seed);
    rng.set_stream(u64::from(index));
    match entry {
        Entry::Lot(lot) => compose(design, lot, &mut rng),
        Entry::Pattern(i) => {
            design.patterns().get(i).map(|p| compose_pattern(design, p, &mut rng)).ok_or(ComposeError::NoSuchPattern(i))
        }
    }
}

/// A made block: what the server keeps to sell it.
#[derive(Debug, Clone)]
pub struct Block {
    pub emission: u32,
    pub block: u32,
    pub lots: Vec<LotCode>,
    pub root: Hash,
    pub design_hash: Hash,
    /// Its tree's level [`merkle::KEPT_LEVEL`] (an eighth of the leaves): stored beside the block, it
    /// spares a restarting server the recomputation of every leaf (see [`Prover::from_kept_level`]).
    pub kept_level: Vec<Hash>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    #[error("ticket {index}: the composer cannot print a lot of {lot}: {error}")]
    Compose { index: u32, lot: Cents, error: ComposeError },
    #[error("ticket {index} was assigned {assigned} but its symbols are invalid: {error}")]
    Invalid { index: u32, assigned: Cents, error: InvalidTicket },
    #[error("ticket {index} was assigned {assigned} but its symbols read {read}")]
    Disagreement { index: u32, assigned: Cents, read: Cents },
    #[error("the block holds {found} lots of {lot}, the prize table {expected}")]
    PrizeTable { lot: Cents, expected: u32, found: u32 },
    #[error("the recomputed root {found} differs from the committed root {committed}")]
    Root { committed: String, found: String },
    #[error("the block was made with design {committed}, the audit was given design {given}")]
    Design { committed: String, given: String },
    #[error("the block has no ticket {0}")]
    NoTicket(u32),
}

/// What an audit checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditReport {
    pub tickets: u32,
    /// Tickets per lot, as read off the symbols by the evaluator (0 € included).
    pub counts: BTreeMap<Cents, u32>,
    pub total_payout: Cents,
    pub root: Hash,
}

impl Block {
    /// Shuffles, composes, evaluates and commits a whole block.
    pub fn make(design: &Design, emission: u32, block: u32, seed: &Seed) -> Result<Block, BlockError> {
        build(design, emission, block, seed)
    }

    pub fn commitment(&self) -> Commitment {
        Commitment { root: self.root, design_hash: self.design_hash }
    }

    pub fn serial(&self, index: u32) -> Serial {
        Serial { emission: self.emission, block: self.block, index }
    }

    pub fn lot(&self, index: u32) -> Cents {
        lot_of(self.lots[index as usize])
    }
}

/// Composes ticket `index`, checks that the evaluator reads its lot off its symbols, and hashes its leaf.
fn checked_leaf(
    buffer: &mut Vec<u8>,
    design: &Design,
    seed: &Seed,
    serial: Serial,
    entry: Entry,
) -> Result<Hash, BlockError> {
    let (index, assigned) = (serial.index, entry.lot(design));
    let ticket = compose_entry(design, seed, index, entry).map_err(|error| BlockError::Compose {
        index,
        lot: assigned,
        error,
    })?;
    let read = ticket.evaluate().map_err(|error| BlockError::Invalid { index, assigned, error })?.lot;
    if read != assigned {
        return Err(BlockError::Disagreement { index, assigned, read });
    }
    let salt = (design.scheme >= Scheme::V2).then(|| merkle::salt(seed, index));
    Ok(merkle::leaf(buffer, salt.as_ref(), serial, &ticket, read))
}

/// A block's tickets: its shuffled lots, or a QA deck.
#[derive(Debug, Clone)]
pub enum Entries {
    Lots(Vec<LotCode>),
    Deck(std::sync::Arc<Vec<Entry>>),
}

impl Entries {
    pub fn len(&self) -> usize {
        match self {
            Entries::Lots(lots) => lots.len(),
            Entries::Deck(deck) => deck.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, index: usize) -> Option<Entry> {
        match self {
            Entries::Lots(lots) => lots.get(index).map(|&code| Entry::Lot(lot_of(code))),
            Entries::Deck(deck) => deck.get(index).copied(),
        }
    }
}

/// Every ticket's leaf, in sale order, from the seed.
fn leaves(design: &Design, emission: u32, block: u32, seed: &Seed, entries: &Entries) -> Result<Vec<Hash>, BlockError> {
    leaves_of(design, emission, block, seed, 0..entries.len(), |i| entries.get(i))
}

/// The leaves of the tickets in `range`.
fn leaves_of(
    design: &Design,
    emission: u32,
    block: u32,
    seed: &Seed,
    range: std::ops::Range<usize>,
    entry_at: impl Fn(usize) -> Option<Entry> + Sync,
) -> Result<Vec<Hash>, BlockError> {
    let leaf = |buffer: &mut Vec<u8>, i: usize| {
        let entry = entry_at(i).ok_or(BlockError::NoTicket(i as u32))?;
        checked_leaf(buffer, design, seed, Serial { emission, block, index: i as u32 }, entry)
    };
    // The browser (the « Vérifier » page) has one thread; the server spreads a block over its cores.
    #[cfg(not(target_arch = "wasm32"))]
    return range.into_par_iter().map_init(Vec::new, leaf).collect();
    #[cfg(target_arch = "wasm32")]
    return range.scan(Vec::new(), |buffer, i| Some(leaf(buffer, i))).collect();
}

fn lot_leaves(
    design: &Design,
    emission: u32,
    block: u32,
    seed: &Seed,
    lots: &[LotCode],
    range: std::ops::Range<usize>,
) -> Result<Vec<Hash>, BlockError> {
    leaves_of(design, emission, block, seed, range, |i| lots.get(i).map(|&code| Entry::Lot(lot_of(code))))
}

fn build(design: &Design, emission: u32, block: u32, seed: &Seed) -> Result<Block, BlockError> {
    let lots = shuffled_lots(seed);
    let tree = merkle::Tree::new(lot_leaves(design, emission, block, seed, &lots, 0..lots.len())?);
    Ok(Block {
        emission,
        block,
        lots,
        root: tree.root(),
        design_hash: design.hash,
        kept_level: tree.kept_level().to_vec(),
    })
}

/// What proves a block's tickets to their buyers: its tree (kept from [`merkle::KEPT_LEVEL`] up) and
/// what recomputes the few leaves a proof needs. Made from the seed, so it needs nothing stored.
pub struct Prover {
    emission: u32,
    block: u32,
    seed: Seed,
    entries: Entries,
    tree: merkle::Tree,
}

impl Prover {
    /// Seconds of work for a whole block: run it off the async executor.
    pub fn new(
        design: &Design,
        emission: u32,
        block: u32,
        seed: &Seed,
        entries: Entries,
    ) -> Result<Prover, BlockError> {
        let tree = merkle::Tree::new(leaves(design, emission, block, seed, &entries)?);
        Ok(Prover { emission, block, seed: *seed, entries, tree })
    }

    /// The prover of a block whose tree's level [`merkle::KEPT_LEVEL`] was kept (`kept_level`, from
    /// [`Prover::kept_level`] or [`Block::kept_level`]): milliseconds instead of seconds. `None` if the
    /// level does not fit the block; the caller checks the root against the block's commitment.
    pub fn from_kept_level(
        emission: u32,
        block: u32,
        seed: &Seed,
        entries: Entries,
        kept_level: Vec<Hash>,
    ) -> Option<Prover> {
        let tree = merkle::Tree::from_kept_level(entries.len(), kept_level)?;
        Some(Prover { emission, block, seed: *seed, entries, tree })
    }

    pub fn kept_level(&self) -> &[Hash] {
        self.tree.kept_level()
    }

    pub fn root(&self) -> Hash {
        self.tree.root()
    }

    pub fn leaf_count(&self) -> usize {
        self.tree.leaf_count()
    }

    /// The inclusion proof of ticket `index` (see [`merkle::verify_proof`]).
    pub fn proof(&self, design: &Design, index: u32) -> Result<Vec<Hash>, BlockError> {
        if index as usize >= self.leaf_count() {
            return Err(BlockError::NoTicket(index));
        }
        let (emission, block) = (self.emission, self.block);
        let mut buffer = Vec::new();
        let mut failure = None;
        let path = self.tree.proof(index as usize, |range| {
            range
                .map(|i| {
                    let serial = Serial { emission, block, index: i as u32 };
                    let entry = self.entries.get(i).ok_or(BlockError::NoTicket(i as u32));
                    entry.and_then(|entry| checked_leaf(&mut buffer, design, &self.seed, serial, entry)).unwrap_or_else(
                        |e| {
                            failure = Some(e);
                            [0; 32]
                        },
                    )
                })
                .collect()
        });
        failure.map_or(Ok(path), Err)
    }
}

/// Recomputes a block from its seed and checks everything: the prize table exactly, every ticket valid,
/// composer and evaluator agreeing on every ticket, and the committed root.
pub fn audit(
    design: &Design,
    emission: u32,
    block: u32,
    seed: &Seed,
    committed: &Commitment,
) -> Result<AuditReport, BlockError> {
    let audit = Audit::start(design, emission, block, seed, committed)?;
    let leaves = audit.leaves(0..audit.tickets())?;
    audit.conclude(leaves)
}

/// [`audit`] in steps, for a page that must stay responsive while a whole block is recomputed: the
/// leaves a range at a time, then the conclusion.
pub struct Audit<'a> {
    design: &'a Design,
    emission: u32,
    block: u32,
    seed: Seed,
    lots: Vec<LotCode>,
    committed: Commitment,
}

impl<'a> Audit<'a> {
    pub fn start(
        design: &'a Design,
        emission: u32,
        block: u32,
        seed: &Seed,
        committed: &Commitment,
    ) -> Result<Audit<'a>, BlockError> {
        if design.hash != committed.design_hash {
            return Err(BlockError::Design { committed: hex(&committed.design_hash), given: hex(&design.hash) });
        }
        Ok(Audit { design, emission, block, seed: *seed, lots: shuffled_lots(seed), committed: committed.clone() })
    }

    pub fn tickets(&self) -> usize {
        self.lots.len()
    }

    /// The leaves of the tickets in `range`, each ticket checked against its lot.
    pub fn leaves(&self, range: std::ops::Range<usize>) -> Result<Vec<Hash>, BlockError> {
        lot_leaves(self.design, self.emission, self.block, &self.seed, &self.lots, range)
    }

    /// Given every leaf: the prize table and the root checked.
    pub fn conclude(self, leaves: Vec<Hash>) -> Result<AuditReport, BlockError> {
        // Every leaf was checked against its lot, so the lots are what the evaluator read.
        let mut counts = BTreeMap::new();
        for &code in &self.lots {
            *counts.entry(lot_of(code)).or_insert(0u32) += 1;
        }
        let expected = PRIZE_TABLE.iter().map(|t| (t.lot, t.count)).chain([(Cents::ZERO, LOSERS_PER_BLOCK)]);
        for (lot, expected) in expected {
            let found = counts.get(&lot).copied().unwrap_or(0);
            if found != expected {
                return Err(BlockError::PrizeTable { lot, expected, found });
            }
        }
        let root = merkle::root(leaves);
        if root != self.committed.root {
            return Err(BlockError::Root { committed: hex(&self.committed.root), found: hex(&root) });
        }
        let total_payout = counts.iter().map(|(&lot, &n)| Cents(lot.0 * u64::from(n))).sum();
        Ok(AuditReport { tickets: self.lots.len() as u32, counts, total_payout, root })
    }
}

/// What is published about a block before its first sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commitment {
    pub root: Hash,
    pub design_hash: Hash,
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A hash, seed or salt written by [`hex`]; `None` unless exactly 32 bytes of hexadecimal.
pub fn from_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0; 32];
    for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod no_tells;
