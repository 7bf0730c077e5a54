//! The ticket server (native only): axum over a [`store::Store`].
//!
//! - [`store`]: the narrow interface to everything persisted, its double-entry [`store::ledger`], and
//!   its two implementations: embedded SQLite (one instance) and PostgreSQL (several).
//! - [`auth`]: players, guests, sessions (HttpOnly cookie or bearer token), demo deposits.
//! - [`tickets`]: sale, reveals, completion, history, and the settler of abandoned tickets.
//! - [`printer`]: a sold ticket's signed payload, printed from its facts and its block's seed.
//! - [`blocks`]: emissions of blocks, public block info, audits.
//!
//! Handlers do HTTP only: they read the request, call the store, and shape the answer.

pub mod auth;
pub mod back_office;
pub mod blocks;
pub mod clock;
pub mod connections;
pub mod cookies;
pub mod dates;
pub mod error;
pub mod limits;
pub mod metrics;
pub mod names;
pub mod openapi;
pub mod operator;
pub mod passwords;
pub mod printer;
pub mod qa_deck;
pub mod responsible;
pub mod rules_page;
pub mod store;
pub mod tickets;
pub mod withdrawals;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::http::{HeaderName, HeaderValue, header};
pub use clock::{Clock, ManualClock};
use error::ApiError;
use printer::Printer;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::Store;
use store::sqlite::Opening;
use tower_governor::GovernorLayer;
use tower_http::CompressionLevel;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// `Keep-Alive: timeout=…`: how long an idle connection may wait for its next request, a second under
/// when the server closes it (`Timeouts::header`), so that a client that keeps to it never sends a
/// request on a connection the server is closing.
fn keep_alive(closed_after: Duration) -> HeaderValue {
    HeaderValue::from_str(&format!("timeout={}", closed_after.as_secs().saturating_sub(1).max(1)))
        .expect("an ASCII header")
}

/// Largest request body accepted: the largest legitimate request (a reveal list) is far below it.
pub const BODY_LIMIT: usize = 16 * 1024;

/// Where the store is.
#[derive(Debug, Clone)]
pub enum Database {
    /// Embedded SQLite in this data directory (created if need be): one server instance.
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://user@host/db`): as many instances as needed, with a pool of this
    /// many connections each.
    Postgres { url: String, connections: usize },
}

impl Database {
    /// `postgres://…` (or `postgresql://…`) if given, else SQLite in `data_dir`.
    pub fn choose(url: Option<String>, data_dir: PathBuf, connections: usize) -> Database {
        match url {
            Some(url) => Database::Postgres { url, connections },
            None => Database::Sqlite(data_dir),
        }
    }

