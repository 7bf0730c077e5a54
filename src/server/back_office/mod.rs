//! The operator's back office: server-rendered French pages on their own address (`--admin-addr`,
//! loopback by default), never on the players'. Staff sign in with a password and a TOTP code; every
//! route asks for a [`Power`] its role must have; every change is made by the store in one unit of
//! work with its row of the audit log.
//!
//! The pages carry no script: plain forms (POST, then a redirect to the page they change), so that
//! the Content-Security-Policy allows nothing but the page's own style sheet.

mod pages;
pub mod reports;
pub mod staff;

use super::AppState;
use super::cookies::{self, CookieJar, Reach};
use super::store::Store;
use super::store::StoreError;
use super::store::back_office::{AdjustmentState, StaffRecord, WithdrawalState};
use crate::money::Cents;
use axum::Router;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use sha2::{Digest, Sha256};
pub use staff::Power;
use std::sync::Arc;
use tower_http::set_header::SetResponseHeaderLayer;

pub const COOKIE_NAME: &str = "vegas_staff";
/// A working day: a staff session ends eight hours after sign-in.
const SESSION_SECONDS: i64 = 8 * 3600;
/// Sign-in attempts per staff name: a few at once, then one a minute (a wrong TOTP code costs one).
const SIGN_IN_RATE: super::limits::Rate = super::limits::Rate { burst: 5, per_minute: 1 };

/// What the back office's routes share.
#[derive(Clone)]
pub struct Office(Arc<OfficeShared>);

pub struct OfficeShared {
    pub app: AppState,
    /// The session cookie is sent over HTTPS only (unless the back office listens on loopback).
    pub secure_cookie: bool,
    /// Adjustments larger than this wait for a second member's approval.
    pub threshold: Cents,
    sign_ins: super::limits::PerKey,
}

impl std::ops::Deref for Office {
    type Target = OfficeShared;

    fn deref(&self) -> &OfficeShared {
        &self.0
    }
}

impl Office {
    pub fn new(app: AppState, secure_cookie: bool, threshold: Cents) -> Office {
        let sign_ins = super::limits::PerKey::new("staff_sign_ins", SIGN_IN_RATE, app.config.clock.clone());
        Office(Arc::new(OfficeShared { app, secure_cookie, threshold, sign_ins }))
    }

    fn store(&self) -> &Store {
        &self.app.store
    }

    fn now(&self) -> i64 {
        self.app.config.clock.now()
    }
}

/// Why a back-office request was not done: an HTML page with the status it deserves.
#[derive(Debug)]
pub enum Refusal {
    /// Not signed in: to the sign-in page.
    SignIn,
    Forbidden(Power),
    Store(StoreError),
    BadForm(String),
    RateLimited(u64),
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        Refusal::Store(e)
    }
}

impl From<super::error::ApiError> for Refusal {
    fn from(e: super::error::ApiError) -> Refusal {
        match e {
            super::error::ApiError::RateLimited { retry_after } => Refusal::RateLimited(retry_after),
            other => Refusal::Store(StoreError::Backend(format!("{other:?}"))),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Refusal::SignIn => return Redirect::to("/connexion").into_response(),
            Refusal::Forbidden(power) => (
                StatusCode::FORBIDDEN,
                format!("Votre rôle ne permet pas cette action ({}).", pages::power_name(power)),
            ),
            Refusal::BadForm(why) => (StatusCode::BAD_REQUEST, why),
            Refusal::RateLimited(wait) => {
                (StatusCode::TOO_MANY_REQUESTS, format!("Trop de tentatives : réessayez dans {wait} s."))
            }
            Refusal::Store(e) => {
                let status = match &e {
                    StoreError::NotFound(_) => StatusCode::NOT_FOUND,
                    StoreError::Invalid(_) => StatusCode::BAD_REQUEST,
                    StoreError::FourEyes => StatusCode::FORBIDDEN,
                    StoreError::Backend(cause) => {
                        tracing::error!(%cause, "the back office's store failed");
                        StatusCode::INTERNAL_SERVER_ERROR
                    }
                    _ => StatusCode::CONFLICT,
                };
                (status, pages::store_error(&e))
            }
        };
        (status, pages::refusal(status, &message)).into_response()
    }
}

