//! Every failure the API can answer, each mapped to a 4xx (or, for a fault of ours, 500) with a JSON
//! body `{"error": code, "message": text}`. Clients branch on `error`; people read `message`.

use super::dates::utc;
use super::store::StoreError;
use super::store::responsible::{Flow, LimitRefusal, Pause, PauseKind};
pub use crate::api::ErrorCode;
pub use crate::api::RealityCheck;
use crate::play::RevealError;
use axum::Json;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody, JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::{ContentBuilder, RefOr, Response as DocumentedAnswer, ResponseBuilder};
use utoipa::{IntoResponses, PartialSchema};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    InvalidJson(String),
    /// A real-money registration's identity is missing or not well formed.
    #[error("{0}")]
    InvalidIdentity(String),
    #[error("sign in first: no valid session cookie or bearer token")]
    Unauthorized,
    #[error("wrong name or password")]
    BadCredentials,
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("this method is not allowed here")]
    MethodNotAllowed,
    #[error("not enough money: the balance is {balance} cents, a ticket costs {price} cents")]
    InsufficientFunds { balance: u64, price: u64 },
    #[error("every block of every emission is sold out: no ticket is on sale")]
    SoldOut,
    #[error("{1}")]
    Conflict(ErrorCode, String),
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the request was not received or answered in time")]
    TimedOut,
    #[error("too many attempts: try again in {retry_after} s")]
    RateLimited { retry_after: u64 },
    #[error("the server is busy: try again in a moment")]
    Busy,
    #[error(
        "the game's database cannot be reached at the moment: try again in a few seconds (nothing is ever done twice)"
    )]
    Unavailable(String),
    #[error("{0}")]
    LimitReached(LimitRefusal),
    #[error("set your 7-day {} limit first: no {} before it is \
        set", flow_name(*.0), if *.0 == Flow::Stake { "purchase" } else { "deposit" })]
    LimitsRequired(Flow),
    #[error("{} until {}: no purchase and no deposit before then", pause_name(.0.kind), utc(.0.until))]
    Paused(Pause),
    #[error("you have played for {} minutes: acknowledge the reality check before buying \
        again", .0.session_seconds / 60)]
    RealityCheckDue(RealityCheck),
    #[error("{1}")]
    Forbidden(ErrorCode, String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            ApiError::InvalidJson(_) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidJson),
            ApiError::InvalidIdentity(_) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidIdentity),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            ApiError::BadCredentials => (StatusCode::UNAUTHORIZED, ErrorCode::BadCredentials),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed),
            ApiError::InsufficientFunds { .. } => (StatusCode::PAYMENT_REQUIRED, ErrorCode::InsufficientFunds),
            ApiError::SoldOut => (StatusCode::CONFLICT, ErrorCode::SoldOut),
            ApiError::Conflict(code, _) => (StatusCode::CONFLICT, *code),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::PayloadTooLarge),
            ApiError::TimedOut => (StatusCode::REQUEST_TIMEOUT, ErrorCode::TimedOut),
            ApiError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited),
            ApiError::Busy => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Busy),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable),
            ApiError::LimitReached(_) => (StatusCode::FORBIDDEN, ErrorCode::LimitReached),
            ApiError::LimitsRequired(_) => (StatusCode::FORBIDDEN, ErrorCode::LimitsRequired),
            ApiError::Paused(_) => (StatusCode::FORBIDDEN, ErrorCode::Paused),
            ApiError::RealityCheckDue(_) => (StatusCode::CONFLICT, ErrorCode::RealityCheckDue),
            ApiError::Forbidden(code, _) => (StatusCode::FORBIDDEN, *code),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }
}

/// The body of every error answer.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for clients to branch on.
    pub error: ErrorCode,
    /// What went wrong, for people to read.
    pub message: String,
    /// On a 500 only: the id the server's log files the cause under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// On `limit_reached`: which limit, what it still allows, and when more frees up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitRefusal>,
    /// On `paused`: the break, self-exclusion or closure, and until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// On `reality_check_due`: what the session has played.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reality_check: Option<RealityCheck>,
}

impl ErrorBody {
    fn new(code: ErrorCode, message: String) -> ErrorBody {
        ErrorBody { error: code, message, request_id: None, limit: None, pause: None, reality_check: None }
    }
}

fn flow_name(flow: Flow) -> &'static str {
    match flow {
        Flow::Stake => "stake",
        Flow::Deposit => "deposit",
    }
}

fn pause_name(kind: PauseKind) -> &'static str {
    match kind {
        PauseKind::Break => "you are taking a break",
        PauseKind::Exclusion => "you have excluded yourself",
        PauseKind::Closed => "this account is closed",
    }
}

