//! Whether a ticket may be drawn: the one path every ticket takes ([`open_ticket`]), in the game and in
//! its tests alike. Its signature is checked by the browser ([`super::signature`]), its claims and its
//! lot by the shared evaluator, a test ticket (QA deck) is refused by a real-money page, and its place
//! in its block is checked against the root the block published before its first sale
//! ([`super::inclusion`]).

use super::api::TicketView;
use crate::api::{InclusionProof, TicketState};
use crate::payload::{Jwks, PayloadError, SignedPayload, VerifiedTicket};
use crate::play::Game;
use crate::rules::Zone;

/// What a ticket's checks fetch: the game asks the server (through its retries, [`super::sync`]); a
/// test gives what it made.
// One thread in the browser: the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Evidence {
    /// The server's keys fetched again, for a ticket signed with a key this page has not listed (one
    /// rotated since it loaded); `None` if they cannot be had.
    async fn fresh_keys(&self) -> Option<Jwks>;
    /// The ticket's inclusion proof, and the root its block committed to (hex).
    async fn commitment(&self, ticket_id: &str, emission: u32, block: u32) -> Result<(InclusionProof, String), String>;
}

/// Verifies a ticket and turns it into a game where it was left; the French refusal otherwise.
pub async fn open_ticket(
    view: &TicketView,
    jwks: &Jwks,
    real_money: bool,
    evidence: &impl Evidence,
) -> Result<Game, String> {
    let verified = match verify(view, jwks).await {
        Err(PayloadError::UnknownKey(kid)) => match evidence.fresh_keys().await {
            Some(fresh) => verify(view, &fresh).await,
            None => Err(PayloadError::UnknownKey(kid)),
        },
        checked => checked,
    }
    .map_err(|e| refusal(&e))?;
    if verified.claims.qa && real_money {
        return Err("Ticket refusé : c'est un ticket de test (QA), et ce serveur joue en argent réel.".into());
    }
    let serial = verified.claims.serial;
    let (proof, root) = evidence.commitment(&view.id, serial.emission, serial.block).await?;
    super::inclusion::check(&verified.claims, &proof, &root).await.map_err(|e| refusal(&e))?;
    Ok(game_at(view, verified))
}

async fn verify(view: &TicketView, jwks: &Jwks) -> Result<VerifiedTicket, PayloadError> {
    let signed = SignedPayload::read(&view.payload, jwks)?;
    super::signature::check(&signed).await?;
    signed.open()
}

/// What the player reads when a ticket does not pass.
pub fn refusal(e: &PayloadError) -> String {
    format!("Ticket refusé : sa signature ou son contenu est invalide ({e}).")
}

/// A verified ticket as a game, where its view says it was left.
pub fn game_at(view: &TicketView, verified: VerifiedTicket) -> Game {
    Game {
        ticket_id: view.id.clone(),
        serial: view.serial.clone(),
        mode: view.mode,
        ticket: verified.claims.zones,
        outcome: verified.outcome,
        revealed: view.revealed.iter().filter_map(|&i| Zone::from_index(i)).collect(),
        chosen: None,
        completed: view.state == TicketState::Finished,
    }
}
