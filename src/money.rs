//! Money: always integer euro cents, never floats.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::iter::Sum;
use std::ops::Add;

/// An amount of money the game prints or pays, in euro cents (`300` is 3 €).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cents(pub u64);

impl Cents {
    pub const ZERO: Cents = Cents(0);

    pub const fn euros(euros: u64) -> Cents {
        Cents(euros * 100)
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// As printed on a ticket and in the designers' gallery: no cents part when there is none
    /// (« 40 € », « 10 000 € », but « 2,50 € »).
    pub fn short(self) -> String {
        match self.whole_euros() {
            Some(euros) => format!("{}\u{a0}€", group_thousands(euros)),
            None => self.to_string(),
        }
    }

    /// Whole euros, if the amount has no cents part (every amount a ticket prints is whole euros).
    pub const fn whole_euros(self) -> Option<u64> {
        if self.0.is_multiple_of(100) { Some(self.0 / 100) } else { None }
    }
}

/// An amount in euros as an operator types it: `12`, `12.5`, `12,50` (at most two decimals, no sign).
impl std::str::FromStr for Cents {
    type Err = String;

    fn from_str(text: &str) -> Result<Cents, String> {
        let invalid = || format!("{text:?} is not an amount in euros (for example 12 or 12.50)");
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (euros, decimals) = match text.split_once(['.', ',']) {
            Some((euros, decimals)) if digits(decimals) && decimals.len() <= 2 => (euros, decimals),
            Some(_) => return Err(invalid()),
            None => (text, ""),
        };
        if !digits(euros) {
            return Err(invalid());
        }
        let cents_part = format!("{decimals:0<2}").parse::<u64>().map_err(|_| invalid())?;
        let euros = euros.parse::<u64>().map_err(|_| invalid())?;
        euros.checked_mul(100).and_then(|c| c.checked_add(cents_part)).map(Cents).ok_or_else(invalid)
    }
}

impl Add for Cents {
    type Output = Cents;
    fn add(self, other: Cents) -> Cents {
        Cents(self.0 + other.0)
    }
}

impl Sum for Cents {
    fn sum<I: Iterator<Item = Cents>>(iter: I) -> Cents {
        iter.fold(Cents::ZERO, Add::add)
    }
}

/// French format, as a player reads it: `12,00 €`, `40 000,00 €` (narrow no-break space between thousands).
impl fmt::Display for Cents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{:02}\u{a0}€", group_thousands(self.0 / 100), self.0 % 100)
    }
}

/// Signed amounts (ledger rows, balances) in the same French format.
pub fn format_signed_cents(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}", Cents(cents.unsigned_abs()))
}

/// `n` with its thousands grouped by narrow no-break spaces (« 1 500 000 »).
pub fn group_thousands(mut n: u64) -> String {
    let mut groups = Vec::new();
    loop {
        if n < 1000 {
            groups.push(n.to_string());
            break;
        }
        groups.push(format!("{:03}", n % 1000));
        n /= 1000;
    }
    groups.reverse();
    groups.join("\u{202f}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_a_french_player_expects() {
        assert_eq!(Cents(1200).to_string(), "12,00\u{a0}€");
        assert_eq!(Cents(5).to_string(), "0,05\u{a0}€");
        assert_eq!(Cents::euros(40_000).to_string(), "40\u{202f}000,00\u{a0}€");
        assert_eq!(Cents::euros(1_000_000).to_string(), "1\u{202f}000\u{202f}000,00\u{a0}€");
        assert_eq!(format_signed_cents(-300), "-3,00\u{a0}€");
        assert_eq!(Cents::euros(10_000).short(), "10\u{202f}000\u{a0}€");
        assert_eq!(Cents(250).short(), "2,50\u{a0}€");
    }

    #[test]
    fn parses_euros_as_an_operator_types_them() {
        let parsed = |text: &str| text.parse::<Cents>();
        assert_eq!(parsed("12"), Ok(Cents(1200)));
        assert_eq!(parsed("12.5"), Ok(Cents(1250)));
        assert_eq!(parsed("12,05"), Ok(Cents(1205)));
        assert_eq!(parsed("0.01"), Ok(Cents(1)));
        for wrong in ["", "12.", ".5", "12.345", "-3", "+3", "1e3", "12 €", "1.2.3", "99999999999999999999"] {
            assert!(parsed(wrong).is_err(), "{wrong:?} refused");
        }
    }

    #[test]
    fn whole_euros_only_when_no_cents() {
        assert_eq!(Cents(300).whole_euros(), Some(3));
        assert_eq!(Cents(301).whole_euros(), None);
    }
}
