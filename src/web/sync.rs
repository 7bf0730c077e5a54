//! The game's conversation with the server: one scheduler of retries, and the tasks that sign in, buy,
//! open, record and finish tickets. Every task dispatches what it learnt to the reducer
//! ([`super::model`]); none keeps a game of its own.
//!
//! A request the server did not answer (the network, or a fault of the server's, which never
//! acknowledges what it has not recorded) is sent again after 0.5 s, 1 s, 2 s… up to 8 s, or at once
//! when the player presses « Réessayer » or the browser is back online ([`retry_now`]): reveals and
//! completions until answered, a purchase about 30 s before the player is asked. All are safe to send
//! again: a purchase keeps its Idempotency-Key, the server ignores zones it has, and answers a
//! finished ticket 409 `ticket_finished`, read here as done.

use super::api::{self, ApiFailure, InclusionProof, TicketView};
use super::local::{LocalReveals, PendingPurchase};
use super::model::{Dispatch, Msg};
use super::trust::{self, Evidence};
use crate::api::TicketState;
use crate::payload::Jwks;
use crate::play::Game;
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    /// Requests waiting to be sent again, woken early by « Réessayer » or by the network coming back.
    static WAITING_TO_RETRY: RefCell<Vec<futures::channel::oneshot::Sender<()>>> = const { RefCell::new(Vec::new()) };
    /// Each block's published root, fetched once: it never changes. (A page meets a block or two: a
    /// list is all it needs, and lighter in the download than a hash map.)
    static COMMITTED_ROOTS: RefCell<Vec<((u32, u32), String)>> = RefCell::default();
}

/// Sends every request waiting to be sent again, now.
pub fn retry_now() {
    WAITING_TO_RETRY.with_borrow_mut(|waiting| waiting.drain(..).for_each(|wake| _ = wake.send(())));
}

/// Waits `ms`, or less if [`retry_now`] is called meanwhile.
async fn wait_to_retry(ms: u32) {
    let (wake, woken) = futures::channel::oneshot::channel();
    WAITING_TO_RETRY.with_borrow_mut(|waiting| waiting.push(wake));
    futures::future::select(Box::pin(gloo_timers::future::TimeoutFuture::new(ms)), woken).await;
}

/// A failure after which the same request may be sent again.
fn worth_retrying(e: &ApiFailure) -> bool {
    e.status == 0 || e.status >= 500
}

/// Tries of a purchase before the player is asked: about 30 s in all.
const PURCHASE_TRIES: u32 = 8;

/// Sends a request until the server answers it, or `tries` times if given (the last failure is then
/// the answer).
async fn until_answered<T, Sent: std::future::Future<Output = Result<T, ApiFailure>>>(
    dispatch: &Dispatch,
    tries: Option<u32>,
    mut send: impl FnMut() -> Sent,
) -> Result<T, ApiFailure> {
    let (mut delay_ms, mut tried) = (500, 1);
    loop {
        match send().await {
            Err(e) if worth_retrying(&e) && tries.is_none_or(|tries| tried < tries) => {
                dispatch.dispatch(Msg::Reconnecting);
                wait_to_retry(delay_ms).await;
                delay_ms = (delay_ms * 2).min(8_000);
                tried += 1;
            }
            answer => return answer,
        }
    }
}

fn fail(dispatch: &Dispatch, e: ApiFailure) {
    dispatch.dispatch(Msg::Fail(e.message_fr()));
}

/// What a ticket's checks fetch, asked of the server through the retries.
struct FromServer<'a>(&'a Dispatch);

impl Evidence for FromServer<'_> {
    async fn fresh_keys(&self) -> Option<Jwks> {
        let fresh = api::jwks().await.ok()?;
        self.0.dispatch(Msg::Keys(fresh.clone()));
        Some(fresh)
    }

    async fn commitment(&self, ticket_id: &str, emission: u32, block: u32) -> Result<(InclusionProof, String), String> {
        let known = COMMITTED_ROOTS
            .with(|roots| roots.borrow().iter().find(|(b, _)| *b == (emission, block)).map(|(_, root)| root.clone()));
        let fetch_root = known.is_none();
        let root = async {
            match known {
                Some(root) => Ok(root),
                None => until_answered(self.0, None, || api::committed_root(emission, block)).await.map(|c| c.root),
            }
        };
        let (root, proof) = futures::future::join(root, until_answered(self.0, None, || api::proof(ticket_id))).await;
        let (root, proof) = (root.map_err(|e| e.message_fr())?, proof.map_err(|e| e.message_fr())?);
        self.0.dispatch(Msg::Synced);
        if fetch_root {
            COMMITTED_ROOTS.with(|roots| roots.borrow_mut().push(((emission, block), root.clone())));
        }
        Ok((proof, root))
    }
}

