//! The statistical test of a whole block: what a sharp player could read off the symbols without
//! scratching the surface that decides them. Each statistic is a chi-square (or G) test of what the
//! block prints against what a composer with no tell prints, at significance [`ALPHA`]; the block is
//! made from a fixed seed, so the test is deterministic, and a composer with no tells passes it with
//! probability above 99.9 % over seeds (ten tests at 10⁻⁴).
//!
//! - Orders: each throw of two different dice, as often in one order as in the other.
//! - Positions: card values by place, reels by place, the winning stack's place, winning throws' places.
//! - On losing reels with two alike, the odd one on each reel equally often.
//! - Numbers: every number under a stack equally often, and on the wheel.
//! - Amounts under stacks: decoys drawn evenly from the design's list, and every amount a stack can
//!   win also printed as a decoy, so that a stack showing it wins at most [`AMOUNT_BOUND`] of the time.
//!
//! It runs on the old composer ([`Scheme::V1`]) and its design too, and must find each of their tells.

use super::{Cents, Design, Scheme, Seed, Ticket, compose_ticket, lot_of, shuffled_lots};
use crate::rules::jackpot::read_reels;
use crate::rules::{Reel, ReelsWin};
use rayon::prelude::*;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use std::collections::BTreeMap;

/// Significance level of each statistic.
const ALPHA: f64 = 1e-4;
/// The most a stack showing any one amount may win, over a block: the amount alone tells little.
const AMOUNT_BOUND: f64 = 0.10;

#[derive(Clone)]
struct Tally {
    /// `[first die][second die]` over every printed throw.
    throws: [[u64; 7]; 7],
    /// Which reel is the odd one, on losing reels with two alike.
    odd_reel: [u64; 3],
    stack_numbers: [u64; 37],
    wheel_numbers: [u64; 37],
    card_values_by_place: [[u64; 8]; 6],
    reels_by_place: [[u64; 5]; 3],
    winning_stack_place: [u64; 3],
    /// Throw places 0–3: `[losing, winning]` throws there.
    throw_places: [[u64; 2]; 4],
    /// Amount under a stack: `[as a decoy, on the winning stack]`.
    stack_amounts: BTreeMap<Cents, [u64; 2]>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            throws: [[0; 7]; 7],
            odd_reel: [0; 3],
            stack_numbers: [0; 37],
            wheel_numbers: [0; 37],
            card_values_by_place: [[0; 8]; 6],
            reels_by_place: [[0; 5]; 3],
            winning_stack_place: [0; 3],
            throw_places: [[0; 2]; 4],
            stack_amounts: BTreeMap::new(),
        }
    }
}

impl Tally {
    fn add(mut self, ticket: &Ticket) -> Tally {
        let outcome = ticket.evaluate().expect("made blocks hold only valid tickets");
        for (place, card) in ticket.poker.cards().enumerate() {
            self.card_values_by_place[place][card.value as usize] += 1;
        }
        let roulette = &ticket.roulette;
        self.wheel_numbers[usize::from(roulette.wheel)] += 1;
        for (place, stake) in roulette.stakes.iter().enumerate() {
            self.stack_numbers[usize::from(stake.number)] += 1;
            let wins = outcome.roulette_stake == Some(place);
            self.stack_amounts.entry(stake.amount).or_default()[usize::from(wins)] += 1;
            if wins {
                self.winning_stack_place[place] += 1;
            }
        }
        for (place, (throw, win)) in ticket.craps.throws.iter().zip(outcome.craps_throws).enumerate() {
            self.throws[usize::from(throw.0)][usize::from(throw.1)] += 1;
            self.throw_places[place][usize::from(!win.is_zero())] += 1;
        }
        let reels = ticket.jackpot.reels;
        for (place, reel) in reels.iter().enumerate() {
            self.reels_by_place[place][Reel::ALL.iter().position(|r| r == reel).expect("a reel symbol")] += 1;
        }
        if read_reels(reels) == Ok(ReelsWin::Nothing) {
            let odd = (0..3)
                .filter(|&i| reels[(i + 1) % 3] == reels[(i + 2) % 3] && reels[i] != reels[(i + 1) % 3])
                .collect::<Vec<_>>();
            if let [odd] = odd[..] {
                self.odd_reel[odd] += 1;
            }
        }
        self
    }