/// The cause of a fault of ours, carried by its response to [`report_faults`], which logs it beside the
/// request's id; the client sees only the id.
#[derive(Debug, Clone)]
struct Fault(String);

const FAULT_MESSAGE: &str = "the server failed to answer; nothing was done twice, and the request may be retried";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if let ApiError::Internal(cause) = self {
            let mut response = (status, Json(ErrorBody::new(code, FAULT_MESSAGE.into()))).into_response();
            response.extensions_mut().insert(Fault(cause));
            return response;
        }
        let mut body = ErrorBody::new(code, self.to_string());
        match &self {
            ApiError::LimitReached(limit) => body.limit = Some(limit.clone()),
            ApiError::Paused(pause) => body.pause = Some(*pause),
            ApiError::RealityCheckDue(check) => body.reality_check = Some(*check),
            _ => {}
        }
        let mut response = (status, Json(body)).into_response();
        let retry_after = match self {
            ApiError::RateLimited { retry_after } => Some(retry_after),
            ApiError::Busy => Some(1),
            ApiError::Unavailable(cause) => {
                tracing::warn!(%cause, "the store is unavailable: answered 503");
                Some(2)
            }
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// Middleware: every 5xx is logged with its cause and the request's id (`x-request-id`, set by the
/// layer around it), and answered with a generic message carrying that id, never the cause.
pub async fn report_faults(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let request_id = request.headers().get(super::REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned();
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    if !response.status().is_server_error() || response.status() == StatusCode::SERVICE_UNAVAILABLE {
        return response;
    }
    let cause = response
        .extensions()
        .get::<Fault>()
        .map_or_else(|| format!("{} from a layer", response.status()), |f| f.0.clone());
    tracing::error!(%request_id, %method, %path, %cause, "request failed");
    let body = ErrorBody { request_id: Some(request_id), ..ErrorBody::new(ErrorCode::Internal, FAULT_MESSAGE.into()) };
    (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
}

/// A panic in a handler is a fault of ours like any other (its text goes to the log only).
pub fn panic_fault(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let text =
        panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()));
    ApiError::Internal(format!("panic: {}", text.unwrap_or_default())).into_response()
}

/// Middleware: the errors that layers answer themselves (a body over the limit, a request too slow)
/// get the API's JSON error body like every other.
pub async fn layer_errors_in_json(response: Response) -> Response {
    let error = match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(super::BODY_LIMIT),
        StatusCode::REQUEST_TIMEOUT => ApiError::TimedOut,
        _ => return response,
    };
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if is_json { response } else { error.into_response() }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> ApiError {
        match rejection {
            JsonRejection::BytesRejection(BytesRejection::FailedToBufferBody(
                FailedToBufferBody::LengthLimitError(_),
            )) => ApiError::TooLarge(super::BODY_LIMIT),
            JsonRejection::BytesRejection(BytesRejection::FailedToBufferBody(
                FailedToBufferBody::UnknownBodyError(e),
            )) => {
                let timed_out = std::iter::successors(std::error::Error::source(&e), |cause| cause.source())
                    .any(|cause| cause.is::<tower_http::timeout::TimeoutError>());
                if timed_out {
                    ApiError::TimedOut
                } else {
                    ApiError::BadRequest(format!("the request body could not be read: {e}"))
                }
            }
            other => ApiError::InvalidJson(other.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> ApiError {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound(what) => ApiError::NotFound(what),
            StoreError::NameTaken => ApiError::Conflict(ErrorCode::NameTaken, e.to_string()),
            StoreError::InsufficientFunds { balance, price } => {
                ApiError::InsufficientFunds { balance: balance.0, price: price.0 }
            }
            StoreError::SoldOut => ApiError::SoldOut,
            StoreError::Overdraft { .. } => ApiError::Conflict(ErrorCode::Overdraft, e.to_string()),
            StoreError::KeyReused => ApiError::Conflict(ErrorCode::IdempotencyKeyReused, e.to_string()),
            StoreError::Reveal(RevealError::NoSuchZone(_)) => ApiError::BadRequest(e.to_string()),
            StoreError::Reveal(RevealError::FirstSurfaceUnfinished(_)) => {
                ApiError::Conflict(ErrorCode::FirstSurfaceUnfinished, e.to_string())
            }
            StoreError::ZonesLeft(_) => ApiError::Conflict(ErrorCode::ZonesLeft, e.to_string()),
            StoreError::Finished => ApiError::Conflict(ErrorCode::TicketFinished, e.to_string()),
            StoreError::AlreadyExists(_) => ApiError::Conflict(ErrorCode::AlreadyExists, e.to_string()),
            StoreError::NotAGuest => ApiError::Conflict(ErrorCode::AlreadyRegistered, e.to_string()),
            StoreError::LimitReached(limit) => ApiError::LimitReached(limit),
            StoreError::LimitsRequired(flow) => ApiError::LimitsRequired(flow),
            StoreError::Paused(pause) => ApiError::Paused(pause),
            StoreError::AlreadyPaused(pause) => ApiError::Conflict(
                ErrorCode::AlreadyPaused,
                format!("play is already paused until {}, as long or longer", utc(pause.until)),
            ),
            StoreError::RaiseNotYet { confirmable_at } => ApiError::Conflict(
                ErrorCode::RaiseNotYet,
                format!(
                    "a raise applies no sooner than 48 h after it is asked: confirm it from {} on",
                    utc(confirmable_at)
                ),
            ),
            StoreError::RaiseLapsed { lapsed_at } => ApiError::Conflict(
                ErrorCode::RaiseLapsed,
                format!("this raise lapsed unconfirmed at {}: ask again", utc(lapsed_at)),
            ),
            StoreError::NoRaisePending => ApiError::NotFound("pending raise of this limit"),
            StoreError::Banned => ApiError::Forbidden(ErrorCode::Banned, e.to_string()),
            StoreError::Suspended => ApiError::Forbidden(ErrorCode::Suspended, e.to_string()),
            StoreError::AlreadyDone(_) => ApiError::Conflict(ErrorCode::AlreadyDone, e.to_string()),
            StoreError::Invalid(why) => ApiError::BadRequest(why),
            StoreError::FourEyes => ApiError::Forbidden(ErrorCode::FourEyes, e.to_string()),
            StoreError::Backend(cause) => ApiError::Internal(cause),
            StoreError::Unavailable(cause) => ApiError::Unavailable(cause),
        }
    }
}

/// `axum::Json` whose rejections answer in our JSON error format.
#[derive(axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        Json(self.0).into_response()
    }
}

