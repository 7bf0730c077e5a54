//! The player's history: pages of their tickets, dated, with stake and win; and a finished ticket
//! recalled, marked as a recall, with its steps (each zone, in the order and at the time uncovered).

use super::api::{HISTORY_PAGE, TicketView};
use super::dates::french_time;
use crate::api::TicketState;
use crate::money::Cents;
use crate::rules::Zone;
use crate::rules::prize_table::TICKET_PRICE;
use yew::prelude::*;

/// Where the history goes: to older tickets (after the last one shown) or back to newer ones.
#[derive(Clone)]
pub enum Turn {
    Older(String),
    Newer,
}

/// One page of the history (`tickets`: with one ticket more when an older page follows), with the way
/// to the pages beside it; `on_recall` hears of a ticket chosen to look at again (or, unfinished, to go
/// on with). A function rather than a component, for the players' download (see `controls`).
pub fn history(
    tickets: &[TicketView],
    first_page: bool,
    on_recall: &Callback<TicketView>,
    on_turn: &Callback<Turn>,
) -> Html {
    let shown = &tickets[..tickets.len().min(HISTORY_PAGE)];
    let older = (tickets.len() > HISTORY_PAGE).then(|| shown[shown.len() - 1].id.clone());
    let turn = |to: Turn| on_turn.reform(move |_: MouseEvent| to.clone());
    html! {
        <aside class="history" data-testid="history" aria-label="Historique">
            <h2>{ "Historique" }</h2>
            if tickets.is_empty() { <p class="empty">{ "Aucun ticket pour l'instant." }</p> }
            <ol>
                { for shown.iter().enumerate().map(|(i, t)| {
                    let state = match (t.state, t.win_cents) {
                        (TicketState::Finished, Some(0)) => "perdu".to_owned(),
                        (TicketState::Finished, Some(w)) => format!("gagné {}", Cents(w)),
                        (TicketState::Settled, _) => "à terminer (gain crédité)".to_owned(),
                        _ => "en cours".to_owned(),
                    };
                    html! {
                        <li>
                            <button class="history-item" data-testid={format!("history-item-{i}")} onclick={{ let t =
                                t.clone(); on_recall.reform(move |_: MouseEvent| t.clone()) }}>
                                <span class="h-serial">{ &t.serial }</span>
                                <span class="h-date">{ french_time(t.sold_at, true) }</span>
                                <span class="h-stake">{ format!("mise {TICKET_PRICE}") }</span>
                                <span class={classes!("h-state", t.win_cents.is_some_and(|w| w >
                                    0).then_some("won"))}>{ state }</span>
                            </button>
                            // Its place in its block's commitment, proved on the « Vérifier » page.
                            <a class="link h-verify" href={format!("/verifier/#t={}", t.serial)}
                                data-testid={format!("history-verify-{i}")}
                                aria-label={format!("Vérifier le ticket {}", t.serial)}>{ "Vérifier" }</a>
                        </li>
                    }
                }) }
            </ol>
            if !first_page || older.is_some() {
                <nav class="pages" aria-label="Pages de l'historique">
                    <button class="link" data-testid="history-newer" disabled={first_page}
                        onclick={turn(Turn::Newer)}>{ "‹ Plus récents" }</button>
                    <button class="link" data-testid="history-older" disabled={older.is_none()}
                        onclick={turn(Turn::Older(older.clone().unwrap_or_default()))}>{ "Plus anciens ›" }</button>
                </nav>
            }
        </aside>
    }
}

/// What a step uncovered, as the ticket names its zones.
fn zone_name(z: Zone) -> &'static str {
    match z {
        Zone::PokerHand => "la main",
        Zone::RouletteWheel => "la roue",
        Zone::JackpotReels => "les rouleaux",
        _ => z.label_fr(),
    }
}

/// A finished ticket looked at again: marked as a recall (serial, date, « Retour au jeu ») with its
/// steps. A ticket played before the server kept times lists its steps without them.
pub fn recall_banner(view: &TicketView, on_back: Callback<MouseEvent>) -> Html {
    html! {
        <section class="recall" data-testid="recall" aria-label="Rappel d'un ticket joué">
            <p class="recall-title">
                <strong>{ "Rappel" }</strong>
                { format!(" du ticket N° {}, acheté le {}", view.serial, french_time(view.sold_at, true)) }
            </p>
            <button class="link" data-testid="recall-back" onclick={on_back}>{ "Retour au jeu" }</button>
            // Folded: unfolded, twelve steps would push the ticket below the screen.
            <details class="steps-box">
            <summary>{ "Étapes du jeu" }</summary>
            <ol class="steps" data-testid="recall-steps">
                { for view.revealed.iter().enumerate().filter_map(|(i, &z)| Some((view.revealed_at.get(i),
                    Zone::from_index(z)?))).map(|(at, z)| html! {
                    <li>
                        if let Some(&at) = at { <time>{ french_time(at, false) }</time> }
                        { format!("{} — {}", z.surface().name_fr(), zone_name(z)) }
                    </li>
                }) }
            </ol>
            </details>
        </section>
    }
}
