//! The game players see: buy a ticket (« Jouez » or « Auto »), verify it, scratch it, see the result;
//! balance, history and recovery of an unfinished ticket. State is one reducer ([`super::model`]);
//! every server call is an async task that dispatches what it learnt.

use super::account::{account_bar, use_account_form};
use super::api::{self, ApiFailure, TicketView};
use super::controls::Controls;
use super::history::{History, Turn, recall_banner};
use super::model::{Dispatch, Model, Msg};
use super::result::TicketResult;
use super::scratch_zone;
use super::sound;
use super::ticket::TicketCard;
use super::wallet::Wallet;
use crate::api::TicketState;
use crate::payload::{Jwks, PayloadError, SignedPayload, TicketClaims, VerifiedTicket};
use crate::play::{Action, Game, Mode};
use crate::rules::{Surface, Zone};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use yew::prelude::*;

/// Verifies a ticket's payload — its signature by the browser ([`super::signature`]), then its claims
/// and its lot by the shared evaluator — and turns it into a game where it was left.
pub async fn open_ticket(view: &TicketView, jwks: &Jwks) -> Result<Game, String> {
    Ok(game_at(view, verify(view, jwks).await.map_err(|e| refusal(&e))?))
}

async fn verify(view: &TicketView, jwks: &Jwks) -> Result<VerifiedTicket, PayloadError> {
    let signed = SignedPayload::read(&view.payload, jwks)?;
    super::signature::check(&signed).await?;
    signed.open()
}

/// What the player reads when a ticket does not pass.
pub fn refusal(e: &PayloadError) -> String {
    format!("Ticket refusé : sa signature ou son contenu est invalide ({e}).")
}

/// A verified ticket as a game, where its view says it was left.
pub fn game_at(view: &TicketView, verified: VerifiedTicket) -> Game {
    Game {
        ticket_id: view.id.clone(),
        serial: view.serial.clone(),
        mode: view.mode,
        ticket: verified.claims.zones,
        outcome: verified.outcome,
        revealed: view.revealed.iter().filter_map(|&i| Zone::from_index(i)).collect(),
        chosen: None,
        completed: view.state == TicketState::Finished,
    }
}

/// Opens a ticket once it has passed every check: its signature and claims ([`verify`]; with a key
/// this page has not listed, a key rotated since it loaded, the keys are fetched again once and kept),
/// then its place in its block as committed before the sale ([`super::inclusion`]).
async fn open_with_current_keys(dispatch: &Dispatch, view: &TicketView, jwks: &Jwks) -> Result<Game, String> {
    let verified = match verify(view, jwks).await {
        Err(PayloadError::UnknownKey(kid)) => {
            let fresh = api::jwks().await.map_err(|_| refusal(&PayloadError::UnknownKey(kid)))?;
            let verified = verify(view, &fresh).await;
            dispatch.dispatch(Msg::Keys(fresh));
            verified
        }
        checked => checked,
    }
    .map_err(|e| refusal(&e))?;
    if verified.claims.qa && REAL_MONEY.get() {
        return Err("Ticket refusé : c'est un ticket de test (QA), et ce serveur joue en argent réel.".into());
    }
    // Behind a pointer, so that its state machine is not inlined into this one (it weighs kilobytes).
    let in_block: std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + '_>> = Box::pin(committed(dispatch, view, &verified.claims));
    in_block.await?;
    Ok(game_at(view, verified))
}

thread_local! {
    /// Whether the server plays for real money (from `/api/me`, once signed in): its pages refuse QA
    /// decks' test tickets. A page talks to one server, whose mode does not change; until it is known,
    /// the page assumes real money.
    static REAL_MONEY: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Each block's published root, fetched once: it never changes. (A page meets a block or two: a
    /// list is all it needs, and lighter in the download than a hash map.)
    static COMMITTED_ROOTS: RefCell<Vec<((u32, u32), String)>> = RefCell::default();
}

