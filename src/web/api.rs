//! The ticket server's API, as the game uses it. Every failure becomes an [`ApiFailure`] with a
//! French message for the player.

pub use crate::api::{Me, TicketAndBalance, TicketView};
use crate::payload::Jwks;
use crate::rules::Zone;
use gloo_net::http::{Request, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

#[derive(Deserialize)]
struct Session {
    player: Me,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiFailure {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl ApiFailure {
    /// What the player reads.
    pub fn message_fr(&self) -> String {
        match (self.status, self.code.as_str()) {
            (0, _) => "Connexion au serveur impossible. Vérifiez votre réseau puis réessayez.".into(),
            (_, "insufficient_funds") => "Solde insuffisant : un ticket coûte 3,00 €.".into(),
            (_, "sold_out") => "Plus aucun ticket n'est en vente pour le moment.".into(),
            (_, "unauthorized") => "Votre session a expiré. Rechargez la page.".into(),
            (s, _) if s >= 500 => "Le serveur a rencontré une erreur. Réessayez dans un instant.".into(),
            _ => format!("Requête refusée : {}", self.message),
        }
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
    message: String,
}

async fn read<T: DeserializeOwned>(sent: Result<Response, gloo_net::Error>) -> Result<T, ApiFailure> {
    let network = |e: gloo_net::Error| ApiFailure { status: 0, code: "network".into(), message: e.to_string() };
    let response = sent.map_err(network)?;
    if response.ok() {
        return response.json::<T>().await.map_err(network);
    }
    let status = response.status();
    let body = response.json::<ErrorBody>().await.unwrap_or(ErrorBody { error: "http".into(), message: response.status_text() });
    Err(ApiFailure { status, code: body.error, message: body.message })
}

pub async fn me() -> Result<Me, ApiFailure> {
    read(Request::get("/api/me").send().await).await
}

pub async fn guest() -> Result<Me, ApiFailure> {
    read::<Session>(Request::post("/api/guest").send().await).await.map(|s| s.player)
}

pub async fn jwks() -> Result<Jwks, ApiFailure> {
    read(Request::get("/.well-known/jwks.json").send().await).await
}

pub async fn history() -> Result<Vec<TicketView>, ApiFailure> {
    read(Request::get("/api/tickets?limit=10").send().await).await
}

pub async fn buy(mode: &str, idempotency_key: &str) -> Result<TicketAndBalance, ApiFailure> {
    let request = Request::post("/api/tickets")
        .header("Idempotency-Key", idempotency_key)
        .json(&serde_json::json!({ "mode": mode }))
        .expect("a JSON body");
    read(request.send().await).await
}

pub async fn reveal(ticket_id: &str, zones: &[Zone]) -> Result<TicketView, ApiFailure> {
    let zones: Vec<usize> = zones.iter().map(|z| z.index()).collect();
    let request = Request::post(&format!("/api/tickets/{ticket_id}/reveal")).json(&serde_json::json!({ "zones": zones })).expect("a JSON body");
    read(request.send().await).await
}

pub async fn complete(ticket_id: &str) -> Result<TicketAndBalance, ApiFailure> {
    read(Request::post(&format!("/api/tickets/{ticket_id}/complete")).send().await).await
}

pub async fn demo_deposit(amount_cents: u64) -> Result<Me, ApiFailure> {
    let request = Request::post("/api/wallet/deposit").json(&serde_json::json!({ "amount_cents": amount_cents })).expect("a JSON body");
    read(request.send().await).await
}
