//! The ticket card: the four surfaces drawn as a casino table, each hidden zone under a
//! [`ScratchZone`]. All the artwork of the symbols is here (HTML + CSS in `static/vegas.css`, inline SVG).

use super::scratch_zone::ScratchZone;
use crate::money::Cents;
use crate::play::Game;
use crate::rules::{Card, Reel, Stake, Surface, Throw, Zone};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub game: Game,
    pub on_reveal: Callback<Zone>,
    pub on_choose: Callback<Surface>,
}

fn card(c: Card) -> Html {
    let colour = if c.suit.is_red() { "red" } else { "black" };
    html! {
        <div class={classes!("card", colour)}>
            <span class="rank">{ c.value.symbol() }</span>
            <span class="suit">{ c.suit.symbol() }</span>
            <span class="rank bottom">{ c.value.symbol() }</span>
        </div>
    }
}

fn card_alt(c: Card) -> String {
    format!("{} de {}", c.value.name_fr(), c.suit.name_fr())
}

fn die(face: u8) -> Html {
    // Pip positions on a 3 × 3 grid, as on a real die.
    let pips: &[usize] = match face {
        1 => &[4],
        2 => &[0, 8],
        3 => &[0, 4, 8],
        4 => &[0, 2, 6, 8],
        5 => &[0, 2, 4, 6, 8],
        _ => &[0, 2, 3, 5, 6, 8],
    };
    html! {
        <div class="die" aria-hidden="true">
            { for (0..9).map(|i| html! { <span class={classes!("pip", pips.contains(&i).then_some("on"))} /> }) }
        </div>
    }
}

fn throw(t: Throw) -> Html {
    html! { <div class="throw">{ die(t.0) }<span class="plus">{ "+" }</span>{ die(t.1) }</div> }
}

const CHERRY_SVG: &str = "M12 3c3 1 6 5 7 10M12 3c-1 4-4 7-6 10";

fn reel(r: Reel) -> Html {
    let symbol = match r {
        Reel::Seven => html! { <span class="seven">{ "7" }</span> },
        Reel::Crown => html! { <span class="crown">{ "♛" }</span> },
        Reel::Bar => html! { <span class="bar">{ "BAR" }</span> },
        Reel::Star => html! { <span class="star">{ "★" }</span> },
        Reel::Cherry => html! {
            <svg class="cherry" viewBox="0 0 24 24" aria-hidden="true">
                <path d={CHERRY_SVG} fill="none" stroke="#2f7d32" stroke-width="1.6" />
                <circle cx="6.5" cy="16.5" r="4.5" fill="#d01f2e" /><circle cx="18" cy="17" r="4.5" fill="#b3121f" />
                <circle cx="5" cy="15" r="1.2" fill="#ff8a8a" /><circle cx="16.5" cy="15.5" r="1.2" fill="#ff8a8a" />
            </svg>
        },
    };
    html! { <div class="reel">{ symbol }</div> }
}

/// Amounts printed on a ticket drop the cents (« 40 € », « 10 000 € »).
fn euros(c: Cents) -> String {
    c.to_string().replace(",00\u{a0}€", "\u{a0}€")
}

fn stake(s: Stake) -> Html {
    html! {
        <div class="chips">
            <span class="chip-number">{ s.number }</span>
            <span class="chip-amount">{ euros(s.amount) }</span>
        </div>
    }
}

