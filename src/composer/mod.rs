//! The composer: (lot, seeded randomness) → the symbols of the twelve zones.
//!
//! It follows a validated [`Design`]: a lot picks one of its patterns by weight, each winning surface
//! is printed with exactly its win, and every other surface is printed as a believable losing surface
//! (sometimes a near miss). It is one of two independent paths: the evaluator in [`crate::rules`]
//! reads the lot back off the symbols, and blocks are only made when the two agree on every ticket.
//!
//! Randomness comes only from the generator passed in, and every draw is a `u32` range, so the same
//! seed gives the same ticket on the server (64-bit) and in the browser (wasm32).

pub mod design;

use crate::money::Cents;
use crate::rules::{
    Card, CardValue, CrapsZones, JackpotZones, PokerHand, PokerZones, Reel, ReelsWin, RouletteZones, Stake, Suit,
    Throw, Ticket,
};
pub use design::{Design, DesignError, LosingLook, Pattern};
use rand::Rng;

/// How a block's tickets are composed and committed. Stored with each block, so that a ticket is always
/// reprinted and checked the way its block was made; new blocks are made with [`Scheme::LATEST`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scheme {
    /// Blocks made before December 2026: unsalted leaves, and a composer with tells (near-miss throws
    /// in one order, the odd reel more often third, uneven stack numbers). Kept so that their tickets
    /// still reprint and verify exactly as committed.
    V1 = 1,
    /// Salted leaves (`block::merkle::leaf`); losing surfaces uniform wherever the rules allow.
    V2 = 2,
}

impl Scheme {
    pub const LATEST: Scheme = Scheme::V2;

    pub fn from_number(number: u32) -> Option<Scheme> {
        match number {
            1 => Some(Scheme::V1),
            2 => Some(Scheme::V2),
            _ => None,
        }
    }

    pub fn number(self) -> u32 {
        self as u32
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComposeError {
    #[error("the design has no pattern for a lot of {0}")]
    NoPattern(Cents),
    #[error("the design has no pattern number {0}")]
    NoSuchPattern(usize),
}

/// Fisher–Yates, drawing `u32` indexes so the result is the same on every platform.
/// Blocks shuffle their lots with it, so an auditor can redo the shuffle from this definition.
pub fn fisher_yates<T, R: Rng + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        let j = rng.random_range(0..=i as u32) as usize;
        items.swap(i, j);
    }
}

fn pick<T: Copy, R: Rng + ?Sized>(items: &[T], rng: &mut R) -> T {
    items[rng.random_range(0..items.len() as u32) as usize]
}

/// Prints a ticket for `lot` (0 € prints a losing ticket).
pub fn compose<R: Rng + ?Sized>(design: &Design, lot: Cents, rng: &mut R) -> Result<Ticket, ComposeError> {
    if lot.is_zero() {
        return Ok(compose_losing(design, rng));
    }
    let patterns: Vec<&Pattern> = design.patterns_for(lot).collect();
    let total: u32 = patterns.iter().map(|p| p.weight).sum();
    if total == 0 {
        return Err(ComposeError::NoPattern(lot));
    }
    let mut ticket_weight = rng.random_range(0..total);
    let pattern = patterns
        .iter()
        .find(|p| {
            let hit = ticket_weight < p.weight;
            ticket_weight = ticket_weight.saturating_sub(p.weight);
            hit
        })
        .expect("the draw is below the total weight");
    Ok(compose_pattern(design, pattern, rng))
}

/// A ticket that wins nothing anywhere.
pub fn compose_losing<R: Rng + ?Sized>(design: &Design, rng: &mut R) -> Ticket {
    let nothing = Pattern {
        name: String::new(),
        lot: Cents::ZERO,
        weight: 1,
        poker: None,
        roulette: None,
        craps: Vec::new(),
        reels: None,
        tray: None,
    };
    compose_pattern(design, &nothing, rng)
}

/// Prints exactly the wins of `pattern`; surfaces the pattern leaves out lose.
pub fn compose_pattern<R: Rng + ?Sized>(design: &Design, pattern: &Pattern, rng: &mut R) -> Ticket {
    let look = &design.losing;
    let mut near_miss = |wins: bool| !wins && rng.random_range(0..100u32) < look.near_miss_percent;
    let (roulette_near, craps_near, reels_near) = (
        near_miss(pattern.roulette.is_some()),
        near_miss(!pattern.craps.is_empty()),
        near_miss(pattern.reels.is_some()),
    );
    Ticket {
        poker: poker(pattern.poker.unwrap_or(PokerHand::Nothing), rng),
        roulette: roulette(pattern.roulette, roulette_near, look, design.scheme, rng),
        craps: craps(&pattern.craps, craps_near, look, design.scheme, rng),
        jackpot: JackpotZones {
            reels: reels(pattern.reels.unwrap_or(ReelsWin::Nothing), reels_near, design.scheme, rng),
            tray: pattern.tray.unwrap_or(Cents::ZERO),
        },
    }
}