fn token_hash(token: &str) -> String {
    crate::block::hex(&Sha256::digest(token.as_bytes()))
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    cookies::value_of(headers, COOKIE_NAME)
}

/// The signed-in staff member.
pub struct Member(pub StaffRecord);

impl FromRequestParts<Office> for Member {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, office: &Office) -> Result<Member, Refusal> {
        let token = session_token(&parts.headers).ok_or(Refusal::SignIn)?;
        let member = office.store().staff_session(&token_hash(&token), office.now()).await?;
        member.map(Member).ok_or(Refusal::SignIn)
    }
}

impl Member {
    fn may(&self, power: Power) -> Result<(), Refusal> {
        if staff::may(self.0.role, power) { Ok(()) } else { Err(Refusal::Forbidden(power)) }
    }

    fn actor(&self) -> String {
        self.0.actor()
    }
}

/// A mandatory reason, as a form gives it.
fn reason(text: &str) -> Result<&str, Refusal> {
    let text = text.trim();
    if text.is_empty() || text.len() > 500 {
        return Err(Refusal::BadForm("Indiquez un motif (500 caractères au plus).".into()));
    }
    Ok(text)
}

pub fn router(office: Office) -> Router {
    let csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; \
        base-uri 'none'";
    let header = |name: header::HeaderName, value: &'static str| {
        SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
    };
    Router::new()
        .route("/", get(|| async { Redirect::to("/blocs") }))
        .route("/style.css", get(style))
        .route("/connexion", get(sign_in_page).post(sign_in))
        .route("/deconnexion", post(sign_out))
        .route("/blocs", get(blocks))
        .route("/blocs/{emission}/{block}/retrait", post(withdraw_block))
        .route("/joueurs", get(find_players))
        .route("/joueurs/{id}", get(player))
        .route("/joueurs/{id}/billets/{ticket}", get(ticket))
        .route("/joueurs/{id}/suspension", post(suspend))
        .route("/joueurs/{id}/ajustement", post(adjust))
        .route("/joueurs/{id}/fermeture", post(close_account))
        .route("/personnel", get(staff_page))
        .route("/personnel/{name}/role", post(change_role))
        .route("/retraits", get(withdrawals))
        .route("/retraits/{id}", post(decide_withdrawal))
        .route("/ajustements", get(adjustments))
        .route("/ajustements/{id}", post(decide_adjustment))
        .route("/journal", get(audit_log))
        .route("/rapports", get(reports_index))
        .route("/rapports/{name}", get(report))
        .fallback(|| async { Refusal::Store(StoreError::NotFound("page")) })
        .merge(operations(office.app.clone()))
        .layer(header(header::CONTENT_SECURITY_POLICY, csp))
        .layer(header(header::CACHE_CONTROL, "no-store"))
        .layer(header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(header::REFERRER_POLICY, "no-referrer"))
        .layer(axum::extract::DefaultBodyLimit::max(super::BODY_LIMIT))
        .with_state(office)
}

/// What the operator's machines read: Prometheus' scrape, and the probes (no staff session: the
/// address is the operator's own).
fn operations(app: AppState) -> Router<Office> {
    Router::new()
        .route("/metrics", get(super::metrics::scrape))
        .route("/readyz", get(super::metrics::ready))
        .route("/healthz", get(super::openapi::health))
        .with_state(app)
}

async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("style.css"))
}

async fn sign_in_page() -> maud::Markup {
    pages::sign_in(None)
}

#[derive(Deserialize)]
struct SignIn {
    name: String,
    password: String,
    code: String,
}

