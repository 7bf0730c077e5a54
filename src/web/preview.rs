//! The designers' preview (`preview.html`, at `/preview/`): every specimen of the [`gallery`] drawn by the game's own
//! components, with no server. Whole tickets are signed with a throw-away key made in the page and
//! opened by the game's own checks (its claims and lot; the signature by [`crate::payload::verify`]
//! where the game has the browser check it); single surfaces are read
//! by the evaluator. A specimen that the composer and the evaluator disagree on shows the error instead.
//!
//! The URL holds what a designer shares: `#/preview?seed=…&item=…` names one exact picture. A design
//! file loaded from the page replaces the shipped one until the page is reloaded; a file the
//! validator refuses leaves the gallery as it was and shows the validator's message.
//!
//! Each specimen has its own controls: foil covered, half scratched or uncovered; the « Auto »
//! animation replayed; phone or desktop width; and a device pixel ratio of 1, 2 or 3. The pixel ratio
//! is simulated faithfully: foils are painted at that ratio and the specimen is zoomed by
//! ratio ÷ screen ratio, so the screen shows the very pixels such a device would.

use super::scratch_zone::{FoilSettings, auto_pause_ms};
use super::ticket::{SurfaceCard, TicketCard};
use super::trust::{game_at, refusal};
use crate::api::{TicketState, TicketView};
use crate::composer::Design;
use crate::gallery::{Shows, Specimen, gallery};
use crate::payload::{FORMAT_VERSION, Jwks, Serial, TicketClaims, TicketSigner};
use crate::play::{Game, Mode};
use crate::rules::Zone;
use serde::{Deserialize, Serialize};
use std::rc::Rc;
use wasm_bindgen_futures::JsFuture;
use web_sys::HtmlInputElement;
use yew::prelude::*;
use yew_router::prelude::*;

const DEFAULT_SEED: &str = "vegas";

/// `#/preview?seed=…&item=…` names one exact picture to share; any other route shows the preview too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Routable)]
pub enum Route {
    #[at("/preview")]
    Preview,
    #[not_found]
    #[at("/")]
    Other,
}

#[function_component(Root)]
fn root() -> Html {
    html! {
        <HashRouter>
            <Switch<Route> render={|_| html! { <Preview /> }} />
        </HashRouter>
    }
}

pub fn start() {
    yew::Renderer::<Root>::new().render();
}

/// `#/preview?seed=…&item=…`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct Query {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<String>,
    /// Show this specimen alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    item: Option<String>,
}

/// The page's own signing key and its JWKS. It signs nothing that leaves the page, so should the
/// browser refuse randomness the all-zero key would do as well.
struct LocalKey {
    signer: TicketSigner,
    jwks: Jwks,
}

fn local_key() -> LocalKey {
    let mut secret = [0u8; 32];
    if let Some(crypto) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = crypto.get_random_values_with_u8_array(&mut secret);
    }
    let signer = TicketSigner::from_secret(secret);
    let jwks = signer.jwks();
    LocalKey { signer, jwks }
}

/// A specimen and the game that draws it, or why it cannot be drawn.
#[derive(PartialEq)]
struct Prepared {
    specimen: Specimen,
    game: Result<Game, String>,
}

fn prepare(specimen: Specimen, index: u32, key: &LocalKey) -> Prepared {
    let game = match specimen.shows {
        Shows::Ticket => {
            let claims = TicketClaims {
                v: FORMAT_VERSION,
                jti: specimen.id.clone(),
                sub: "aperçu".into(),
                iat: 0,
                serial: Serial { emission: 0, block: 0, index },
                zones: specimen.ticket.clone(),
                lot_cents: specimen.win,
                salt: None,
                qa: false,
            };
            let view = TicketView {
                id: specimen.id.clone(),
                serial: specimen.id.clone(),
                mode: Mode::Auto,
                payload: key.signer.sign(&claims),
                revealed: Vec::new(),
                revealed_at: Vec::new(),
                first_surface: None,
                state: TicketState::Playing,
                win_cents: None,
                sold_at: 0,
            };
            crate::payload::verify(&view.payload, &key.jwks)
                .map(|verified| game_at(&view, verified))
                .map_err(|e| refusal(&e))
        }
        Shows::Surface(surface) => match specimen.ticket.read_surfaces() {
            Ok(outcome) if outcome.surface_win(surface) == specimen.win => Ok(Game {
                ticket_id: specimen.id.clone(),
                serial: specimen.id.clone(),
                mode: Mode::Auto,
                ticket: specimen.ticket.clone(),
                outcome,
                revealed: Vec::new(),
                chosen: None,
                completed: false,
            }),
            Ok(outcome) => Err(format!(
                "Le composeur visait {}, l'évaluateur lit {}.",
                specimen.win.short(),
                outcome.surface_win(surface).short()
            )),
            Err(e) => Err(format!("Surface illisible : {e}")),
        },
    };
    Prepared { specimen, game }
}

