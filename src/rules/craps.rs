//! Surface 3, « Craps » (art. 4.4): four throws « lancer 1–4 » of two dice, printed « a + b ».
//! A throw wins on its unordered pair; winning throws add up.

use super::InvalidTicket;
use crate::money::Cents;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Two dice as printed, left then right (order is decoration: 6 + 1 pays as 1 + 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Throw(pub u8, pub u8);

/// The paying throws, as unordered pairs (smaller die first).
pub const WINNING_THROWS: [(Throw, u64); 4] =
    [(Throw(1, 6), 5), (Throw(2, 5), 30), (Throw(3, 4), 1_000), (Throw(5, 6), 10_000)];

impl Throw {
    /// Smaller die first, so that 6 + 1 and 1 + 6 compare equal.
    pub fn unordered(self) -> Throw {
        Throw(self.0.min(self.1), self.0.max(self.1))
    }

    pub fn swapped(self) -> Throw {
        Throw(self.1, self.0)
    }

    pub fn win(self) -> Result<Cents, InvalidTicket> {
        for die in [self.0, self.1] {
            if !(1..=6).contains(&die) {
                return Err(InvalidTicket::DieOutOfRange(die));
            }
        }
        let pair = self.unordered();
        Ok(WINNING_THROWS.iter().find(|(t, _)| *t == pair).map_or(Cents::ZERO, |&(_, e)| Cents::euros(e)))
    }

    /// Every unordered pair of dice that pays nothing.
    pub fn losing() -> impl Iterator<Item = Throw> {
        (1..=6u8).flat_map(|a| (a..=6).map(move |b| Throw(a, b))).filter(|t| t.win() == Ok(Cents::ZERO))
    }
}

impl fmt::Display for Throw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.0, self.1)
    }
}

impl FromStr for Throw {
    type Err = String;
    /// Reads « a+b » (spaces allowed), as the regulation prints a throw.
    fn from_str(s: &str) -> Result<Throw, String> {
        let bad = || format!("« {s} » is not a throw of two dice like \"2+5\"");
        let (a, b) = s.split_once('+').ok_or_else(bad)?;
        let die = |d: &str| d.trim().parse::<u8>().ok().filter(|d| (1..=6).contains(d)).ok_or_else(bad);
        Ok(Throw(die(a)?, die(b)?))
    }
}

impl TryFrom<String> for Throw {
    type Error = String;
    fn try_from(s: String) -> Result<Throw, String> {
        s.parse()
    }
}

impl From<Throw> for String {
    fn from(t: Throw) -> String {
        t.to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CrapsZones {
    pub throws: [Throw; 4],
}

impl CrapsZones {
    /// The surface's win and each throw's.
    pub fn evaluate(&self) -> Result<(Cents, [Cents; 4]), InvalidTicket> {
        let mut each = [Cents::ZERO; 4];
        for (win, throw) in each.iter_mut().zip(self.throws) {
            *win = throw.win()?;
        }
        Ok((each.iter().copied().sum(), each))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_dice_pays_as_the_regulation_says() {
        for a in 1..=6u8 {
            for b in 1..=6u8 {
                let expected = match (a.min(b), a.max(b)) {
                    (1, 6) => 5,
                    (2, 5) => 30,
                    (3, 4) => 1_000,
                    (5, 6) => 10_000,
                    _ => 0,
                };
                assert_eq!(Throw(a, b).win(), Ok(Cents::euros(expected)), "{a}+{b}");
            }
        }
        assert_eq!(Throw::losing().count(), 21 - 4);
    }

    #[test]
    fn winning_throws_add_up() {
        let zones = CrapsZones { throws: [Throw(6, 1), Throw(2, 2), Throw(5, 2), Throw(1, 6)] };
        let (total, each) = zones.evaluate().unwrap();
        assert_eq!(total, Cents::euros(40));
        assert_eq!(each, [Cents::euros(5), Cents::ZERO, Cents::euros(30), Cents::euros(5)]);
    }

    #[test]
    fn dice_out_of_range_are_refused() {
        assert_eq!(Throw(0, 3).win(), Err(InvalidTicket::DieOutOfRange(0)));
        assert_eq!(Throw(3, 7).win(), Err(InvalidTicket::DieOutOfRange(7)));
    }

    #[test]
    fn parses_and_prints_a_plus_b() {
        assert_eq!("2+5".parse(), Ok(Throw(2, 5)));
        assert_eq!(" 6 + 1 ".parse(), Ok(Throw(6, 1)));
        assert!("7+1".parse::<Throw>().is_err());
        assert!("2-5".parse::<Throw>().is_err());
        assert_eq!(serde_json::to_string(&Throw(6, 1)).unwrap(), "\"6+1\"");
    }
}
