//! The ticket server's API, as the game uses it. Every failure becomes an [`ApiFailure`] with a
//! French message for the player.

pub use crate::api::{CommittedRoot, InclusionProof, Me, TicketAndBalance, TicketView};
use crate::json;
use crate::payload::Jwks;
use crate::rules::Zone;
use crate::rules::prize_table::TICKET_PRICE;
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

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
            (_, "insufficient_funds") => format!("Solde insuffisant : un ticket coûte {TICKET_PRICE}."),
            (_, "name_taken") => "Ce nom est déjà pris : choisissez-en un autre.".into(),
            (_, "bad_credentials") => "Nom ou mot de passe incorrect.".into(),
            (_, "rate_limited") => "Trop d'essais : réessayez dans un moment.".into(),
            (400, _) => "Un nom de 3 à 32 caractères, d'une seule écriture, et un mot de passe de 8 caractères au moins.".into(),
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

/// An answer from the server, its body read.
struct Answer {
    url: String,
    status: u16,
    status_text: String,
    body: String,
}

fn network(message: String) -> ApiFailure {
    ApiFailure { status: 0, code: "network".into(), message }
}

/// Waits for the answer and its whole body. A body cut short reads as a failed connection: the caller
/// retries as for one.
async fn answer(sent: Result<Response, gloo_net::Error>) -> Result<Answer, ApiFailure> {
    // Not the error's own text: formatting it would bring serde_json's and std::io's messages into
    // the download (gloo-net's error can hold them), for a failure the player reads the same anyway.
    let response = sent.map_err(|_| network("no answer".into()))?;
    let body = response.text().await.map_err(|_| network("answer cut short".into()))?;
    Ok(Answer { url: response.url(), status: response.status(), status_text: response.status_text(), body })
}

fn parse<T: DeserializeOwned>(answer: Answer) -> Result<T, ApiFailure> {
    if (200..300).contains(&answer.status) {
        return json::from_str(&answer.body).map_err(network);
    }
    let body = json::from_str::<ErrorBody>(&answer.body).unwrap_or(ErrorBody { error: "http".into(), message: answer.status_text });
    Err(ApiFailure { status: answer.status, code: body.error, message: body.message })
}

async fn read<T: DeserializeOwned>(sent: Result<Response, gloo_net::Error>) -> Result<T, ApiFailure> {
    parse(answer(sent).await?)
}

/// The request with a JSON body.
fn with_json(request: RequestBuilder, body: &impl Serialize) -> Request {
    let text = json::to_string(body).expect("plain structs serialise");
    // Not `expect`: its message would format gloo-net's error, and bring serde_json's into the download.
    let Ok(request) = request.header("Content-Type", "application/json").body(text) else { unreachable!("a string body is always accepted") };
    request
}

/// The answer to a start-up request the page sent, and read, before the app loaded
/// (`window.vegasEarly` in `index.html`: `{url, status, statusText, body}`), taken once; `None` if there is none.
async fn early(name: &str) -> Option<Result<Answer, ApiFailure>> {
    use wasm_bindgen::JsCast;
    let early = js_sys::Reflect::get(&js_sys::global(), &"vegasEarly".into()).ok()?;
    let promise = js_sys::Reflect::get(&early, &name.into()).ok()?.dyn_into::<js_sys::Promise>().ok()?;
    js_sys::Reflect::delete_property(early.dyn_ref::<js_sys::Object>()?, &name.into()).ok()?;
    let answer = match wasm_bindgen_futures::JsFuture::from(promise).await {
        Ok(answer) => answer,
        Err(e) => return Some(Err(network(format!("{e:?}")))),
    };
    let field = |name: &str| js_sys::Reflect::get(&answer, &name.into()).ok();
    let status = field("status")?.as_f64()? as u16;
    let (url, status_text, body) = (field("url")?.as_string()?, field("statusText")?.as_string()?, field("body")?.as_string()?);
    Some(Ok(Answer { url, status, status_text, body }))
}