/// Fetches the ticket's inclusion proof and its block's root, as often as the network needs, and
/// checks that the one leads to the other.
async fn committed(dispatch: &Dispatch, view: &TicketView, claims: &TicketClaims) -> Result<(), String> {
    let block = (claims.serial.emission, claims.serial.block);
    let known = COMMITTED_ROOTS.with(|roots| roots.borrow().iter().find(|(b, _)| *b == block).map(|(_, root)| root.clone()));
    let fetch_root = known.is_none();
    let root = async {
        match known {
            Some(root) => Ok(root),
            None => until_answered(dispatch, || api::committed_root(block.0, block.1)).await.map(|c| c.root),
        }
    };
    let (root, proof) = futures::future::join(root, until_answered(dispatch, || api::proof(&view.id))).await;
    let (root, proof) = (root.map_err(|e| e.message_fr())?, proof.map_err(|e| e.message_fr())?);
    dispatch.dispatch(Msg::Synced);
    if fetch_root {
        COMMITTED_ROOTS.with(|roots| roots.borrow_mut().push((block, root.clone())));
    }
    super::inclusion::check(claims, &proof, &root).await.map_err(|e| refusal(&e))
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// The zones a player uncovered, kept in the browser until the server has them all, so that neither a
/// lost network nor a reload loses a scratched zone.
struct LocalReveals;

impl LocalReveals {
    fn key(ticket_id: &str) -> String {
        format!("vegas.reveals.{ticket_id}")
    }

    /// Kept as the zones' indices in order, comma-separated (« 6,7,0 »).
    fn keep(game: &Game) {
        let zones: Vec<String> = game.revealed.iter().map(|z| z.index().to_string()).collect();
        if let Some(storage) = storage() {
            let _ = storage.set_item(&Self::key(&game.ticket_id), &zones.join(","));
        }
    }

    fn kept(ticket_id: &str) -> Vec<Zone> {
        let text = storage().and_then(|s| s.get_item(&Self::key(ticket_id)).ok().flatten()).unwrap_or_default();
        text.split(',').filter_map(|index| Zone::from_index(index.parse().ok()?)).collect()
    }

    fn forget(ticket_id: &str) {
        if let Some(storage) = storage() {
            let _ = storage.remove_item(&Self::key(ticket_id));
        }
    }

    /// The game as the server left it, with the zones uncovered here since (before a reload, or while
    /// the network was down) uncovered again, in their order.
    fn replay(mut game: Game) -> Game {
        for zone in Self::kept(&game.ticket_id) {
            if game.needs_choice() {
                game.apply(Action::Choose(zone.surface()));
            }
            game.apply(Action::Reveal(zone));
        }
        game
    }
}

thread_local! {
    /// Requests waiting to be sent again, woken early by « Réessayer » or by the network coming back.
    static WAITING_TO_RETRY: RefCell<Vec<futures::channel::oneshot::Sender<()>>> = const { RefCell::new(Vec::new()) };
}

/// Sends every request waiting to be sent again, now.
fn retry_now() {
    WAITING_TO_RETRY.with_borrow_mut(|waiting| waiting.drain(..).for_each(|wake| _ = wake.send(())));
}

/// Waits `ms`, or less if [`retry_now`] is called meanwhile.
async fn wait_to_retry(ms: u32) {
    let (wake, woken) = futures::channel::oneshot::channel();
    WAITING_TO_RETRY.with_borrow_mut(|waiting| waiting.push(wake));
    futures::future::select(Box::pin(gloo_timers::future::TimeoutFuture::new(ms)), woken).await;
}

/// Sends a request until the server answers it (anything but a network failure or a fault of ours),
/// waiting 0.5 s, 1 s, 2 s… up to 8 s between tries, or less when the player asks or the browser is
/// back online. Meant for what is safe to send again: reveals and completions.
async fn until_answered<T, Sent: std::future::Future<Output = Result<T, ApiFailure>>>(
    dispatch: &Dispatch,
    mut send: impl FnMut() -> Sent,
) -> Result<T, ApiFailure> {
    let mut delay_ms = 500;
    loop {
        match send().await {
            Err(e) if worth_retrying(&e) => {
                dispatch.dispatch(Msg::Reconnecting);
                wait_to_retry(delay_ms).await;
                delay_ms = (delay_ms * 2).min(8_000);
            }
            answer => return answer,
        }
    }
}

fn fail(dispatch: &Dispatch, e: ApiFailure) {
    dispatch.dispatch(Msg::Fail(e.message_fr()));
}

/// Shows the history's first page again (after a purchase or a result).
async fn refresh_history(dispatch: &Dispatch) {
    if let Ok(tickets) = api::history(None).await {
        dispatch.dispatch(Msg::History { tickets, cursors: Vec::new() });
    }
}

/// Signs in (as a guest on first visit), loads the keys and history, then sends again a purchase left
/// unanswered before a reload, or else resumes an unfinished ticket.
async fn start_session(dispatch: Dispatch, pending: PendingSlot) {
    // The keys are public: fetched while the player is signed in, not after.
    let (me, jwks) = futures::future::join(api::sign_in(), api::jwks()).await;
    let (me, jwks) = match (me, jwks) {
        (Ok(me), Ok(jwks)) => (me, jwks),
        (Err(e), _) | (_, Err(e)) => return fail(&dispatch, e),
    };
    REAL_MONEY.set(!me.demo);
    dispatch.dispatch(Msg::Ready { balance: me.balance_cents, demo: me.demo, name: me.name.filter(|_| !me.guest), jwks: jwks.clone() });
    if let Some(purchase) = PendingPurchase::stored() {
        purchase.begin(&dispatch, &pending);
        return purchase_until_answered(dispatch, purchase, pending, Rc::new(jwks)).await;
    }
    let Ok(history) = api::history(None).await else { return };
    dispatch.dispatch(Msg::History { tickets: history.clone(), cursors: Vec::new() });
    if let Some(unfinished) = history.iter().find(|t| t.state != TicketState::Finished) {
        resume(dispatch, unfinished.clone(), jwks).await;
    }
}

async fn resume(dispatch: Dispatch, view: TicketView, jwks: Jwks) {
    match open_with_current_keys(&dispatch, &view, &jwks).await {
        Ok(game) => {
            let game = if game.completed { game } else { LocalReveals::replay(game) };
            let auto = game.mode == Mode::Auto && !game.completed;
            let caught_up = game.revealed.len() == view.revealed.len();
            dispatch.dispatch(Msg::Open(Box::new(game.clone())));
            if auto {
                run_auto(dispatch, game).await;
            } else if !game.completed && (caught_up || sync_reveals(&dispatch, &game).await) && game.all_revealed() {
                finish(&dispatch, &game.ticket_id).await;
            }
        }
        Err(e) => dispatch.dispatch(Msg::Fail(e)),
    }
}

/// A purchase until the server answers it. Its Idempotency-Key is kept (in memory, and in local
/// storage so that a reload sends it again) and every retry sends the same one: however often it is
/// sent, the server sells one ticket for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingPurchase {
    key: String,
    mode: Mode,
}

