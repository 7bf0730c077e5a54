use super::Scheme;
use super::*;
use crate::rules::prize_table::PRIZE_TABLE;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn design_with(edit: impl FnOnce(&str) -> String) -> Result<Design, DesignError> {
    Design::from_toml(&edit(design::DEFAULT_DESIGN_TOML))
}

#[test]
fn the_shipped_design_is_valid_and_covers_every_lot() {
    let design = Design::default_design();
    for tier in PRIZE_TABLE {
        assert!(design.patterns_for(tier.lot).count() >= 2, "lot {} should have varied patterns", tier.lot);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn composing_a_lot_then_evaluating_gives_the_lot(tier in 0..=PRIZE_TABLE.len(), seed in any::<u64>()) {
        let design = Design::default_design();
        let lot = PRIZE_TABLE.get(tier).map_or(Cents::ZERO, |t| t.lot);
        let ticket = compose(&design, lot, &mut rng(seed)).unwrap();
        let outcome = ticket.evaluate().unwrap();
        prop_assert_eq!(outcome.lot, lot);
    }

    #[test]
    fn every_pattern_wins_exactly_on_its_surfaces(index in 0usize..64, seed in any::<u64>()) {
        let design = Design::default_design();
        let pattern = &design.patterns()[index % design.patterns().len()];
        let outcome = compose_pattern(&design, pattern, &mut rng(seed)).evaluate().unwrap();
        prop_assert_eq!(outcome.surface_wins, pattern.surface_wins());
        prop_assert_eq!(outcome.poker, pattern.poker.unwrap_or(PokerHand::Nothing));
        prop_assert_eq!(outcome.reels, pattern.reels.unwrap_or(ReelsWin::Nothing));
    }
}

#[test]
fn the_same_seed_prints_the_same_ticket_and_another_seed_another() {
    let design = Design::default_design();
    let a = compose(&design, Cents::euros(50), &mut rng(1)).unwrap();
    assert_eq!(a, compose(&design, Cents::euros(50), &mut rng(1)).unwrap());
    assert_ne!(a, compose(&design, Cents::euros(50), &mut rng(2)).unwrap());
}

#[test]
fn losing_surfaces_look_like_real_losing_surfaces() {
    let design = Design::default_design();
    let mut r = rng(3);
    let mut near = [0usize; 3];
    let n = 3_000;
    for _ in 0..n {
        let t = compose_losing(&design, &mut r);
        let o = t.evaluate().unwrap();
        assert_eq!(o.lot, Cents::ZERO);
        let values: std::collections::BTreeSet<_> = t.poker.cards().map(|c| c.value).collect();
        assert_eq!(values.len(), 6, "six distinct values");
        assert!(t.roulette.stakes.iter().all(|s| s.number != t.roulette.wheel));
        assert!(t.jackpot.reels.iter().all(|&r| r != Reel::Cherry));
        assert_eq!(t.jackpot.tray, Cents::ZERO);
        near[0] += t.roulette.stakes.iter().any(|s| matches!(s.number.abs_diff(t.roulette.wheel), 1 | 35)) as usize;
        near[1] += t
            .craps
            .throws
            .iter()
            .any(|th| design.losing.craps_near_miss.iter().any(|n| [*n, n.swapped()].contains(th)))
            as usize;
        near[2] += (t.jackpot.reels[0] == t.jackpot.reels[1]
            || t.jackpot.reels[1] == t.jackpot.reels[2]
            || t.jackpot.reels[0] == t.jackpot.reels[2]) as usize;
    }
    // 30 % near misses are drawn on purpose; chance adds more (four fair rolls often hold one of the
    // near-miss throws, in either order). Each surface shows some, not all.
    for (surface, count) in ["roulette", "craps", "reels"].iter().zip(near) {
        let percent = count * 100 / n;
        assert!((25..=90).contains(&percent), "{surface}: {percent} % near misses");
    }
}

#[test]
fn winning_surfaces_show_the_win_in_varied_places() {
    let design = Design::default_design();
    let pattern = design.patterns().iter().find(|p| p.roulette.is_some()).unwrap();
    let mut stacks = [0; 3];
    let mut r = rng(4);
    for _ in 0..300 {
        let o = compose_pattern(&design, pattern, &mut r).evaluate().unwrap();
        stacks[o.roulette_stake.unwrap()] += 1;
    }
    assert!(stacks.iter().all(|&n| n > 50), "{stacks:?}");
}

#[test]
fn fisher_yates_is_a_uniform_permutation() {
    let mut counts = [[0u32; 4]; 4];
    let mut r = rng(5);
    for _ in 0..40_000 {
        let mut items = [0, 1, 2, 3];
        fisher_yates(&mut items, &mut r);
        for (pos, &item) in items.iter().enumerate() {
            counts[item][pos] += 1;
        }
    }
    for row in counts {
        for c in row {
            assert!((9_400..=10_600).contains(&c), "{counts:?}");
        }
    }
}

#[test]
fn poker_hands_are_drawn_for_every_hand() {
    for hand in PokerHand::WINNING.into_iter().chain([PokerHand::Nothing]) {
        for seed in 0..200 {
            assert_eq!(poker(hand, &mut rng(seed)).evaluate(), Ok(hand));
        }
    }
}

#[test]
fn reels_are_drawn_for_every_win() {
    for win in ReelsWin::WINNING.into_iter().chain([ReelsWin::Nothing]) {
        for seed in 0..200 {
            for near in [false, true] {
                assert_eq!(
                    crate::rules::jackpot::read_reels(reels(win, near, Scheme::LATEST, &mut rng(seed))),
                    Ok(win)
                );
            }
        }
    }
}

#[test]
fn a_pattern_that_does_not_add_up_is_refused_by_name() {
    let err = design_with(|s| s.replace("roulette = 9000", "roulette = 8000")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pattern « 10 000 € — full + roulette »: its wins add up to 9\u{202f}000,00\u{a0}€, not to its lot of \
            10\u{202f}000,00\u{a0}€"
    );
}

#[test]
fn a_single_surface_pattern_for_a_multi_surface_lot_is_refused() {
    let bad =
        "\n[[pattern]]\nname = \"10 € — trois cerises seules\"\nlot = 10\nweight = 1\nreels = \"three-cherries\"\n";
    let err = design_with(|s| format!("{s}{bad}")).unwrap_err();
    assert!(
        matches!(&err, DesignError::Pattern { pattern, problem }
        if pattern == "10 € — trois cerises seules" && problem.contains("at least two surfaces")),
        "{err}"
    );
    // The tray and the reels are one surface: 3 € + 7 € in the jackpot is still one surface.
    let bad = "\n[[pattern]]\nname = \"cerise + bonus\"\nlot = 10\nweight = 1\nreels = \"one-cherry\"\ntray = 7\n";
    assert!(design_with(|s| format!("{s}{bad}")).unwrap_err().to_string().contains("at least two surfaces"));
}

#[test]
fn wins_that_do_not_exist_are_refused() {
    let cases = [
        (
            "craps = [\"2+5\"]\nroulette = 20",
            "craps = [\"2+2\"]\nroulette = 20",
            "craps throw 2+2 does not win anything",
        ),
        ("poker = \"brelan\"\nroulette = 100", "poker = \"three-pairs\"\nroulette = 100", "three-pairs"),
        ("reels = \"three-crowns\"\n", "reels = \"two-cherries\"\n", "two-cherries"),
        ("poker = \"full\"\n", "poker = \"nothing\"\n", "\"nothing\" is not a win"),
        (
            "craps = [\"3+4\", \"3+4\", \"3+4\", \"3+4\"]",
            "craps = [\"3+4\", \"3+4\", \"3+4\", \"3+4\", \"1+6\"]",
            "4 throws",
        ),
        ("craps = [\"2+5\"]\ntray = 20", "craps = [\"2+5\"]\ntray = 0\nroulette = 20", "bonus tray of 0 €"),
        ("weight = 8", "weight = 0", "weight must be at least 1"),
        ("lot = 3\nweight = 1\ntray = 3", "lot = 4\nweight = 1\ntray = 4", "not in the prize table"),
    ];
    for (from, to, expected) in cases {
        let text = design::DEFAULT_DESIGN_TOML.replacen(from, to, 1);
        assert_ne!(text, design::DEFAULT_DESIGN_TOML, "the case {from:?} must edit the file");
        let err = Design::from_toml(&text).unwrap_err().to_string();
        assert!(err.contains(expected), "{to:?}: {err}");
    }
}

#[test]
fn a_design_missing_a_lot_or_malformed_is_refused() {
    let without_40k: String = design::DEFAULT_DESIGN_TOML.split("# ---- 40 000 €").next().unwrap().to_owned();
    assert_eq!(Design::from_toml(&without_40k).unwrap_err(), DesignError::MissingLot(Cents::euros(40_000)));
    assert!(matches!(design_with(|s| s.replace("version = 1", "version = 2")), Err(DesignError::Version(2))));
    assert!(matches!(design_with(|s| s.replace("weight = 8", "wieght = 8")), Err(DesignError::Syntax(_))));
    assert!(matches!(
        design_with(|s| s.replace("near_miss_percent = 30", "near_miss_percent = 130")),
        Err(DesignError::Losing(_))
    ));
    assert!(matches!(design_with(|s| s.replace("\"5+5\", ", "\"5+6\", ")), Err(DesignError::Losing(_))));
    let dup = design_with(|s| s.replace("name = \"3 € — bonus\"", "name = \"3 € — une cerise\"")).unwrap_err();
    assert!(dup.to_string().contains("same name"), "{dup}");
}
