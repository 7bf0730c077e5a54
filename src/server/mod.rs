//! The ticket server (native only): axum over one embedded SQLite store.
//!
//! - [`store`]: the schema and every transaction that moves money.
//! - [`auth`]: players, guests, sessions (HttpOnly cookie or bearer token), demo deposits.
//! - [`tickets`]: sale, reveals, completion, history; the signer and the block cache.
//! - [`blocks`]: emissions of blocks, public block info, audits.
//!
//! [`AppState`] is cheap to clone: the SQLite connection sits behind one mutex (SQLite serialises
//! writers anyway) and is only used from blocking tasks, never on the async executor.

pub mod auth;
pub mod blocks;
pub mod error;
pub mod store;
pub mod tickets;

use crate::composer::Design;
use crate::payload::TicketSigner;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, header};
use axum::routing::{get, post};
use error::ApiError;
use rusqlite::Connection;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

/// Largest request body accepted: the largest legitimate request (a reveal list) is far below it.
pub const BODY_LIMIT: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    /// The built web app (Trunk's `dist/`), served beside the API.
    pub dist_dir: PathBuf,
    /// Guests may play with demo money, and players may top up with demo money.
    pub demo: bool,
    /// A ticket still unfinished this long after its sale is settled by the server.
    pub settle_after: Duration,
}

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    db: Arc<Mutex<Connection>>,
    pub signer: Arc<TicketSigner>,
    /// Blocks' lots and designs, loaded once from the store: a sale must not read 1.5 MB.
    cache: Arc<Mutex<tickets::Cache>>,
}

impl AppState {
    pub fn open(config: Config) -> Result<AppState, String> {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| format!("cannot create {}: {e}", config.data_dir.display()))?;
        let conn = store::open(&config.data_dir.join("vegas.sqlite3")).map_err(|e| format!("cannot open the store: {e}"))?;
        let signer = auth::load_or_create_key(&config.data_dir)?;
        Ok(AppState {
            config: Arc::new(config),
            db: Arc::new(Mutex::new(conn)),
            signer: Arc::new(signer),
            cache: Arc::new(Mutex::new(tickets::Cache { lots: HashMap::new(), designs: HashMap::new() })),
        })
    }

    /// Runs `work` on the connection in a blocking task.
    pub async fn db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = db.lock().map_err(|_| ApiError::Internal("the store lock is poisoned".into()))?;
            work(&mut conn)
        })
        .await
        .map_err(|e| ApiError::Internal(format!("store task: {e}")))?
    }

    /// The design a block was made with (loaded from the store once).
    pub fn design(&self, conn: &Connection, hash: &[u8; 32]) -> Result<Arc<Design>, ApiError> {
        let mut cache = self.cache.lock().map_err(|_| ApiError::Internal("cache lock".into()))?;
        if let Some(d) = cache.designs.get(hash) {
            return Ok(d.clone());
        }
        let design = Design::from_toml(&store::design_text(conn, hash)?)
            .map_err(|e| ApiError::Internal(format!("a stored design no longer validates: {e}")))?;
        let design = Arc::new(design);
        cache.designs.insert(*hash, design.clone());
        Ok(design)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, tickets::Cache> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Content-Security-Policy: only our own scripts (and wasm), no framing, no third-party anything.
/// Trunk's loader is an inline module script, allowed by its hash (computed from `index.html`).
fn content_security_policy(dist: &std::path::Path) -> String {
    use base64::Engine;
    use sha2::Digest;
    let html = std::fs::read_to_string(dist.join("index.html")).unwrap_or_default();
    let mut hashes = String::new();
    let mut rest = html.as_str();
    while let Some(start) = rest.find("<script") {
        let after = &rest[start..];
        let (Some(open_end), Some(close)) = (after.find('>'), after.find("</script>")) else { break };
        let body = &after[open_end + 1..close];
        if !after[..open_end].contains("src=") && !body.trim().is_empty() {
            let digest = sha2::Sha256::digest(body.as_bytes());
            hashes.push_str(&format!(" 'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest)));
        }
        rest = &after[close + 9..];
    }
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
}

pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/guest", post(auth::guest))
        .route("/register", post(auth::register))
        .route("/login", post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/me", get(auth::me))
        .route("/wallet/deposit", post(auth::demo_deposit))
        .route("/tickets", post(tickets::buy).get(tickets::history))
        .route("/tickets/{id}", get(tickets::one))
        .route("/tickets/{id}/reveal", post(tickets::reveal))
        .route("/tickets/{id}/complete", post(tickets::complete))
        .route("/jwks", get(tickets::jwks))
        .route("/blocks", get(blocks::list))
        .fallback(|| async { ApiError::NotFound("API route") })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed });

    let dist = &state.config.dist_dir;
    let app = ServeDir::new(dist).fallback(ServeFile::new(dist.join("index.html")));
    let csp = HeaderValue::from_str(&content_security_policy(dist)).expect("an ASCII policy");
    let header = |name: HeaderName, value: &'static str| SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value));

    Router::new()
        .nest("/api", api)
        .route("/.well-known/jwks.json", get(tickets::jwks))
        .route("/healthz", get(|| async { "ok" }))
        .fallback_service(app)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        // The app is a 1.2 MB wasm file: brotli or gzip cut what a phone downloads by two thirds. Level 5
        // compresses it in tens of milliseconds; brotli's default (11) would take a second a request.
        .layer(CompressionLayer::new().quality(CompressionLevel::Precise(5)))
        .layer(SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, csp))
        .layer(header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header(header::REFERRER_POLICY, "no-referrer"))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves until Ctrl-C, settling abandoned tickets in the background.
pub async fn serve(state: AppState, addr: SocketAddr) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    tracing::info!("Vegas on http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    serve_on(state, listener, shutdown_signal()).await
}

pub async fn serve_on(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let settler = tokio::spawn(tickets::settle_abandoned_forever(state.clone()));
    let result = axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await.map_err(|e| e.to_string());
    settler.abort();
    result
}

async fn shutdown_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

/// Bytes from the operating system's CSPRNG: seeds, keys, ids and tokens all come from here.
pub fn os_random<const N: usize>() -> [u8; N] {
    use rand::TryRngCore;
    let mut bytes = [0u8; N];
    rand::rngs::OsRng.try_fill_bytes(&mut bytes).expect("the operating system provides randomness");
    bytes
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
