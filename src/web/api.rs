//! The ticket server's API, as the game uses it. Every failure becomes an [`ApiFailure`] with a
//! French message for the player.

pub use crate::api::{
    CommittedRoot, ErrorCode, Flow, InclusionProof, Me, PlaySession, RealityCheck, Span, TicketAndBalance, TicketView,
};
use crate::json;
use crate::payload::Jwks;
use crate::rules::Zone;
use crate::rules::prize_table::TICKET_PRICE;
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

#[derive(Deserialize)]
struct Session {
    player: Me,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiFailure {
    /// 0 when no answer came.
    pub status: u16,
    /// What the server says went wrong; `None` without an answer, or an answer not of ours.
    pub code: Option<ErrorCode>,
    pub message: String,
    /// The error answer as the browser parsed it: what a refusal for responsible gaming says more
    /// (`limit`, `pause`, `reality_check`) is read off it.
    pub body: JsValue,
}

/// A field of an object the browser parsed (undefined if it has none). Read so rather than through
/// serde: every type deserialised adds its own code to the game's download.
pub fn field(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

fn number(object: &JsValue, name: &str) -> f64 {
    field(object, name).as_f64().unwrap_or_default()
}

/// What a balance below a ticket's price means for the player.
pub fn short_of_price_fr() -> String {
    format!("Solde insuffisant : un ticket coûte {TICKET_PRICE}.")
}

impl ApiFailure {
    /// The reality check a purchase was refused for, if that is why.
    pub fn reality_check(&self) -> Option<RealityCheck> {
        let check = field(&self.body, "reality_check");
        check.is_object().then(|| reality_check(&check))
    }
}

/// A reality check, from the object the server sent.
pub fn reality_check(check: &JsValue) -> RealityCheck {
    RealityCheck {
        session_seconds: number(check, "session_seconds") as i64,
        tickets: number(check, "tickets") as u64,
        staked_cents: number(check, "staked_cents") as u64,
        won_cents: number(check, "won_cents") as u64,
        net_cents: number(check, "net_cents") as i64,
    }
}

impl ApiFailure {
    /// What the player reads.
    pub fn message_fr(&self) -> String {
        match (self.status, self.code) {
            (0, _) => "Connexion au serveur impossible. Vérifiez votre réseau puis réessayez.".into(),
            (_, Some(ErrorCode::InsufficientFunds)) => short_of_price_fr(),
            (_, Some(ErrorCode::NameTaken)) => "Ce nom est déjà pris : choisissez-en un autre.".into(),
            (_, Some(ErrorCode::BadCredentials)) => "Nom ou mot de passe incorrect.".into(),
            (_, Some(ErrorCode::RateLimited)) => "Trop d'essais : réessayez dans un moment.".into(),
            (_, Some(ErrorCode::LimitReached)) => {
                let limit = field(&self.body, "limit");
                let frees = field(&limit, "frees_at").as_f64().map(|at| at as i64);
                limit_fr(
                    &field(&limit, "flow").as_string().unwrap_or_default(),
                    &field(&limit, "span").as_string().unwrap_or_default(),
                    number(&limit, "left_cents") as u64,
                    frees,
                )
            }
            (_, Some(ErrorCode::LimitsRequired)) => {
                "Fixez d'abord vos limites de dépôt et de mise sur 7 jours, dans « Jeu responsable ».".into()
            }
            (_, Some(ErrorCode::Paused)) => {
                let pause = field(&self.body, "pause");
                pause_fr(&field(&pause, "kind").as_string().unwrap_or_default(), number(&pause, "until") as i64)
            }
            (_, Some(ErrorCode::Suspended)) => "Votre compte est suspendu : contactez le service client.".into(),
            (400, _) => {
                "Un nom de 3 à 32 caractères, d'une seule écriture, et un mot de passe de 8 caractères au moins.".into()
            }
            (_, Some(ErrorCode::SoldOut)) => "Plus aucun ticket n'est en vente pour le moment.".into(),
            (_, Some(ErrorCode::Unauthorized)) => "Votre session a expiré. Rechargez la page.".into(),
            (s, _) if s >= 500 => "Le serveur a rencontré une erreur. Réessayez dans un instant.".into(),
            _ => format!("Requête refusée : {}", self.message),
        }
    }
}

/// A limit that refused a purchase or a deposit, as the player reads it (`flow` and `span` as the API
/// names them).
pub fn limit_fr(flow: &str, span: &str, left_cents: u64, frees_at: Option<i64>) -> String {
    let frees = frees_at.map_or_else(
        || " Ce montant dépasse la limite elle-même.".to_owned(),
        |at| format!(" Davantage à partir du {}.", super::dates::french_time(at, true)),
    );
    format!(
        "Limite de {} {} atteinte : il vous reste {}.{frees}",
        flow_fr(flow),
        span_fr(span),
        crate::money::Cents(left_cents)
    )
}

/// A break, an exclusion or a closure in force, as the player reads it (`kind` as the API names it).
pub fn pause_fr(kind: &str, until: i64) -> String {
    match kind {
        "break" => format!(
            "Vous faites une pause jusqu'au {} : aucun achat ni dépôt d'ici là.",
            super::dates::french_time(until, true)
        ),
        "exclusion" => format!(
            "Vous êtes auto-exclu jusqu'au {} : aucun achat ni dépôt d'ici là.",
            super::dates::french_time(until, true)
        ),
        _ => "Ce compte est fermé.".into(),
    }
}

/// Stakes or deposits, in French, from the API's name.
pub fn flow_fr(flow: &str) -> &'static str {
    if flow == "stake" { "mises" } else { "dépôts" }
}

/// A window, in French, from the API's name.
pub fn span_fr(span: &str) -> &'static str {
    match span {
        "day" => "sur 24 h",
        "week" => "sur 7 jours",
        _ => "sur 30 jours",
    }
}