async fn get(url: &str, early_name: &str) -> Result<Answer, ApiFailure> {
    match early(early_name).await {
        Some(answer) => answer,
        None => answer(Request::get(url).send().await).await,
    }
}

/// The player signed in: the session's, or on a first visit (no session) a new guest's — as the page
/// asked at load if it did, else asked now.
pub async fn sign_in() -> Result<Me, ApiFailure> {
    let answer = get("/api/me", "session").await?;
    if answer.url.ends_with("/api/guest") {
        return parse::<Session>(answer).map(|s| s.player);
    }
    match parse::<Me>(answer) {
        Err(e) if e.status == 401 => guest().await,
        other => other,
    }
}

pub async fn me() -> Result<Me, ApiFailure> {
    read(Request::get("/api/me").send().await).await
}

pub async fn guest() -> Result<Me, ApiFailure> {
    read::<Session>(Request::post("/api/guest").send().await).await.map(|s| s.player)
}

#[derive(Serialize)]
struct Credentials<'a> {
    name: &'a str,
    password: &'a str,
}

/// The signed-in guest becomes an account with this name and password.
pub async fn claim_account(name: &str, password: &str) -> Result<Me, ApiFailure> {
    read(with_json(Request::post("/api/account"), &Credentials { name, password }).send().await).await
}

pub async fn login(name: &str, password: &str) -> Result<Me, ApiFailure> {
    read::<Session>(with_json(Request::post("/api/login"), &Credentials { name, password }).send().await).await.map(|s| s.player)
}

pub async fn logout() -> Result<(), ApiFailure> {
    answer(Request::post("/api/logout").send().await).await.map(drop)
}

pub async fn jwks() -> Result<Jwks, ApiFailure> {
    parse(get("/.well-known/jwks.json", "jwks").await?)
}

pub async fn proof(ticket_id: &str) -> Result<InclusionProof, ApiFailure> {
    read(Request::get(&format!("/api/tickets/{ticket_id}/proof")).send().await).await
}

pub async fn committed_root(emission: u32, block: u32) -> Result<CommittedRoot, ApiFailure> {
    read(Request::get(&format!("/api/blocks/{emission}/{block}")).send().await).await
}

/// One page of the history, newest first: the page after `before` (a ticket's id), or the first. One
/// ticket more than a page holds, to know whether another page follows.
pub async fn history(before: Option<&str>) -> Result<Vec<TicketView>, ApiFailure> {
    let after = before.map(|id| format!("&before={id}")).unwrap_or_default();
    read(Request::get(&format!("/api/tickets?limit={}{after}", HISTORY_PAGE + 1)).send().await).await
}

/// Tickets on a page of the history.
pub const HISTORY_PAGE: usize = 10;

pub async fn buy(mode: &str, idempotency_key: &str) -> Result<TicketAndBalance, ApiFailure> {
    #[derive(Serialize)]
    struct Buy<'a> {
        mode: &'a str,
    }
    let request = with_json(Request::post("/api/tickets").header("Idempotency-Key", idempotency_key), &Buy { mode });
    read(request.send().await).await
}

pub async fn reveal(ticket_id: &str, zones: &[Zone]) -> Result<TicketView, ApiFailure> {
    #[derive(Serialize)]
    struct Reveal {
        zones: Vec<usize>,
    }
    let zones = zones.iter().map(|z| z.index()).collect();
    read(with_json(Request::post(&format!("/api/tickets/{ticket_id}/reveal")), &Reveal { zones }).send().await).await
}

pub async fn complete(ticket_id: &str) -> Result<TicketAndBalance, ApiFailure> {
    read(Request::post(&format!("/api/tickets/{ticket_id}/complete")).send().await).await
}

pub async fn demo_deposit(amount_cents: u64) -> Result<Me, ApiFailure> {
    #[derive(Serialize)]
    struct Deposit {
        amount_cents: u64,
    }
    read(with_json(Request::post("/api/wallet/deposit"), &Deposit { amount_cents }).send().await).await
}