/// Name, password and the TOTP code, all three right, or one same refusal that says not which.
async fn sign_in(State(office): State<Office>, axum::Form(form): axum::Form<SignIn>) -> Result<Response, Refusal> {
    office.sign_ins.check(&form.name.to_lowercase())?;
    let found = office.store().staff_named(form.name.trim()).await?;
    let stored = found.as_ref().map(|s| s.password_hash.clone());
    let password_ok = form.password.len() <= 1024 && office.app.passwords.verify(form.password, stored).await?;
    let member = found.filter(|s| password_ok && staff::code_matches(&s.totp_secret, &form.code, office.now()));
    let Some(member) = member else {
        return Ok(
            (StatusCode::UNAUTHORIZED, pages::sign_in(Some("Nom, mot de passe ou code incorrect."))).into_response()
        );
    };
    let token = super::auth::random_hex::<32>();
    let now = office.now();
    office.store().create_staff_session(&token_hash(&token), &member.id, now, now + SESSION_SECONDS).await?;
    let cookie = cookies::ours(COOKIE_NAME, token, "/", SESSION_SECONDS, Reach::ServerOnly, office.secure_cookie);
    Ok((CookieJar::new().add(cookie), Redirect::to("/blocs")).into_response())
}

async fn sign_out(State(office): State<Office>, headers: HeaderMap) -> Result<Response, Refusal> {
    if let Some(token) = session_token(&headers) {
        office.store().delete_staff_session(&token_hash(&token)).await?;
    }
    Ok((CookieJar::new().add(cookies::forget(COOKIE_NAME, "/")), Redirect::to("/connexion")).into_response())
}

/// `?fait=…`: what the change just made was, said on the page it leads back to.
#[derive(Deserialize, Default)]
struct Done {
    fait: Option<String>,
}

async fn blocks(
    State(office): State<Office>,
    member: Member,
    Query(done): Query<Done>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::Read)?;
    let records = office.app.store.blocks().await?;
    let facts = office.app.store.ledger_facts().await?;
    let reconciled = super::store::ledger::check(facts.clone()).map(|_| ()).map_err(|problems| problems.len());
    let tiers = office.store().tier_counts().await?;
    Ok(pages::blocks(&member.0, &records, &facts.blocks, &tiers, reconciled, done.fait.as_deref()))
}

#[derive(Deserialize)]
struct WithReason {
    reason: String,
}

async fn withdraw_block(
    State(office): State<Office>,
    member: Member,
    Path((emission, block)): Path<(u32, u32)>,
    axum::Form(form): axum::Form<WithReason>,
) -> Result<Redirect, Refusal> {
    member.may(Power::ManageBlocks)?;
    office.store().withdraw_block(emission, block, &member.actor(), reason(&form.reason)?, office.now()).await?;
    Ok(Redirect::to("/blocs?fait=bloc-retire"))
}

#[derive(Deserialize)]
struct Search {
    q: Option<String>,
}

async fn find_players(
    State(office): State<Office>,
    member: Member,
    Query(search): Query<Search>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::Read)?;
    let query = search.q.unwrap_or_default();
    let found = if query.trim().is_empty() { Vec::new() } else { office.store().find_players(&query, 50).await? };
    Ok(pages::players(&member.0, &query, &found))
}

async fn player(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<String>,
    Query(done): Query<Done>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::Read)?;
    let store = &*office.app.store;
    let summary = office
        .store()
        .find_players(&id, 1)
        .await?
        .into_iter()
        .find(|p| p.id == id)
        .ok_or(StoreError::NotFound("player"))?;
    let now = office.now();
    let page = pages::PlayerPage {
        standing: store.standing(&id, now).await?,
        statement: office.store().statement(&id, 50).await?,
        tickets: store.history(&id, 20, None).await?,
        withdrawals: office.store().withdrawals(None, Some(&id), 50).await?,
        adjustments: office.store().adjustments(None, Some(&id), 50).await?,
        events: store.responsible_events(&id, 0).await?,
        sessions: office.store().sessions(&id, now).await?,
        summary,
    };
    Ok(pages::player(&member.0, &page, now, done.fait.as_deref()))
}

/// One of the player's tickets as the game recalls it: every zone's symbols, and when each was uncovered.
async fn ticket(
    State(office): State<Office>,
    member: Member,
    Path((id, ticket)): Path<(String, String)>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::Read)?;
    let record = office.app.store.ticket(&id, &ticket).await?;
    let zones = office.app.printer.zones(&office.app.store, &record).await.map_err(Refusal::from)?;
    Ok(pages::ticket(&member.0, &record, &zones))
}

#[derive(Deserialize)]
struct Suspension {
    action: String,
    reason: String,
}

