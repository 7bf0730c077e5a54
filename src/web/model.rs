//! The game's state and what changes it: one reducer ([`Model`], driven by [`Msg`]) that the app
//! renders and its server tasks dispatch to.

use super::api::{self, PlaySession, RealityCheck, TicketView};
use super::local::PendingPurchase;
use crate::payload::Jwks;
use crate::play::{Action, Game};
use crate::rules::Surface;
use crate::rules::prize_table::TICKET_PRICE;
use std::rc::Rc;
use yew::prelude::*;

/// What components and server tasks change the model through.
pub type Dispatch = UseReducerDispatcher<Model>;

const RECONNECTING: &str = "Connexion perdue — nouvel essai…";

#[derive(Default, Clone, PartialEq)]
pub struct Model {
    pub balance: Option<i64>,
    /// Demo money (guests, top-ups), or real money.
    pub demo: bool,
    /// The account's name; `None` for a guest.
    pub player_name: Option<String>,
    pub jwks: Option<Rc<Jwks>>,
    pub game: Option<Game>,
    pub busy: bool,
    /// Announced politely (aria-live): progress and wins.
    pub message: String,
    pub error: Option<String>,
    /// A page of the history, with one ticket more when an older page follows.
    pub history: Vec<TicketView>,
    /// Where the pages above this one start (each the `before` of its page): none on the first page.
    pub history_cursors: Vec<String>,
    /// A finished ticket looked at again.
    pub recall: Option<Recall>,
    /// A purchase the server has not answered yet: the player may only retry it.
    pub pending_purchase: Option<PendingPurchase>,
    /// How many of each game's uncovered zones the server has recorded, for the game on screen and
    /// the one a recall goes back to.
    pub recorded: Vec<(String, usize)>,
    /// The network failed under play: the game goes on and is sent again until the server has it.
    pub reconnecting: bool,
    /// The session's time and play as last asked, and when (the page's clock, in ms).
    pub session: Option<(PlaySession, f64)>,
    /// A reality check to show: no purchase until the player goes on (or stops).
    pub reality_check: Option<RealityCheck>,
    /// Real money and no session: the player signs in, or registers, first.
    pub signed_out: bool,
}

/// A finished ticket recalled from the history, and the game to go back to.
#[derive(Clone, PartialEq)]
pub struct Recall {
    pub view: TicketView,
    pub back_to: Option<Game>,
}

pub enum Msg {
    Ready {
        balance: i64,
        demo: bool,
        name: Option<String>,
        jwks: Jwks,
    },
    /// The guest became this account.
    Named(String),
    Balance(i64),
    /// A page of the history, and the cursors of the pages above it.
    History {
        tickets: Vec<TicketView>,
        cursors: Vec<String>,
    },
    /// A finished ticket to look at again (it opens next).
    Recall(TicketView),
    /// « Retour au jeu »: the game the player had before the recall.
    EndRecall,
    /// A verified ticket to show (boxed: a ticket is far larger than the other messages), and how many
    /// of its uncovered zones the server has.
    Open {
        game: Box<Game>,
        recorded: usize,
    },
    /// The server has recorded this many of the ticket's uncovered zones, in order.
    Recorded {
        ticket: String,
        zones: usize,
    },
    /// A move in the game of this ticket: the one on screen, or the one a recall keeps to go back to
    /// (« Auto » goes on behind a recall).
    Play(String, Action),
    Busy(bool),
    Say(String),
    Fail(String),
    /// The server has caught up: an earlier network error no longer stands.
    Synced,
    /// The server cannot be reached: what the player did is kept and sent again.
    Reconnecting,
    Pending(Option<PendingPurchase>),
    /// The keys, fetched again.
    Keys(Jwks),
    /// The session's time and play.
    Session(PlaySession),
    /// A reality check is due.
    RealityDue(RealityCheck),
    SignedOut,
}

impl Model {
    /// The game being played: the one a recall goes back to (« Auto » goes on behind it), else the one
    /// on screen.
    pub fn played(&self) -> Option<&Game> {
        self.recall.as_ref().map_or(self.game.as_ref(), |r| r.back_to.as_ref())
    }

    /// How many of this ticket's uncovered zones the server has.
    pub fn recorded(&self, ticket_id: &str) -> usize {
        self.recorded.iter().find(|(id, _)| id == ticket_id).map_or(0, |(_, zones)| *zones)
    }
}

