//! A game in progress, as plain Rust shared by the web app and its tests (no browser needed).
//!
//! [`Game`] holds a verified ticket and what has been uncovered; its transitions enforce « Jouez »
//! (choose the first surface, uncover it, then the others in any order) and « Auto » (everything is
//! uncovered by the system). [`scratch`] is the coverage model of one scratch zone.

pub mod scratch;

use crate::money::Cents;
use crate::rules::{Outcome, Surface, Ticket, Zone};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The player chooses the first surface and scratches every zone.
    Jouez,
    /// The system uncovers every zone.
    Auto,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Jouez => "jouez",
            Mode::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        [Mode::Jouez, Mode::Auto].into_iter().find(|m| m.as_str() == s)
    }
}

/// « Jouez »: once a first surface is chosen, `zone` may be uncovered if it is on that surface or that
/// surface is entirely uncovered. The browser and the server both apply this one rule.
pub fn jouez_allows(first: Surface, is_revealed: impl Fn(Zone) -> bool, zone: Zone) -> bool {
    zone.surface() == first || first.zones().all(is_revealed)
}

/// Why the server refuses to record an uncovered zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevealError {
    #[error("zone {0} does not exist (zones are 0 to 11)")]
    NoSuchZone(usize),
    #[error("uncover all of {} (the surface chosen first) before the others", .0.name_fr())]
    FirstSurfaceUnfinished(Surface),
}

