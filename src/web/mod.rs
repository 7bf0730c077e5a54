//! The web app (wasm32), in four builds from the same components:
//!
//! - the game (`index.html`): [`game`], the Yew game talking to the ticket server — all that players
//!   download — with its state and messages in [`model`], and its components: [`wallet`],
//!   [`controls`], [`result`], [`history`];
//! - the designers' preview (`preview.html`, served at `/preview/`, the `preview` feature): every
//!   surface and ticket of the gallery, composed in the browser with no server;
//! - the « Vérifier » page (`verify.html`, served at `/verifier/`, the `verify` feature): a ticket and
//!   a whole closed block recomputed from the published seed ([`verify`]);
//! - the « Jeu responsable » page (`responsible.html`, served at `/jeu-responsable/`, the `responsible`
//!   feature): limits, raises, pauses, the reality-check interval and the record.
//!
//! Only the preview and « Vérifier » carry the composer and the design file's parser.
//!
//! And what they share:
//! - [`ticket`]: the ticket card and the artwork of every symbol.
//! - [`dates`]: dates and times as French players read them.
//! - [`history`]: the game's history pages and the recall of a finished ticket.
//! - [`scratch_zone`]: one canvas scratch zone, its scratching a hook ([`scratch_zone::use_scratch`]).
//! - [`api`]: the ticket server's API.
//!
//! Every ticket is verified ([`trust::open_ticket`]) — signature against the JWKS, lot re-read by the
//! shared evaluator — before anything of it is drawn; the preview goes through the same check with a
//! throw-away key.

pub mod account;
pub mod api;
pub mod controls;
pub mod dates;
pub mod game;
pub mod history;
pub mod inclusion;
pub mod local;
pub mod model;
pub mod play_time;
#[cfg(feature = "preview")]
pub mod preview;
#[cfg(feature = "responsible")]
pub mod responsible_page;
pub mod result;
pub mod scratch_zone;
pub mod signature;
pub mod sound;
pub mod sync;
pub mod ticket;
pub mod trust;
#[cfg(feature = "verify")]
pub mod verify;
pub mod wallet;

/// Starts the build's app: the preview in the preview build, the game otherwise.
#[cfg(feature = "preview")]
pub use preview::start;

/// Starts the build's app: the « Vérifier » page in its build.
#[cfg(all(feature = "verify", not(feature = "preview")))]
pub use verify::start;

/// Starts the build's app: the « Jeu responsable » page in its build.
#[cfg(all(feature = "responsible", not(any(feature = "preview", feature = "verify"))))]
pub use responsible_page::start;

#[cfg(not(any(feature = "preview", feature = "verify", feature = "responsible")))]
pub fn start() {
    yew::Renderer::<game::App>::new().render();
}
