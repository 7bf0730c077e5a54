//! Surface 4, « Jackpot » (art. 4.5): three reels and the « bonus » coin tray; their wins add up.

use super::InvalidTicket;
use super::roulette::check_printed_amount;
use crate::money::Cents;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reel {
    Seven,
    Crown,
    Bar,
    Cherry,
    Star,
}

impl Reel {
    pub const ALL: [Reel; 5] = [Reel::Seven, Reel::Crown, Reel::Bar, Reel::Cherry, Reel::Star];

    pub fn name_fr(self) -> &'static str {
        match self {
            Reel::Seven => "7",
            Reel::Crown => "couronne",
            Reel::Bar => "BAR",
            Reel::Cherry => "cerise",
            Reel::Star => "étoile",
        }
    }
}

/// What the three reels show, in the regulation's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReelsWin {
    Nothing,
    /// Exactly one cherry, whatever the other two reels.
    OneCherry,
    ThreeStars,
    ThreeCherries,
    ThreeBars,
    ThreeCrowns,
    ThreeSevens,
}

impl ReelsWin {
    pub const WINNING: [ReelsWin; 6] = [
        ReelsWin::OneCherry,
        ReelsWin::ThreeStars,
        ReelsWin::ThreeCherries,
        ReelsWin::ThreeBars,
        ReelsWin::ThreeCrowns,
        ReelsWin::ThreeSevens,
    ];

    pub fn win(self) -> Cents {
        Cents::euros(match self {
            ReelsWin::Nothing => 0,
            ReelsWin::OneCherry => 3,
            ReelsWin::ThreeStars => 5,
            ReelsWin::ThreeCherries => 10,
            ReelsWin::ThreeBars => 200,
            ReelsWin::ThreeCrowns => 1_000,
            ReelsWin::ThreeSevens => 10_000,
        })
    }

    /// The symbol all three reels show, for the three-of-a-kind wins.
    pub fn triple(self) -> Option<Reel> {
        match self {
            ReelsWin::ThreeStars => Some(Reel::Star),
            ReelsWin::ThreeCherries => Some(Reel::Cherry),
            ReelsWin::ThreeBars => Some(Reel::Bar),
            ReelsWin::ThreeCrowns => Some(Reel::Crown),
            ReelsWin::ThreeSevens => Some(Reel::Seven),
            ReelsWin::Nothing | ReelsWin::OneCherry => None,
        }
    }

    pub fn name_fr(self) -> &'static str {
        match self {
            ReelsWin::Nothing => "rien",
            ReelsWin::OneCherry => "une cerise",
            ReelsWin::ThreeStars => "trois étoiles",
            ReelsWin::ThreeCherries => "trois cerises",
            ReelsWin::ThreeBars => "trois BAR",
            ReelsWin::ThreeCrowns => "trois couronnes",
            ReelsWin::ThreeSevens => "trois 7",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JackpotZones {
    pub reels: [Reel; 3],
    /// The « bonus » tray; 0 € means no bonus.
    pub tray: Cents,
}

pub fn read_reels(reels: [Reel; 3]) -> Result<ReelsWin, InvalidTicket> {
    let cherries = reels.iter().filter(|&&r| r == Reel::Cherry).count();
    Ok(match cherries {
        1 => ReelsWin::OneCherry,
        // Two cherries is not in the regulation: a player would claim the one-cherry win, or more.
        2 => return Err(InvalidTicket::TwoCherries),
        _ => ReelsWin::WINNING
            .into_iter()
            .find(|w| w.triple().is_some_and(|r| reels == [r; 3]))
            .unwrap_or(ReelsWin::Nothing),
    })
}

impl JackpotZones {
    /// The surface's win, what the reels read, and the tray's win.
    pub fn evaluate(&self) -> Result<(Cents, ReelsWin, Cents), InvalidTicket> {
        let reels = read_reels(self.reels)?;
        check_printed_amount(self.tray, true)?;
        Ok((reels.win() + self.tray, reels, self.tray))
    }
}

#[cfg(test)]
mod tests {
    use super::Reel::*;
    use super::*;

    #[test]
    fn every_combination_of_three_reels_reads_as_the_regulation_says() {
        let mut seen = std::collections::HashMap::new();
        for a in Reel::ALL {
            for b in Reel::ALL {
                for c in Reel::ALL {
                    let reels = [a, b, c];
                    let cherries = reels.iter().filter(|&&r| r == Cherry).count();
                    let expected = match (cherries, a == b && b == c) {
                        (1, _) => Ok(ReelsWin::OneCherry),
                        (2, _) => Err(InvalidTicket::TwoCherries),
                        (3, _) => Ok(ReelsWin::ThreeCherries),
                        (0, true) => Ok(match a {
                            Seven => ReelsWin::ThreeSevens,
                            Crown => ReelsWin::ThreeCrowns,
                            Bar => ReelsWin::ThreeBars,
                            Star => ReelsWin::ThreeStars,
                            Cherry => unreachable!(),
                        }),
                        _ => Ok(ReelsWin::Nothing),
                    };
                    let got = read_reels(reels);
                    assert_eq!(got, expected, "{reels:?}");
                    *seen.entry(got).or_insert(0) += 1;
                }
            }
        }
        // 125 combinations: 48 with one cherry, 12 with two, 1 of each triple, 60 losing.
        assert_eq!(seen[&Ok(ReelsWin::OneCherry)], 48);
        assert_eq!(seen[&Err(InvalidTicket::TwoCherries)], 12);
        assert_eq!(seen[&Ok(ReelsWin::Nothing)], 60);
    }

    #[test]
    fn amounts_match_the_regulation() {
        let euros: Vec<u64> = ReelsWin::WINNING.iter().map(|w| w.win().0 / 100).collect();
        assert_eq!(euros, [3, 5, 10, 200, 1_000, 10_000]);
    }

    #[test]
    fn reels_and_tray_add_up() {
        let z = JackpotZones { reels: [Bar, Cherry, Seven], tray: Cents::euros(20) };
        assert_eq!(z.evaluate(), Ok((Cents::euros(23), ReelsWin::OneCherry, Cents::euros(20))));
        let z = JackpotZones { reels: [Bar, Star, Seven], tray: Cents::ZERO };
        assert_eq!(z.evaluate(), Ok((Cents::ZERO, ReelsWin::Nothing, Cents::ZERO)));
        let z = JackpotZones { reels: [Bar, Star, Seven], tray: Cents(150) };
        assert_eq!(z.evaluate(), Err(InvalidTicket::UnprintableAmount(Cents(150))));
    }
}