    pub async fn open(&self, opening: Opening) -> Result<Store, String> {
        match self {
            Database::Sqlite(data_dir) => open_store(data_dir, opening),
            Database::Postgres { url, connections } => {
                Store::postgres(url, *connections).await.map_err(|e| format!("cannot open the store: {e}"))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub database: Database,
    /// The built web app (Trunk's `dist/`), served beside the API.
    pub dist_dir: PathBuf,
    /// Guests may play with demo money, and players may top up with demo money. Off, the server never
    /// mints money: the operator funds players (`vegas wallet credit`).
    pub demo: bool,
    /// A ticket still unfinished this long after its sale is settled by the server.
    pub settle_after: Duration,
    /// Guest creations, registrations and logins allowed per client IP.
    pub auth_rate: limits::Rate,
    /// Client IPs are read from a trusted reverse proxy's forwarding headers.
    pub behind_proxy: bool,
    /// Password hashes computed at once (each holds 19 MiB for ~40 ms).
    pub password_hashes: usize,
    /// The session cookie is sent only over HTTPS.
    pub secure_cookie: bool,
    /// Connections held at once; more wait to be accepted.
    pub max_connections: usize,
    /// What one client address may hold (see [`connections`]).
    pub client_cap: connections::ClientCap,
    pub timeouts: Timeouts,
    /// What time it is (a test's own hand, or the system's).
    pub clock: Clock,
    /// A staff credit or debit larger than this waits for a second member (back office).
    pub adjustment_threshold: crate::money::Cents,
}

/// How long a client may take; past these, its connection is closed (or its request answered 408).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To send a request's headers, counted from the connection's start or the previous answer (so
    /// it is also how long an idle keep-alive connection is kept).
    pub header: Duration,
    /// Between two pieces of a request's body.
    pub body: Duration,
    /// For a whole request, body and answer included.
    pub request: Duration,
}

impl Timeouts {
    pub const DEFAULT: Timeouts =
        Timeouts { header: Duration::from_secs(10), body: Duration::from_secs(10), request: Duration::from_secs(30) };
}

impl Config {
    /// A real-money server with the production defaults.
    pub fn new(database: Database, dist_dir: PathBuf) -> Config {
        Config {
            database,
            dist_dir,
            demo: false,
            settle_after: Duration::from_secs(600),
            auth_rate: limits::Rate::PER_IP,
            behind_proxy: false,
            password_hashes: std::thread::available_parallelism().map_or(2, usize::from),
            secure_cookie: true,
            max_connections: 4096,
            client_cap: connections::ClientCap::DEFAULT,
            timeouts: Timeouts::DEFAULT,
            clock: Clock::system(),
            adjustment_threshold: crate::money::Cents::euros(1_000),
        }
    }
}

/// What every handler shares. axum clones it for every request, so it is one `Arc`: one reference
/// count touched per request, not one per field (measured: each contended count costs every request).
/// The store is shared by reference: it has no lock of its own around requests (see [`store`] for how
/// each unit of work stays safe under concurrency).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

pub struct Shared {
    pub config: Config,
    pub store: Arc<Store>,
    pub printer: Printer,
    pub passwords: passwords::Passwords,
    pub sessions_per_ip: limits::PerIp,
    /// Logins per name at one address, and per name from every address (see [`limits`]).
    pub logins_per_name_at_address: limits::PerKey,
    pub logins_per_name: limits::PerKey,
    /// Signs the device cookie a sign-in leaves (see `auth::DeviceCookie`).
    pub device_key: [u8; 32],
    /// What each client address holds of the connections (or, behind a proxy, of the requests).
    pub clients: Arc<connections::PerClient>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// Opens the embedded store of a data directory (creating the directory), migrating it if need be.
/// The directory holds secrets (the open blocks' seeds decide every unsold ticket; password and
/// session hashes; an old signing key): it is made owner-only, and refused if anyone else may read it.
pub fn open_store(data_dir: &std::path::Path, opening: Opening) -> Result<Store, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let database = data_dir.join(store::sqlite::FILE_NAME);
    // Made owner-only before SQLite opens it; SQLite gives its -wal and -shm files the same mode.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&database)
        .map_err(|e| format!("cannot create {}: {e}", database.display()))?;
    check_private(data_dir)?;
    Store::sqlite(&database, opening).map_err(|e| format!("cannot open the store: {e}"))
}

/// Refuses a data directory, or a store file in it (the database, its -wal and -shm, an old key file),
/// that its owner's group or others may access.
fn check_private(data_dir: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let entries = std::fs::read_dir(data_dir).map_err(|e| format!("cannot read {}: {e}", data_dir.display()))?;
    let secret = |name: &str| name.starts_with(store::sqlite::FILE_NAME) || name == auth::KEY_FILE_NAME;
    let files = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(secret))
        .map(|entry| entry.path());
    for path in std::iter::once(data_dir.to_owned()).chain(files) {
        let mode =
            std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.permissions().mode()
                & 0o777;
        if mode & 0o077 != 0 {
            let wanted = if path.is_dir() { "700" } else { "600" };
            return Err(format!(
                "{} may be read by others (mode {mode:o}) but holds the store's secrets: run `chmod {wanted} {}` (and \
                    the same for what it holds)",
                path.display(),
                path.display()
            ));
        }
    }
    Ok(())
}

impl AppState {
    pub async fn open(config: Config) -> Result<AppState, String> {
        metrics::recorder();
        let store = Arc::new(config.database.open(Opening::Server).await?);
        // A data directory from before keys lived in the store brings its key along.
        let first_key = match &config.database {
            Database::Sqlite(data_dir) => auth::key_file(data_dir)?,
            Database::Postgres { .. } => None,
        };
        let printer = Printer::load(&store, first_key, config.clock.now())
            .await
            .map_err(|e| format!("cannot load the signing keys: {e}"))?;
        let passwords = passwords::Passwords::new(config.password_hashes);
        let sessions_per_ip = limits::per_ip(config.auth_rate, limits::ClientIp { behind_proxy: config.behind_proxy });
        let logins_per_name_at_address =
            limits::PerKey::new("logins_per_name_at_address", limits::Rate::PER_NAME_AT_ADDRESS, config.clock.clone());
        let logins_per_name = limits::PerKey::new("logins_per_name", limits::Rate::PER_NAME, config.clock.clone());
        let device_key = store
            .server_secret("device-cookie", config.clock.now())
            .await
            .map_err(|e| format!("cannot read the device cookies' key: {e}"))?;
        let clients = connections::PerClient::new(config.client_cap);
        Ok(AppState(Arc::new(Shared {
            config,
            store,
            printer,
            passwords,
            sessions_per_ip,
            logins_per_name_at_address,
            logins_per_name,
            device_key,
            clients,
        })))
    }
}

/// The built app's pages: the game, the designers' preview, the « Vérifier » and « Jeu responsable »
/// pages (their own builds).
const PAGES: [&str; 4] = ["index.html", "preview/index.html", "verifier/index.html", "jeu-responsable/index.html"];

/// Content-Security-Policy: only our own scripts (and wasm), no framing, no third-party anything.
/// Trunk's loader is an inline module script, allowed by its hash (computed from each page).
fn content_security_policy(dist: &std::path::Path) -> String {
    use base64::Engine;
    use sha2::Digest;
    let mut hashes = String::new();
    for html in PAGES.iter().filter_map(|page| std::fs::read_to_string(dist.join(page)).ok()) {
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
    }
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
}

pub fn router(state: AppState) -> Router {
    // What creates players or sessions is what an attacker repeats: limited per client.
    let new_sessions = OpenApiRouter::new()
        .routes(routes!(auth::guest))
        .routes(routes!(auth::register))
        .routes(routes!(auth::login))
        .routes(routes!(auth::claim_account))
        .layer(GovernorLayer::new(state.sessions_per_ip.clone()).error_handler(limits::refusal));
    let api = OpenApiRouter::new()
        .merge(new_sessions)
        .routes(routes!(auth::logout))
        .routes(routes!(auth::me))
        .routes(routes!(auth::demo_deposit))
        .routes(routes!(withdrawals::ask, withdrawals::list))
        .routes(routes!(responsible::standing))
        .routes(routes!(responsible::change_limit))
        .routes(routes!(responsible::confirm_raise))
        .routes(routes!(responsible::pause))
        .routes(routes!(responsible::set_reality_interval))
        .routes(routes!(responsible::acknowledge))
        .routes(routes!(responsible::session))
        .routes(routes!(responsible::history))
        .routes(routes!(tickets::buy, tickets::history))
        .routes(routes!(tickets::one))
        .routes(routes!(tickets::reveal))
        .routes(routes!(tickets::complete))
        .routes(routes!(tickets::proof))
        .routes(routes!(tickets::jwks))
        .routes(routes!(blocks::list))
        .routes(routes!(blocks::one))
        .routes(routes!(openapi::document))
        // API answers carry tokens, balances and tickets: no cache keeps them.
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
    // Every route and its OpenAPI operation come from the same registration.
    let (routes, document) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(api)
        .routes(routes!(tickets::well_known_jwks))
        .routes(routes!(openapi::health))
        .routes(routes!(metrics::ready))
        .routes(routes!(rules_page::page))
        .split_for_parts();
    let routes = routes
        // Under /api, a path of no route is the API's JSON 404, not the app's page.
        .route("/api/{*rest}", axum::routing::any(|| async { ApiError::NotFound("API route") }))
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::Extension(Arc::new(document)));

