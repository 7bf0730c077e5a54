//! The game players see: buy a ticket (« Jouez » or « Auto »), verify it, scratch it, see the result;
//! balance, history and recovery of an unfinished ticket. State is one reducer ([`super::model`]), the
//! only place a game changes; the server tasks ([`super::sync`]) dispatch what they learn, and effects
//! here follow the game in play: keep it in the browser ([`super::local`]), record its zones with the
//! server and end it, and drive « Auto ».

use super::account::{account_bar, use_account_form};
use super::api::{self, TicketView};
use super::controls::controls;
use super::history::{Turn, history, recall_banner};
use super::local::{self, PendingPurchase};
use super::model::{Model, Msg};
use super::play_time::{reality_dialog, session_line, use_play_time};
use super::result::TicketResult;
use super::scratch_zone;
use super::sound;
use super::sync::{self, PendingSlot, retry_now};
use super::ticket::TicketCard;
use super::wallet::wallet;
use crate::api::TicketState;
use crate::play::{Action, Mode};
use crate::rules::prize_table::TICKET_PRICE;
use crate::rules::{Surface, Zone};
use std::cell::RefCell;
use std::rc::Rc;
use yew::prelude::*;

/// The game in play, as the server is told of it: kept in the browser at every change; its new zones
/// sent to the server, one request at a time; once the server has every zone, the game ended there.
#[hook]
fn use_record_play(model: &UseReducerHandle<Model>) {
    let played = model.played().cloned();
    let purchase = model.pending_purchase.clone();
    use_effect_with((played.clone(), purchase), |(played, purchase)| local::keep(played.as_ref(), purchase.as_ref()));

    // Tickets with a request to the server in flight: their next one waits for its answer.
    let sending: Rc<RefCell<Vec<String>>> = use_mut_ref(Vec::new);
    let progress = played.filter(|g| !g.completed).map(|g| {
        let recorded = model.recorded(&g.ticket_id);
        (g, recorded)
    });
    let dispatch = model.dispatcher();
    use_effect_with(progress, move |progress| {
        let Some((game, recorded)) = progress.clone() else { return };
        let id = game.ticket_id.clone();
        let needs_sending = game.revealed.len() > recorded || game.all_revealed();
        if !needs_sending || sending.borrow().contains(&id) {
            return;
        }
        sending.borrow_mut().push(id.clone());
        yew::platform::spawn_local(async move {
            if game.revealed.len() > recorded {
                let recorded = sync::record_reveals(&dispatch, &game).await;
                sending.borrow_mut().retain(|t| *t != id);
                // The answer re-renders the game: what was uncovered meanwhile, or its end, is sent then.
                if let Some(zones) = recorded {
                    dispatch.dispatch(Msg::Recorded { ticket: id, zones });
                }
            } else {
                sync::finish(&dispatch, &id).await;
                sending.borrow_mut().retain(|t| *t != id);
            }
        });
    });
}

/// « Auto »: while the game in play is an unfinished « Auto » one, its next zone is uncovered after a
/// pause, one at a time, surface after surface. One timer, dropped as the game moves on: never two.
#[hook]
fn use_auto(model: &UseReducerHandle<Model>) {
    let next = model
        .played()
        .filter(|g| g.mode == Mode::Auto && !g.completed)
        .and_then(|g| Some((g.ticket_id.clone(), g.next_auto_zone()?)));
    let dispatch = model.dispatcher();
    use_effect_with(next, move |next| {
        let timer = next.clone().map(|(ticket, zone)| {
            gloo_timers::callback::Timeout::new(scratch_zone::auto_pause_ms(), move || {
                dispatch.dispatch(Msg::Play(ticket, Action::Reveal(zone)))
            })
        });
        move || drop(timer)
    });
}