/// The purchase in flight, if any. Set in the click handler itself, before any re-render, so that a
/// double click starts one purchase.
type PendingSlot = Rc<RefCell<Option<PendingPurchase>>>;

impl PendingPurchase {
    const STORAGE_KEY: &'static str = "vegas.pending-purchase";

    fn new(mode: Mode) -> PendingPurchase {
        let key = web_sys::window().and_then(|w| w.crypto().ok()).map(|c| c.random_uuid()).unwrap_or_else(|| (js_sys::Date::now() as u64).to_string());
        PendingPurchase { key, mode }
    }

    fn stored() -> Option<PendingPurchase> {
        crate::json::from_str(&storage()?.get_item(Self::STORAGE_KEY).ok()??).ok()
    }

    fn store(&self) {
        if let (Some(storage), Ok(json)) = (storage(), crate::json::to_string(self)) {
            let _ = storage.set_item(Self::STORAGE_KEY, &json);
        }
    }

    /// Marks the purchase as in flight and disables the buy buttons, before anything is sent.
    fn begin(&self, dispatch: &Dispatch, pending: &PendingSlot) {
        self.store();
        *pending.borrow_mut() = Some(self.clone());
        dispatch.dispatch(Msg::Pending(Some(self.mode)));
        dispatch.dispatch(Msg::Busy(true));
    }