async fn suspend(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<Suspension>,
) -> Result<Redirect, Refusal> {
    member.may(Power::Suspend)?;
    let suspended = match form.action.as_str() {
        "suspendre" => true,
        "retablir" => false,
        _ => return Err(Refusal::BadForm("Action inconnue.".into())),
    };
    office.store().suspend(&id, suspended, &member.actor(), reason(&form.reason)?, office.now()).await?;
    Ok(Redirect::to(&format!("/joueurs/{id}?fait={}", if suspended { "suspendu" } else { "retabli" })))
}

#[derive(Deserialize)]
struct AdjustmentForm {
    direction: String,
    amount: String,
    reason: String,
}

async fn adjust(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<AdjustmentForm>,
) -> Result<Redirect, Refusal> {
    member.may(Power::MoveMoney)?;
    let amount: Cents =
        form.amount.trim().parse().map_err(|_| {
            Refusal::BadForm(format!("« {} » n'est pas un montant en euros (12 ou 12,50).", form.amount))
        })?;
    let amount = i64::try_from(amount.0).map_err(|_| Refusal::BadForm("Montant trop grand.".into()))?;
    let signed = match form.direction.as_str() {
        "credit" => amount,
        "debit" => -amount,
        _ => return Err(Refusal::BadForm("Choisissez crédit ou débit.".into())),
    };
    let a = office
        .store()
        .adjust(&id, signed, reason(&form.reason)?, &member.actor(), office.threshold, office.now())
        .await?;
    let done = if a.state == AdjustmentState::Pending { "ajustement-en-attente" } else { "ajustement-applique" };
    Ok(Redirect::to(&format!("/joueurs/{id}?fait={done}")))
}

async fn close_account(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<WithReason>,
) -> Result<Redirect, Refusal> {
    member.may(Power::MoveMoney)?;
    office.store().close_account(&id, &member.actor(), reason(&form.reason)?, office.now()).await?;
    Ok(Redirect::to(&format!("/joueurs/{id}?fait=ferme")))
}

async fn staff_page(
    State(office): State<Office>,
    member: Member,
    Query(done): Query<Done>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::ManageStaff)?;
    Ok(pages::staff(&member.0, &office.store().staff_list().await?, done.fait.as_deref()))
}

#[derive(Deserialize)]
struct RoleChange {
    role: String,
    reason: String,
}

async fn change_role(
    State(office): State<Office>,
    member: Member,
    Path(name): Path<String>,
    axum::Form(form): axum::Form<RoleChange>,
) -> Result<Redirect, Refusal> {
    member.may(Power::ManageStaff)?;
    let role =
        super::store::back_office::Role::parse(&form.role).ok_or_else(|| Refusal::BadForm("Rôle inconnu.".into()))?;
    if name == member.0.name {
        return Err(Refusal::BadForm(
            "Un membre ne change pas son propre rôle : un autre administrateur le fait.".into(),
        ));
    }
    office.store().set_role(&name, role, &member.actor(), reason(&form.reason)?, office.now()).await?;
    Ok(Redirect::to("/personnel?fait=role-change"))
}

async fn withdrawals(
    State(office): State<Office>,
    member: Member,
    Query(done): Query<Done>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::ReadMoney)?;
    let pending = office.store().withdrawals(Some(WithdrawalState::Pending), None, 200).await?;
    Ok(pages::withdrawals(&member.0, &pending, done.fait.as_deref()))
}

#[derive(Deserialize)]
struct Decision {
    decision: String,
    reason: Option<String>,
}

async fn decide_withdrawal(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<i64>,
    axum::Form(form): axum::Form<Decision>,
) -> Result<Redirect, Refusal> {
    member.may(Power::MoveMoney)?;
    let pay = match form.decision.as_str() {
        "payer" => true,
        "refuser" => false,
        _ => return Err(Refusal::BadForm("Décision inconnue.".into())),
    };
    let why = reason(form.reason.as_deref().unwrap_or_default())?;
    office.store().decide_withdrawal(id, pay, &member.actor(), why, office.now()).await?;
    Ok(Redirect::to(&format!("/retraits?fait={}", if pay { "retrait-paye" } else { "retrait-refuse" })))
}

