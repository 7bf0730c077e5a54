//! The block commitment: a binary SHA-256 Merkle tree over every ticket, with RFC 6962 domain
//! separation (leaves hashed behind a `0x00` byte, inner nodes behind `0x01`) so that a leaf can never
//! pass for a node. A level with an odd count carries its last node up unchanged.
//!
//! Leaf of ticket i: `SHA-256(0x00 ‖ salt ‖ emission ‖ block ‖ index (u32 big-endian) ‖ lot (u64 cents
//! BE) ‖ Ticket::canonical_bytes)`. The serial is inside, so a ticket cannot be moved to another place.
//! The salt ([`salt`], 32 bytes, none in [`Scheme::V1`](super::Scheme) blocks) comes from the block's
//! secret seed: until the seed is published, the root and the proofs handed to buyers say nothing about
//! the unsold tickets, which could otherwise be guessed and checked against them one by one.

use super::{Hash, Seed};
use crate::money::Cents;
use crate::payload::Serial;
use crate::rules::Ticket;
#[cfg(not(target_arch = "wasm32"))]
use rayon::prelude::*;
use sha2::{Digest, Sha256};

pub type Salt = [u8; 32];

/// Ticket `index`'s salt: `SHA-256("vegas leaf salt" ‖ seed ‖ index (u32 BE))`.
pub fn salt(seed: &Seed, index: u32) -> Salt {
    let mut h = Sha256::new();
    h.update(b"vegas leaf salt");
    h.update(seed);
    h.update(index.to_be_bytes());
    h.finalize().into()
}

/// The hash of a ticket's leaf. `buffer` is scratch space reused between leaves, to keep allocation
/// off the per-ticket path.
pub fn leaf(buffer: &mut Vec<u8>, salt: Option<&Salt>, serial: Serial, ticket: &Ticket, lot: Cents) -> Hash {
    leaf_input(buffer, salt, serial, ticket, lot);
    Sha256::digest(buffer.as_slice()).into()
}

/// The bytes a ticket's leaf hashes, into `buffer`.
pub fn leaf_input(buffer: &mut Vec<u8>, salt: Option<&Salt>, serial: Serial, ticket: &Ticket, lot: Cents) {
    buffer.clear();
    buffer.push(0x00);
    if let Some(salt) = salt {
        buffer.extend_from_slice(salt);
    }
    for n in [serial.emission, serial.block, serial.index] {
        buffer.extend_from_slice(&n.to_be_bytes());
    }
    buffer.extend_from_slice(&lot.0.to_be_bytes());
    ticket.canonical_bytes(buffer);
}

/// The bytes an inner node hashes: `0x01 ‖ left ‖ right`.
pub fn node_input(left: &Hash, right: &Hash) -> [u8; 65] {
    let mut input = [0x01; 65];
    input[1..33].copy_from_slice(left);
    input[33..].copy_from_slice(right);
    input
}

fn node(left: &Hash, right: &Hash) -> Hash {
    Sha256::digest(node_input(left, right)).into()
}

fn parent_level(level: &[Hash]) -> Vec<Hash> {
    let pair_up = |pair: &[Hash]| if let [l, r] = pair { node(l, r) } else { pair[0] };
    #[cfg(not(target_arch = "wasm32"))]
    return level.par_chunks(2).map(pair_up).collect();
    #[cfg(target_arch = "wasm32")]
    return level.chunks(2).map(pair_up).collect();
}

/// The root of the tree over `leaves` (the hash of nothing for an empty list).
pub fn root(mut level: Vec<Hash>) -> Hash {
    if level.is_empty() {
        return Sha256::digest([]).into();
    }
    while level.len() > 1 {
        level = parent_level(&level);
    }
    level[0]
}

/// The sibling hashes from leaf `index` up to the root, for an inclusion proof.
pub fn proof(mut level: Vec<Hash>, mut index: usize) -> Vec<Hash> {
    let mut path = Vec::new();
    while level.len() > 1 {
        let sibling = index ^ 1;
        if sibling < level.len() {
            path.push(level[sibling]);
        }
        level = parent_level(&level);
        index /= 2;
    }
    path
}

