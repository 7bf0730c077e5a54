//! The buy buttons: « Jouez », « Auto », and « Réessayer l'achat » for a purchase left unanswered. A
//! function rather than a component: each component type brings kilobytes of Yew's generic code into
//! the players' download.

use crate::play::Mode;
use crate::rules::prize_table::TICKET_PRICE;
use yew::prelude::*;

/// The buttons; `can_retry`: a purchase the server has not answered, and no try of it under way, may be
/// sent again. `on_buy` buys in a mode, or with `None` sends the unanswered purchase again.
pub fn controls(can_buy: bool, can_retry: bool, on_buy: &Callback<Option<Mode>>) -> Html {
    let buy = |mode: Option<Mode>| on_buy.reform(move |_: MouseEvent| mode);
    html! {
        <div class="controls">
            <button class="play jouez" data-testid="play-jouez" disabled={!can_buy} onclick={buy(Some(Mode::Jouez))}>
                { "Jouez" }<small>{ format!("{TICKET_PRICE} — vous grattez") }</small>
            </button>
            <button class="play auto" data-testid="play-auto" disabled={!can_buy} onclick={buy(Some(Mode::Auto))}>
                { "Auto" }<small>{ format!("{TICKET_PRICE} — tout se découvre") }</small>
            </button>
            if can_retry {
                <button class="play retry" data-testid="retry-purchase" onclick={buy(None)}>
                    { "Réessayer l'achat" }<small>{ "le même ticket, jamais deux fois" }</small>
                </button>
            }
        </div>
    }
}
