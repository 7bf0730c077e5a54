//! # Vegas
//!
//! An online instant-lottery game: a player buys a 3 € ticket and scratches its four surfaces (Poker,
//! Roulette, Craps, Jackpot). The parts, each in its own folder:
//!
//! - [`rules`]: the regulation as data and pure functions; the evaluator reads a lot off symbols.
//! - [`composer`]: turns a pre-assigned lot and seeded randomness into symbols, following the
//!   designer-editable design file (`static/design.toml`), validated at load.
//! - [`block`]: blocks of 1 500 000 tickets from a 256-bit seed, their Merkle commitment, proofs and audit.
//! - [`payload`]: the signed ticket format (compact JWS, EdDSA) and its verification, shared by the
//!   server (signs) and the browser (verifies).
//! - [`api`]: the JSON shared by the server and the web game.
//! - [`play`]: a game in progress (« Jouez » / « Auto ») and the scratch coverage model, browser-free.
//! - [`gallery`]: every outcome of every surface and a ticket per design pattern, composed from a seed,
//!   for the designers' preview.
//! - `server` (native): the axum ticket server — players, wallet ledger, sales, history, emissions.
//! - `web` (wasm32): the Yew game the players see, and the pages built apart from it: the designers'
//!   preview (`preview.html`, at `/preview/`), the « Vérifier » page (`verify.html`, at `/verifier/`) and
//!   the « Jeu responsable » page (`responsible.html`, at `/jeu-responsable/`).
//!
//! See ARCHITECTURE.md for how a ticket flows through them and where each invariant is enforced.

pub mod api;
pub mod block;
pub mod composer;
pub mod gallery;
pub mod json;
pub mod money;
pub mod payload;
pub mod play;
pub mod rules;

#[cfg(not(target_arch = "wasm32"))]
pub mod server;
#[cfg(target_arch = "wasm32")]
pub mod web;