    let timeouts = state.config.timeouts;
    let dist = &state.config.dist_dir;
    // Files compressed at build time (`.br`, `.gz`: see Trunk.toml) are sent as they are.
    let index = ServeFile::new(dist.join("index.html")).precompressed_br().precompressed_gzip();
    let app = ServeDir::new(dist).precompressed_br().precompressed_gzip().fallback(index);
    let app = Router::new().fallback_service(app).layer(axum::middleware::map_response(cache_control_for_app));
    let csp = HeaderValue::from_str(&content_security_policy(dist)).expect("an ASCII policy");
    let header = |name: HeaderName, value: &'static str| {
        SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
    };
    // Behind a proxy, what one client holds is counted in requests (see `connections`).
    let per_client =
        state.config.behind_proxy.then(|| axum::middleware::from_fn_with_state(state.clone(), connections::in_flight));

    routes
        .route_layer(axum::middleware::from_fn(metrics::track))
        .merge(app.layer(axum::middleware::from_fn(metrics::track)))
        .layer(tower::util::option_layer(per_client))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        // A declared length over the limit is refused before any of the body is read.
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(RequestBodyTimeoutLayer::new(timeouts.body))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeouts.request))
        .layer(axum::middleware::map_response(error::layer_errors_in_json))
        .layer(CatchPanicLayer::custom(error::panic_fault))
        .layer(axum::middleware::from_fn(error::report_faults))
        // What was not compressed at build (API answers, an app built without it) is, cheaply.
        .layer(CompressionLayer::new().quality(CompressionLevel::Precise(5)))
        .layer(SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, csp))
        .layer(SetResponseHeaderLayer::overriding(HeaderName::from_static("keep-alive"), keep_alive(timeouts.header)))
        .layer(header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header(header::REFERRER_POLICY, "no-referrer"))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &axum::http::Request<_>| {
                    let id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
                    tracing::info_span!("request", request_id = %id, method = %request.method(), path =
                        %request.uri().path())
                })
                // A fault of ours is logged with its cause by `error::report_faults`, and a 503 is a
                // designed refusal (busy, with Retry-After): neither is logged again here as an error.
                .on_failure(|failure: ServerErrorsFailureClass, latency: Duration, _: &tracing::Span| {
                    if let ServerErrorsFailureClass::Error(error) = failure {
                        tracing::warn!(%error, ?latency, "an answer failed on its way");
                    }
                }),
        )
        .layer(SetRequestIdLayer::new(REQUEST_ID, RequestIds))
        .with_state(state)
}