/// Opens a ticket the server sent, once it has passed every check, where it was left (with the zones
/// uncovered here that the server does not have yet), and shows it.
pub async fn open(dispatch: &Dispatch, view: &TicketView, jwks: &Jwks, real_money: bool) -> bool {
    // Behind a pointer, so that its state machine is not inlined into each caller's (it weighs kilobytes).
    let server = FromServer(dispatch);
    let checked: std::pin::Pin<Box<dyn std::future::Future<Output = Result<Game, String>> + '_>> =
        Box::pin(trust::open_ticket(view, jwks, real_money, &server));
    match checked.await {
        Ok(game) => {
            let game = if game.completed { game } else { LocalReveals::replay(game) };
            dispatch.dispatch(Msg::Open { game: Box::new(game), recorded: view.revealed.len() });
            true
        }
        Err(e) => {
            dispatch.dispatch(Msg::Fail(e));
            false
        }
    }
}

/// The session's time and play, asked again (after its balance changed, or as its reality check falls
/// due).
pub async fn refresh_session(dispatch: Dispatch) {
    if let Ok(session) = api::play_session().await {
        dispatch.dispatch(Msg::Session(session));
    }
}

/// Shows the history's first page again (after a purchase or a result).
pub async fn refresh_history(dispatch: &Dispatch) {
    if let Ok(tickets) = api::history(None).await {
        dispatch.dispatch(Msg::History { tickets, cursors: Vec::new() });
    }
}

/// Shows the page of the history below the last of `cursors` (the first page without any).
pub async fn history_page(dispatch: Dispatch, cursors: Vec<String>) {
    match api::history(cursors.last().map(String::as_str)).await {
        Ok(tickets) => dispatch.dispatch(Msg::History { tickets, cursors }),
        Err(e) => fail(&dispatch, e),
    }
}

/// The purchase in flight, if any. Set in the click handler itself, before any re-render, so that a
/// double click starts one purchase.
pub type PendingSlot = Rc<RefCell<Option<PendingPurchase>>>;

/// Signs in (as a guest on first visit), loads the keys and history, then sends again a purchase left
/// unanswered before a reload, or else resumes an unfinished ticket, or shows the last one.
pub async fn start_session(dispatch: Dispatch, pending: PendingSlot) {
    // The keys are public: fetched while the player is signed in, not after.
    let (me, jwks) = futures::future::join(api::sign_in(), api::jwks()).await;
    let (me, jwks) = match (me, jwks) {
        (Ok(me), Ok(jwks)) => (me, jwks),
        // Real money has no guests: the visitor signs in or registers.
        (Err(e), _) if e.code == Some(api::ErrorCode::DemoOff) => return dispatch.dispatch(Msg::SignedOut),
        (Err(e), _) | (_, Err(e)) => return fail(&dispatch, e),
    };
    dispatch.dispatch(Msg::Ready {
        balance: me.balance_cents,
        demo: me.demo,
        name: me.name.filter(|_| !me.guest),
        jwks: jwks.clone(),
    });
    let unanswered = pending.borrow().clone();
    if let Some(purchase) = unanswered {
        return buy(dispatch, purchase, pending, Rc::new(jwks), !me.demo).await;
    }
    let Ok(history) = api::history(None).await else { return };
    dispatch.dispatch(Msg::History { tickets: history.clone(), cursors: Vec::new() });
    // The ticket left unfinished, or else the last one played: a reload shows what was on screen.
    if let Some(last) = history.iter().find(|t| t.state != TicketState::Finished).or(history.first()) {
        open(&dispatch, last, &jwks, !me.demo).await;
    }
}