/// The level of the tree [`Tree`] keeps from: proofs recompute the 2^3 = 8 leaves under a kept node.
pub const KEPT_LEVEL: u32 = 3;

/// A tree kept to hand out inclusion proofs: its nodes from [`KEPT_LEVEL`] up, an eighth of the leaves'
/// memory for each level (a 1 500 000-ticket block: 12 MB instead of 96 MB).
pub struct Tree {
    leaves: usize,
    kept: Vec<Vec<Hash>>,
    root: Hash,
}

impl Tree {
    pub fn new(leaves: Vec<Hash>) -> Tree {
        let count = leaves.len();
        let mut level = leaves;
        for _ in 0..KEPT_LEVEL {
            if level.len() > 1 {
                level = parent_level(&level);
            }
        }
        Tree::above(count, level)
    }

    /// The tree over `leaves` leaves whose level [`KEPT_LEVEL`] is `nodes`, as [`Tree::kept_level`] gave
    /// it: a few milliseconds, where [`Tree::new`] needs every leaf. `None` if `nodes` cannot be that
    /// level (its length is wrong); whether it is the right one, only the root can tell.
    pub fn from_kept_level(leaves: usize, nodes: Vec<Hash>) -> Option<Tree> {
        (nodes.len() == leaves.div_ceil(1 << KEPT_LEVEL).max(1)).then(|| Tree::above(leaves, nodes))
    }

    fn above(leaves: usize, mut level: Vec<Hash>) -> Tree {
        let mut kept = Vec::new();
        while level.len() > 1 {
            let parent = parent_level(&level);
            kept.push(std::mem::replace(&mut level, parent));
        }
        let root = level.first().copied().unwrap_or_else(|| Sha256::digest([]).into());
        Tree { leaves, kept, root }
    }

    /// The nodes of level [`KEPT_LEVEL`] (the root alone for a tree of at most 8 leaves): what rebuilds
    /// the whole tree with [`Tree::from_kept_level`].
    pub fn kept_level(&self) -> &[Hash] {
        self.kept.first().map_or(std::slice::from_ref(&self.root), Vec::as_slice)
    }

    pub fn root(&self) -> Hash {
        self.root
    }

    pub fn leaf_count(&self) -> usize {
        self.leaves
    }

    /// The proof for leaf `index` (below the leaf count), given the leaves of a range of the tree
    /// (the 8 around `index`), which the tree does not keep.
    pub fn proof(&self, index: usize, leaves_of: impl FnOnce(std::ops::Range<usize>) -> Vec<Hash>) -> Vec<Hash> {
        let span = 1 << KEPT_LEVEL;
        let start = index / span * span;
        let mut path = proof(leaves_of(start..(start + span).min(self.leaves)), index - start);
        let mut position = index >> KEPT_LEVEL;
        for level in &self.kept {
            if let Some(sibling) = level.get(position ^ 1) {
                path.push(*sibling);
            }
            position /= 2;
        }
        path
    }
}

/// Which side each sibling of an inclusion proof joins on, leaf first: `true` for a left sibling.
/// `None` if a path of `path_len` siblings cannot be leaf `index`'s in a tree of `count` leaves.
pub fn sibling_sides(mut index: usize, mut count: usize, path_len: usize) -> Option<Vec<bool>> {
    if index >= count {
        return None;
    }
    let mut sides = Vec::with_capacity(path_len);
    while count > 1 {
        if (index ^ 1) < count {
            sides.push(!index.is_multiple_of(2));
        }
        index /= 2;
        count = count.div_ceil(2);
    }
    (sides.len() == path_len).then_some(sides)
}