/// Adds `zones` to what is uncovered (`revealed`, zone indices in the order uncovered), enforcing
/// « Jouez »: the first zone uncovered chooses the first surface, uncovered entirely before any other.
/// Zones already uncovered are ignored, so a client may resend everything it has uncovered.
pub fn apply_reveal(mode: Mode, revealed: &mut Vec<usize>, zones: &[usize]) -> Result<(), RevealError> {
    for &index in zones {
        let zone = Zone::from_index(index).ok_or(RevealError::NoSuchZone(index))?;
        if revealed.contains(&index) {
            continue;
        }
        let first = revealed.first().and_then(|&f| Zone::from_index(f)).map(Zone::surface);
        if let Some(first) = first.filter(|_| mode == Mode::Jouez)
            && !jouez_allows(first, |z| revealed.contains(&z.index()), zone)
        {
            return Err(RevealError::FirstSurfaceUnfinished(first));
        }
        revealed.push(index);
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    pub ticket_id: String,
    pub serial: String,
    pub mode: Mode,
    pub ticket: Ticket,
    pub outcome: Outcome,
    /// Uncovered zones, in order.
    pub revealed: Vec<Zone>,
    /// The surface chosen to start with (« Jouez »), before or after its first zone is uncovered.
    pub chosen: Option<Surface>,
    /// The server has settled the game as finished.
    pub completed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Choose(Surface),
    Reveal(Zone),
    /// The server confirmed the end of the game.
    Completed,
}

impl Game {
    pub fn first_surface(&self) -> Option<Surface> {
        self.chosen.or_else(|| self.revealed.first().map(|z| z.surface()))
    }

    /// « Jouez » with nothing uncovered and no surface chosen: the player must choose first.
    pub fn needs_choice(&self) -> bool {
        self.mode == Mode::Jouez && self.first_surface().is_none()
    }

    pub fn is_revealed(&self, zone: Zone) -> bool {
        self.revealed.contains(&zone)
    }

    pub fn surface_done(&self, surface: Surface) -> bool {
        surface.zones().all(|z| self.is_revealed(z))
    }

    pub fn all_revealed(&self) -> bool {
        Zone::ALL.iter().all(|&z| self.is_revealed(z))
    }

    /// Whether the player may scratch `zone` now.
    pub fn can_scratch(&self, zone: Zone) -> bool {
        if self.is_revealed(zone) || self.mode == Mode::Auto {
            return false;
        }
        self.first_surface().is_some_and(|first| jouez_allows(first, |z| self.is_revealed(z), zone))
    }

    /// The surface a one-surface view shows (a phone): the one being uncovered, while it has zones left;
    /// then the first the player may scratch; at the end, the one that won the most (the last one
    /// uncovered if none won). So « Auto » keeps the zone it uncovers in view, « Jouez » starts on the
    /// chosen surface, and a ticket ends on its win rather than on a loss beside it.
    pub fn surface_in_play(&self) -> Surface {
        if self.all_revealed()
            && let Some(best) = Surface::ALL
                .into_iter()
                .filter(|&s| !self.outcome.surface_win(s).is_zero())
                .max_by_key(|&s| self.outcome.surface_win(s))
        {
            return best;
        }
        let last = self.revealed.last().map(|z| z.surface()).or(self.chosen);
        let unfinished = |s: &Surface| !self.surface_done(*s);
        last.filter(unfinished)
            .or_else(|| Surface::ALL.into_iter().find(|s| s.zones().any(|z| self.can_scratch(z))))
            .or(last)
            .unwrap_or(Surface::Poker)
    }

    /// The win a surface shows once all its zones are uncovered.
    pub fn shown_win(&self, surface: Surface) -> Option<Cents> {
        self.surface_done(surface).then(|| self.outcome.surface_win(surface))
    }

    /// Applies an action; one the rules do not allow leaves the game unchanged and says so.
    pub fn apply(&mut self, action: Action) -> bool {
        match action {
            Action::Choose(surface) if self.needs_choice() => self.chosen = Some(surface),
            Action::Reveal(zone) if self.can_scratch(zone) || (self.mode == Mode::Auto && !self.is_revealed(zone)) => {
                self.revealed.push(zone)
            }
            Action::Completed if self.all_revealed() => self.completed = true,
            _ => return false,
        }
        true
    }

    /// The next zone « Auto » uncovers: surface after surface, in the ticket's order.
    pub fn next_auto_zone(&self) -> Option<Zone> {
        Zone::ALL.into_iter().find(|&z| !self.is_revealed(z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composer::{Design, compose};
    use rand::SeedableRng;

    fn game(mode: Mode) -> Game {
        let ticket =
            compose(&Design::default_design(), Cents::euros(50), &mut rand_chacha::ChaCha20Rng::seed_from_u64(3))
                .unwrap();
        let outcome = ticket.evaluate().unwrap();
        Game {
            ticket_id: "t".into(),
            serial: "E1-B1-0000001".into(),
            mode,
            ticket,
            outcome,
            revealed: vec![],
            chosen: None,
            completed: false,
        }
    }

    #[test]
    fn jouez_asks_for_a_surface_then_keeps_to_it_until_done() {
        let mut g = game(Mode::Jouez);
        assert!(g.needs_choice());
        assert!(!g.can_scratch(Zone::CrapsThrow1), "nothing before the choice");
        assert!(!g.apply(Action::Reveal(Zone::CrapsThrow1)));
        assert!(g.apply(Action::Choose(Surface::Craps)));
        assert!(!g.apply(Action::Choose(Surface::Poker)), "the choice is made once");
        assert!(g.can_scratch(Zone::CrapsThrow3));
        assert!(!g.can_scratch(Zone::PokerHand));
        for z in Surface::Craps.zones() {
            assert!(g.apply(Action::Reveal(z)));
        }
        assert_eq!(g.shown_win(Surface::Craps), Some(g.outcome.surface_win(Surface::Craps)));
        assert_eq!(g.shown_win(Surface::Poker), None);
        assert!(g.can_scratch(Zone::PokerHand) && g.can_scratch(Zone::JackpotTray), "then any order");
        assert!(!g.apply(Action::Completed), "not before every zone");
        for z in Zone::ALL {
            g.apply(Action::Reveal(z));
        }
        assert!(g.all_revealed());
        assert!(g.apply(Action::Completed));
    }

    #[test]
    fn the_server_rule_keeps_jouez_order_and_ignores_repeats() {
        let mut revealed = Vec::new();
        apply_reveal(Mode::Jouez, &mut revealed, &[6, 7]).unwrap();
        assert_eq!(
            apply_reveal(Mode::Jouez, &mut revealed, &[2]),
            Err(RevealError::FirstSurfaceUnfinished(Surface::Craps))
        );
        assert_eq!(revealed, [6, 7]);
        apply_reveal(Mode::Jouez, &mut revealed, &[8, 9, 7, 2]).unwrap();
        assert_eq!(revealed, [6, 7, 8, 9, 2]);
        assert_eq!(apply_reveal(Mode::Jouez, &mut revealed, &[12]), Err(RevealError::NoSuchZone(12)));
        let mut auto = Vec::new();
        apply_reveal(Mode::Auto, &mut auto, &[11, 0, 5]).unwrap();
        assert_eq!(auto, [11, 0, 5], "« Auto » has no order to keep");
    }

    #[test]
    fn a_resumed_game_keeps_its_first_surface() {
        let mut g = game(Mode::Jouez);
        g.revealed = vec![Zone::JackpotReels];
        assert_eq!(g.first_surface(), Some(Surface::Jackpot));
        assert!(!g.needs_choice());
        assert!(g.can_scratch(Zone::JackpotTray));
        assert!(!g.can_scratch(Zone::PokerBonus));
    }

    #[test]
    fn auto_uncovers_every_zone_in_order_and_the_player_scratches_nothing() {
        let mut g = game(Mode::Auto);
        assert!(!g.needs_choice());
        assert!(!g.can_scratch(Zone::PokerHand));
        let mut order = Vec::new();
        while let Some(z) = g.next_auto_zone() {
            assert!(g.apply(Action::Reveal(z)));
            order.push(z);
        }
        assert_eq!(order, Zone::ALL);
        assert!(g.apply(Action::Completed));
    }

    #[test]
    fn a_one_surface_view_follows_the_play() {
        let mut auto = game(Mode::Auto);
        assert_eq!(auto.surface_in_play(), Surface::Poker);
        while let Some(z) = auto.next_auto_zone() {
            auto.apply(Action::Reveal(z));
            // Once all is uncovered the view turns to the win: `a_one_surface_view_ends_on_the_win`.
            if !auto.all_revealed() {
                assert_eq!(auto.surface_in_play(), z.surface(), "« Auto » keeps the zone it uncovers in view");
            }
        }
        let mut jouez = game(Mode::Jouez);
        jouez.apply(Action::Choose(Surface::Craps));
        assert_eq!(jouez.surface_in_play(), Surface::Craps, "the chosen surface first");
        jouez.apply(Action::Reveal(Zone::CrapsThrow2));
        assert_eq!(jouez.surface_in_play(), Surface::Craps);
        for z in Surface::Craps.zones() {
            jouez.apply(Action::Reveal(z));
        }
        assert_eq!(jouez.surface_in_play(), Surface::Poker, "then the first surface left to scratch");
        jouez.apply(Action::Reveal(Zone::JackpotTray));
        assert_eq!(jouez.surface_in_play(), Surface::Jackpot, "the one the player turned to");
    }

    #[test]
    fn a_one_surface_view_ends_on_the_win() {
        let design = Design::default_design();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        // A win on one surface that « Auto » does not uncover last.
        let (ticket, outcome, winner) = std::iter::repeat_with(|| compose(&design, Cents::euros(3), &mut rng).unwrap())
            .find_map(|ticket| {
                let outcome = ticket.evaluate().unwrap();
                let winner = Surface::ALL.into_iter().find(|&s| !outcome.surface_win(s).is_zero())?;
                (winner != Surface::Jackpot).then_some((ticket, outcome, winner))
            })
            .unwrap();
        let mut won = Game { ticket, outcome, ..game(Mode::Auto) };
        while let Some(z) = won.next_auto_zone() {
            won.apply(Action::Reveal(z));
        }
        assert_eq!(won.surface_in_play(), winner, "the winning surface, not the last one uncovered (Jackpot)");

        let ticket = compose(&design, Cents::ZERO, &mut rng).unwrap();
        let mut lost = Game { outcome: ticket.evaluate().unwrap(), ticket, ..game(Mode::Auto) };
        while let Some(z) = lost.next_auto_zone() {
            lost.apply(Action::Reveal(z));
        }
        assert_eq!(lost.surface_in_play(), Surface::Jackpot, "nothing won: the last one uncovered");
    }
}
