//! The ticket server's API, as the game uses it. Every failure becomes an [`ApiFailure`] with a
//! French message for the player.

pub use crate::api::{CommittedRoot, Flow, InclusionProof, LimitRefusal, Me, Pause, PauseKind, PlaySession, RealityCheck, Span, TicketAndBalance, TicketView};
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
    /// What a refusal for responsible gaming says more (`limit_reached`, `paused`, `reality_check_due`).
    pub detail: Detail,
}

/// The fields of an error answer beside its code and message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail {
    pub limit: Option<LimitRefusal>,
    pub pause: Option<Pause>,
    pub reality_check: Option<RealityCheck>,
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
            (_, "limit_reached") => self.detail.limit.as_ref().map_or_else(|| self.message.clone(), limit_fr),
            (_, "limits_required") => "Fixez d'abord vos limites de dépôt et de mise sur 7 jours, dans « Jeu responsable ».".into(),
            (_, "paused") => self.detail.pause.map_or_else(|| self.message.clone(), pause_fr),
            (_, "reality_check_due") => "Faites le point sur votre session avant de continuer.".into(),
            (_, "under_age") => "Le jeu est interdit aux mineurs : il faut avoir 18 ans.".into(),
            (_, "banned") => "Inscription impossible : cette identité figure au fichier des interdits de jeu.".into(),
            (_, "already_paused") => "Une pause aussi longue, ou plus longue, est déjà en cours.".into(),
            (_, "raise_not_yet") => "Une hausse s'applique au plus tôt 48 h après la demande : confirmez-la plus tard.".into(),
            (_, "raise_lapsed") => "Cette hausse a expiré faute de confirmation : demandez-la de nouveau.".into(),
            (400, _) => "Un nom de 3 à 32 caractères, d'une seule écriture, un mot de passe de 8 caractères au moins ; en argent réel, vos prénom, nom et date de naissance.".into(),
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
    #[serde(default)]
    limit: Option<LimitRefusal>,
    #[serde(default)]
    pause: Option<Pause>,
    #[serde(default)]
    reality_check: Option<RealityCheck>,
}

/// A limit that refused a purchase or a deposit, as the player reads it.
pub fn limit_fr(limit: &LimitRefusal) -> String {
    let frees = limit.frees_at.map_or_else(|| " Ce montant dépasse la limite elle-même.".to_owned(), |at| format!(" Davantage à partir du {}.", date_fr(at)));
    format!("Limite de {} {} atteinte : il vous reste {}.{frees}", flow_fr(limit.flow), span_fr(limit.span), crate::money::Cents(limit.left_cents))
}

/// A break or an exclusion in force, as the player reads it.
pub fn pause_fr(pause: Pause) -> String {
    match pause.kind {
        PauseKind::Break => format!("Vous faites une pause jusqu'au {} : aucun achat ni dépôt d'ici là.", date_fr(pause.until)),
        PauseKind::Exclusion => format!("Vous êtes auto-exclu jusqu'au {} : aucun achat ni dépôt d'ici là.", date_fr(pause.until)),
        PauseKind::Closed => "Ce compte est fermé.".into(),
    }
}

pub fn flow_fr(flow: Flow) -> &'static str {
    match flow {
        Flow::Stake => "mises",
        Flow::Deposit => "dépôts",
    }
}

pub fn span_fr(span: Span) -> &'static str {
    match span {
        Span::Day => "sur 24 h",
        Span::Week => "sur 7 jours",
        Span::Month => "sur 30 jours",
    }
}

/// A time as the player reads it, in the browser's time zone: « 12/12/2026 10:00 ».
pub fn date_fr(unix_seconds: i64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(unix_seconds as f64 * 1000.0));
    let options = js_sys::Object::new();
    for (key, value) in [("dateStyle", "short"), ("timeStyle", "short")] {
        let _ = js_sys::Reflect::set(&options, &key.into(), &value.into());
    }
    date.to_locale_string("fr-FR", &options).into()
}

/// An answer from the server, its body read.
struct Answer {
    url: String,
    status: u16,
    status_text: String,
    body: String,
}

fn network(message: String) -> ApiFailure {
    ApiFailure { status: 0, code: "network".into(), message, detail: Detail::default() }
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
    let Ok(body) = json::from_str::<ErrorBody>(&answer.body) else {
        return Err(ApiFailure { status: answer.status, code: "http".into(), message: answer.status_text, detail: Detail::default() });
    };
    let detail = Detail { limit: body.limit, pause: body.pause, reality_check: body.reality_check };
    Err(ApiFailure { status: answer.status, code: body.error, message: body.message, detail })
}

pub(super) async fn read<T: DeserializeOwned>(sent: Result<Response, gloo_net::Error>) -> Result<T, ApiFailure> {
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
    read(Request::get("/api/responsible/session").send().await).await
}

/// « Continuer » after a reality check.
pub async fn acknowledge_reality_check() -> Result<PlaySession, ApiFailure> {
    read(Request::post("/api/responsible/reality-check/acknowledge").send().await).await
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