/// Six cards from one deck whose value counts make exactly `hand`, in random places.
pub fn poker<R: Rng + ?Sized>(hand: PokerHand, rng: &mut R) -> PokerZones {
    let mut values = CardValue::ALL;
    fisher_yates(&mut values, rng);
    let repeated = hand.repeated_counts();
    let singles = 6 - repeated.iter().sum::<usize>();
    let mut cards = Vec::with_capacity(6);
    for (&value, &copies) in values.iter().zip(repeated.iter().chain(std::iter::repeat_n(&1, singles))) {
        let mut suits = Suit::ALL;
        fisher_yates(&mut suits, rng);
        cards.extend(suits[..copies].iter().map(|&suit| Card::new(value, suit)));
    }
    fisher_yates(&mut cards, rng);
    PokerZones { hand: [cards[0], cards[1], cards[2], cards[3], cards[4]], bonus: cards[5] }
}

/// The wheel and three stacks; with a win, one stack (at random) shows the wheel's number and the win.
/// A near miss puts a neighbouring number of the wheel's under one stack. Under [`Scheme::V2`] the
/// numbers go round (36 beside 1) and a stack may show any number but the wheel's, so that every number
/// is printed under a stack equally often.
pub fn roulette<R: Rng + ?Sized>(
    win: Option<Cents>,
    near_miss: bool,
    look: &LosingLook,
    scheme: Scheme,
    rng: &mut R,
) -> RouletteZones {
    let wheel = rng.random_range(1..=36u8);
    let (neighbour, reserved) = match scheme {
        Scheme::V1 => (if wheel == 36 || (wheel > 1 && rng.random_bool(0.5)) { wheel - 1 } else { wheel + 1 }, true),
        Scheme::V2 => (if rng.random_bool(0.5) { wheel % 36 + 1 } else { (wheel + 34) % 36 + 1 }, false),
    };
    let mut others: Vec<u8> = (1..=36).filter(|&n| n != wheel && !(reserved && n == neighbour)).collect();
    fisher_yates(&mut others, rng);
    let mut stakes = [0, 1, 2].map(|i| Stake { number: others[i], amount: pick(&look.roulette_decoys, rng) });
    let special = rng.random_range(0..3u32) as usize;
    if let Some(amount) = win {
        stakes[special] = Stake { number: wheel, amount };
    } else if near_miss && stakes.iter().all(|s| s.number != neighbour) {
        stakes[special].number = neighbour;
    }
    RouletteZones { wheel, stakes }
}

/// Four throws: the winning ones, one near miss if asked, and losing rolls of two fair dice. Each
/// printed throw is as likely in either order (near misses too under [`Scheme::V2`]).
pub fn craps<R: Rng + ?Sized>(
    wins: &[Throw],
    near_miss: bool,
    look: &LosingLook,
    scheme: Scheme,
    rng: &mut R,
) -> CrapsZones {
    let either_order = |t: Throw, rng: &mut R| if rng.random_bool(0.5) { t.swapped() } else { t };
    let mut throws: Vec<Throw> = wins.iter().map(|&t| either_order(t, rng)).collect();
    if near_miss && throws.len() < 4 {
        let throw = pick(&look.craps_near_miss, rng);
        throws.push(if scheme >= Scheme::V2 { either_order(throw, rng) } else { throw });
    }
    while throws.len() < 4 {
        let roll = Throw(rng.random_range(1..=6u8), rng.random_range(1..=6u8));
        if roll.win() == Ok(Cents::ZERO) {
            throws.push(roll);
        }
    }
    fisher_yates(&mut throws, rng);
    CrapsZones { throws: [throws[0], throws[1], throws[2], throws[3]] }
}

const NOT_CHERRY: [Reel; 4] = [Reel::Seven, Reel::Crown, Reel::Bar, Reel::Star];

/// Three reels reading exactly `win`. Losing reels show no cherry and never three alike; a near miss
/// shows two alike. Under [`Scheme::V2`] three alike are drawn again whole, so that when two are
/// alike the odd one is on any reel equally often.
pub fn reels<R: Rng + ?Sized>(win: ReelsWin, near_miss: bool, scheme: Scheme, rng: &mut R) -> [Reel; 3] {
    if let Some(symbol) = win.triple() {
        return [symbol; 3];
    }
    let mut reels = [pick(&NOT_CHERRY, rng), pick(&NOT_CHERRY, rng), pick(&NOT_CHERRY, rng)];
    match win {
        ReelsWin::OneCherry => reels[rng.random_range(0..3u32) as usize] = Reel::Cherry,
        _ if near_miss => {
            let [pair, odd] = distinct_two(rng);
            reels = [pair, pair, odd];
            fisher_yates(&mut reels, rng);
        }
        _ => {
            while reels[0] == reels[1] && reels[1] == reels[2] {
                match scheme {
                    Scheme::V1 => reels[2] = pick(&NOT_CHERRY, rng),
                    Scheme::V2 => reels = [pick(&NOT_CHERRY, rng), pick(&NOT_CHERRY, rng), pick(&NOT_CHERRY, rng)],
                }
            }
        }
    }
    reels
}

fn distinct_two<R: Rng + ?Sized>(rng: &mut R) -> [Reel; 2] {
    let mut symbols = NOT_CHERRY;
    fisher_yates(&mut symbols, rng);
    [symbols[0], symbols[1]]
}

// Property tests use proptest, a native dev-dependency (the wasm build runs only `tests/web.rs`).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
