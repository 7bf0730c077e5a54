//! Surface 1, « Poker » (art. 4.2): five cards and one « carte bonus », read together by value.

use super::InvalidTicket;
use crate::money::Cents;
use serde::{Deserialize, Serialize};

/// Card values, lowest first, spelt as on the ticket (V valet, D dame, R roi, A as).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CardValue {
    #[serde(rename = "7")]
    Seven,
    #[serde(rename = "8")]
    Eight,
    #[serde(rename = "9")]
    Nine,
    #[serde(rename = "10")]
    Ten,
    #[serde(rename = "V")]
    Jack,
    #[serde(rename = "D")]
    Queen,
    #[serde(rename = "R")]
    King,
    #[serde(rename = "A")]
    Ace,
}

impl CardValue {
    pub const ALL: [CardValue; 8] = [
        CardValue::Seven,
        CardValue::Eight,
        CardValue::Nine,
        CardValue::Ten,
        CardValue::Jack,
        CardValue::Queen,
        CardValue::King,
        CardValue::Ace,
    ];

    /// The symbol printed on the card.
    pub fn symbol(self) -> &'static str {
        ["7", "8", "9", "10", "V", "D", "R", "A"][self as usize]
    }

    /// The French name, for screen readers.
    pub fn name_fr(self) -> &'static str {
        ["sept", "huit", "neuf", "dix", "valet", "dame", "roi", "as"][self as usize]
    }
}

/// Suits are decoration (only values count) but make the six cards a real draw from one 32-card deck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suit {
    Spades,
    Hearts,
    Diamonds,
    Clubs,
}

impl Suit {
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];

    pub fn symbol(self) -> &'static str {
        ["♠", "♥", "♦", "♣"][self as usize]
    }

    pub fn name_fr(self) -> &'static str {
        ["pique", "cœur", "carreau", "trèfle"][self as usize]
    }

    pub fn is_red(self) -> bool {
        matches!(self, Suit::Hearts | Suit::Diamonds)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Card {
    pub value: CardValue,
    pub suit: Suit,
}

impl Card {
    pub const fn new(value: CardValue, suit: Suit) -> Card {
        Card { value, suit }
    }
}

/// The two zones: « grattez ici » over five cards, and the bonus card.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PokerZones {
    pub hand: [Card; 5],
    pub bonus: Card,
}

/// The hands the regulation names. Anything else a six-card draw can make (three pairs, two brelans,
/// carré + pair) is not in the regulation and is refused as an invalid ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PokerHand {
    /// All six values distinct.
    Nothing,
    Pair,
    TwoPairs,
    Brelan,
    Full,
    Carre,
}

impl PokerHand {
    pub const WINNING: [PokerHand; 5] =
        [PokerHand::Pair, PokerHand::TwoPairs, PokerHand::Brelan, PokerHand::Full, PokerHand::Carre];

    pub fn win(self) -> Cents {
        Cents::euros(match self {
            PokerHand::Nothing => 0,
            PokerHand::Pair => 5,
            PokerHand::TwoPairs => 10,
            PokerHand::Brelan => 100,
            PokerHand::Full => 1_000,
            PokerHand::Carre => 10_000,
        })
    }

    /// How many cards of each repeated value the hand has, largest first (`[3, 2]` for a full).
    pub fn repeated_counts(self) -> &'static [usize] {
        match self {
            PokerHand::Nothing => &[],
            PokerHand::Pair => &[2],
            PokerHand::TwoPairs => &[2, 2],
            PokerHand::Brelan => &[3],
            PokerHand::Full => &[3, 2],
            PokerHand::Carre => &[4],
        }
    }

    pub fn name_fr(self) -> &'static str {
        match self {
            PokerHand::Nothing => "rien",
            PokerHand::Pair => "une paire",
            PokerHand::TwoPairs => "deux paires",
            PokerHand::Brelan => "un brelan",
            PokerHand::Full => "un full",
            PokerHand::Carre => "un carré",
        }
    }
}

