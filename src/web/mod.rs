//! The web app (wasm32): the game players see, and the designers' preview, on two hash routes.
//!
//! - [`game`] (`/#/`, the default): the Yew game talking to the ticket server.
//! - [`preview`] (`/#/preview`): every surface and ticket of the gallery, composed in the browser with no
//!   server, for designers.
//! - [`ticket`]: the ticket card and the artwork of every symbol, shared by both.
//! - [`scratch_zone`]: one canvas scratch zone.
//! - [`api`]: the ticket server's API.
//!
//! Every ticket is verified ([`game::open_ticket`]) — signature against the JWKS, lot re-read by the
//! shared evaluator — before anything of it is drawn; the preview goes through the same check with a
//! throw-away key.

pub mod api;
pub mod game;
pub mod preview;
pub mod scratch_zone;
pub mod ticket;

use yew::prelude::*;
use yew_router::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Routable)]
pub enum Route {
    #[at("/")]
    Game,
    #[at("/preview")]
    Preview,
    /// Any other hash plays the game rather than showing an error page.
    #[not_found]
    #[at("/jeu")]
    Other,
}

#[function_component(Root)]
fn root() -> Html {
    html! {
        <HashRouter>
            <Switch<Route> render={|route| match route {
                Route::Preview => html! { <preview::Preview /> },
                Route::Game | Route::Other => html! { <game::App /> },
            }} />
        </HashRouter>
    }
}

pub fn start() {
    yew::Renderer::<Root>::new().render();
}
