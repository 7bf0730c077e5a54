//! A ticket's result above it: « Gagné ! » with the amount counting up (as the player watches the
//! ticket end; at once for one recalled), and a celebration that grows
//! with the lot; « Pas de gain cette fois »; « Rejouer ». Its room is kept while the game goes on, so
//! that nothing moves when it shows.

use crate::money::Cents;
use crate::play::Mode;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ResultProps {
    pub ticket_id: AttrValue,
    pub completed: bool,
    pub lot: Cents,
    /// The mode « Rejouer » buys in; `None` for a ticket recalled, which offers no replay.
    pub replay: Option<Mode>,
    pub can_buy: bool,
    pub on_buy: Callback<Option<Mode>>,
}

/// How big a celebration a lot earns: a class the style grows with it (a stake won back gets none; from
/// 10 € the banner glows, from 50 € confetti fall, from 1 000 € more of them).
fn celebration(lot: Cents) -> Option<&'static str> {
    match lot.0 / 100 {
        0..10 => None,
        10..50 => Some("good"),
        50..1_000 => Some("big"),
        _ => Some("jackpot"),
    }
}

/// Falling confetti: more of them for a bigger lot.
fn confetti(lot: Cents) -> Html {
    let pieces = if lot >= Cents::euros(1_000) { 48 } else { 20 };
    html! {
        <div class="confetti" aria-hidden="true">
            { for (0..pieces).map(|i| {
                // Spread evenly, with a pseudo-random delay and hue per piece.
                let style = format!("left:{}%;animation-delay:{}ms;--hue:{}", (i * 37) % 100, (i * 97) % 900, (i * 53)
                    % 360);
                html! { <i {style}></i> }
            }) }
        </div>
    }
}

/// Counts the amount won up from zero in `amount`; the returned interval stops it when dropped. The
/// element says `data-counted="true"` once the count reaches the amount (tests wait for it).
fn count_up(amount: &NodeRef, target: Cents) -> Option<gloo_timers::callback::Interval> {
    let element = amount.cast::<web_sys::Element>()?;
    // Yew's own text node, changed in place, so that Yew's next render of it finds what it made.
    let text = element.first_child()?;
    let start = js_sys::Date::now();
    // Longer for a bigger win: 0.6 s for a few euros, about 2 s for 40 000 €.
    let duration = 600.0 + 300.0 * (target.0 as f64 / 100.0).max(1.0).log10();
    text.set_node_value(Some(&Cents::ZERO.to_string()));
    Some(gloo_timers::callback::Interval::new(33, move || {
        let t = ((js_sys::Date::now() - start) / duration).clamp(0.0, 1.0);
        let shown =
            if t >= 1.0 { target } else { Cents((target.0 as f64 * (1.0 - (1.0 - t).powi(3)) / 100.0) as u64 * 100) };
        text.set_node_value(Some(&shown.to_string()));
        if t >= 1.0 {
            _ = element.set_attribute("data-counted", "true");
        }
    }))
}

#[function_component(TicketResult)]
pub fn ticket_result(props: &ResultProps) -> Html {
    let amount = use_node_ref();
    let won = !props.lot.is_zero();
    // Only a win the player watches end counts up: a ticket recalled or reopened finished (or gone
    // back to after a recall) shows its amount at once.
    let watched = {
        let in_play = use_mut_ref(|| None::<AttrValue>);
        let mut in_play = in_play.borrow_mut();
        if !props.completed {
            *in_play = Some(props.ticket_id.clone());
        } else if in_play.as_ref() != Some(&props.ticket_id) {
            *in_play = None;
        }
        in_play.is_some()
    };
    // A win the player watches end counts up, unless they ask for less motion.
    let counts_up = props.completed && won && watched && !super::scratch_zone::prefers_reduced_motion();
    {
        let amount = amount.clone();
        let counted = counts_up.then(|| (props.ticket_id.clone(), props.lot));
        use_effect_with(counted, move |counted| {
            let counting = counted.as_ref().and_then(|(_, lot)| count_up(&amount, *lot));
            move || drop(counting)
        });
    }
    if !props.completed {
        // The same element as the result to come (a live region: screen readers announce it).
        return html! { <div class="result pending" role="status"></div> };
    }
    let lot = props.lot;
    html! {
        <div class={classes!("result", won.then_some("won"), celebration(lot))} role="status" data-testid="result">
            if won {
                <span class="result-title">{ "Gagné !" }</span>
                <span class="result-amount" ref={amount} data-testid="result-amount"
                    data-counted={(!counts_up).to_string()}>{ lot.to_string() }</span>
            } else {
                <span class="result-title">{ "Pas de gain cette fois" }</span>
            }
            if let Some(mode) = props.replay {
                <button class="replay" data-testid="replay" disabled={!props.can_buy}
                    onclick={props.on_buy.reform(move |_: MouseEvent| Some(mode))}>{ "Rejouer" }</button>
            }
            if lot >= Cents::euros(50) && !super::scratch_zone::prefers_reduced_motion() { { confetti(lot) } }
        </div>
    }
}
