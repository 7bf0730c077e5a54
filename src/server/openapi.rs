//! The API's contract: an OpenAPI 3.1 document generated from the handlers' annotations and the types
//! they read and answer (utoipa), served at `GET /api/openapi.json`. `make test` fuzzes the running
//! server against it (schemathesis).

use super::error::ErrorBody;
use std::collections::BTreeMap;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, Modify, OpenApi, PartialSchema};

#[derive(OpenApi)]
#[openapi(
    info(title = "Vegas", description = "An instant-lottery game: players, their money, and tickets sold as signed payloads."),
    paths(
        super::auth::guest,
        super::auth::register,
        super::auth::login,
        super::auth::claim_account,
        super::auth::logout,
        super::auth::me,
        super::auth::demo_deposit,
        super::withdrawals::ask,
        super::withdrawals::list,
        super::responsible::standing,
        super::responsible::change_limit,
        super::responsible::confirm_raise,
        super::responsible::pause,
        super::responsible::set_reality_interval,
        super::responsible::session,
        super::responsible::acknowledge,
        super::responsible::history,
        super::tickets::buy,
        super::tickets::history,
        super::tickets::one,
        super::tickets::reveal,
        super::tickets::complete,
        super::tickets::proof,
        super::tickets::jwks,
        super::tickets::well_known_jwks,
        super::blocks::list,
        super::blocks::one,
        document,
        health,
        super::metrics::ready,
        super::rules_page::page,
    ),
    modifiers(&SessionSchemes),
    tags(
        (name = "players", description = "Guests, accounts, sessions and their money"),
        (name = "tickets", description = "Buying, scratching and finishing tickets"),
        (name = "responsible", description = "Jeu responsable: limits, breaks and self-exclusion, reality checks, and their record"),
        (name = "public", description = "What anyone may read: keys, blocks, health")
    )
)]
pub struct ApiDoc;

/// The two ways to send a session: the bearer token API clients keep, or the browser's cookie.
struct SessionSchemes;

impl Modify for SessionSchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()));
        components.add_security_scheme("cookie", SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(super::auth::COOKIE_NAME))));
    }
}

fn error_responses(statuses: &[(u16, &str)]) -> BTreeMap<String, RefOr<Response>> {
    let content = ContentBuilder::new().schema(Some(ErrorBody::schema())).build();
    statuses
        .iter()
        .map(|(status, description)| {
            let mut response = ResponseBuilder::new().description(*description).content("application/json", content.clone());
            if matches!(status, 429 | 503) {
                let seconds = HeaderBuilder::new().schema(u64::schema()).description(Some("Seconds to wait before trying again")).build();
                response = response.header("Retry-After", seconds);
            }
            (status.to_string(), RefOr::T(response.build()))
        })
        .collect()
}

/// Where a password is checked: the work is bounded, and so are the attempts.
pub struct PasswordRefusals;

impl IntoResponses for PasswordRefusals {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
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
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = SessionRefusals::responses();
        responses.extend(error_responses(&[(404, "`not_found`: no such ticket of this player")]));
        responses
    }
}

/// What any request may be answered, whatever its route.
pub struct AnyRequestRefusals;

impl IntoResponses for AnyRequestRefusals {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        error_responses(&[
            (400, "The request does not parse, or breaks a rule the message states"),
            (408, "The request was not sent, or not answered, in time"),
            (413, "The body is over 16 KiB (refused on its declared length, before it is read)"),
            (500, "A fault of ours: a generic message and the request's id, which the server's log carries with the cause"),
        ])
    }
}

/// Where a session is needed.
pub struct SessionRefusals;

impl IntoResponses for SessionRefusals {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = AnyRequestRefusals::responses();
        responses.extend(error_responses(&[(401, "No valid session: send the bearer token or the session cookie")]));
        responses
    }
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "public", responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn document() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}

/// `GET /healthz`: the server is up.
#[utoipa::path(get, path = "/healthz", tag = "public", responses((status = 200, description = "Up", body = String, content_type = "text/plain")))]
pub async fn health() -> &'static str {
    "ok"
}
