//! The ticket card: the four surfaces drawn as a casino table, each hidden zone under a
//! [`ScratchZone`]. All the artwork of the symbols is here (HTML + CSS in `static/vegas.css`, inline SVG).

use super::scratch_zone::ScratchZone;
use crate::play::{Game, Mode};
use crate::rules::{Card, Reel, ReelsWin, Stake, Surface, Throw, Zone, serde_name};
use yew::prelude::*;

// Every piece of artwork takes `win`: set once its surface is uncovered, it marks the symbols that pay.

fn card(c: Card, win: bool) -> Html {
    let colour = if c.suit.is_red() { "red" } else { "black" };
    html! {
        <div class={classes!("card", colour, win.then_some("win"))}>
            <span class="rank">{ c.value.symbol() }</span>
            <span class="suit">{ c.suit.symbol() }</span>
            <span class="rank bottom">{ c.value.symbol() }</span>
        </div>
    }
}

/// A die as the regulation prints it: its digit (« un chiffre … séparés par un signe + »).
fn die(face: u8) -> Html {
    html! { <span class="die">{ face }</span> }
}

fn throw(t: Throw, win: bool) -> Html {
    html! { <div class={classes!("throw", win.then_some("win"))}>{ die(t.0) }<span class="plus">{ "+" }</span>{
    die(t.1) }</div> }
}

const CHERRY_SVG: &str = "M12 3c3 1 6 5 7 10M12 3c-1 4-4 7-6 10";

fn reel(r: Reel, win: bool) -> Html {
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
    html! { <div class={classes!("reel", win.then_some("win"))}>{ symbol }</div> }
}

/// A stake on the felt: a stack of chips with its number on the top chip, and the amount it pays.
fn stake(s: Stake, win: bool) -> Html {
    html! {
        <div class={classes!("chips", win.then_some("win"))}>
            <span class="chip-number">{ s.number }</span>
            <span class="chip-amount">{ s.amount.short() }</span>
        </div>
    }
}

/// Everything a surface needs to draw itself from a game.
struct Table<'a> {
    game: &'a Game,
    on_reveal: &'a Callback<Zone>,
    on_choose: &'a Callback<Surface>,
}

impl Table<'_> {
    /// Zone `z` over its artwork; a screen reader reads what it hides (`Ticket::zone_fr`).
    fn zone(&self, z: Zone, class: &'static str, content: Html) -> Html {
        let g = self.game;
        html! {
            <ScratchZone zone={z} ticket_id={g.ticket_id.clone()} scratchable={g.can_scratch(z)}
                revealed={g.is_revealed(z)} alt={g.ticket.zone_fr(z)}
                on_reveal={self.on_reveal.clone()} class={classes!(class)}>{ content }</ScratchZone>
        }
    }

    /// The hidden zones of one surface, each over its artwork.
    fn zones(&self, s: Surface) -> Html {
        let (t, o) = (&self.game.ticket, &self.game.outcome);
        // Winning symbols are marked once the surface shows its win, not while it is being scratched.
        let paid = self.game.shown_win(s).is_some_and(|w| !w.is_zero());
        match s {
            Surface::Poker => {
                let repeated = |c: &Card| paid && t.poker.cards().filter(|other| other.value == c.value).count() > 1;
                html! {
                    <div class="poker-row">
                        { self.zone(Zone::PokerHand, "hand", html! { <div class="cards">{ for
                            t.poker.hand.iter().map(|c| card(*c, repeated(c))) }</div> }) }
                        { self.zone(Zone::PokerBonus, "bonus-card", card(t.poker.bonus, repeated(&t.poker.bonus))) }
                    </div>
                }
            }
            Surface::Roulette => {
                let stakes = [Zone::RouletteStake1, Zone::RouletteStake2, Zone::RouletteStake3];
                let wheel_wins = paid && o.roulette_stake.is_some();
                html! {
                    <div class="roulette-row">
                        { self.zone(Zone::RouletteWheel, "wheel",
                            html! { <div class={classes!("wheel-face", wheel_wins.then_some("win"))}><span>{
                                t.roulette.wheel }</span></div> }) }
                        <div class="stakes">
                            { for stakes.iter().zip(t.roulette.stakes).enumerate().map(|(i, (&z, s))| self.zone(z,
                                "stake", stake(s, paid && o.roulette_stake == Some(i)))) }
                        </div>
                    </div>
                }
            }
            Surface::Craps => {
                let throws = [Zone::CrapsThrow1, Zone::CrapsThrow2, Zone::CrapsThrow3, Zone::CrapsThrow4];
                html! {
                    <div class="throws">
                        { for throws.iter().zip(t.craps.throws).zip(o.craps_throws).map(|((&z, th), won)| html! {
                            <div class="throw-slot">{ self.zone(z, "throw-zone", throw(th, paid && !won.is_zero()))
                                }</div>
                        }) }
                    </div>
                }
            }
            Surface::Jackpot => {
                let pays = |r: Reel| {
                    paid && (o.reels.triple() == Some(r) || (o.reels == ReelsWin::OneCherry && r == Reel::Cherry))
                };
                let tray = t.jackpot.tray.short();
                html! {
                    <div class="slot-machine">
                        { self.zone(Zone::JackpotReels, "reels", html! { <div class="reel-row">{ for
                            t.jackpot.reels.iter().map(|&r| reel(r, pays(r))) }</div> }) }
                        { self.zone(Zone::JackpotTray, "tray", html! {
                            <div class={classes!("coins", (paid && !o.tray.is_zero()).then_some("win"))}><span>{ tray
                                }</span></div>
                        }) }
                    </div>
                }
            }
        }
    }

    /// One surface: its title, zones, its win once uncovered, and the « Jouez » choice button.
    fn surface(&self, s: Surface, in_view: bool) -> Html {
        let g = self.game;
        // « Jouez » marks the surface the player chose; « Auto » has no first surface to mark.
        let first = g.mode == Mode::Jouez && g.first_surface() == Some(s);
        let locked =
            g.mode == Mode::Jouez && !g.needs_choice() && s.zones().all(|z| !g.can_scratch(z) && !g.is_revealed(z));
        let slug = serde_name(s);
        let result = match g.shown_win(s) {
            Some(w) if !w.is_zero() => {
                html! { <p class="surface-win won" data-testid={format!("win-{slug}")}>{ format!("Gagné : {w}") }</p> }
            }
            Some(_) => html! { <p class="surface-win" data-testid={format!("win-{slug}")}>{ "Perdu" }</p> },
            None => html! { <p class="surface-win pending">{ "\u{a0}" }</p> },
        };
        let choose = g.needs_choice().then(|| {
            let on_choose = self.on_choose.clone();
            html! {
                <button class="choose" data-testid={format!("choose-{slug}")} onclick={Callback::from(move |_|
                    on_choose.emit(s))}>
                    { format!("Commencer par {}", s.name_fr()) }
                </button>
            }
        });
        html! {
            <section class={classes!("surface", slug.clone(), first.then_some("first"), locked.then_some("locked"),
                in_view.then_some("in-view"))}
                     data-testid={format!("surface-{slug}")} data-locked={locked.to_string()}
                     aria-label={if locked { format!("{} (verrouillée : finissez d'abord la première \
                         surface)", s.name_fr()) } else { s.name_fr().to_owned() }}>
                <h2>{ s.name_fr() }</h2>
                { self.zones(s) }
                { result }
                { for choose }
            </section>
        }
    }
}

