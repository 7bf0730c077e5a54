use super::*;
use crate::composer::design::DEFAULT_DESIGN_TOML;
use crate::rules::prize_table::PRIZE_TABLE;
use crate::rules::{Reel, Throw};

fn shipped(seed: &str) -> Vec<Specimen> {
    gallery(&Design::default_design(), seed)
}

fn ids(specimens: &[Specimen]) -> BTreeSet<&str> {
    specimens.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn every_specimen_reads_back_as_the_win_it_was_composed_for() {
    for seed in ["", "maquette-1", "🎰"] {
        for s in shipped(seed) {
            let read = match s.shows {
                Shows::Surface(surface) => s.ticket.read_surfaces().map(|o| o.surface_win(surface)),
                // A whole ticket must be one a block could sell.
                Shows::Ticket => s.ticket.evaluate().map(|o| o.lot),
            };
            assert_eq!(read, Ok(s.win), "{} with seed {seed:?}", s.id);
        }
    }
}

#[test]
fn ids_are_unique_and_every_outcome_of_every_surface_is_there() {
    let specimens = shipped("s");
    let ids = ids(&specimens);
    assert_eq!(ids.len(), specimens.len(), "unique ids");
    let mut expected: Vec<String> =
        ["poker-losing", "roulette-losing", "roulette-near-miss", "craps-losing", "craps-near-miss"]
            .into_iter()
            .chain(["jackpot-losing", "jackpot-near-miss", "ticket-losing"])
            .map(String::from)
            .collect();
    expected.extend(PokerHand::WINNING.map(|h| format!("poker-{}", serde_name(h))));
    expected.extend(WINNING_THROWS.map(|(t, _)| format!("craps-{}-{}", t.0, t.1)));
    expected.extend(ReelsWin::WINNING.map(|w| format!("jackpot-{}", serde_name(w))));
    // The shipped design's roulette wins and trays, as printed in static/design.toml.
    expected.extend([3, 5, 7, 20, 40, 100, 500, 5000, 9000, 10000].map(|e| format!("roulette-{e}")));
    expected.extend([3, 20, 100, 400, 9000, 10000].map(|e| format!("jackpot-bonus-{e}")));
    for e in &expected {
        assert!(ids.contains(e.as_str()), "{e} is missing");
    }
    let tickets: Vec<&Specimen> = specimens.iter().filter(|s| s.shows == Shows::Ticket).collect();
    assert_eq!(tickets.len(), Design::default_design().patterns().len() + 1, "one ticket a pattern, and a losing one");
    assert_eq!(specimens.len(), expected.len() + tickets.len() - 1);
    for tier in PRIZE_TABLE {
        assert!(tickets.iter().any(|s| s.win == tier.lot), "a ticket for the lot of {}", tier.lot);
    }
    assert!(tickets.iter().any(|s| s.id == "ticket-50-4" && s.title == "Ticket 50 € — quatre surfaces"));
}

#[test]
fn near_misses_look_near_and_losing_surfaces_lose() {
    let design = Design::default_design();
    for seed in 0..50 {
        let specimens = gallery(&design, &seed.to_string());
        let get = |id: &str| &specimens.iter().find(|s| s.id == id).unwrap().ticket;
        let roulette = &get("roulette-near-miss").roulette;
        assert!(
            roulette.stakes.iter().any(|s| matches!(s.number.abs_diff(roulette.wheel), 1 | 35)),
            "a neighbour of the wheel"
        );
        let near_miss = |t: &Throw| design.losing.craps_near_miss.iter().any(|n| [*n, n.swapped()].contains(t));
        assert!(get("craps-near-miss").craps.throws.iter().any(near_miss));
        let reels = get("jackpot-near-miss").jackpot.reels;
        assert!(reels[0] == reels[1] || reels[1] == reels[2] || reels[0] == reels[2], "two reels alike: {reels:?}");
        for id in ["poker-losing", "roulette-losing", "craps-losing", "jackpot-losing"] {
            let outcome = get(id).read_surfaces().unwrap();
            assert_eq!(outcome.lot, Cents::ZERO, "{id}");
        }
        assert!(get("jackpot-losing").jackpot.reels.iter().all(|&r| r != Reel::Cherry));
    }
}

#[test]
fn a_seed_names_one_exact_picture() {
    let (a, b) = (shipped("partage-42"), shipped("partage-42"));
    assert_eq!(a, b);
    let other = shipped("partage-43");
    assert_eq!(ids(&a), ids(&other), "the same specimens");
    let differing = a.iter().zip(&other).filter(|(x, y)| x.ticket != y.ticket).count();
    assert!(differing > a.len() / 2, "another seed draws other tickets ({differing} of {} differ)", a.len());
    // Specimens do not depend on each other: the same id draws the same ticket in another design.
    let mut fewer = DEFAULT_DESIGN_TOML.replace("near_miss_percent = 30", "near_miss_percent = 0");
    fewer = fewer.replace(r#"craps_near_miss = ["5+5", "6+6", "4+4", "3+3", "2+4", "4+6"]"#, "craps_near_miss = []");
    let fewer = gallery(&Design::from_toml(&fewer).unwrap(), "partage-42");
    assert!(!ids(&fewer).contains("craps-near-miss"), "no near-miss throws in that design");
    let poker = |g: &[Specimen]| g.iter().find(|s| s.id == "poker-full").unwrap().ticket.poker.clone();
    assert_eq!(poker(&a), poker(&fewer));
}

#[test]
fn winning_throw_specimens_show_that_throw_once() {
    for s in shipped("x").iter().filter(|s| s.id.starts_with("craps-") && s.win > Cents::ZERO) {
        let winners: Vec<Throw> =
            s.ticket.craps.throws.iter().filter(|t| t.win() != Ok(Cents::ZERO)).map(|t| t.unordered()).collect();
        assert_eq!(winners.len(), 1, "{}", s.id);
        assert_eq!(format!("craps-{}-{}", winners[0].0, winners[0].1), s.id);
    }
}
