//! Surface 2, « Roulette » (art. 4.3): a wheel number and three chip stacks « mise 1–3 », each a number
//! and an amount. The surface wins the amount of the stack whose number is the wheel's.

use super::InvalidTicket;
use crate::money::Cents;
use serde::{Deserialize, Serialize};

pub const NUMBERS: std::ops::RangeInclusive<u8> = 1..=36;

/// The largest amount a stack or tray may print: the largest lot of the prize table.
pub const MAX_PRINTED_AMOUNT: Cents = Cents::euros(40_000);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stake {
    pub number: u8,
    pub amount: Cents,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RouletteZones {
    pub wheel: u8,
    pub stakes: [Stake; 3],
}

impl RouletteZones {
    /// The win, and which stack (0–2) won it.
    pub fn evaluate(&self) -> Result<(Cents, Option<usize>), InvalidTicket> {
        check_number(self.wheel)?;
        for (i, stake) in self.stakes.iter().enumerate() {
            check_number(stake.number)?;
            check_printed_amount(stake.amount, false)?;
            // Distinct stack numbers: two stacks on the wheel's number would be a dispute, never a ticket.
            if self.stakes[..i].iter().any(|other| other.number == stake.number) {
                return Err(InvalidTicket::RepeatedStakeNumber(stake.number));
            }
        }
        Ok(match self.stakes.iter().position(|s| s.number == self.wheel) {
            Some(i) => (self.stakes[i].amount, Some(i)),
            None => (Cents::ZERO, None),
        })
    }
}

fn check_number(n: u8) -> Result<(), InvalidTicket> {
    if NUMBERS.contains(&n) { Ok(()) } else { Err(InvalidTicket::RouletteNumberOutOfRange(n)) }
}

/// Amounts under stacks and in the tray are whole euros up to the largest lot; a stack always shows
/// some amount (0 € only makes sense in the tray, where it means « no bonus »).
pub(super) fn check_printed_amount(amount: Cents, zero_allowed: bool) -> Result<(), InvalidTicket> {
    let whole = amount.whole_euros().is_some();
    if !whole || amount > MAX_PRINTED_AMOUNT || (amount.is_zero() && !zero_allowed) {
        return Err(InvalidTicket::UnprintableAmount(amount));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(wheel: u8, stakes: [(u8, u64); 3]) -> RouletteZones {
        RouletteZones { wheel, stakes: stakes.map(|(number, euros)| Stake { number, amount: Cents::euros(euros) }) }
    }

    #[test]
    fn wins_the_amount_of_the_matching_stack() {
        assert_eq!(zones(17, [(3, 10), (17, 40), (20, 1000)]).evaluate(), Ok((Cents::euros(40), Some(1))));
        assert_eq!(zones(36, [(36, 5), (1, 40), (2, 10)]).evaluate(), Ok((Cents::euros(5), Some(0))));
    }

    #[test]
    fn no_match_loses_whatever_the_amounts() {
        assert_eq!(zones(17, [(16, 10_000), (18, 40), (20, 1000)]).evaluate(), Ok((Cents::ZERO, None)));
    }

    #[test]
    fn refuses_out_of_range_repeated_or_unprintable() {
        assert_eq!(zones(0, [(1, 5), (2, 5), (3, 5)]).evaluate(), Err(InvalidTicket::RouletteNumberOutOfRange(0)));
        assert_eq!(zones(5, [(1, 5), (37, 5), (3, 5)]).evaluate(), Err(InvalidTicket::RouletteNumberOutOfRange(37)));
        assert_eq!(zones(5, [(5, 5), (5, 10), (3, 5)]).evaluate(), Err(InvalidTicket::RepeatedStakeNumber(5)));
        assert_eq!(zones(5, [(1, 5), (2, 0), (3, 5)]).evaluate(), Err(InvalidTicket::UnprintableAmount(Cents::ZERO)));
        assert_eq!(
            zones(5, [(1, 5), (2, 40_001), (3, 5)]).evaluate(),
            Err(InvalidTicket::UnprintableAmount(Cents::euros(40_001)))
        );
        let cents = RouletteZones {
            wheel: 5,
            stakes: [
                Stake { number: 5, amount: Cents(550) },
                Stake { number: 1, amount: Cents(500) },
                Stake { number: 2, amount: Cents(500) },
            ],
        };
        assert_eq!(cents.evaluate(), Err(InvalidTicket::UnprintableAmount(Cents(550))));
    }
}