#[function_component(TicketCard)]
pub fn ticket_card(props: &Props) -> Html {
    let g = &props.game;
    let t = &g.ticket;
    let zone = |z: Zone, alt: String, class: &'static str, content: Html| {
        html! {
            <ScratchZone zone={z} scratchable={g.can_scratch(z)} revealed={g.is_revealed(z)} alt={alt}
                on_reveal={props.on_reveal.clone()} class={classes!(class)}>{ content }</ScratchZone>
        }
    };
    let surface = |s: Surface, zones: Html| {
        let first = g.first_surface() == Some(s);
        let locked = !g.needs_choice() && s.zones().all(|z| !g.can_scratch(z) && !g.is_revealed(z)) && g.mode == crate::play::Mode::Jouez;
        let slug = format!("{s:?}").to_lowercase();
        let result = match g.shown_win(s) {
            Some(w) if !w.is_zero() => html! { <p class="surface-win won" data-testid={format!("win-{slug}")}>{ format!("Gagné : {w}") }</p> },
            Some(_) => html! { <p class="surface-win" data-testid={format!("win-{slug}")}>{ "Perdu" }</p> },
            None => html! { <p class="surface-win pending">{ "\u{a0}" }</p> },
        };
        let choose = g.needs_choice().then(|| {
            let on_choose = props.on_choose.clone();
            html! {
                <button class="choose" data-testid={format!("choose-{slug}")} onclick={Callback::from(move |_| on_choose.emit(s))}>
                    { format!("Commencer par {}", s.name_fr()) }
                </button>
            }
        });
        html! {
            <section class={classes!("surface", slug.clone(), first.then_some("first"), locked.then_some("locked"))}
                     data-testid={format!("surface-{slug}")} aria-label={s.name_fr()}>
                <h2>{ s.name_fr() }</h2>
                { zones }
                { result }
                { for choose }
            </section>
        }
    };

    let hand_alt = t.poker.hand.iter().map(|&c| card_alt(c)).collect::<Vec<_>>().join(", ");
    let poker = html! {
        <div class="poker-row">
            { zone(Zone::PokerHand, hand_alt, "hand", html! { <div class="cards">{ for t.poker.hand.iter().map(|&c| card(c)) }</div> }) }
            { zone(Zone::PokerBonus, card_alt(t.poker.bonus), "bonus-card", card(t.poker.bonus)) }
        </div>
    };
    let stakes = [Zone::RouletteStake1, Zone::RouletteStake2, Zone::RouletteStake3];
    let roulette = html! {
        <div class="roulette-row">
            { zone(Zone::RouletteWheel, format!("numéro {}", t.roulette.wheel), "wheel",
                html! { <div class="wheel-face"><span>{ t.roulette.wheel }</span></div> }) }
            <div class="stakes">
                { for stakes.iter().zip(t.roulette.stakes).map(|(&z, s)| zone(z, format!("numéro {}, {}", s.number, euros(s.amount)), "stake", stake(s))) }
            </div>
        </div>
    };
    let throws = [Zone::CrapsThrow1, Zone::CrapsThrow2, Zone::CrapsThrow3, Zone::CrapsThrow4];
    let craps = html! {
        <div class="throws">
            { for throws.iter().zip(t.craps.throws).map(|(&z, th)| html! {
                <div class="throw-slot">
                    { zone(z, format!("{} + {}", th.0, th.1), "throw-zone", throw(th)) }
                </div>
            }) }
        </div>
    };
    let reels_alt = t.jackpot.reels.iter().map(|r| r.name_fr()).collect::<Vec<_>>().join(", ");
    let jackpot = html! {
        <div class="slot-machine">
            { zone(Zone::JackpotReels, reels_alt, "reels", html! { <div class="reel-row">{ for t.jackpot.reels.iter().map(|&r| reel(r)) }</div> }) }
            { zone(Zone::JackpotTray, euros(t.jackpot.tray), "tray", html! { <div class="coins"><span>{ euros(t.jackpot.tray) }</span></div> }) }
        </div>
    };

    html! {
        <article class="ticket" data-testid="ticket" data-ticket-id={g.ticket_id.clone()}>
            <header class="ticket-head">
                <span class="ticket-logo">{ "VEGAS" }</span>
                <span class="serial" data-testid="serial">{ format!("N° {}", g.serial) }</span>
                <span class="mode">{ if g.mode == crate::play::Mode::Auto { "Auto" } else { "Jouez" } }</span>
            </header>
            { if g.needs_choice() { html! { <p class="hint" data-testid="choose-hint">{ "Choisissez la surface par laquelle commencer." }</p> } } else { html! {} } }
            <div class="surfaces">
                { surface(Surface::Poker, poker) }
                { surface(Surface::Roulette, roulette) }
                { surface(Surface::Craps, craps) }
                { surface(Surface::Jackpot, jackpot) }
            </div>
        </article>
    }
}
