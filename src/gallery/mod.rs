//! The designers' gallery: every outcome a ticket can show, composed from a design file and a seed, so
//! that the preview page (`/#/preview`) can draw them all before a block goes on sale.
//!
//! Two kinds of [`Specimen`]:
//! - one surface showing one outcome: each poker hand, each roulette and tray amount the design prints,
//!   each winning craps throw, each reel win, and each surface losing plainly and as a near miss;
//! - whole tickets: one per pattern of the design (so every lot of the prize table, as the design
//!   prints it) and one losing ticket.
//!
//! Every specimen is composed by the shared composer from ChaCha20 keyed by SHA-256(seed, id): a seed
//! and an id name one exact picture that a designer can share. Each specimen also carries the win it
//! was composed for; the tests read every one back with the evaluator.

use crate::composer::{self, Design};
use crate::money::Cents;
use crate::rules::craps::WINNING_THROWS;
use crate::rules::{PokerHand, ReelsWin, Surface, Ticket, serde_name};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What a specimen shows of its ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shows {
    /// One surface; the other three are composed too (a ticket is always whole) but not drawn.
    Surface(Surface),
    /// The whole ticket.
    Ticket,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specimen {
    /// Stable for a given design: the preview's links and the screenshot baselines use it.
    pub id: String,
    /// What a designer reads above it, in French.
    pub title: String,
    pub shows: Shows,
    pub ticket: Ticket,
    /// What the shown part pays by construction: the surface's win, or the ticket's lot.
    pub win: Cents,
}

/// The ChaCha20 generator of one specimen.
pub fn specimen_rng(seed: &str, id: &str) -> ChaCha20Rng {
    let mut hash = Sha256::new();
    hash.update(seed.as_bytes());
    hash.update([0]);
    hash.update(id.as_bytes());
    ChaCha20Rng::from_seed(hash.finalize().into())
}

fn euros(amount: Cents) -> u64 {
    amount.0 / 100
}

/// Collects specimens, each composed from its own generator.
struct Gallery<'a> {
    design: &'a Design,
    seed: &'a str,
    specimens: Vec<Specimen>,
}

impl Gallery<'_> {
    /// A specimen of one surface: a losing ticket whose `surface` is then printed by `print`.
    fn surface(
        &mut self,
        surface: Surface,
        id: String,
        title: String,
        win: Cents,
        print: impl FnOnce(&mut Ticket, &mut ChaCha20Rng),
    ) {
        let mut rng = specimen_rng(self.seed, &id);
        let mut ticket = composer::compose_losing(self.design, &mut rng);
        print(&mut ticket, &mut rng);
        self.specimens.push(Specimen { id, title, shows: Shows::Surface(surface), ticket, win });
    }

    /// A losing specimen of one surface, plain or drawn as a near miss.
    fn losing(&mut self, surface: Surface, near_miss: bool, print: impl FnOnce(&mut Ticket, &mut ChaCha20Rng)) {
        let (slug, name) = (serde_name(surface), surface.name_fr());
        let (id, title) = if near_miss {
            (format!("{slug}-near-miss"), format!("{name} — perdant de peu"))
        } else {
            (format!("{slug}-losing"), format!("{name} — perdant"))
        };
        self.surface(surface, id, title, Cents::ZERO, print);
    }
}

/// Amounts the design prints under a winning roulette stack, or in the tray, smallest first.
fn printed_amounts(design: &Design, amount: impl Fn(&composer::Pattern) -> Option<Cents>) -> BTreeSet<Cents> {
    design.patterns().iter().filter_map(amount).collect()
}

/// Every specimen of `design`, surfaces first (in the ticket's order), then whole tickets.
pub fn gallery(design: &Design, seed: &str) -> Vec<Specimen> {
    let (look, scheme) = (&design.losing, design.scheme);
    let mut g = Gallery { design, seed, specimens: Vec::new() };

    // Poker has no near miss: six distinct values out of eight is as near as a losing hand gets.
    g.losing(Surface::Poker, false, |t, rng| t.poker = composer::poker(PokerHand::Nothing, rng));
    for hand in PokerHand::WINNING {
        let title = format!("Poker — {} ({})", hand.name_fr(), hand.win().short());
        g.surface(Surface::Poker, format!("poker-{}", serde_name(hand)), title, hand.win(), |t, rng| {
            t.poker = composer::poker(hand, rng)
        });
    }

    for amount in printed_amounts(design, |p| p.roulette) {
        let (id, title) =
            (format!("roulette-{}", euros(amount)), format!("Roulette — mise gagnante de {}", amount.short()));
        g.surface(Surface::Roulette, id, title, amount, |t, rng| {
            t.roulette = composer::roulette(Some(amount), false, look, scheme, rng)
        });
    }
    for near_miss in [false, true] {
        g.losing(Surface::Roulette, near_miss, |t, rng| {
            t.roulette = composer::roulette(None, near_miss, look, scheme, rng)
        });
    }

    for (throw, win) in WINNING_THROWS {
        let (id, title) = (
            format!("craps-{}-{}", throw.0, throw.1),
            format!("Craps — {} + {} ({})", throw.0, throw.1, Cents::euros(win).short()),
        );
        g.surface(Surface::Craps, id, title, Cents::euros(win), |t, rng| {
            t.craps = composer::craps(&[throw], false, look, scheme, rng)
        });
    }
    // A design without near-miss throws has only the plain losing surface to show.
    for near_miss in [false, true].into_iter().filter(|&n| !n || !look.craps_near_miss.is_empty()) {
        g.losing(Surface::Craps, near_miss, |t, rng| t.craps = composer::craps(&[], near_miss, look, scheme, rng));
    }

    for reels in ReelsWin::WINNING {
        let (id, title) = (
            format!("jackpot-{}", serde_name(reels)),
            format!("Jackpot — {} ({})", reels.name_fr(), reels.win().short()),
        );
        g.surface(Surface::Jackpot, id, title, reels.win(), |t, rng| {
            t.jackpot.reels = composer::reels(reels, false, scheme, rng)
        });
    }
    for amount in printed_amounts(design, |p| p.tray) {
        let (id, title) =
            (format!("jackpot-bonus-{}", euros(amount)), format!("Jackpot — bonus de {}", amount.short()));
        g.surface(Surface::Jackpot, id, title, amount, |t, _| t.jackpot.tray = amount);
    }
    for near_miss in [false, true] {
        g.losing(Surface::Jackpot, near_miss, |t, rng| {
            t.jackpot.reels = composer::reels(ReelsWin::Nothing, near_miss, scheme, rng)
        });
    }

    let mut rank_in_lot = std::collections::BTreeMap::<Cents, usize>::new();
    for pattern in design.patterns() {
        let rank = rank_in_lot.entry(pattern.lot).or_default();
        *rank += 1;
        let id = format!("ticket-{}-{rank}", euros(pattern.lot));
        let ticket = composer::compose_pattern(design, pattern, &mut specimen_rng(seed, &id));
        g.specimens.push(Specimen {
            id,
            title: format!("Ticket {}", pattern.name),
            shows: Shows::Ticket,
            ticket,
            win: pattern.lot,
        });
    }
    let id = "ticket-losing".to_owned();
    let ticket = composer::compose_losing(design, &mut specimen_rng(seed, &id));
    g.specimens.push(Specimen { id, title: "Ticket perdant".into(), shows: Shows::Ticket, ticket, win: Cents::ZERO });
    g.specimens
}

#[cfg(test)]
mod tests;