    /// The server answered: this purchase is over, whatever the answer.
    fn end(dispatch: &Dispatch, pending: &PendingSlot) {
        *pending.borrow_mut() = None;
        if let Some(storage) = storage() {
            let _ = storage.remove_item(Self::STORAGE_KEY);
        }
        dispatch.dispatch(Msg::Pending(None));
    }
}

/// Automatic retries of an unanswered purchase before the player is asked: about 30 s in all.
const PURCHASE_RETRIES: u32 = 7;

/// A failure after which the same purchase may be sent again: the network, or a fault of the server's
/// (which never acknowledges what it has not recorded).
fn worth_retrying(e: &ApiFailure) -> bool {
    e.status == 0 || e.status >= 500
}

async fn purchase_until_answered(dispatch: Dispatch, purchase: PendingPurchase, pending: PendingSlot, jwks: Rc<Jwks>) {
    dispatch.dispatch(Msg::Say("Achat du ticket…".into()));
    let mut delay_ms = 500;
    let mut attempt = 0;
    let bought = loop {
        match api::buy(purchase.mode.as_str(), &purchase.key).await {
            Ok(bought) => break bought,
            Err(e) if worth_retrying(&e) && attempt < PURCHASE_RETRIES => {
                attempt += 1;
                dispatch.dispatch(Msg::Say("Connexion perdue — nouvel essai…".into()));
                gloo_timers::future::TimeoutFuture::new(delay_ms).await;
                delay_ms = (delay_ms * 2).min(8_000);
            }
            Err(e) => {
                if !worth_retrying(&e) {
                    PendingPurchase::end(&dispatch, &pending);
                }
                return fail(&dispatch, e);
            }
        }
    };
    PendingPurchase::end(&dispatch, &pending);
    dispatch.dispatch(Msg::Synced);
    dispatch.dispatch(Msg::Balance(bought.balance_cents));
    let auto = match open_with_current_keys(&dispatch, &bought.ticket, &jwks).await {
        Ok(game) => {
            dispatch.dispatch(Msg::Open(Box::new(game.clone())));
            dispatch.dispatch(Msg::Busy(false));
            Some(game).filter(|g| g.mode == Mode::Auto && !g.completed)
        }
        Err(e) => {
            dispatch.dispatch(Msg::Fail(e));
            None
        }
    };
    // The ticket bought is in the history at once, « en cours » while « Auto » uncovers it.
    refresh_history(&dispatch).await;
    if let Some(game) = auto {
        run_auto(dispatch, game).await;
    }
}

/// « Auto »: uncovers every zone, surface after surface, then ends the game.
async fn run_auto(dispatch: Dispatch, mut game: Game) {
    while let Some(zone) = game.next_auto_zone() {
        gloo_timers::future::TimeoutFuture::new(scratch_zone::auto_pause_ms()).await;
        game.apply(Action::Reveal(zone));
        LocalReveals::keep(&game);
        dispatch.dispatch(Msg::Play(game.ticket_id.clone(), Action::Reveal(zone)));
        // Only a record of progress: the server uncovers whatever it missed when the game completes.
        sync_reveals(&dispatch, &game).await;
    }
    finish(&dispatch, &game.ticket_id).await;
}

/// Records every zone uncovered so far (the server ignores those it has), sent again until the server
/// answers. Says whether the server has them all.
async fn sync_reveals(dispatch: &Dispatch, game: &Game) -> bool {
    match until_answered(dispatch, || api::reveal(&game.ticket_id, &game.revealed)).await {
        Ok(recorded) => {
            if game.revealed.iter().all(|z| recorded.revealed.contains(&z.index())) {
                LocalReveals::forget(&game.ticket_id);
            }
            dispatch.dispatch(Msg::Synced);
            true
        }
        Err(e) if e.code == "ticket_finished" => {
            LocalReveals::forget(&game.ticket_id);
            dispatch.dispatch(Msg::Synced);
            true
        }
        Err(e) => {
            fail(dispatch, e);
            false
        }
    }
}