async fn adjustments(
    State(office): State<Office>,
    member: Member,
    Query(done): Query<Done>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::ReadMoney)?;
    let pending = office.store().adjustments(Some(AdjustmentState::Pending), None, 200).await?;
    Ok(pages::adjustments(&member.0, &pending, office.threshold, done.fait.as_deref()))
}

async fn decide_adjustment(
    State(office): State<Office>,
    member: Member,
    Path(id): Path<i64>,
    axum::Form(form): axum::Form<Decision>,
) -> Result<Redirect, Refusal> {
    member.may(Power::MoveMoney)?;
    let approve = match form.decision.as_str() {
        "approuver" => true,
        "rejeter" => false,
        _ => return Err(Refusal::BadForm("Décision inconnue.".into())),
    };
    office.store().decide_adjustment(id, approve, &member.actor(), office.now()).await?;
    Ok(Redirect::to(&format!(
        "/ajustements?fait={}",
        if approve { "ajustement-approuve" } else { "ajustement-rejete" }
    )))
}

#[derive(Deserialize)]
struct AuditPage {
    /// The first row shown.
    depuis: Option<i64>,
}

async fn audit_log(
    State(office): State<Office>,
    member: Member,
    Query(page): Query<AuditPage>,
) -> Result<maud::Markup, Refusal> {
    member.may(Power::ReadAudit)?;
    let verified = office.store().verify_audit_log().await?;
    let from = page.depuis.unwrap_or(1).max(1);
    let rows = office.store().audit_log(from - 1, 200).await?;
    Ok(pages::audit_log(&member.0, &rows, &verified))
}

async fn reports_index(State(office): State<Office>, member: Member) -> Result<maud::Markup, Refusal> {
    member.may(Power::ReadMoney)?;
    let yesterday = crate::server::dates::iso_day(office.now() - 86_400);
    Ok(pages::reports_index(&member.0, &yesterday))
}

#[derive(Deserialize)]
struct ReportQuery {
    jour: Option<String>,
    format: Option<String>,
}

/// A report on screen, or (`?format=csv`) as a file to download.
async fn report(
    State(office): State<Office>,
    member: Member,
    Path(name): Path<String>,
    Query(query): Query<ReportQuery>,
) -> Result<Response, Refusal> {
    member.may(Power::ReadMoney)?;
    let now = office.now();
    let report = match name.as_str() {
        "journalier" => {
            let day = query.jour.as_deref().unwrap_or_default();
            let start = crate::server::dates::day_start(day)
                .ok_or_else(|| Refusal::BadForm(format!("« {day} » n'est pas une date (AAAA-MM-JJ).")))?;
            reports::daily(&office.store().day_summary(start).await?, start, now)
        }
        "blocs" => {
            let facts = office.app.store.ledger_facts().await?;
            reports::blocks(
                &office.app.store.blocks().await?,
                &facts.blocks,
                staff::may(member.0.role, Power::SeeUnsoldPrizes),
                now,
            )
        }
        "engagements" => {
            let facts = office.app.store.ledger_facts().await?;
            let pending = office.store().withdrawals(Some(WithdrawalState::Pending), None, 100_000).await?;
            reports::liabilities(&facts.blocks, &pending, office.store().balance_totals().await?, now)
        }
        _ => return Err(Refusal::Store(StoreError::NotFound("report"))),
    };
    if query.format.as_deref() == Some("csv") {
        let body = report.csv().map_err(|e| Refusal::Store(StoreError::Backend(e)))?;
        let file = format!("attachment; filename=\"vegas-{name}-{}.csv\"", crate::server::dates::iso_day(now));
        let disposition =
            HeaderValue::from_str(&file).map_err(|e| Refusal::Store(StoreError::Backend(e.to_string())))?;
        return Ok((
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8")),
                (header::CONTENT_DISPOSITION, disposition),
            ],
            body,
        )
            .into_response());
    }
    Ok(pages::report(&member.0, &report, &name, query.jour.as_deref()).into_response())
}

/// Serves the back office on `listener` until `shutdown`, with the players' server's timeouts and
/// connection limit (a back office reached through a tunnel is no reason to hold a slow client longer).
pub async fn serve_on(
    office: Office,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let config = office.app.config.clone();
    super::serve_connections(&config, None, router(office), listener, shutdown).await
}