/// The design in use and where it came from.
#[derive(Clone)]
struct Loaded {
    name: String,
    design: Rc<Design>,
}

fn shipped_design() -> Loaded {
    Loaded { name: "static/design.toml (fourni)".into(), design: Rc::new(Design::default_design()) }
}

/// The screen's pixel ratio as one of the choices offered (1, 2 or 3).
fn screen_ratio() -> u8 {
    web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()).round().clamp(1.0, 3.0) as u8
}

fn section_title(shows: Shows) -> &'static str {
    match shows {
        Shows::Surface(s) => s.name_fr(),
        Shows::Ticket => "Tickets complets",
    }
}

#[function_component(Preview)]
pub fn preview() -> Html {
    let query = use_location().and_then(|l| l.query::<Query>().ok()).unwrap_or_default();
    let navigator = use_navigator();
    let seed = query.seed.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_SEED.into());
    let loaded = use_state(shipped_design);
    let refusal = use_state(|| None::<String>);
    let key = use_memo((), |_| local_key());
    let specimens = {
        let (design, key) = (loaded.design.clone(), key.clone());
        use_memo((loaded.design.hash, seed.clone()), move |(_, seed)| {
            gallery(&design, seed).into_iter().zip(0..).map(|(s, i)| Rc::new(prepare(s, i, &key))).collect::<Vec<_>>()
        })
    };

    let on_seed = {
        let (navigator, item) = (navigator.clone(), query.item.clone());
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            if let Some(nav) = &navigator {
                let _ =
                    nav.replace_with_query(&Route::Preview, &Query { seed: Some(input.value()), item: item.clone() });
            }
        })
    };
    let on_file = {
        let (loaded, refusal) = (loaded.clone(), refusal.clone());
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let Some(file) = input.files().and_then(|files| files.get(0)) else { return };
            // Let the same file be chosen again once the designer has edited it.
            input.set_value("");
            let (loaded, refusal) = (loaded.clone(), refusal.clone());
            yew::platform::spawn_local(async move {
                let name = file.name();
                let text = JsFuture::from(file.text()).await.ok().and_then(|t| t.as_string());
                match text.map(|t| Design::from_toml(&t)) {
                    Some(Ok(design)) => {
                        loaded.set(Loaded { name, design: Rc::new(design) });
                        refusal.set(None);
                    }
                    Some(Err(e)) => refusal.set(Some(format!(
                        "« {name} » est refusé, la galerie reste celle de « {} » : {e}",
                        loaded.name
                    ))),
                    None => refusal.set(Some(format!("« {name} » n'a pas pu être lu comme un fichier texte."))),
                }
            });
        })
    };
    let on_reset = {
        let (loaded, refusal) = (loaded.clone(), refusal.clone());
        Callback::from(move |_: MouseEvent| {
            loaded.set(shipped_design());
            refusal.set(None);
        })
    };

    let shown: Vec<&Rc<Prepared>> =
        specimens.iter().filter(|p| query.item.as_ref().is_none_or(|id| *id == p.specimen.id)).collect();
    let mut sections: Vec<(Shows, Vec<&Rc<Prepared>>)> = Vec::new();
    for p in shown {
        match sections.last_mut() {
            Some((shows, items)) if *shows == p.specimen.shows => items.push(p),
            _ => sections.push((p.specimen.shows, vec![p])),
        }
    }
    let whole_gallery = query.item.as_ref().map(|_| {
        html! {
            <Link<Route, Query> to={Route::Preview} query={Some(Query { seed: Some(seed.clone()), item: None })}
                classes="back">
                { "← Toute la galerie" }
            </Link<Route, Query>>
        }
    });

    html! {
        <div class="preview">
            <header class="preview-bar">
                <h1 class="logo">{ "Vegas" }<small>{ "aperçu des visuels" }</small></h1>
                <label class="field">
                    <span>{ "Graine" }</span>
                    <input type="text" data-testid="seed" value={seed.clone()} onchange={on_seed} spellcheck="false"
                        title="Une même graine redonne les mêmes tickets : partagez le lien d'un visuel." />
                </label>
                <div class="field">
                    <span>{ "Fichier de design" }</span>
                    <span class="design-actions">
                        // The input is hidden behind its label so that the button reads in French in every browser.
                        <label class="button">
                            { "Charger un fichier…" }
                            <input type="file" class="sr-only" accept=".toml,text/plain" data-testid="design-file"
                                onchange={on_file} />
                        </label>
                        <button class="button" data-testid="design-reset" onclick={on_reset}>{
                            "Revenir au design fourni" }</button>
                        <a class="button" href="design.toml" download="design.toml">{ "Télécharger le design fourni"
                            }</a>
                    </span>
                </div>
                <p class="design-status" role="status" data-testid="design-status">
                    { format!("{} — {} motifs, {} visuels", loaded.name, loaded.design.patterns().len(),
                        specimens.len()) }
                </p>
            </header>
            if let Some(message) = (*refusal).clone() {
                <p class="error" role="alert" data-testid="design-error">{ message }</p>
            }
            { for whole_gallery }
            if sections.is_empty() {
                <p class="empty" data-testid="no-specimen">{ "Aucun visuel de ce nom dans ce design." }</p>
            }
            { for sections.into_iter().map(|(shows, items)| html! {
                <section class="preview-section" aria-label={section_title(shows)}>
                    <h2>{ section_title(shows) }</h2>
                    <div class="specimens">
                        { for items.into_iter().map(|p| html! {
                            <SpecimenView key={p.specimen.id.clone()} prepared={p.clone()} seed={seed.clone()} />
                        }) }
                    </div>
                </section>
            }) }
        </div>
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Foil {
    Covered,
    Half,
    Uncovered,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Width {
    Phone,
    Desktop,
}

impl Width {
    /// The ticket's width in CSS pixels: a 390 px phone less the page's margins, or the game's desktop
    /// column; a lone surface takes half of the desktop ticket, as on it.
    fn css_px(self, shows: Shows) -> u32 {
        match (self, shows) {
            (Width::Phone, _) => 358,
            (Width::Desktop, Shows::Ticket) => 870,
            (Width::Desktop, Shows::Surface(_)) => 440,
        }
    }
}

#[derive(Properties, PartialEq)]
struct SpecimenProps {
    prepared: Rc<Prepared>,
    seed: AttrValue,
}

/// A row of toggle buttons, one pressed.
fn choice<T: Copy + PartialEq + 'static>(
    label: &str,
    current: T,
    options: &[(T, &str, &str)],
    pick: Callback<T>,
) -> Html {
    html! {
        <span class="choice" role="group" aria-label={label.to_owned()}>
            { for options.iter().map(|&(value, text, testid)| {
                let pick = pick.clone();
                html! {
                    <button data-testid={testid.to_owned()} aria-pressed={(value == current).to_string()}
                        onclick={Callback::from(move |_| pick.emit(value))}>{ text }</button>
                }
            }) }
        </span>
    }
}

/// A control's callback: stops any replay, then sets the control's state.
fn setter<T: 'static>(state: &UseStateHandle<T>, stop_replay: &Rc<dyn Fn()>) -> Callback<T> {
    let (state, stop_replay) = (state.clone(), stop_replay.clone());
    Callback::from(move |value| {
        stop_replay();
        state.set(value);
    })
}

