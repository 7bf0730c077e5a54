//! Play time beside the balance (the session's length and its net: staked − won), and the reality check
//! that interrupts play every 15, 30 or 60 minutes until the player goes on or stops. The server keeps
//! the time and refuses a purchase while a check is due; the page only shows what it says.

use super::api;
use super::model::{Model, Msg};
use super::sync;
use crate::money::format_signed_cents;
use yew::prelude::*;

/// How often the session's time is shown anew, and its reality check looked for.
const TICK_MS: u32 = 15_000;

/// The session asked again whenever the balance changes (a purchase, a win), and its time moved on
/// every [`TICK_MS`]; once the check falls due by the page's reckoning, the server is asked (it says
/// whether it is, and records it shown). Returns the tick, to render with.
#[hook]
pub fn use_play_time(model: &UseReducerHandle<Model>) -> u32 {
    let tick = use_state(|| 0u32);
    let signed_in = model.jwks.is_some();
    let dispatch = model.dispatcher();
    use_effect_with((model.balance, signed_in), move |(_, signed_in)| {
        if *signed_in {
            yew::platform::spawn_local(sync::refresh_session(dispatch));
        }
    });
    {
        let tick = tick.clone();
        use_effect_with((), move |_| {
            let interval = gloo_timers::callback::Interval::new(TICK_MS, move || tick.set(tick.wrapping_add(1)));
            move || drop(interval)
        });
    }
    let due =
        model.session.as_ref().is_some_and(|(s, at)| !s.reality_check_due && server_now(s, *at) >= s.reality_due_at);
    let dispatch = model.dispatcher();
    use_effect_with((*tick, due), move |(_, due)| {
        if *due {
            yew::platform::spawn_local(sync::refresh_session(dispatch));
        }
    });
    *tick
}

/// The server's time now, reckoned from the session as last asked (`fetched`: the page's clock then).
fn server_now(session: &api::PlaySession, fetched: f64) -> i64 {
    session.started_at + session.check.session_seconds + ((js_sys::Date::now() - fetched) / 1000.0) as i64
}

/// « 1 h 05 » or « 12 min ».
fn duration_fr(seconds: i64) -> String {
    let minutes = seconds.max(0) / 60;
    if minutes < 60 { format!("{minutes} min") } else { format!("{} h {:02}", minutes / 60, minutes % 60) }
}

/// The session's time and net, beside the balance.
pub fn session_line(model: &Model) -> Html {
    let Some((session, fetched)) = &model.session else { return html! {} };
    let seconds = server_now(session, *fetched) - session.started_at;
    html! {
        <span class="session-line" data-testid="session-line" title="Durée de la session et résultat net (mises − \
            gains)">
            { format!("Session {} · net {}", duration_fr(seconds), format_signed_cents(-session.check.net_cents)) }
        </span>
    }
}

/// The reality check: time, staked, won, net, with « Continuer » and « Arrêter » (which signs out).
pub fn reality_dialog(check: &api::RealityCheck, dispatch: &UseReducerDispatcher<Model>) -> Html {
    let on_continue = {
        let dispatch = dispatch.clone();
        Callback::from(move |_: MouseEvent| {
            let dispatch = dispatch.clone();
            yew::platform::spawn_local(async move {
                match api::acknowledge_reality_check().await {
                    Ok(session) => dispatch.dispatch(Msg::Session(session)),
                    Err(e) => dispatch.dispatch(Msg::Fail(e.message_fr())),
                }
            });
        })
    };
    let on_stop = Callback::from(|_: MouseEvent| super::account::log_out());
    html! {
        <div class="reality-backdrop">
            <section class="reality-check" role="alertdialog" aria-modal="true" aria-labelledby="reality-title"
                data-testid="reality-check">
                <h2 id="reality-title">{ "Faites le point" }</h2>
                <p class="reality-facts" data-testid="reality-facts">{ format!(
                    "Vous jouez depuis {}. {} ticket{} : mises {}, gains {}, résultat net {}.",
                    duration_fr(check.session_seconds),
                    check.tickets,
                    if check.tickets > 1 { "s" } else { "" },
                    crate::money::Cents(check.staked_cents),
                    crate::money::Cents(check.won_cents),
                    format_signed_cents(-check.net_cents)
                ) }</p>
                <div class="reality-actions">
                    <button class="play auto" data-testid="reality-continue" onclick={on_continue} autofocus=true>{
                        "Continuer" }</button>
                    <button class="play retry" data-testid="reality-stop" onclick={on_stop}>{ "Arrêter" }</button>
                </div>
                <p class="reality-more"><a href="/jeu-responsable/">{ "Limites, pauses et auto-exclusion" }</a></p>
            </section>
        </div>
    }
}
