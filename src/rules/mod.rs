//! The rules of Vegas as data and pure functions: the four surfaces, their twelve hidden zones, and the
//! evaluator that reads a ticket's lot off its symbols alone.
//!
//! The evaluator never trusts whoever printed the symbols (the composer, the server, a payload): it
//! refuses any ticket the regulation does not define, with a typed reason ([`InvalidTicket`]), because
//! players and QA read that reason.

pub mod craps;
pub mod jackpot;
pub mod poker;
pub mod prize_table;
pub mod roulette;

use crate::money::Cents;
use serde::{Deserialize, Serialize};

pub use craps::{CrapsZones, Throw};
pub use jackpot::{JackpotZones, Reel, ReelsWin};
pub use poker::{Card, CardValue, PokerHand, PokerZones, Suit};
pub use roulette::{RouletteZones, Stake};

/// The name serde gives a unit variant (`"poker"`, `"craps-throw2"`, `"two-pairs"`): one spelling for
/// the JSON, the app's test ids and the designers' specimen ids.
pub fn serde_name(value: impl Serialize) -> String {
    let json = crate::json::to_string(&value).unwrap_or_default();
    json.strip_prefix('"').and_then(|name| name.strip_suffix('"')).unwrap_or_default().to_owned()
}

/// The four independent surfaces, in the ticket's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    Poker,
    Roulette,
    Craps,
    Jackpot,
}

impl Surface {
    pub const ALL: [Surface; 4] = [Surface::Poker, Surface::Roulette, Surface::Craps, Surface::Jackpot];

    pub fn name_fr(self) -> &'static str {
        ["Poker", "Roulette", "Craps", "Jackpot"][self as usize]
    }

    pub fn zones(self) -> impl Iterator<Item = Zone> {
        Zone::ALL.into_iter().filter(move |z| z.surface() == self)
    }
}

/// The twelve hidden zones (2 + 4 + 4 + 2). Their index (0–11) is how the server records reveals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Zone {
    PokerHand,
    PokerBonus,
    RouletteWheel,
    RouletteStake1,
    RouletteStake2,
    RouletteStake3,
    CrapsThrow1,
    CrapsThrow2,
    CrapsThrow3,
    CrapsThrow4,
    JackpotReels,
    JackpotTray,
}

impl Zone {
    pub const ALL: [Zone; 12] = [
        Zone::PokerHand,
        Zone::PokerBonus,
        Zone::RouletteWheel,
        Zone::RouletteStake1,
        Zone::RouletteStake2,
        Zone::RouletteStake3,
        Zone::CrapsThrow1,
        Zone::CrapsThrow2,
        Zone::CrapsThrow3,
        Zone::CrapsThrow4,
        Zone::JackpotReels,
        Zone::JackpotTray,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_index(i: usize) -> Option<Zone> {
        Zone::ALL.get(i).copied()
    }

    pub fn surface(self) -> Surface {
        match self.index() {
            0..=1 => Surface::Poker,
            2..=5 => Surface::Roulette,
            6..=9 => Surface::Craps,
            _ => Surface::Jackpot,
        }
    }

    /// The label printed over the zone, as in the regulation.
    pub fn label_fr(self) -> &'static str {
        match self {
            Zone::PokerHand | Zone::RouletteWheel | Zone::JackpotReels => "grattez ici",
            Zone::PokerBonus => "carte bonus",
            Zone::RouletteStake1 => "mise 1",
            Zone::RouletteStake2 => "mise 2",
            Zone::RouletteStake3 => "mise 3",
            Zone::CrapsThrow1 => "lancer 1",
            Zone::CrapsThrow2 => "lancer 2",
            Zone::CrapsThrow3 => "lancer 3",
            Zone::CrapsThrow4 => "lancer 4",
            Zone::JackpotTray => "bonus",
        }
    }
}

/// The symbols under all twelve zones of one ticket.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ticket {
    pub poker: PokerZones,
    pub roulette: RouletteZones,
    pub craps: CrapsZones,
    pub jackpot: JackpotZones,
}

