use super::*;
use crate::rules::prize_table::{WINNERS_PER_BLOCK, total_payout};

const SEED: Seed = [0xAB; 32];

#[test]
fn a_full_block_is_made_and_audited_exactly() {
    let design = Design::default_design();
    let block = Block::make(&design, 1, 1, &SEED).unwrap();
    assert_eq!(block.lots.len(), BLOCK_SIZE as usize);

    let report = audit(&design, 1, 1, &SEED, &block.commitment()).unwrap();
    assert_eq!(report.tickets, 1_500_000);
    assert_eq!(report.counts[&Cents::ZERO], 1_154_471);
    for tier in PRIZE_TABLE {
        assert_eq!(report.counts[&tier.lot], tier.count, "lot {}", tier.lot);
    }
    assert_eq!(report.counts.values().sum::<u32>() - report.counts[&Cents::ZERO], WINNERS_PER_BLOCK);
    assert_eq!(report.total_payout, Cents::euros(3_150_000));
    assert_eq!(report.total_payout, total_payout());
    assert_eq!(report.root, block.root);

    // The audit binds the root: another root, another place in the emission, or another design fails.
    let mut wrong = block.commitment();
    wrong.root[0] ^= 1;
    assert!(matches!(audit(&design, 1, 1, &SEED, &wrong), Err(BlockError::Root { .. })));
    assert!(matches!(audit(&design, 1, 2, &SEED, &block.commitment()), Err(BlockError::Root { .. })));
    let other =
        Design::from_toml(&crate::composer::design::DEFAULT_DESIGN_TOML.replace("weight = 8", "weight = 7")).unwrap();
    assert!(matches!(audit(&other, 1, 1, &SEED, &block.commitment()), Err(BlockError::Design { .. })));
}

#[test]
fn the_shuffle_is_a_permutation_fixed_by_the_seed() {
    let a = shuffled_lots(&SEED);
    let mut other = SEED;
    other[31] ^= 1;
    let b = shuffled_lots(&other);
    assert_eq!(a, shuffled_lots(&SEED));
    assert_ne!(a, b);
    let mut sorted_a = a.clone();
    let mut sorted_b = b;
    sorted_a.sort_unstable();
    sorted_b.sort_unstable();
    assert_eq!(sorted_a, sorted_b);
    // Winners are spread over the block, not bunched: each tenth holds about a tenth of them.
    for tenth in a.chunks(a.len() / 10) {
        let winners = tenth.iter().filter(|&&c| c != 0).count();
        assert!((33_000..36_100).contains(&winners), "{winners}");
    }
}

#[test]
fn each_ticket_is_recomputable_from_seed_and_index() {
    let design = Design::default_design();
    let lots = shuffled_lots(&SEED);
    for index in [0u32, 1, 777, 1_499_999] {
        let lot = lot_of(lots[index as usize]);
        let t = compose_ticket(&design, &SEED, index, lot).unwrap();
        assert_eq!(t, compose_ticket(&design, &SEED, index, lot).unwrap());
        assert_eq!(t.evaluate().unwrap().lot, lot);
    }
    assert_ne!(compose_ticket(&design, &SEED, 0, Cents::ZERO), compose_ticket(&design, &SEED, 1, Cents::ZERO));
}

#[test]
fn lot_codes_map_to_the_prize_table() {
    assert_eq!(lot_of(0), Cents::ZERO);
    assert_eq!(lot_of(1), Cents::euros(40_000));
    assert_eq!(lot_of(9), Cents::euros(3));
}