    fn merge(mut self, other: Tally) -> Tally {
        fn sum<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        self.throws.iter_mut().zip(&other.throws).for_each(|(a, b)| sum(a, b));
        sum(&mut self.odd_reel, &other.odd_reel);
        sum(&mut self.stack_numbers, &other.stack_numbers);
        sum(&mut self.wheel_numbers, &other.wheel_numbers);
        self.card_values_by_place.iter_mut().zip(&other.card_values_by_place).for_each(|(a, b)| sum(a, b));
        self.reels_by_place.iter_mut().zip(&other.reels_by_place).for_each(|(a, b)| sum(a, b));
        sum(&mut self.winning_stack_place, &other.winning_stack_place);
        self.throw_places.iter_mut().zip(&other.throw_places).for_each(|(a, b)| sum(a, b));
        for (amount, counts) in other.stack_amounts {
            sum(self.stack_amounts.entry(amount).or_default(), &counts);
        }
        self
    }
}

/// Every ticket of the block made from `seed`, tallied.
fn tally_block(design: &Design, seed: &Seed) -> Tally {
    let lots = shuffled_lots(seed);
    lots.par_iter()
        .enumerate()
        .fold(Tally::default, |tally, (index, &code)| {
            tally.add(&compose_ticket(design, seed, index as u32, lot_of(code)).expect("the design prints every lot"))
        })
        .reduce(Tally::default, Tally::merge)
}

/// Upper tail of the chi-square distribution: the chance of a statistic this large with no tell.
fn p_value(statistic: f64, degrees: usize) -> f64 {
    ChiSquared::new(degrees as f64).expect("at least one degree of freedom").sf(statistic)
}

/// Pearson's chi-square of counts against equal shares.
fn uniform(counts: &[u64]) -> f64 {
    let expected = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    p_value(counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum(), counts.len() - 1)
}

/// Pearson's chi-square of independence between a table's rows and columns (columns never seen dropped).
fn independent<const N: usize>(rows: &[[u64; N]]) -> f64 {
    let columns: Vec<usize> = (0..N).filter(|&j| rows.iter().any(|r| r[j] > 0)).collect();
    let total: u64 = rows.iter().flatten().sum();
    let row_sums: Vec<u64> = rows.iter().map(|r| r.iter().sum()).collect();
    let mut statistic = 0.0;
    for &j in &columns {
        let column_sum: u64 = rows.iter().map(|r| r[j]).sum();
        for (row, &row_sum) in rows.iter().zip(&row_sums) {
            let expected = row_sum as f64 * column_sum as f64 / total as f64;
            statistic += (row[j] as f64 - expected).powi(2) / expected;
        }
    }
    p_value(statistic, (rows.len() - 1) * (columns.len() - 1))
}

/// G-test that each pair of different dice is thrown as often in either order (one degree per pair).
// A pair is read at `[a][b]` and at `[b][a]`: indices say that more plainly than iterators would.
#[allow(clippy::needless_range_loop)]
fn orders(throws: &[[u64; 7]; 7]) -> f64 {
    let g = |observed: u64, expected: f64| {
        if observed == 0 { 0.0 } else { 2.0 * observed as f64 * (observed as f64 / expected).ln() }
    };
    let mut statistic = 0.0;
    let mut pairs = 0;
    for a in 1..=6 {
        for b in a + 1..=6 {
            let (ab, ba) = (throws[a][b], throws[b][a]);
            let expected = (ab + ba) as f64 / 2.0;
            statistic += g(ab, expected) + g(ba, expected);
            pairs += 1;
        }
    }
    p_value(statistic, pairs)
}