impl PokerZones {
    pub fn cards(&self) -> impl Iterator<Item = Card> + '_ {
        self.hand.iter().copied().chain(std::iter::once(self.bonus))
    }

    pub fn evaluate(&self) -> Result<PokerHand, InvalidTicket> {
        let cards: Vec<Card> = self.cards().collect();
        for (i, card) in cards.iter().enumerate() {
            if cards[..i].contains(card) {
                return Err(InvalidTicket::DuplicateCard(*card));
            }
        }
        let mut counts = [0usize; 8];
        for card in &cards {
            counts[card.value as usize] += 1;
        }
        // The counts of repeated values, largest first: read off by size (six cards at most), which
        // spares the browser's download a sort routine.
        let repeated: Vec<usize> =
            (2..=cards.len()).rev().flat_map(|n| counts.iter().copied().filter(move |&c| c == n)).collect();
        PokerHand::WINNING
            .into_iter()
            .chain([PokerHand::Nothing])
            .find(|hand| hand.repeated_counts() == repeated.as_slice())
            .ok_or(InvalidTicket::UndefinedPokerHand(repeated))
    }
}

#[cfg(test)]
mod tests {
    use super::CardValue::*;
    use super::Suit::*;
    use super::*;

    fn zones(cards: [(CardValue, Suit); 6]) -> PokerZones {
        let c: Vec<Card> = cards.iter().map(|&(v, s)| Card::new(v, s)).collect();
        PokerZones { hand: [c[0], c[1], c[2], c[3], c[4]], bonus: c[5] }
    }

    #[test]
    fn every_named_hand_pays_its_amount() {
        let cases = [
            (
                [(Seven, Spades), (Eight, Hearts), (Nine, Spades), (Ten, Clubs), (Jack, Spades), (Ace, Hearts)],
                PokerHand::Nothing,
                0,
            ),
            (
                [(Seven, Spades), (Seven, Hearts), (Nine, Spades), (Ten, Clubs), (Jack, Spades), (Ace, Hearts)],
                PokerHand::Pair,
                5,
            ),
            (
                [(Seven, Spades), (Eight, Hearts), (Nine, Spades), (Ten, Clubs), (Jack, Spades), (Seven, Hearts)],
                PokerHand::Pair,
                5,
            ),
            (
                [(Seven, Spades), (Seven, Hearts), (Nine, Spades), (Nine, Clubs), (Jack, Spades), (Ace, Hearts)],
                PokerHand::TwoPairs,
                10,
            ),
            (
                [(King, Spades), (King, Hearts), (King, Diamonds), (Ten, Clubs), (Jack, Spades), (Ace, Hearts)],
                PokerHand::Brelan,
                100,
            ),
            (
                [(King, Spades), (King, Hearts), (Ace, Diamonds), (Ten, Clubs), (Ace, Spades), (King, Clubs)],
                PokerHand::Full,
                1_000,
            ),
            (
                [(Queen, Spades), (Queen, Hearts), (Queen, Diamonds), (Ten, Clubs), (Jack, Spades), (Queen, Clubs)],
                PokerHand::Carre,
                10_000,
            ),
        ];
        for (cards, hand, euros) in cases {
            let got = zones(cards).evaluate().unwrap();
            assert_eq!(got, hand, "{cards:?}");
            assert_eq!(got.win(), Cents::euros(euros));
        }
    }

    #[test]
    fn hands_outside_the_regulation_are_refused() {
        let three_pairs =
            [(Seven, Spades), (Seven, Hearts), (Nine, Spades), (Nine, Clubs), (Ace, Spades), (Ace, Hearts)];
        let two_brelans =
            [(Seven, Spades), (Seven, Hearts), (Seven, Clubs), (Nine, Clubs), (Nine, Spades), (Nine, Hearts)];
        let carre_pair =
            [(Seven, Spades), (Seven, Hearts), (Seven, Clubs), (Seven, Diamonds), (Nine, Spades), (Nine, Hearts)];
        assert_eq!(zones(three_pairs).evaluate(), Err(InvalidTicket::UndefinedPokerHand(vec![2, 2, 2])));
        assert_eq!(zones(two_brelans).evaluate(), Err(InvalidTicket::UndefinedPokerHand(vec![3, 3])));
        assert_eq!(zones(carre_pair).evaluate(), Err(InvalidTicket::UndefinedPokerHand(vec![4, 2])));
    }

    #[test]
    fn a_card_cannot_appear_twice() {
        let cards = [(Seven, Spades), (Eight, Hearts), (Nine, Spades), (Ten, Clubs), (Jack, Spades), (Seven, Spades)];
        assert_eq!(zones(cards).evaluate(), Err(InvalidTicket::DuplicateCard(Card::new(Seven, Spades))));
    }

    #[test]
    fn symbols_and_serde_names_match_the_ticket() {
        for v in CardValue::ALL {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.symbol()));
        }
    }
}