/// A purchase, sent until the server answers it with the same key, then its ticket opened. The buy
/// buttons stay disabled meanwhile.
pub async fn buy(
    dispatch: Dispatch,
    purchase: PendingPurchase,
    pending: PendingSlot,
    jwks: Rc<Jwks>,
    real_money: bool,
) {
    *pending.borrow_mut() = Some(purchase.clone());
    dispatch.dispatch(Msg::Pending(Some(purchase.clone())));
    dispatch.dispatch(Msg::Busy(true));
    dispatch.dispatch(Msg::Say("Achat du ticket…".into()));
    let answered =
        until_answered(&dispatch, Some(PURCHASE_TRIES), || api::buy(purchase.mode.as_str(), &purchase.key)).await;
    // Unanswered after every try, the purchase stays pending: the player may send it again.
    if answered.as_ref().map_or_else(|e| !worth_retrying(e), |_| true) {
        *pending.borrow_mut() = None;
        dispatch.dispatch(Msg::Pending(None));
    }
    let bought = match answered {
        Ok(bought) => bought,
        Err(e) => {
            return match e.reality_check() {
                Some(check) => dispatch.dispatch(Msg::RealityDue(check)),
                None => {
                    // « Achat du ticket… » no longer stands: the refusal says why.
                    dispatch.dispatch(Msg::Say(String::new()));
                    fail(&dispatch, e)
                }
            };
        }
    };
    dispatch.dispatch(Msg::Synced);
    dispatch.dispatch(Msg::Balance(bought.balance_cents));
    if open(&dispatch, &bought.ticket, &jwks, real_money).await {
        dispatch.dispatch(Msg::Busy(false));
    }
    // The ticket bought is in the history at once, « en cours » while it is played.
    refresh_history(&dispatch).await;
}

/// Records every zone uncovered so far (the server ignores those it has), sent again until the server
/// answers: how many of them, in order, the server has.
pub async fn record_reveals(dispatch: &Dispatch, game: &Game) -> Option<usize> {
    // Each zone with how long ago it was uncovered: zones sent late are recorded when uncovered.
    let seconds_ago = || LocalReveals::seconds_ago(&game.ticket_id, game.revealed.len());
    let recorded =
        match until_answered(dispatch, None, || api::reveal(&game.ticket_id, &game.revealed, seconds_ago())).await {
            Ok(view) => game.revealed.iter().take_while(|z| view.revealed.contains(&z.index())).count(),
            // Finished already (settled, another tab): it has every zone.
            Err(e) if e.code == Some(api::ErrorCode::TicketFinished) => game.revealed.len(),
            Err(e) => {
                fail(dispatch, e);
                return None;
            }
        };
    if recorded == game.revealed.len() {
        LocalReveals::recorded(&game.ticket_id, recorded);
    }
    dispatch.dispatch(Msg::Synced);
    Some(recorded)
}

/// Ends a game whose every zone the server has, and credits its win.
pub async fn finish(dispatch: &Dispatch, ticket_id: &str) {
    // The result shows once the last foil has faded, and the credit, the message and the history's
    // entry with it: one moment, not a balance that moves before the banner says why.
    let faded = gloo_timers::future::TimeoutFuture::new(super::scratch_zone::auto_pause_ms()); // a foil's fade
    let balance = match until_answered(dispatch, None, || api::complete(ticket_id)).await {
        Ok(done) => Ok(done.balance_cents),
        // Completed already (an answer lost on the way, another tab): its win is in the balance.
        Err(e) if e.code == Some(api::ErrorCode::TicketFinished) => api::me().await.map(|me| me.balance_cents),
        Err(e) => Err(e),
    };
    match balance {
        Ok(balance_cents) => {
            LocalReveals::forget(ticket_id);
            let (history, ()) = futures::future::join(api::history(None), faded).await;
            dispatch.dispatch(Msg::Synced);
            dispatch.dispatch(Msg::Balance(balance_cents));
            dispatch.dispatch(Msg::Play(ticket_id.to_owned(), crate::play::Action::Completed));
            if let Ok(tickets) = history {
                dispatch.dispatch(Msg::History { tickets, cursors: Vec::new() });
            }
        }
        Err(e) => fail(dispatch, e),
    }
}