impl Ticket {
    /// What zone `z` hides, in French words: what a screen reader says of it, and what staff read.
    pub fn zone_fr(&self, z: Zone) -> String {
        let card = |c: Card| format!("{} de {}", c.value.name_fr(), c.suit.name_fr());
        let throw = |i: usize| format!("{} + {}", self.craps.throws[i].0, self.craps.throws[i].1);
        let stake =
            |i: usize| format!("numéro {}, {}", self.roulette.stakes[i].number, self.roulette.stakes[i].amount.short());
        match z {
            Zone::PokerHand => self.poker.hand.iter().map(|&c| card(c)).collect::<Vec<_>>().join(", "),
            Zone::PokerBonus => card(self.poker.bonus),
            Zone::RouletteWheel => format!("numéro {}", self.roulette.wheel),
            Zone::RouletteStake1 => stake(0),
            Zone::RouletteStake2 => stake(1),
            Zone::RouletteStake3 => stake(2),
            Zone::CrapsThrow1 => throw(0),
            Zone::CrapsThrow2 => throw(1),
            Zone::CrapsThrow3 => throw(2),
            Zone::CrapsThrow4 => throw(3),
            Zone::JackpotReels => self.jackpot.reels.iter().map(|r| r.name_fr()).collect::<Vec<_>>().join(", "),
            Zone::JackpotTray => self.jackpot.tray.short(),
        }
    }
}

/// What a valid ticket pays, surface by surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub poker: PokerHand,
    /// The winning stack (0–2), if any.
    pub roulette_stake: Option<usize>,
    pub craps_throws: [Cents; 4],
    pub reels: ReelsWin,
    pub tray: Cents,
    /// Each surface's win, in [`Surface::ALL`] order.
    pub surface_wins: [Cents; 4],
    /// The ticket's lot: one indivisible prize, the sum of the surfaces' wins (art. 4.6).
    pub lot: Cents,
}

impl Outcome {
    pub fn surface_win(&self, surface: Surface) -> Cents {
        self.surface_wins[surface as usize]
    }

    pub fn winning_surfaces(&self) -> usize {
        self.surface_wins.iter().filter(|w| !w.is_zero()).count()
    }
}

/// Why a set of symbols is not a ticket of the regulation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum InvalidTicket {
    #[error("the card {0:?} appears twice")]
    DuplicateCard(Card),
    #[error("the poker cards form a hand the regulation does not define (value counts {0:?})")]
    UndefinedPokerHand(Vec<usize>),
    #[error("roulette number {0} is not between 1 and 36")]
    RouletteNumberOutOfRange(u8),
    #[error("two roulette stacks show the number {0}")]
    RepeatedStakeNumber(u8),
    #[error("amount {0} cannot be printed (whole euros, 1 € to 40 000 € on a stack, 0 € to 40 000 € in the tray)")]
    UnprintableAmount(Cents),
    #[error("die {0} is not between 1 and 6")]
    DieOutOfRange(u8),
    #[error("exactly two cherries on the reels is not in the regulation")]
    TwoCherries,
    #[error("a lot of {0} is not in the prize table")]
    LotNotInPrizeTable(Cents),
    #[error("a lot of {0} must be won on at least two surfaces")]
    SingleSurfaceLot(Cents),
}

impl Ticket {
    /// Reads the lot off the symbols alone, and checks the ticket could be in a block: its lot is in
    /// the prize table (or 0 €) and obeys the multi-surface rule.
    pub fn evaluate(&self) -> Result<Outcome, InvalidTicket> {
        let outcome = self.read_surfaces()?;
        let lot = outcome.lot;
        if !lot.is_zero() {
            let tier = prize_table::tier_of(lot).ok_or(InvalidTicket::LotNotInPrizeTable(lot))?;
            if tier.multi_surface && outcome.winning_surfaces() < 2 {
                return Err(InvalidTicket::SingleSurfaceLot(lot));
            }
        }
        Ok(outcome)
    }

    /// Reads each surface by the regulation, without asking whether the sum is a lot of the prize
    /// table: the designers' gallery shows single surfaces (a lone brelan, 100 €) that no block sells.
    pub fn read_surfaces(&self) -> Result<Outcome, InvalidTicket> {
        let poker = self.poker.evaluate()?;
        let (roulette_win, roulette_stake) = self.roulette.evaluate()?;
        let (craps_win, craps_throws) = self.craps.evaluate()?;
        let (jackpot_win, reels, tray) = self.jackpot.evaluate()?;
        let surface_wins = [poker.win(), roulette_win, craps_win, jackpot_win];
        let lot: Cents = surface_wins.iter().copied().sum();
        Ok(Outcome { poker, roulette_stake, craps_throws, reels, tray, surface_wins, lot })
    }