/// `axum::extract::Query`, answering bad query strings in our JSON error format.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// `axum::extract::Path`, answering bad path parameters in our JSON error format.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

// What the OpenAPI document says each kind of route may answer besides its own answers.

fn error_responses(statuses: &[(u16, &str)]) -> BTreeMap<String, RefOr<DocumentedAnswer>> {
    let content = ContentBuilder::new().schema(Some(ErrorBody::schema())).build();
    statuses
        .iter()
        .map(|(status, description)| {
            let mut response =
                ResponseBuilder::new().description(*description).content("application/json", content.clone());
            if matches!(status, 429 | 503) {
                let seconds = HeaderBuilder::new()
                    .schema(u64::schema())
                    .description(Some("Seconds to wait before trying again"))
                    .build();
                response = response.header("Retry-After", seconds);
            }
            (status.to_string(), RefOr::T(response.build()))
        })
        .collect()
}

/// Where a password is checked: the work is bounded, and so are the attempts.
pub struct PasswordRefusals;

impl IntoResponses for PasswordRefusals {
    fn responses() -> BTreeMap<String, RefOr<DocumentedAnswer>> {
        let mut responses = AnyRequestRefusals::responses();
        responses.extend(error_responses(&[
            (429, "`rate_limited`: too many attempts from this address, or on this name"),
            (503, "`busy`: every password check is taken; come back shortly"),
        ]));
        responses
    }
}

/// Where a ticket of the signed-in player is named by its id.
pub struct TicketRefusals;

impl IntoResponses for TicketRefusals {
    fn responses() -> BTreeMap<String, RefOr<DocumentedAnswer>> {
        let mut responses = SessionRefusals::responses();
        responses.extend(error_responses(&[(404, "`not_found`: no such ticket of this player")]));
        responses
    }
}

/// What any request may be answered, whatever its route.
pub struct AnyRequestRefusals;

impl IntoResponses for AnyRequestRefusals {
    fn responses() -> BTreeMap<String, RefOr<DocumentedAnswer>> {
        error_responses(&[
            (400, "The request does not parse, or breaks a rule the message states"),
            (408, "The request was not sent, or not answered, in time"),
            (413, "The body is over 16 KiB (refused on its declared length, before it is read)"),
            (
                500,
                "A fault of ours: a generic message and the request's id, which the server's log carries with the \
                    cause",
            ),
        ])
    }
}

/// Where a session is needed.
pub struct SessionRefusals;

impl IntoResponses for SessionRefusals {
    fn responses() -> BTreeMap<String, RefOr<DocumentedAnswer>> {
        let mut responses = AnyRequestRefusals::responses();
        responses.extend(error_responses(&[(401, "No valid session: send the bearer token or the session cookie")]));
        responses
    }
}