async fn finish(dispatch: &Dispatch, ticket_id: &str) {
    let balance = match until_answered(dispatch, || api::complete(ticket_id)).await {
        Ok(done) => Ok(done.balance_cents),
        // Completed already (an answer lost on the way, another tab): its win is in the balance.
        Err(e) if e.code == "ticket_finished" => api::me().await.map(|me| me.balance_cents),
        Err(e) => Err(e),
    };
    match balance {
        Ok(balance_cents) => {
            LocalReveals::forget(ticket_id);
            dispatch.dispatch(Msg::Synced);
            dispatch.dispatch(Msg::Balance(balance_cents));
            dispatch.dispatch(Msg::Play(ticket_id.to_owned(), Action::Completed));
            refresh_history(dispatch).await;
        }
        Err(e) => fail(dispatch, e),
    }
}

#[function_component(App)]
pub fn app() -> Html {
    let model = use_reducer(Model::default);
    let dispatch = model.dispatcher();
    let pending: PendingSlot = use_mut_ref(|| None);
    let account = use_account_form();
    let muted = use_state(sound::muted);
    let on_mute = {
        let muted = muted.clone();
        Callback::from(move |_: MouseEvent| {
            sound::set_muted(!*muted);
            muted.set(!*muted);
        })
    };
    // A chime for each surface that shows a win, a fanfare when a won game ends: only for what happens
    // while the player watches, not for a ticket reopened or recalled as it was.
    {
        let heard = use_mut_ref(|| (String::new(), 0, false));
        let progress = model.game.as_ref().map(|g| {
            let won = Surface::ALL.iter().filter(|&&s| g.shown_win(s).is_some_and(|w| !w.is_zero())).count();
            (g.ticket_id.clone(), won, g.completed, g.outcome.lot)
        });
        use_effect_with(progress, move |progress| {
            if let Some((id, won, completed, lot)) = progress {
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
                let _ = window.add_event_listener_with_callback("online", wasm_bindgen::JsCast::unchecked_ref(online.as_ref()));
            }
            online.forget();
            yew::platform::spawn_local(start_session(dispatch, pending));
        });
    }

    // Buys in a mode, or, with `None`, sends again the purchase left unanswered.
    let on_buy = {
        let (dispatch, jwks, pending) = (dispatch.clone(), model.jwks.clone(), pending.clone());
        Callback::from(move |mode: Option<Mode>| {
            let Some(jwks) = jwks.clone() else { return };
            let purchase = match (mode, pending.borrow().clone()) {
                (Some(mode), None) => PendingPurchase::new(mode),
                (None, Some(unanswered)) => unanswered,
                _ => return,
            };
            purchase.begin(&dispatch, &pending);
            yew::platform::spawn_local(purchase_until_answered(dispatch.clone(), purchase, pending.clone(), jwks));
        })
    };
    let on_reveal = {
        let (dispatch, game) = (dispatch.clone(), model.game.clone());
        Callback::from(move |zone: Zone| {
            let Some(mut game) = game.clone() else { return };
            if !game.apply(Action::Reveal(zone)) {
                return;
            }
            LocalReveals::keep(&game);
            dispatch.dispatch(Msg::Play(game.ticket_id.clone(), Action::Reveal(zone)));
            let dispatch = dispatch.clone();
            yew::platform::spawn_local(async move {
                if !sync_reveals(&dispatch, &game).await {
                    return;
                }
                if game.all_revealed() {
                    finish(&dispatch, &game.ticket_id).await;
                }
            });
        })
    };
    // A finished ticket is recalled as it ended; an unfinished one goes on being played.
    let on_recall = {
        let (dispatch, jwks) = (dispatch.clone(), model.jwks.clone());
        Callback::from(move |view: TicketView| {
            if let Some(jwks) = jwks.clone() {
                if view.state == TicketState::Finished {
                    dispatch.dispatch(Msg::Recall(view.clone()));
                }
                yew::platform::spawn_local(resume(dispatch.clone(), view, (*jwks).clone()));
            }
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
            let dispatch = dispatch.clone();
            yew::platform::spawn_local(async move {
                match api::history(cursors.last().map(String::as_str)).await {
                    Ok(tickets) => dispatch.dispatch(Msg::History { tickets, cursors }),
                    Err(e) => fail(&dispatch, e),
                }
            });
        })
    };
    let recall = model.recall.as_ref().filter(|r| model.game.as_ref().is_some_and(|g| g.ticket_id == r.view.id));

    let playing = model.game.as_ref().is_some_and(|g| !g.completed);
    let can_buy = model.jwks.is_some() && !model.busy && !playing && model.pending_purchase.is_none();
    html! {
        <div class="app">
            <header class="topbar">
                <h1 class="logo">{ "Vegas" }<small>{ "jeu de grattage" }</small></h1>
                <Wallet balance={model.balance} demo={model.demo} dispatch={dispatch.clone()} />
                { account_bar(&account, model.player_name.as_deref(), { let dispatch = dispatch.clone(); Callback::from(move |name| dispatch.dispatch(Msg::Named(name))) }) }
                <button class="link sound-toggle" data-testid="mute" aria-pressed={muted.to_string()} onclick={on_mute}>{ if *muted { "Son coupé" } else { "Son" } }</button>
                <a class="link rules-link" href="/regles" target="_blank" data-testid="open-rules">{ "Règles et gains" }</a>
                <a class="link rules-link" href="/verifier/" target="_blank" data-testid="open-verify">{ "Vérifier" }</a>
            </header>
            <main>
                <Controls {can_buy} can_retry={model.pending_purchase.is_some() && !model.busy} on_buy={on_buy.clone()} />
                <p class="message" role="status" aria-live="polite" data-testid="message">{ model.message.clone() }</p>
                { for model.error.clone().map(|e| html! {
                    <p class="error" role="alert" data-testid="error">
                        { e }
                        if model.reconnecting {
                            <button class="link" data-testid="retry-now" onclick={Callback::from(|_: MouseEvent| retry_now())}>{ "Réessayer" }</button>
                        }
                    </p>
                }) }
                { for recall.map(|r| recall_banner(&r.view, { let dispatch = dispatch.clone(); Callback::from(move |_| dispatch.dispatch(Msg::EndRecall)) })) }
                if let Some(g) = &model.game {
                    <TicketResult ticket_id={g.ticket_id.clone()} completed={g.completed} lot={g.outcome.lot}
                        replay={recall.is_none().then_some(g.mode)} {can_buy} on_buy={on_buy} />
                }
                { match &model.game {
                    Some(g) => {
                        let (dispatch, ticket) = (dispatch.clone(), g.ticket_id.clone());
                        let on_choose = Callback::from(move |s: Surface| dispatch.dispatch(Msg::Play(ticket.clone(), Action::Choose(s))));
                        html! { <TicketCard key={g.ticket_id.clone()} game={g.clone()} {on_reveal} {on_choose} /> }
                    }
                    None => html! {
                        <div class="ticket placeholder" data-testid="welcome">
                            <p class="ticket-logo big">{ "VEGAS" }</p>
                            <p>{ "Poker, Roulette, Craps et Jackpot : quatre chances de gagner jusqu'à 40 000 €." }</p>
                            <p>{ "Choisissez « Jouez » pour gratter vous-même, ou « Auto » pour tout découvrir d'un coup." }</p>
                        </div>
                    },
                } }
                <History tickets={model.history.clone()} first_page={model.history_cursors.is_empty()} {on_recall} {on_turn} />
            </main>
            <footer data-testid="responsible-gaming">
                if model.demo { { "Jeu de démonstration — les gains sont fictifs. " } }
                { crate::api::RESPONSIBLE_GAMING }
            </footer>
        </div>
    }
}