    /// A fixed, compact byte encoding of the twelve zones, hashed into the block's commitment.
    pub fn canonical_bytes(&self, out: &mut Vec<u8>) {
        for card in self.poker.cards() {
            out.push(card.value as u8 * 4 + card.suit as u8);
        }
        out.push(self.roulette.wheel);
        for stake in &self.roulette.stakes {
            out.push(stake.number);
            out.extend_from_slice(&stake.amount.0.to_be_bytes());
        }
        for throw in &self.craps.throws {
            out.extend_from_slice(&[throw.0, throw.1]);
        }
        out.extend(self.jackpot.reels.iter().map(|&r| r as u8));
        out.extend_from_slice(&self.jackpot.tray.0.to_be_bytes());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A losing ticket to vary from.
    pub(crate) fn losing_ticket() -> Ticket {
        use CardValue::*;
        let c = |v, s| Card::new(v, s);
        Ticket {
            poker: PokerZones {
                hand: [
                    c(Seven, Suit::Spades),
                    c(Eight, Suit::Hearts),
                    c(Nine, Suit::Clubs),
                    c(Ten, Suit::Diamonds),
                    c(Jack, Suit::Spades),
                ],
                bonus: c(Ace, Suit::Hearts),
            },
            roulette: RouletteZones {
                wheel: 17,
                stakes: [
                    Stake { number: 3, amount: Cents::euros(40) },
                    Stake { number: 16, amount: Cents::euros(1_000) },
                    Stake { number: 30, amount: Cents::euros(5) },
                ],
            },
            craps: CrapsZones { throws: [Throw(1, 1), Throw(2, 6), Throw(4, 4), Throw(5, 5)] },
            jackpot: JackpotZones { reels: [Reel::Seven, Reel::Seven, Reel::Bar], tray: Cents::ZERO },
        }
    }

    #[test]
    fn a_losing_ticket_pays_nothing() {
        let o = losing_ticket().evaluate().unwrap();
        assert_eq!(o.lot, Cents::ZERO);
        assert_eq!(o.winning_surfaces(), 0);
    }

    #[test]
    fn wins_of_all_surfaces_add_up_to_one_lot() {
        let mut t = losing_ticket();
        t.poker.bonus = Card::new(CardValue::Seven, Suit::Hearts); // pair: 5 €
        t.roulette.stakes[0].number = 17; // the 40 € stack
        t.craps.throws[0] = Throw(6, 1); // 5 €
        let o = t.evaluate().unwrap();
        assert_eq!(o.surface_wins, [Cents::euros(5), Cents::euros(40), Cents::euros(5), Cents::ZERO]);
        assert_eq!(o.lot, Cents::euros(50));
        assert_eq!(o.roulette_stake, Some(0));
    }

    #[test]
    fn the_multi_surface_rule_is_enforced_on_the_lot() {
        let mut t = losing_ticket();
        t.jackpot.reels = [Reel::Cherry; 3]; // 10 € on one surface only
        assert_eq!(t.evaluate(), Err(InvalidTicket::SingleSurfaceLot(Cents::euros(10))));
        t.jackpot.reels = [Reel::Crown; 3]; // 1 000 € may be won on one surface
        assert_eq!(t.evaluate().unwrap().lot, Cents::euros(1_000));
        t.jackpot.reels = [Reel::Seven; 3]; // 10 000 € may not
        assert_eq!(t.evaluate(), Err(InvalidTicket::SingleSurfaceLot(Cents::euros(10_000))));
    }

    #[test]
    fn a_lot_outside_the_table_is_refused() {
        let mut t = losing_ticket();
        t.jackpot.tray = Cents::euros(7);
        assert_eq!(t.evaluate(), Err(InvalidTicket::LotNotInPrizeTable(Cents::euros(7))));
    }

    #[test]
    fn zones_belong_to_their_surfaces() {
        let counts: Vec<usize> = Surface::ALL.iter().map(|s| s.zones().count()).collect();
        assert_eq!(counts, [2, 4, 4, 2]);
        for (i, z) in Zone::ALL.iter().enumerate() {
            assert_eq!(z.index(), i);
            assert_eq!(Zone::from_index(i), Some(*z));
        }
        assert_eq!(Zone::from_index(12), None);
    }
}