/// Checks an inclusion proof made by [`proof`] for a tree of `count` leaves. (The browser does the
/// same with WebCrypto's SHA-256, from [`sibling_sides`] and [`node_input`].)
pub fn verify_proof(leaf: Hash, index: usize, count: usize, path: &[Hash], root: &Hash) -> bool {
    let Some(sides) = sibling_sides(index, count, path.len()) else { return false };
    let top = path
        .iter()
        .zip(sides)
        .fold(leaf, |hash, (sibling, left)| if left { node(sibling, &hash) } else { node(&hash, sibling) });
    &top == root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n as u32).map(|i| Sha256::digest(i.to_be_bytes()).into()).collect()
    }

    #[test]
    fn small_trees_hash_as_specified() {
        let l = leaves(3);
        assert_eq!(root(l[..1].to_vec()), l[0]);
        assert_eq!(root(l[..2].to_vec()), node(&l[0], &l[1]));
        assert_eq!(root(l.clone()), node(&node(&l[0], &l[1]), &l[2]));
    }

    #[test]
    fn every_leaf_has_a_proof_and_a_wrong_one_fails() {
        for n in [1, 2, 3, 5, 8, 13, 100] {
            let l = leaves(n);
            let r = root(l.clone());
            for i in 0..n {
                let p = proof(l.clone(), i);
                assert!(verify_proof(l[i], i, n, &p, &r), "n={n} i={i}");
                if n > 1 {
                    assert!(!verify_proof(l[(i + 1) % n], i, n, &p, &r), "n={n} i={i}: another leaf");
                }
            }
        }
    }

    #[test]
    fn a_kept_tree_gives_the_same_root_and_proofs_as_the_whole_tree() {
        for n in [1, 2, 7, 8, 9, 16, 17, 100, 1_000] {
            let l = leaves(n);
            let tree = Tree::new(l.clone());
            assert_eq!(tree.root(), root(l.clone()), "n={n}");
            for i in 0..n {
                let p = tree.proof(i, |range| l[range].to_vec());
                assert_eq!(p, proof(l.clone(), i), "n={n} i={i}");
                assert!(verify_proof(l[i], i, n, &p, &tree.root()));
            }
        }
    }

    #[test]
    fn a_tree_rebuilt_from_its_kept_level_is_the_same_tree() {
        for n in [0, 1, 2, 7, 8, 9, 16, 17, 100, 1_000] {
            let l = leaves(n);
            let tree = Tree::new(l.clone());
            let rebuilt = Tree::from_kept_level(n, tree.kept_level().to_vec()).unwrap();
            assert_eq!((rebuilt.root(), rebuilt.leaf_count()), (tree.root(), n), "n={n}");
            for i in 0..n {
                assert_eq!(
                    rebuilt.proof(i, |range| l[range].to_vec()),
                    tree.proof(i, |range| l[range].to_vec()),
                    "n={n} i={i}"
                );
            }
        }
        let kept = Tree::new(leaves(100)).kept_level().to_vec();
        assert_eq!(kept.len(), 13);
        assert!(Tree::from_kept_level(100, kept[1..].to_vec()).is_none(), "a level one node short");
        assert!(Tree::from_kept_level(200, kept.clone()).is_none(), "the level of a smaller tree");
        let mut altered = kept;
        altered[5][0] ^= 1;
        assert_ne!(
            Tree::from_kept_level(100, altered).unwrap().root(),
            Tree::new(leaves(100)).root(),
            "an altered node changes the root"
        );
    }

    #[test]
    fn salts_differ_by_ticket_and_seed_and_change_the_leaf() {
        let ticket = crate::rules::tests::losing_ticket();
        let serial = Serial { emission: 1, block: 1, index: 0 };
        let (a, b) = (salt(&[1; 32], 0), salt(&[1; 32], 1));
        assert_ne!(a, b);
        assert_ne!(a, salt(&[2; 32], 0));
        let mut buffer = Vec::new();
        let unsalted = leaf(&mut buffer, None, serial, &ticket, Cents::ZERO);
        assert_ne!(leaf(&mut buffer, Some(&a), serial, &ticket, Cents::ZERO), unsalted);
        assert_ne!(
            leaf(&mut buffer, Some(&a), serial, &ticket, Cents::ZERO),
            leaf(&mut buffer, Some(&b), serial, &ticket, Cents::ZERO)
        );
    }

    #[test]
    fn changing_any_leaf_changes_the_root() {
        let l = leaves(7);
        let r = root(l.clone());
        for i in 0..7 {
            let mut changed = l.clone();
            changed[i][0] ^= 1;
            assert_ne!(root(changed), r);
        }
    }
}
