//! The design file: which wins make up each lot, with what weight, and how losing surfaces look.
//!
//! Designers edit `static/design.toml`; a file is only used once it has been validated, so a mistake
//! in it is refused at load with a message naming the pattern, never printed on a ticket.

use super::compose_pattern;
use crate::composer::Scheme;
use crate::money::Cents;
use crate::rules::prize_table::{self, BLOCK_SIZE, PRIZE_TABLE};
use crate::rules::roulette::MAX_PRINTED_AMOUNT;
use crate::rules::{PokerHand, ReelsWin, Surface, Throw};
use rand::SeedableRng;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// The design shipped with the game.
pub const DEFAULT_DESIGN_TOML: &str = include_str!("../../static/design.toml");

/// The file's format version this build reads.
pub const DESIGN_VERSION: u32 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignFile {
    version: u32,
    losing: LosingFile,
    pattern: Vec<PatternFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LosingFile {
    roulette_decoys: Vec<u64>,
    near_miss_percent: u32,
    craps_near_miss: Vec<Throw>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternFile {
    name: String,
    lot: u64,
    weight: u32,
    poker: Option<PokerHand>,
    roulette: Option<u64>,
    #[serde(default)]
    craps: Vec<Throw>,
    reels: Option<ReelsWin>,
    tray: Option<u64>,
}

/// How losing surfaces are drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LosingLook {
    /// Amounts shown under roulette stacks that do not match the wheel.
    pub roulette_decoys: Vec<Cents>,
    /// Share of losing roulette, craps and jackpot surfaces drawn as a near miss (a neighbouring
    /// number, a throw one pip from a win, two equal reels). Poker has no near miss: six distinct
    /// values out of eight is already as near as a losing hand gets.
    pub near_miss_percent: u32,
    /// Losing throws shown on a craps near miss.
    pub craps_near_miss: Vec<Throw>,
}

/// One way of printing a lot: the wins of each surface, which add up to the lot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub name: String,
    pub lot: Cents,
    pub weight: u32,
    pub poker: Option<PokerHand>,
    pub roulette: Option<Cents>,
    pub craps: Vec<Throw>,
    pub reels: Option<ReelsWin>,
    pub tray: Option<Cents>,
}

impl Pattern {
    /// What each surface wins under this pattern, in [`Surface::ALL`] order.
    pub fn surface_wins(&self) -> [Cents; 4] {
        let craps = self.craps.iter().map(|t| t.win().unwrap_or(Cents::ZERO)).sum();
        let jackpot = self.reels.map_or(Cents::ZERO, ReelsWin::win) + self.tray.unwrap_or(Cents::ZERO);
        [self.poker.map_or(Cents::ZERO, PokerHand::win), self.roulette.unwrap_or(Cents::ZERO), craps, jackpot]
    }

    pub fn winning_surfaces(&self) -> Vec<Surface> {
        Surface::ALL.into_iter().zip(self.surface_wins()).filter(|(_, w)| !w.is_zero()).map(|(s, _)| s).collect()
    }
}

/// A validated design: every pattern is printable and sums to its lot, every lot of the table has one.
#[derive(Debug, Clone)]
pub struct Design {
    pub losing: LosingLook,
    patterns: Vec<Pattern>,
    by_lot: BTreeMap<Cents, Vec<usize>>,
    /// SHA-256 of the file's text: a block records the design it was composed with.
    pub hash: [u8; 32],
    /// How tickets are composed from it: the scheme of the block being printed.
    pub scheme: Scheme,
}

/// One amount that can be printed under a roulette stack, and how often, over a whole block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AmountOdds {
    pub amount: Cents,
    /// Expected stacks per block showing the amount and matching the wheel.
    pub winning: f64,
    /// Expected stacks per block showing it as a decoy.
    pub decoy: f64,
}

