//! What the game keeps in the browser's local storage, so that neither a lost network nor a reload
//! loses a scratched zone or a purchase: the zones uncovered that the server has not acknowledged yet,
//! and the purchase sent but not answered. The app writes them from one effect ([`keep`]).

use crate::play::{Action, Game, Mode};
use crate::rules::Zone;
use serde::{Deserialize, Serialize};

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn now_seconds() -> usize {
    (js_sys::Date::now() / 1000.0) as usize
}

const SIGNED_OUT: &str = "vegas.signed-out";

/// Remembers, across the reload that follows, that the player has just signed out.
pub fn note_signed_out() {
    if let Some(session) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
        let _ = session.set_item(SIGNED_OUT, "1");
    }
}

/// What the page says on its first render: that the player signed out, once, after its reload.
pub fn first_message() -> String {
    let session = web_sys::window().and_then(|w| w.session_storage().ok().flatten());
    match session.filter(|s| s.get_item(SIGNED_OUT).ok().flatten().is_some()) {
        Some(session) => {
            let _ = session.remove_item(SIGNED_OUT);
            "Vous êtes déconnecté.".into()
        }
        None => String::new(),
    }
}

/// Keeps what the game has that the server may not: the surface chosen and the zones uncovered on the
/// game in play (until [`LocalReveals::forget`] once the server has them), and the purchase in flight
/// (or none).
pub fn keep(played: Option<&Game>, purchase: Option<&PendingPurchase>) {
    if let Some(game) = played.filter(|g| !g.completed && (g.chosen.is_some() || !g.revealed.is_empty())) {
        LocalReveals::keep(game);
    }
    match purchase {
        Some(purchase) => purchase.store(),
        None => PendingPurchase::forget(),
    }
}

/// The zones a player uncovered, kept until the server has them all.
pub struct LocalReveals;

impl LocalReveals {
    fn key(ticket_id: &str) -> String {
        format!("vegas.reveals.{ticket_id}")
    }

    /// Kept as the chosen surface (by its first zone's index, or nothing), the zones' indices in order,
    /// and when each was uncovered (seconds since 1970 by this browser's clock), comma-separated
    /// (« 6;6,7,0;1765000000,1765000004,1765000011 »): a surface chosen and nothing scratched yet
    /// survives too, and zones sent late are recorded when they were uncovered.
    fn keep(game: &Game) {
        let chosen = game.chosen.and_then(|s| s.zones().next()).map(|z| z.index().to_string()).unwrap_or_default();
        let zones: Vec<String> = game.revealed.iter().map(|z| z.index().to_string()).collect();
        let (_, _, mut times) = Self::kept(&game.ticket_id);
        times.resize(game.revealed.len(), now_seconds());
        let times: Vec<String> = times.iter().map(usize::to_string).collect();
        if let Some(storage) = storage() {
            let _ = storage
                .set_item(&Self::key(&game.ticket_id), &format!("{chosen};{};{}", zones.join(","), times.join(",")));
        }
    }

    /// The surface chosen, the zones uncovered, and when.
    fn kept(ticket_id: &str) -> (Option<Zone>, Vec<Zone>, Vec<usize>) {
        let text = storage().and_then(|s| s.get_item(&Self::key(ticket_id)).ok().flatten()).unwrap_or_default();
        let mut parts = text.split(';');
        let mut numbers =
            move || parts.next().unwrap_or_default().split(',').filter_map(|n| n.parse().ok()).collect::<Vec<usize>>();
        let (chosen, zones, times) = (numbers(), numbers(), numbers());
        (
            chosen.first().and_then(|&i| Zone::from_index(i)),
            zones.into_iter().filter_map(Zone::from_index).collect(),
            times,
        )
    }

    /// How long ago each of the ticket's first `zones` was uncovered, in seconds, as the server takes
    /// them; none if this browser does not know them all.
    pub fn seconds_ago(ticket_id: &str, zones: usize) -> Vec<usize> {
        let (_, _, times) = Self::kept(ticket_id);
        let now = now_seconds();
        // More may have been uncovered since the request was made: its zones are the first ones.
        if times.len() >= zones { times[..zones].iter().map(|&t| now.saturating_sub(t)).collect() } else { Vec::new() }
    }