#[function_component(App)]
pub fn app() -> Html {
    // A purchase left unanswered before a reload is pending from the start: sent again, never forgotten.
    let model = use_reducer(|| Model {
        pending_purchase: PendingPurchase::stored(),
        message: local::first_message(),
        ..Model::default()
    });
    let dispatch = model.dispatcher();
    let pending: PendingSlot = use_mut_ref(|| model.pending_purchase.clone());
    let account = use_account_form();
    use_record_play(&model);
    use_auto(&model);
    use_play_time(&model);
    let muted = use_state(sound::muted);
    let on_mute = {
        let muted = muted.clone();
        Callback::from(move |_: MouseEvent| {
            sound::set_muted(!*muted);
            muted.set(!*muted);
        })
    };
    // A chime for each surface that shows a win, a fanfare when a won game ends: only for what happens
    // while the player watches, not for a ticket reopened or recalled as it was. And the focus follows
    // the play as a ticket is bought, its first surface chosen, a zone uncovered, the ticket ended.
    {
        let heard = use_mut_ref(|| (String::new(), 0, false));
        let progress = model.game.as_ref().map(|g| {
            let won = Surface::ALL.iter().filter(|&&s| g.shown_win(s).is_some_and(|w| !w.is_zero())).count();
            (g.ticket_id.clone(), won, g.completed, g.outcome.lot, g.needs_choice(), g.revealed.len())
        });
        use_effect_with(progress, move |progress| {
            scratch_zone::follow_focus();
            if let Some((id, won, completed, lot, ..)) = progress {
                let mut heard = heard.borrow_mut();
                if heard.0 == *id && *won > heard.1 {
                    sound::surface_won();
                }
                if heard.0 == *id && *completed && !heard.2 && !lot.is_zero() {
                    sound::fanfare(lot.0 / 100);
                }
                *heard = (id.clone(), *won, *completed);
            }
        });
    }

    {
        let (dispatch, pending) = (dispatch.clone(), pending.clone());
        use_effect_with((), move |_| {
            // The network back: what waits to be sent again goes now, not at its next try.
            let online = wasm_bindgen::closure::Closure::<dyn Fn()>::new(retry_now);
            if let Some(window) = web_sys::window() {
                let _ = window
                    .add_event_listener_with_callback("online", wasm_bindgen::JsCast::unchecked_ref(online.as_ref()));
            }
            online.forget();
            yew::platform::spawn_local(sync::start_session(dispatch, pending));
        });
    }

    // Buys in a mode, or, with `None`, sends again the purchase left unanswered.
    let on_buy = {
        let (dispatch, jwks, pending, real_money) =
            (dispatch.clone(), model.jwks.clone(), pending.clone(), !model.demo);
        Callback::from(move |mode: Option<Mode>| {
            let Some(jwks) = jwks.clone() else { return };
            let purchase = match (mode, pending.borrow().clone()) {
                (Some(mode), None) => PendingPurchase::new(mode),
                (None, Some(unanswered)) => unanswered,
                _ => return,
            };
            // Taken here, before any re-render, so that a double click starts one purchase.
            *pending.borrow_mut() = Some(purchase.clone());
            yew::platform::spawn_local(sync::buy(dispatch.clone(), purchase, pending.clone(), jwks, real_money));
        })
    };
    let on_reveal = {
        let (dispatch, ticket) = (dispatch.clone(), model.game.as_ref().map(|g| g.ticket_id.clone()));
        Callback::from(move |zone: Zone| {
            if let Some(ticket) = ticket.clone() {
                dispatch.dispatch(Msg::Play(ticket, Action::Reveal(zone)));
            }
        })
    };
    // A finished ticket is recalled as it ended; an unfinished one goes on being played (the one in
    // play already is simply gone back to).
    let on_recall = {
        let (dispatch, jwks, real_money) = (dispatch.clone(), model.jwks.clone(), !model.demo);
        let played = model.played().map(|g| g.ticket_id.clone());
        Callback::from(move |view: TicketView| {
            let Some(jwks) = jwks.clone() else { return };
            if played.as_ref() == Some(&view.id) {
                return dispatch.dispatch(Msg::EndRecall);
            }
            if view.state == TicketState::Finished {
                dispatch.dispatch(Msg::Recall(view.clone()));
            }
            let dispatch = dispatch.clone();
            yew::platform::spawn_local(async move {
                sync::open(&dispatch, &view, &jwks, real_money).await;
            });
        })
    };
    let on_turn = {
        let (dispatch, cursors) = (dispatch.clone(), model.history_cursors.clone());
        Callback::from(move |turn: Turn| {
            let mut cursors = cursors.clone();
            match turn {
                Turn::Older(after) => cursors.push(after),
                Turn::Newer => _ = cursors.pop(),
            }
            yew::platform::spawn_local(sync::history_page(dispatch.clone(), cursors));
        })
    };
    let recall = model.recall.as_ref().filter(|r| model.game.as_ref().is_some_and(|g| g.ticket_id == r.view.id));

    let playing = model.game.as_ref().is_some_and(|g| !g.completed);
    // Below the price the buy buttons are off, and the message says why, rather than a refusal after a click.
    let short = !playing && model.balance.is_some_and(|cents| cents < TICKET_PRICE.0 as i64);
    let can_buy = model.jwks.is_some()
        && !model.busy
        && !playing
        && !short
        && model.pending_purchase.is_none()
        && model.reality_check.is_none();
    html! {
        <div class="app">
            <header class="topbar">
                <h1 class="logo">{ "Vegas" }<small>{ "jeu de grattage" }</small></h1>
                { wallet(model.balance, model.demo, &dispatch) }
                { session_line(&model) }
                { account_bar(&account, model.player_name.as_deref(), { let dispatch = dispatch.clone();
                    Callback::from(move |name| dispatch.dispatch(Msg::Named(name))) }, model.signed_out) }
                <button class="link sound-toggle" data-testid="mute" aria-pressed={muted.to_string()}
                    onclick={on_mute}>{ if *muted { "Son coupé" } else { "Son" } }</button>
                <a class="link rules-link" href="/regles" data-testid="open-rules">{ "Règles et gains" }</a>
                <a class="link rules-link" href="/verifier/" target="_blank" data-testid="open-verify">{ "Vérifier"
                    }</a>
                <a class="link rules-link" href="/jeu-responsable/" data-testid="open-responsible">{ "Jeu responsable"
                    }</a>
            </header>
            { for model.reality_check.as_ref().map(|check| reality_dialog(check, &dispatch)) }
            <main>
                { controls(can_buy, model.pending_purchase.is_some() && !model.busy, &on_buy) }
                // One line at a time: a failure takes the message's place rather than push the ticket down.
                <p class="message" role="status" aria-live="polite" data-testid="message"
                    hidden={model.error.is_some()}>{ if short {
                    // One message at a time: why the buttons are off, and the way to add money.
                    format!("{} {}", api::short_of_price_fr(), if model.demo { "Ajoutez-en avec « + 50 € démo », en \
                        haut." } else { "Approvisionnez votre compte pour rejouer." })
                } else {
                    model.message.clone()
                } }</p>
                { for model.error.clone().map(|e| html! {
                    <p class="error" role="alert" data-testid="error">
                        { e }
                        if model.reconnecting {
                            <button class="link" data-testid="retry-now" onclick={Callback::from(|_: MouseEvent|
                                retry_now())}>{ "Réessayer" }</button>
                        }
                    </p>
                }) }
                { for recall.map(|r| recall_banner(&r.view, { let dispatch = dispatch.clone(); Callback::from(move |_|
                    dispatch.dispatch(Msg::EndRecall)) })) }
                if let Some(g) = &model.game {
                    <TicketResult ticket_id={g.ticket_id.clone()} completed={g.completed} lot={g.outcome.lot}
                        replay={recall.is_none().then_some(g.mode)} {can_buy} on_buy={on_buy} />
                }
                { match &model.game {
                    Some(g) => {
                        let (dispatch, ticket) = (dispatch.clone(), g.ticket_id.clone());
                        let on_choose = Callback::from(move |s: Surface| dispatch.dispatch(Msg::Play(ticket.clone(),
                            Action::Choose(s))));
                        html! { <TicketCard key={g.ticket_id.clone()} game={g.clone()} {on_reveal} {on_choose} /> }
                    }
                    None => html! {
                        <div class="ticket placeholder" data-testid="welcome">
                            <p class="ticket-logo big">{ "VEGAS" }</p>
                            <p>{ "Poker, Roulette, Craps et Jackpot : quatre chances de gagner jusqu'à 40 000 €." }</p>
                            <p data-testid="welcome-hint">{ if model.signed_out {
                                "Connectez-vous, ou créez votre compte : vous fixerez vos limites de dépôt et de mise \
                                    avant de jouer."
                            } else {
                                "Choisissez « Jouez » pour gratter vous-même, ou « Auto » pour tout découvrir d'un \
                                    coup."
                            } }</p>
                        </div>
                    },
                } }
                { history(&model.history, model.history_cursors.is_empty(), &on_recall, &on_turn) }
            </main>
            <footer data-testid="responsible-gaming">
                if model.demo { { "Jeu de démonstration — les gains sont fictifs. " } }
                { crate::api::RESPONSIBLE_GAMING }
            </footer>
        </div>
    }
}