impl AmountOdds {
    /// The chance that a stack showing this amount wins: what the amount alone tells a player who
    /// scratches the stacks before the wheel.
    pub fn win_chance(&self) -> f64 {
        self.winning / (self.winning + self.decoy)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignError {
    #[error("the design file is not valid TOML for this format: {0}")]
    Syntax(String),
    #[error("design format version {0} is not supported (this build reads version {DESIGN_VERSION})")]
    Version(u32),
    #[error("pattern « {pattern} »: {problem}")]
    Pattern { pattern: String, problem: String },
    #[error("no pattern prints the lot of {0}")]
    MissingLot(Cents),
    #[error("[losing]: {0}")]
    Losing(String),
    #[error(
        "a roulette win of {0} is never printed as a decoy: a stack showing it would tell its win before the wheel is \
            scratched (add it to [losing] roulette_decoys)"
    )]
    Tell(Cents),
}

fn euros_in(euros: u64, what: &str, min: Cents) -> Result<Cents, String> {
    let amount = Cents::euros(euros);
    if amount < min || amount > MAX_PRINTED_AMOUNT {
        return Err(format!("{what} of {euros} € cannot be printed ({} to {MAX_PRINTED_AMOUNT})", min));
    }
    Ok(amount)
}

impl PatternFile {
    fn validate(self) -> Result<Pattern, String> {
        if self.weight == 0 {
            return Err("weight must be at least 1".into());
        }
        let lot = Cents::euros(self.lot);
        let tier = prize_table::tier_of(lot).ok_or_else(|| format!("lot {lot} is not in the prize table"))?;
        if self.poker == Some(PokerHand::Nothing) || self.reels == Some(ReelsWin::Nothing) {
            return Err("\"nothing\" is not a win: leave the surface out instead".into());
        }
        if self.craps.len() > 4 {
            return Err(format!("craps has 4 throws, the pattern asks for {}", self.craps.len()));
        }
        if let Some(t) = self.craps.iter().find(|t| t.win() == Ok(Cents::ZERO)) {
            return Err(format!("craps throw {t} does not win anything"));
        }
        let pattern = Pattern {
            roulette: self.roulette.map(|e| euros_in(e, "a roulette win", Cents::euros(1))).transpose()?,
            tray: self.tray.map(|e| euros_in(e, "a bonus tray", Cents::euros(1))).transpose()?,
            name: self.name,
            lot,
            weight: self.weight,
            poker: self.poker,
            craps: self.craps,
            reels: self.reels,
        };
        let sum: Cents = pattern.surface_wins().into_iter().sum();
        if sum != lot {
            return Err(format!("its wins add up to {sum}, not to its lot of {lot}"));
        }
        let surfaces = pattern.winning_surfaces().len();
        if tier.multi_surface && surfaces < 2 {
            return Err(format!("a lot of {lot} must be won on at least two surfaces (art. 3), it uses {surfaces}"));
        }
        Ok(pattern)
    }
}

impl LosingFile {
    fn validate(self) -> Result<LosingLook, String> {
        if self.roulette_decoys.is_empty() {
            return Err("roulette_decoys needs at least one amount".into());
        }
        let roulette_decoys = self
            .roulette_decoys
            .iter()
            .map(|&e| euros_in(e, "a roulette decoy", Cents::euros(1)))
            .collect::<Result<_, _>>()?;
        if self.near_miss_percent > 100 {
            return Err(format!("near_miss_percent is {}, at most 100", self.near_miss_percent));
        }
        if let Some(t) = self.craps_near_miss.iter().find(|t| t.win() != Ok(Cents::ZERO)) {
            return Err(format!("craps near miss {t} is a winning throw"));
        }
        if self.near_miss_percent > 0 && self.craps_near_miss.is_empty() {
            return Err("craps_near_miss needs at least one throw when near misses are drawn".into());
        }
        Ok(LosingLook {
            roulette_decoys,
            near_miss_percent: self.near_miss_percent,
            craps_near_miss: self.craps_near_miss,
        })
    }
}

impl Design {
    /// Parses and validates a design file for new blocks.
    pub fn from_toml(text: &str) -> Result<Design, DesignError> {
        Design::from_toml_for(text, Scheme::LATEST)
    }