    /// The server has the ticket's first `recorded` zones: all kept are forgotten, unless more were
    /// uncovered while they were on their way (those stay kept, with their times).
    pub fn recorded(ticket_id: &str, recorded: usize) {
        if Self::kept(ticket_id).1.len() <= recorded {
            Self::forget(ticket_id);
        }
    }

    /// The ticket has ended: nothing of it is kept.
    pub fn forget(ticket_id: &str) {
        if let Some(storage) = storage() {
            let _ = storage.remove_item(&Self::key(ticket_id));
        }
    }

    /// The game as the server left it, with the zones uncovered here since (before a reload, or while
    /// the network was down) uncovered again, in their order.
    pub fn replay(mut game: Game) -> Game {
        let (chosen, zones, _) = Self::kept(&game.ticket_id);
        if let Some(first) = chosen.filter(|_| game.needs_choice()) {
            game.apply(Action::Choose(first.surface()));
        }
        for zone in zones {
            if game.needs_choice() {
                game.apply(Action::Choose(zone.surface()));
            }
            game.apply(Action::Reveal(zone));
        }
        game
    }
}

/// The strokes on a zone's foil, kept until the zone is uncovered so that a reload paints a
/// half-scratched foil as the player left it: the two ends of each segment, in thousandths of the
/// zone's width and height (below a pixel), comma-separated.
pub struct KeptStrokes(String);

impl KeptStrokes {
    /// A zone of the ticket `ticket_id`; none for a ticket that is not a player's (a preview's).
    pub fn of(ticket_id: &str, zone: Zone) -> Option<KeptStrokes> {
        (!ticket_id.is_empty()).then(|| KeptStrokes(format!("vegas.strokes.{ticket_id}.{}", zone.index())))
    }

    /// The coordinates kept, flat (x, y, x, y…), in fractions of the zone.
    pub fn load(&self) -> Vec<f64> {
        let text = storage().and_then(|s| s.get_item(&self.0).ok().flatten()).unwrap_or_default();
        text.split(',').filter_map(|n| n.parse::<usize>().ok()).map(|n| n as f64 / 1000.0).collect()
    }

    pub fn store(&self, flat: impl Iterator<Item = f64>) {
        let thousandths: Vec<String> = flat.map(|f| ((f * 1000.0).round_ties_even() as usize).to_string()).collect();
        if let Some(storage) = storage() {
            let _ = storage.set_item(&self.0, &thousandths.join(","));
        }
    }

    pub fn forget(&self) {
        if let Some(storage) = storage() {
            let _ = storage.remove_item(&self.0);
        }
    }
}

/// A purchase until the server answers it. Its Idempotency-Key is kept (in the model, and in local
/// storage so that a reload sends it again) and every retry sends the same one: however often it is
/// sent, the server sells one ticket for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingPurchase {
    pub key: String,
    pub mode: Mode,
}

impl PendingPurchase {
    const STORAGE_KEY: &'static str = "vegas.pending-purchase";

    pub fn new(mode: Mode) -> PendingPurchase {
        let key = web_sys::window()
            .and_then(|w| w.crypto().ok())
            .map(|c| c.random_uuid())
            .unwrap_or_else(|| (js_sys::Date::now() as u64).to_string());
        PendingPurchase { key, mode }
    }

    /// The purchase a page left unanswered before a reload (the model starts with it).
    pub fn stored() -> Option<PendingPurchase> {
        crate::json::from_str(&storage()?.get_item(Self::STORAGE_KEY).ok()??).ok()
    }

    fn store(&self) {
        if let (Some(storage), Ok(json)) = (storage(), crate::json::to_string(self)) {
            let _ = storage.set_item(Self::STORAGE_KEY, &json);
        }
    }

    fn forget() {
        if let Some(storage) = storage() {
            let _ = storage.remove_item(Self::STORAGE_KEY);
        }
    }
}
