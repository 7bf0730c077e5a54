//! Every failure the API can answer, each mapped to a 4xx (or, for a fault of ours, 500) with a JSON
//! body `{"error": code, "message": text}`. Clients branch on `error`; people read `message`.

use super::store::StoreError;
use crate::play::RevealError;
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    InvalidJson(String),
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
    Conflict(&'static str, String),
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::InvalidJson(_) => (StatusCode::BAD_REQUEST, "invalid_json"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::BadCredentials => (StatusCode::UNAUTHORIZED, "bad_credentials"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::InsufficientFunds { .. } => (StatusCode::PAYMENT_REQUIRED, "insufficient_funds"),
            ApiError::SoldOut => (StatusCode::CONFLICT, "sold_out"),
            ApiError::Conflict(code, _) => (StatusCode::CONFLICT, code),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        // A fault of ours is logged with its cause; the client is told only that it happened.
        let message = if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
            "the server failed to answer; nothing was done twice, and the request may be retried".to_owned()
        } else {
            self.to_string()
        };
        (status, Json(json!({ "error": code, "message": message }))).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> ApiError {
        match rejection {
            JsonRejection::BytesRejection(_) => ApiError::TooLarge(super::BODY_LIMIT),
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
            StoreError::NameTaken => ApiError::Conflict("name_taken", e.to_string()),
            StoreError::InsufficientFunds { balance, price } => ApiError::InsufficientFunds { balance: balance.0, price: price.0 },
            StoreError::SoldOut => ApiError::SoldOut,
            StoreError::Overdraft { .. } => ApiError::Conflict("overdraft", e.to_string()),
            StoreError::KeyReused => ApiError::Conflict("idempotency_key_reused", e.to_string()),
            StoreError::Reveal(RevealError::NoSuchZone(_)) => ApiError::BadRequest(e.to_string()),
            StoreError::Reveal(RevealError::FirstSurfaceUnfinished(_)) => ApiError::Conflict("first_surface_unfinished", e.to_string()),
            StoreError::ZonesLeft(_) => ApiError::Conflict("zones_left", e.to_string()),
            StoreError::AlreadyExists(_) => ApiError::Conflict("already_exists", e.to_string()),
            StoreError::Backend(cause) => ApiError::Internal(cause),
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