/// The statistics whose p-value is below [`ALPHA`], and every amount a stack shows too tellingly.
fn tells(tally: &Tally, design: &Design) -> Vec<String> {
    let card_places = tally.card_values_by_place;
    let throw_places = tally.throw_places;
    let decoys: Vec<u64> =
        design.losing.roulette_decoys.iter().map(|a| tally.stack_amounts.get(a).map_or(0, |c| c[0])).collect();
    let statistics = [
        ("throw orders", orders(&tally.throws)),
        ("odd reel of two alike", uniform(&tally.odd_reel)),
        ("stack numbers", uniform(&tally.stack_numbers[1..])),
        ("wheel numbers", uniform(&tally.wheel_numbers[1..])),
        ("card values by place", independent(&card_places)),
        ("reels by place", independent(&tally.reels_by_place)),
        ("winning stack's place", uniform(&tally.winning_stack_place)),
        ("winning throws' places", independent(&throw_places)),
        ("decoy amounts", uniform(&decoys)),
    ];
    let mut found: Vec<String> =
        statistics.iter().filter(|(_, p)| *p < ALPHA).map(|(name, p)| format!("{name} (p = {p:.1e})")).collect();
    for (amount, [decoy, winning]) in &tally.stack_amounts {
        let win_chance = *winning as f64 / (decoy + winning) as f64;
        if win_chance > AMOUNT_BOUND {
            found.push(format!("amount {amount}: a stack showing it wins {:.1} % of the time", win_chance * 100.0));
        }
    }
    found
}

/// The design as shipped before the decoys were completed: 3, 7, 40, 5 000 and 9 000 € were printed
/// only under winning stacks.
fn old_design_text() -> String {
    let new = "roulette_decoys = [3, 5, 7, 10, 20, 30, 40, 50, 100, 200, 500, 1000, 5000, 9000, 10000]";
    assert!(DEFAULT_DESIGN.contains(new), "the shipped decoys changed: update this test");
    DEFAULT_DESIGN.replace(new, "roulette_decoys = [5, 10, 20, 30, 50, 100, 200, 500, 1000, 10000]")
}

use crate::composer::design::DEFAULT_DESIGN_TOML as DEFAULT_DESIGN;

#[test]
fn a_block_of_the_current_composer_shows_no_tell() {
    let design = Design::default_design();
    let tally = tally_block(&design, &[0x5E; 32]);
    assert_eq!(tells(&tally, &design), Vec::<String>::new());
    let worst = tally.stack_amounts.iter().map(|(_, [d, w])| *w as f64 / (d + w) as f64).fold(0.0, f64::max);
    let predicted = design.roulette_amount_odds().iter().map(|o| o.win_chance()).fold(0.0, f64::max);
    println!(
        "the most telling amount under a stack wins {:.2} % of the time (predicted {:.2} %)",
        worst * 100.0,
        predicted * 100.0
    );
    assert!((worst - predicted).abs() < 0.01, "the design's odds of each amount are what a block prints");
}

#[test]
fn the_test_finds_every_tell_of_the_old_composer() {
    let design = Design::from_toml_for(&old_design_text(), Scheme::V1).unwrap();
    let found = tells(&tally_block(&design, &[0x5E; 32]), &design);
    println!("the old composer's tells: {found:#?}");
    for tell in ["throw orders", "odd reel of two alike", "stack numbers", "amount 3,00", "amount 7,00", "amount 40,00"]
    {
        assert!(found.iter().any(|f| f.starts_with(tell)), "{tell} not found in {found:?}");
    }
}

#[test]
fn the_validator_refuses_a_winning_amount_never_printed_as_a_decoy() {
    assert_eq!(Design::from_toml(&old_design_text()).unwrap_err(), crate::composer::DesignError::Tell(Cents::euros(3)));
}