fn ticket_head(g: &Game) -> Html {
    html! {
        <header class="ticket-head">
            <span class="ticket-logo">{ "VEGAS" }</span>
            <span class="serial" data-testid="serial">{ format!("N° {}", g.serial) }</span>
            <span class="mode">{ if g.mode == Mode::Auto { "Auto" } else { "Jouez" } }</span>
        </header>
    }
}

#[derive(Properties, PartialEq)]
pub struct Props {
    pub game: Game,
    pub on_reveal: Callback<Zone>,
    pub on_choose: Callback<Surface>,
}

/// The whole ticket: four surfaces on one card. On a narrow card (a phone) it shows one surface at a
/// time, under tabs: the one in play ([`Game::surface_in_play`]), or the one the player picked.
#[function_component(TicketCard)]
pub fn ticket_card(props: &Props) -> Html {
    let g = &props.game;
    let table = Table { game: g, on_reveal: &props.on_reveal, on_choose: &props.on_choose };
    let picked = use_state_eq(|| None::<Surface>);
    {
        // Play moves the view on: a pick holds until the next zone is uncovered, or another ticket.
        let picked = picked.clone();
        use_effect_with((g.ticket_id.clone(), g.revealed.len()), move |_| picked.set(None));
    }
    let in_view = picked.unwrap_or_else(|| g.surface_in_play());
    let tab = |s: Surface| {
        let (picked, slug) = (picked.clone(), serde_name(s));
        let result = match g.shown_win(s) {
            Some(w) if !w.is_zero() => w.short(),
            Some(_) => "perdu".into(),
            None => "\u{a0}".into(),
        };
        html! {
            <button class="tab" data-testid={format!("tab-{slug}")} aria-pressed={(s == in_view).to_string()}
                onclick={Callback::from(move |_| picked.set(Some(s)))}>
                { s.name_fr() }<span class="tab-result">{ result }</span>
            </button>
        }
    };
    html! {
        <article class="ticket" tabindex="-1" data-testid="ticket" data-ticket-id={g.ticket_id.clone()}>
            { ticket_head(g) }
            if g.needs_choice() { <p class="hint" data-testid="choose-hint">{ "Choisissez la surface par laquelle \
                commencer." }</p> }
            <nav class="surface-tabs" aria-label="Surfaces du ticket">{ for Surface::ALL.map(tab) }</nav>
            <div class="surfaces">
                { for Surface::ALL.map(|s| table.surface(s, s == in_view)) }
            </div>
        </article>
    }
}

#[derive(Properties, PartialEq)]
pub struct SurfaceProps {
    pub game: Game,
    pub surface: Surface,
}

/// One surface alone on the ticket's card, as the designers' preview shows it (nothing to choose or scratch).
#[function_component(SurfaceCard)]
pub fn surface_card(props: &SurfaceProps) -> Html {
    let (on_reveal, on_choose) = (Callback::noop(), Callback::noop());
    let table = Table { game: &props.game, on_reveal: &on_reveal, on_choose: &on_choose };
    html! {
        <article class="ticket single-surface" data-testid="ticket">
            { ticket_head(&props.game) }
            <div class="surfaces">{ table.surface(props.surface, true) }</div>
        </article>
    }
}