#[function_component(SpecimenView)]
fn specimen_view(props: &SpecimenProps) -> Html {
    let foil = use_state(|| Foil::Uncovered);
    let width = use_state(|| Width::Desktop);
    let ratio = use_state(screen_ratio);
    // The zones the replayed « Auto » has uncovered so far; `None` when no replay is on.
    let replayed = use_state(|| None::<Vec<Zone>>);
    // Bumped by every replay and every change of control, so that a replay still running stops.
    let run = use_mut_ref(|| 0u32);
    let specimen = &props.prepared.specimen;
    let zones: Vec<Zone> = match specimen.shows {
        Shows::Surface(s) => s.zones().collect(),
        Shows::Ticket => Zone::ALL.to_vec(),
    };

    let stop_replay: Rc<dyn Fn()> = {
        let (run, replayed) = (run.clone(), replayed.clone());
        Rc::new(move || {
            *run.borrow_mut() += 1;
            replayed.set(None);
        })
    };
    let (on_foil, on_width, on_ratio) =
        (setter(&foil, &stop_replay), setter(&width, &stop_replay), setter(&ratio, &stop_replay));
    let on_replay = {
        let (run, replayed, zones) = (run.clone(), replayed.clone(), zones.clone());
        Callback::from(move |_: MouseEvent| {
            let this_run = {
                let mut run = run.borrow_mut();
                *run += 1;
                *run
            };
            replayed.set(Some(Vec::new()));
            let (run, replayed, zones) = (run.clone(), replayed.clone(), zones.clone());
            yew::platform::spawn_local(async move {
                let mut uncovered = Vec::new();
                for zone in zones {
                    gloo_timers::future::TimeoutFuture::new(auto_pause_ms()).await;
                    if *run.borrow() != this_run {
                        return;
                    }
                    uncovered.push(zone);
                    replayed.set(Some(uncovered.clone()));
                }
            });
        })
    };

    let drawing = match &props.prepared.game {
        Err(e) => html! { <p class="error" role="alert" data-testid="specimen-error">{ e.clone() }</p> },
        Ok(game) => {
            let mut game = game.clone();
            game.revealed = match (&*replayed, *foil) {
                (Some(uncovered), _) => uncovered.clone(),
                (None, Foil::Uncovered) => zones.clone(),
                (None, Foil::Covered | Foil::Half) => Vec::new(),
            };
            let settings = FoilSettings {
                pixel_ratio: Some(f64::from(*ratio)),
                half_scratched: replayed.is_none() && *foil == Foil::Half,
            };
            // A fresh card for every setting: foils are painted once, at mount, for their size and ratio.
            let key = format!("{:?}-{:?}-{}-{}", *foil, *width, *ratio, run.borrow());
            let card = match specimen.shows {
                Shows::Surface(surface) => html! { <SurfaceCard {key} {game} {surface} /> },
                Shows::Ticket => {
                    html! { <TicketCard {key} {game} on_reveal={Callback::noop()} on_choose={Callback::noop()} /> }
                }
            };
            let screen = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio());
            let style = format!("width: {}px; zoom: {}", width.css_px(specimen.shows), f64::from(*ratio) / screen);
            html! {
                <div class="specimen-frame" data-testid="specimen-frame" {style}>
                    <ContextProvider<FoilSettings> context={settings}>{ card }</ContextProvider<FoilSettings>>
                </div>
            }
        }
    };
    let share = Query { seed: Some(props.seed.to_string()), item: Some(specimen.id.clone()) };
    html! {
        <article class="specimen" data-testid={format!("specimen-{}", specimen.id)}>
            <header class="specimen-head">
                <h3>{ &specimen.title }</h3>
                <span class="expected">{ if specimen.win.is_zero() { "aucun gain".to_owned() } else {
                    format!("gain {}", specimen.win.short()) } }</span>
            </header>
            <div class="specimen-controls">
                { choice("Grattage", *foil, &[(Foil::Covered, "Couvert", "show-covered"), (Foil::Half, "À moitié",
                    "show-half"), (Foil::Uncovered, "Découvert", "show-uncovered")], on_foil) }
                <button class="replay" data-testid="replay" onclick={on_replay}
                    aria-pressed={replayed.is_some().to_string()}>{ "▶ Auto" }</button>
                { choice("Largeur", *width, &[(Width::Phone, "Mobile", "width-phone"), (Width::Desktop, "Bureau",
                    "width-desktop")], on_width) }
                { choice("Densité de pixels", *ratio, &[(1, "1×", "ratio-1"), (2, "2×", "ratio-2"), (3, "3×",
                    "ratio-3")], on_ratio) }
                <span data-testid="share">
                    <Link<Route, Query> to={Route::Preview} query={Some(share)} classes="share">{ "Lien"
                        }</Link<Route, Query>>
                </span>
            </div>
            { drawing }
        </article>
    }
}