impl Reducible for Model {
    type Action = Msg;

    fn reduce(self: Rc<Self>, msg: Msg) -> Rc<Self> {
        let mut m = Rc::unwrap_or_clone(self);
        match msg {
            Msg::Ready { balance, demo, name, jwks } => {
                m.balance = Some(balance);
                m.demo = demo;
                m.player_name = name;
                m.jwks = Some(Rc::new(jwks));
            }
            Msg::Named(name) => {
                m.message = format!("Compte créé : votre solde et vos tickets sont gardés sous le nom « {name} ».");
                m.player_name = Some(name);
            }
            Msg::Balance(b) => {
                // A top-up that covers a ticket ends a refusal for want of money.
                if b >= TICKET_PRICE.0 as i64 && m.error.as_deref() == Some(api::short_of_price_fr().as_str()) {
                    m.error = None;
                }
                m.balance = Some(b);
            }
            Msg::History { tickets, cursors } => {
                m.history = tickets;
                m.history_cursors = cursors;
            }
            Msg::Recall(view) => {
                // Recalling one ticket after another still goes back to the game before them.
                let back_to = m.recall.take().map_or_else(|| m.game.clone(), |r| r.back_to);
                m.recall = Some(Recall { view, back_to });
            }
            Msg::EndRecall => {
                if let Some(r) = m.recall.take() {
                    m.game = r.back_to;
                    m.message.clear();
                }
            }
            Msg::Open { game, recorded } => {
                if m.recall.as_ref().is_some_and(|r| r.view.id != game.ticket_id) {
                    m.recall = None;
                }
                // A finished ticket's banner says its result (the message gives way to it); a new one
                // leaves the choice to the ticket's own hint.
                m.message = if game.completed { String::new() } else { format!("Ticket {} en jeu.", game.serial) };
                m.error = None;
                m.recorded.retain(|(id, _)| {
                    *id != game.ticket_id
                        && m.recall.as_ref().and_then(|r| r.back_to.as_ref()).is_some_and(|g| g.ticket_id == *id)
                });
                m.recorded.push((game.ticket_id.clone(), recorded));
                m.game = Some(*game);
            }
            Msg::Recorded { ticket, zones } => {
                if let Some((_, recorded)) = m.recorded.iter_mut().find(|(id, _)| *id == ticket) {
                    *recorded = zones.max(*recorded);
                }
            }
            Msg::Play(ticket, action) => {
                if let Some(g) = m.recall.as_mut().and_then(|r| r.back_to.as_mut()).filter(|g| g.ticket_id == ticket) {
                    g.apply(action);
                }
                if let Some(g) = m.game.as_mut().filter(|g| g.ticket_id == ticket)
                    && g.apply(action)
                {
                    m.message = match action {
                        Action::Choose(s) => format!("Grattez d'abord la surface {}.", s.name_fr()),
                        Action::Reveal(z) if g.surface_done(z.surface()) => surface_text(g, z.surface()),
                        Action::Reveal(_) => m.message.clone(),
                        Action::Completed => String::new(),
                    };
                }
            }
            Msg::Busy(b) => m.busy = b,
            Msg::Say(text) => m.message = text,
            Msg::Fail(e) => {
                m.error = Some(e);
                m.busy = false;
            }
            Msg::Synced => {
                m.error = None;
                m.reconnecting = false;
            }
            Msg::Reconnecting => {
                m.error = Some(RECONNECTING.into());
                m.reconnecting = true;
            }
            Msg::Pending(purchase) => m.pending_purchase = purchase,
            Msg::Keys(jwks) => m.jwks = Some(Rc::new(jwks)),
            Msg::Session(session) => {
                m.reality_check = session.reality_check_due.then_some(session.check);
                m.session = Some((session, js_sys::Date::now()));
            }
            Msg::RealityDue(check) => {
                m.reality_check = Some(check);
                m.busy = false;
                m.message.clear();
            }
            Msg::SignedOut => m.signed_out = true,
        }
        Rc::new(m)
    }
}

fn surface_text(g: &Game, s: Surface) -> String {
    match g.shown_win(s) {
        Some(w) if !w.is_zero() => format!("{} : gagné {w} !", s.name_fr()),
        _ => format!("{} : perdu.", s.name_fr()),
    }
}
