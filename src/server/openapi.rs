//! The API's contract: an OpenAPI 3.1 document generated from the handlers' annotations and the types
//! they read and answer (utoipa), gathered as the router registers each route, and served at
//! `GET /api/openapi.json`. `make test` fuzzes the running server against it (schemathesis).

use axum::Extension;
use std::sync::Arc;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// What the document says of the API as a whole; its paths come from the router's own list
/// (`server::router`: each route registered with `routes!` from its handler's `#[utoipa::path]`).
#[derive(OpenApi)]
#[openapi(
    info(title = "Vegas", description = "An instant-lottery game: players, their money, and tickets sold as signed \
        payloads."),
    modifiers(&SessionSchemes),
    tags(
        (name = "players", description = "Guests, accounts, sessions and their money"),
        (name = "tickets", description = "Buying, scratching and finishing tickets"),
        (name = "responsible", description = "Jeu responsable: limits, breaks and self-exclusion, reality checks, and \
            their record"),
        (name = "public", description = "What anyone may read: keys, blocks, health")
    )
)]
pub struct ApiDoc;

/// The two ways to send a session: the bearer token API clients keep, or the browser's cookie.
struct SessionSchemes;

impl Modify for SessionSchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(super::auth::COOKIE_NAME))),
        );
    }
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "public", responses((status = 200, description =
    "The OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn document(
    Extension(document): Extension<Arc<utoipa::openapi::OpenApi>>,
) -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(document.as_ref().clone())
}

/// `GET /healthz`: the server is up.
#[utoipa::path(get, path = "/healthz", tag = "public", responses((status = 200, description = "Up", body = String,
    content_type = "text/plain")))]
pub async fn health() -> &'static str {
    "ok"
}