/// An answer from the server, its body read.
struct Answer {
    url: String,
    status: u16,
    status_text: String,
    body: String,
}

fn network(message: String) -> ApiFailure {
    ApiFailure { status: 0, code: None, message, body: JsValue::UNDEFINED }
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
    let body = js_sys::JSON::parse(&answer.body).unwrap_or(JsValue::UNDEFINED);
    let (code, message) = (field(&body, "error").as_string(), field(&body, "message").as_string());
    Err(ApiFailure {
        status: answer.status,
        code: code.as_deref().and_then(ErrorCode::parse),
        message: message.unwrap_or(answer.status_text),
        body,
    })
}

pub(super) async fn read<T: DeserializeOwned>(sent: Result<Response, gloo_net::Error>) -> Result<T, ApiFailure> {
    parse(answer(sent).await?)
}

/// The request with a JSON body.
fn with_json(request: RequestBuilder, body: &impl Serialize) -> Request {
    // Not `expect` either: its message would format the error with `Debug`, a formatter for nothing.
    let Ok(text) = json::to_string(body) else { unreachable!("plain structs serialise") };
    // Not `expect`: its message would format gloo-net's error, and bring serde_json's into the download.
    let Ok(request) = request.header("Content-Type", "application/json").body(text) else {
        unreachable!("a string body is always accepted")
    };
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
    let (url, status_text, body) =
        (field("url")?.as_string()?, field("statusText")?.as_string()?, field("body")?.as_string()?);
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
    read::<Session>(with_json(Request::post("/api/login"), &Credentials { name, password }).send().await)
        .await
        .map(|s| s.player)
}

/// A real-money account: its name and password, and the identity the law asks for.
#[derive(Serialize)]
pub struct Registration<'a> {
    pub name: &'a str,
    pub password: &'a str,
    pub first_name: &'a str,
    pub last_name: &'a str,
    pub birth_date: &'a str,
}

pub async fn register(form: &Registration<'_>) -> Result<Me, ApiFailure> {
    read::<Session>(with_json(Request::post("/api/register"), form).send().await).await.map(|s| s.player)
}

/// The session's time, play and reality check.
pub async fn play_session() -> Result<PlaySession, ApiFailure> {
    play_session_of(answer(Request::get("/api/responsible/session").send().await).await?)
}

/// « Continuer » after a reality check.
pub async fn acknowledge_reality_check() -> Result<PlaySession, ApiFailure> {
    play_session_of(answer(Request::post("/api/responsible/reality-check/acknowledge").send().await).await?)
}

fn play_session_of(answer: Answer) -> Result<PlaySession, ApiFailure> {
    if !(200..300).contains(&answer.status) {
        return parse(answer);
    }
    let session = js_sys::JSON::parse(&answer.body).map_err(|_| network("not JSON".into()))?;
    Ok(PlaySession {
        started_at: number(&session, "started_at") as i64,
        reality_due_at: number(&session, "reality_due_at") as i64,
        reality_check_due: field(&session, "reality_check_due").is_truthy(),
        check: reality_check(&field(&session, "check")),
    })
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

/// Sends the zones uncovered, with how long ago each was, in seconds (none: just now).
pub async fn reveal(ticket_id: &str, zones: &[Zone], seconds_ago: Vec<usize>) -> Result<TicketView, ApiFailure> {
    #[derive(Serialize)]
    struct Reveal {
        zones: Vec<usize>,
        seconds_ago: Vec<usize>,
    }
    let zones = zones.iter().map(|z| z.index()).collect();
    read(
        with_json(Request::post(&format!("/api/tickets/{ticket_id}/reveal")), &Reveal { zones, seconds_ago })
            .send()
            .await,
    )
    .await
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
