//! The buy buttons: « Jouez », « Auto », and « Réessayer l'achat » for a purchase left unanswered.

use crate::play::Mode;
use crate::rules::prize_table::TICKET_PRICE;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ControlsProps {
    pub can_buy: bool,
    /// A purchase the server has not answered, and no try of it under way: it may be sent again.
    pub can_retry: bool,
    /// Buys in a mode, or with `None` sends the unanswered purchase again.
    pub on_buy: Callback<Option<Mode>>,
}

#[function_component(Controls)]
pub fn controls(props: &ControlsProps) -> Html {
    let buy = |mode: Option<Mode>| props.on_buy.reform(move |_: MouseEvent| mode);
    html! {
        <div class="controls">
            <button class="play jouez" data-testid="play-jouez" disabled={!props.can_buy} onclick={buy(Some(Mode::Jouez))}>
                { "Jouez" }<small>{ format!("{TICKET_PRICE} — vous grattez") }</small>
            </button>
            <button class="play auto" data-testid="play-auto" disabled={!props.can_buy} onclick={buy(Some(Mode::Auto))}>
                { "Auto" }<small>{ format!("{TICKET_PRICE} — tout se découvre") }</small>
            </button>
            if props.can_retry {
                <button class="play retry" data-testid="retry-purchase" onclick={buy(None)}>
                    { "Réessayer l'achat" }<small>{ "le même ticket, jamais deux fois" }</small>
                </button>
            }
        </div>
    }
}