/// The header a request's id travels in: set if the client (or a proxy) did not, echoed in the answer,
/// on every log line of the request, and in the body of a 500.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone, Copy)]
struct RequestIds;

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&auth::random_hex::<8>()).ok().map(RequestId::new)
    }
}

/// Trunk names the app's files after their content (`vegas-<hex>_bg.wasm`): such a file never
/// changes, so it is cached for a year. Anything else (the pages) is checked again on every load, so
/// that a new release is never hidden behind a stale page that names old files.
async fn cache_control_for_app(
    uri: axum::http::Uri,
    mut response: axum::response::Response,
) -> axum::response::Response {
    // A name not found gets the game's page (the fallback): that must not be cached under the name.
    let page = response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"text/html"));
    let value = if content_hashed(uri.path()) && response.status().is_success() && !page {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    response
}

fn content_hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default();
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    // A 64-bit hash in hex, without its leading zeros.
    stem.rsplit_once('-')
        .is_some_and(|(_, hash)| (8..=16).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Serves until Ctrl-C, settling abandoned tickets in the background.
/// Connections the kernel keeps waiting to be accepted: as many as it allows (`net.core.somaxconn`, 4096
/// by default). A full queue drops a new client's connection, which its TCP sends again only a second
/// later: one address opening and reopening thousands of connections must not fill it for the others.
const ACCEPT_BACKLOG: u32 = 4096;

pub async fn serve(state: AppState, addr: SocketAddr, admin_addr: SocketAddr) -> Result<(), String> {
    let listen = |addr: SocketAddr| -> std::io::Result<tokio::net::TcpListener> {
        let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(ACCEPT_BACKLOG)
    };
    let listener = listen(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let admin = listen(admin_addr).map_err(|e| format!("cannot listen on {admin_addr} (--admin-addr): {e}"))?;
    tracing::info!("Vegas on http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    let admin_at = admin.local_addr().map_err(|e| e.to_string())?;
    tracing::info!("back office on http://{admin_at}");
    let office =
        back_office::Office::new(state.clone(), !admin_at.ip().is_loopback(), state.config.adjustment_threshold);
    // One signal stops both servers.
    let stop = futures::FutureExt::shared(Box::pin(shutdown_signal()));
    let back_office = tokio::spawn(back_office::serve_on(office, admin, stop.clone()));
    let served = serve_on(state, listener, stop).await;
    back_office.abort();
    served
}

pub async fn serve_on(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let settler = tokio::spawn(tickets::settle_due_forever(state.clone()));
    let keys = tokio::spawn(refresh_keys_forever(state.clone()));
    let housekeeping = tokio::spawn(housekeeping_forever(state.clone()));
    let proofs = tokio::spawn({
        let state = state.clone();
        async move {
            let started = std::time::Instant::now();
            match state.printer.prepare_proofs(&state.store).await {
                Ok(Some((emission, block, origin))) => {
                    tracing::info!(
                        emission,
                        block,
                        ?origin,
                        ms = started.elapsed().as_millis() as u64,
                        "the tree of the block on sale is ready for proofs"
                    )
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the tree of the block on sale was not built ahead; the first proof \
                        asked will build it")
                }
            }
        }
    });
    // Behind a proxy, a connection is the proxy's: what a client holds is capped per request instead.
    let clients = (!state.config.behind_proxy).then(|| state.clients.clone());
    let result = serve_connections(&state.config, clients, router(state.clone()), listener, shutdown).await;
    settler.abort();
    keys.abort();
    housekeeping.abort();
    proofs.abort();
    result
}

/// Accepts connections up to the limit and serves each over HTTP/1.1 with a header-read timeout, which
/// hyper also applies while a kept-alive connection waits for its next request. A slow or silent
/// client thus holds a connection for at most that long, never more connections than the limit, and
/// (with `clients`) never more than its own cap.
async fn serve_connections(
    config: &Config,
    clients: Option<Arc<connections::PerClient>>,
    app: Router,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt;
    let slots = Arc::new(tokio::sync::Semaphore::new(connection_slots(config.max_connections)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(config.timeouts.header).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.map_err(|e| e.to_string())?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted: go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Past its cap or its rate, a client's new connection is closed at once, its slot given back.
        let held = match &clients {
            Some(clients) => match clients.connect(peer.ip()) {
                Some(held) => Some(held),
                None => {
                    metrics::refused("connections_per_client");
                    continue;
                }
            },
            None => None,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone().map_request(move |mut request: axum::http::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            request
        });
        let connection = graceful
            .watch(http.serve_connection(TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(app)));
        tokio::spawn(async move {
            let _ = connection.await;
            drop((slot, held));
        });
    }
    // Requests in flight are answered (up to a bound) before the server stops.
    let _ = tokio::time::timeout(config.timeouts.request, graceful.shutdown()).await;
    Ok(())
}

/// Descriptors kept for what is not a client connection: the store's files, PostgreSQL connections, logs.
const RESERVED_DESCRIPTORS: usize = 256;

/// How many connections may be held: `wanted`, once the process may open that many files (its soft
/// limit raised towards the hard one), or fewer, said loudly, if it may not.
fn connection_slots(wanted: usize) -> usize {
    let needed = (wanted + RESERVED_DESCRIPTORS) as u64;
    match rlimit::increase_nofile_limit(needed) {
        Ok(allowed) if allowed >= needed => wanted.max(1),
        Ok(allowed) => {
            let slots = usize::try_from(allowed).unwrap_or(usize::MAX).saturating_sub(RESERVED_DESCRIPTORS).max(1);
            tracing::warn!(
                wanted,
                slots,
                "the file limit allows fewer connections than --max-connections: raise it (ulimit -n)"
            );
            slots
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the file limit: connections are not limited by it");
            wanted.max(1)
        }
    }
}

/// Now and then: forgets expired rate-limit state; deletes expired sessions and stale guests (a guest
/// with no session left can never come back) in rounds of [`PURGE_ROUND`].
async fn housekeeping_forever(state: AppState) {
    for minute in 0u64.. {
        tokio::time::sleep(Duration::from_secs(60)).await;
        state.sessions_per_ip.limiter().retain_recent();
        state.logins_per_name_at_address.forget_idle();
        state.logins_per_name.forget_idle();
        state.clients.forget_idle();
        match state.store.lapse_raises(state.config.clock.now()).await {
            Ok(0) => {}
            Ok(lapsed) => tracing::info!(lapsed, "limit raises lapsed unconfirmed"),
            Err(e) => tracing::warn!(error = %e, "lapsing limit raises failed"),
        }
        if minute % 10 == 0 {
            let now = state.config.clock.now();
            match state.store.purge(now, now - GUEST_GRACE.as_secs() as i64, PURGE_ROUND).await {
                Ok(report) if report != Default::default() => tracing::info!(?report, "purged"),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "purging expired sessions and stale guests failed"),
            }
        }
    }
}

/// A guest is purged no sooner than this after its creation, once it has no session left.
const GUEST_GRACE: Duration = Duration::from_secs(24 * 3600);
const PURGE_ROUND: usize = 1000;

/// Re-reads the signing keys now and then: a key rotated elsewhere is listed, then used.
async fn refresh_keys_forever(state: AppState) {
    loop {
        tokio::time::sleep(printer::KEY_REFRESH).await;
        if let Err(e) = state.printer.refresh_keys(&state.store, state.config.clock.now()).await {
            tracing::error!(error = %e, "re-reading the signing keys failed");
        }
    }
}

/// Ctrl-C, or SIGTERM (what a service manager or an orchestrator sends to stop the server).
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => _ = terminate.recv().await,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM: only Ctrl-C stops the server gracefully");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    tracing::info!("stopping: no new connection; answering the requests in flight");
}

/// Bytes from the operating system's CSPRNG: seeds, keys, ids and tokens all come from here.
pub fn os_random<const N: usize>() -> [u8; N] {
    use rand::TryRngCore;
    let mut bytes = [0u8; N];
    rand::rngs::OsRng.try_fill_bytes(&mut bytes).expect("the operating system provides randomness");
    bytes
}