    /// Parses and validates a design file to print the tickets of a block made with `scheme`. A design
    /// stored with an older block is held to the rules of its time, so its tickets still reprint.
    pub fn from_toml_for(text: &str, scheme: Scheme) -> Result<Design, DesignError> {
        let file: DesignFile = toml::from_str(text).map_err(|e| DesignError::Syntax(e.message().to_owned()))?;
        if file.version != DESIGN_VERSION {
            return Err(DesignError::Version(file.version));
        }
        let losing = file.losing.validate().map_err(DesignError::Losing)?;
        let mut names = BTreeSet::new();
        let mut patterns = Vec::with_capacity(file.pattern.len());
        for spec in file.pattern {
            let name = spec.name.clone();
            let problem = |problem: String| DesignError::Pattern { pattern: name.clone(), problem };
            if name.trim().is_empty() {
                return Err(problem("every pattern needs a name".into()));
            }
            if !names.insert(name.clone()) {
                return Err(problem("another pattern has the same name".into()));
            }
            patterns.push(spec.validate().map_err(problem)?);
        }
        let mut by_lot: BTreeMap<Cents, Vec<usize>> = BTreeMap::new();
        for (i, p) in patterns.iter().enumerate() {
            by_lot.entry(p.lot).or_default().push(i);
        }
        if let Some(missing) = PRIZE_TABLE.iter().find(|t| !by_lot.contains_key(&t.lot)) {
            return Err(DesignError::MissingLot(missing.lot));
        }
        let design = Design { losing, patterns, by_lot, hash: Sha256::digest(text.as_bytes()).into(), scheme };
        if scheme >= Scheme::V2
            && let Some(tell) = design.roulette_amount_odds().iter().find(|odds| odds.decoy == 0.0)
        {
            return Err(DesignError::Tell(tell.amount));
        }
        design.check_printable()?;
        Ok(design)
    }

    /// The design shipped in `static/design.toml` (checked by the test suite, so this cannot fail in a
    /// build that passed its tests).
    pub fn default_design() -> Design {
        Design::from_toml(DEFAULT_DESIGN_TOML).expect("static/design.toml is validated by the tests")
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    pub fn patterns_for(&self, lot: Cents) -> impl Iterator<Item = &Pattern> {
        self.by_lot.get(&lot).into_iter().flatten().map(|&i| &self.patterns[i])
    }

    /// Every amount that can be printed under a roulette stack, with how often it wins and how often it
    /// is a decoy over a block: the prize table's counts, shared among each lot's patterns by weight,
    /// and decoys drawn evenly from `roulette_decoys` on every other stack.
    pub fn roulette_amount_odds(&self) -> Vec<AmountOdds> {
        let mut winning: BTreeMap<Cents, f64> = self.losing.roulette_decoys.iter().map(|&a| (a, 0.0)).collect();
        for tier in &PRIZE_TABLE {
            let patterns: Vec<&Pattern> = self.patterns_for(tier.lot).collect();
            let total: u32 = patterns.iter().map(|p| p.weight).sum();
            for pattern in patterns {
                if let Some(amount) = pattern.roulette {
                    *winning.entry(amount).or_default() +=
                        f64::from(tier.count) * f64::from(pattern.weight) / f64::from(total);
                }
            }
        }
        let decoy_stacks = 3.0 * f64::from(BLOCK_SIZE) - winning.values().sum::<f64>();
        let decoys = self.losing.roulette_decoys.len() as f64;
        winning
            .into_iter()
            .map(|(amount, winning)| {
                let listed = self.losing.roulette_decoys.iter().filter(|&&d| d == amount).count() as f64;
                let decoy = decoy_stacks * listed / decoys;
                AmountOdds { amount, winning, decoy }
            })
            .collect()
    }

    /// Belt and braces: print each pattern a few times and read it back with the evaluator, so that
    /// a pattern the composer cannot print unambiguously is refused here rather than in a block.
    fn check_printable(&self) -> Result<(), DesignError> {
        let mut rng = rand_chacha::ChaCha20Rng::from_seed([7; 32]);
        for pattern in &self.patterns {
            for _ in 0..16 {
                let ticket = compose_pattern(self, pattern, &mut rng);
                let read = ticket.evaluate().map(|o| o.lot);
                if read != Ok(pattern.lot) {
                    return Err(DesignError::Pattern {
                        pattern: pattern.name.clone(),
                        problem: format!("printed as {ticket:?}, it reads {read:?}"),
                    });
                }
            }
        }
        Ok(())
    }
}
