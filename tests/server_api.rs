//! The ticket server over real HTTP on loopback, against a real SQLite file.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod process;
}

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use support::process::private_dir;
use vegas::block::published::PublishedBlock;
use vegas::block::{from_hex, merkle};
use vegas::payload::{Jwks, verify};
use vegas::rules::prize_table::BLOCK_SIZE;
use vegas::server::limits::Rate;
use vegas::server::store::sqlite::Opening;
use vegas::server::store::{Store, ledger};
use vegas::server::{AppState, Clock, Config, Database, ManualClock, blocks, open_store};

/// A store with an emission of two blocks, made once and copied for each test.
fn template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = private_dir().keep();
        let made = dir.clone();
        // Its own runtime, on its own thread: the tests' runtimes cannot be blocked on.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let store = open_store(&made, Opening::Beside).unwrap();
                blocks::create_emission(
                    &store,
                    vegas::composer::design::DEFAULT_DESIGN_TOML,
                    2,
                    vegas::server::Clock::system().now(),
                )
                .await
                .unwrap();
            });
        })
        .join()
        .unwrap();
        let conn = rusqlite::Connection::open(dir.join("vegas.sqlite3")).unwrap();
        let (busy, _, _): (i64, i64, i64) =
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert_eq!(busy, 0, "the template is whole in its main file");
        dir
    })
}

struct Server {
    base: String,
    /// The back office, on an address of its own.
    admin: String,
    data: tempfile::TempDir,
    store: std::sync::Arc<Store>,
    http: reqwest::Client,
}

async fn server(settle_after: Duration) -> Server {
    server_on(settle_after, None, Clock::system()).await
}

/// A server of the built app in `dist` (read when the server starts).
async fn server_with_dist(dist: &std::path::Path) -> Server {
    server_on(Duration::from_secs(3600), Some(dist.into()), Clock::system()).await
}

async fn server_on(settle_after: Duration, dist: Option<std::path::PathBuf>, clock: Clock) -> Server {
    start(settle_after, dist, |config| Config { clock, ..config }).await
}

/// A test server on `clock`, its configuration changed by `change`.
async fn server_with(change: impl FnOnce(Config) -> Config, clock: Clock) -> Server {
    start(Duration::from_secs(3600), None, |config| change(Config { clock, ..config })).await
}

async fn start(
    settle_after: Duration,
    dist: Option<std::path::PathBuf>,
    change: impl FnOnce(Config) -> Config,
) -> Server {
    let data = private_dir();
    std::fs::copy(template().join("vegas.sqlite3"), data.path().join("vegas.sqlite3")).unwrap();
    let dist_dir = dist.unwrap_or_else(|| data.path().join("dist"));
    let config = change(test_config(data.path(), dist_dir, settle_after));
    let state = AppState::open(config).await.unwrap();
    let store = state.store.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let admin_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = format!("http://{}", admin_listener.local_addr().unwrap());
    let office = vegas::server::back_office::Office::new(state.clone(), false, state.config.adjustment_threshold);
    tokio::spawn(vegas::server::back_office::serve_on(office, admin_listener, std::future::pending()));
    tokio::spawn(vegas::server::serve_on(state, listener, std::future::pending()));
    Server { base, admin, data, store, http: reqwest::Client::new() }
}

/// A demo server whose rate limits stay out of the way of tests that make many players.
fn test_config(data: &Path, dist_dir: PathBuf, settle_after: Duration) -> Config {
    let auth_rate = Rate { burst: 10_000, per_minute: 10_000 };
    Config { demo: true, settle_after, auth_rate, ..Config::new(Database::Sqlite(data.into()), dist_dir) }
}

async fn default_server() -> Server {
    server(Duration::from_secs(3600)).await
}

/// Time is the server's clock: a session ends 30 days after it began, to the second, with no test
/// waiting for it.
#[tokio::test]
async fn a_session_ends_thirty_days_after_it_began_on_the_servers_clock() {
    let hand = ManualClock::at(Clock::system().now());
    let s = server_on(Duration::from_secs(3600), None, hand.clock()).await;
    let p = s.guest().await;
    hand.advance(30 * 24 * 3600 - 1);
    assert_eq!(s.call(&p, M::GET, "/api/me", None).await.0, StatusCode::OK, "a second before its end");
    hand.advance(1);
    let (status, body) = s.call(&p, M::GET, "/api/me", None).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")), "{body}");
}

#[derive(Clone)]
struct Player {
    token: String,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The store's file, to set up what the API cannot (a block about to sell out).
    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.data.path().join("vegas.sqlite3")).unwrap()
    }

    async fn ledger_check(&self) -> ledger::LedgerReport {
        ledger::check(self.store.ledger_facts().await.unwrap())
            .unwrap_or_else(|problems| panic!("ledger check failed: {problems:#?}"))
    }

    async fn guest(&self) -> Player {
        let r = self.http.post(self.url("/api/guest")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let cookies: Vec<&str> = r.headers().get_all("set-cookie").iter().map(|c| c.to_str().unwrap()).collect();
        let session = cookies.iter().find(|c| c.starts_with("vegas_session=")).unwrap_or_else(|| panic!("{cookies:?}"));
        assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"), "{session}");
        // The page's script reads whether it is signed in, never the session's secret.
        let signed_in =
            cookies.iter().find(|c| c.starts_with("vegas_signed_in=1;")).unwrap_or_else(|| panic!("{cookies:?}"));
        assert!(
            !signed_in.contains("HttpOnly")
                && signed_in.contains("SameSite=Strict")
                && signed_in.contains("Max-Age=2592000"),
            "{signed_in}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["player"]["balance_cents"], 10_000);
        Player { token: body["token"].as_str().unwrap().to_owned() }
    }

    async fn call(&self, p: &Player, method: reqwest::Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self.http.request(method, self.url(path)).bearer_auth(&p.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    async fn buy(&self, p: &Player, mode: &str, key: &str) -> (StatusCode, Value) {
        let r = self
            .http
            .post(self.url("/api/tickets"))
            .bearer_auth(&p.token)
            .header("Idempotency-Key", key)
            .json(&json!({ "mode": mode }))
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    async fn text(&self, path: &str) -> String {
        self.http.get(self.url(path)).send().await.unwrap().text().await.unwrap()
    }

    async fn balance(&self, p: &Player) -> i64 {
        self.call(p, reqwest::Method::GET, "/api/me", None).await.1["balance_cents"].as_i64().unwrap()
    }

    async fn jwks(&self) -> Jwks {
        self.http.get(self.url("/.well-known/jwks.json")).send().await.unwrap().json().await.unwrap()
    }

    async fn lot_of(&self, ticket: &Value) -> i64 {
        let verified =
            verify(ticket["payload"].as_str().unwrap(), &self.jwks().await).expect("the server's payload verifies");
        verified.outcome.lot.0 as i64
    }
}

use reqwest::Method as M;

#[path = "scenarios/api_back_office.rs"]
mod back_office;
#[path = "scenarios/api_responsible.rs"]
mod responsible;

#[tokio::test]
async fn auto_ticket_debits_then_credits_its_win_once() {
    let s = default_server().await;
    let p = s.guest().await;
    let (status, bought) = s.buy(&p, "auto", "a-1").await;
    assert_eq!(status, StatusCode::CREATED, "{bought}");
    assert_eq!(bought["balance_cents"], 9_700);
    let ticket = &bought["ticket"];
    assert_eq!(ticket["state"], "playing");
    assert_eq!(ticket["win_cents"], Value::Null, "no win shown before the game ends");
    let lot = s.lot_of(ticket).await;
    let id = ticket["id"].as_str().unwrap();

    let (status, done) = s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["ticket"]["state"], "finished");
    assert_eq!(done["ticket"]["win_cents"], lot);
    assert_eq!(done["ticket"]["revealed"].as_array().unwrap().len(), 12);
    assert_eq!(done["balance_cents"], 9_700 + lot);
    let (status, again) = s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await;
    assert_eq!((status, again["error"].as_str()), (StatusCode::CONFLICT, Some("ticket_finished")));
    let (status, again) =
        s.call(&p, M::POST, &format!("/api/tickets/{id}/reveal"), Some(json!({ "zones": [0] }))).await;
    assert_eq!((status, again["error"].as_str()), (StatusCode::CONFLICT, Some("ticket_finished")));
    assert_eq!(s.balance(&p).await, 9_700 + lot, "never credited twice");
}

/// Zones a game could not send at once (the network down) come with how long ago each was uncovered:
/// the ticket records them then, never before the sale or after the call; an age per zone, or none.
#[tokio::test]
async fn zones_sent_late_are_recorded_when_they_were_uncovered() {
    let t0 = Clock::system().now();
    let hand = ManualClock::at(t0);
    let s = server_on(Duration::from_secs(3600), None, hand.clock()).await;
    let p = s.guest().await;
    let (_, bought) = s.buy(&p, "auto", "late-1").await;
    let id = bought["ticket"]["id"].as_str().unwrap().to_owned();
    hand.advance(100);
    let path = format!("/api/tickets/{id}/reveal");
    let (status, err) = s.call(&p, M::POST, &path, Some(json!({ "zones": [0, 1], "seconds_ago": [5] }))).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    assert!(err["message"].as_str().unwrap().contains("seconds_ago has 1 values for 2 zones"), "{err}");
    let (status, err) = s.call(&p, M::POST, &path, Some(json!({ "zones": [0, 1], "seconds_ago": [-5, 0] }))).await;
    assert_eq!(
        (status, err["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_json")),
        "no negative age: {err}"
    );
    let (status, t) =
        s.call(&p, M::POST, &path, Some(json!({ "zones": [0, 1, 2], "seconds_ago": [60, 30, 1000] }))).await;
    assert_eq!(status, StatusCode::OK);
    let at = t["revealed_at"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() - t0).collect::<Vec<_>>();
    assert_eq!(at, [40, 70, 70], "60 s and 30 s before the call; the third not before the second");
    let (_, t) = s.call(&p, M::POST, &path, Some(json!({ "zones": [3] }))).await;
    assert_eq!(t["revealed_at"][3].as_i64().unwrap() - t0, 100, "no age: the call's time");
}

#[tokio::test]
async fn jouez_starts_with_the_chosen_surface_and_needs_every_zone() {
    let s = default_server().await;
    let p = s.guest().await;
    let (_, bought) = s.buy(&p, "jouez", "j-1").await;
    let id = bought["ticket"]["id"].as_str().unwrap().to_owned();
    let reveal = |zones: Vec<usize>| {
        let path = format!("/api/tickets/{id}/reveal");
        let (s, p) = (&s, &p);
        async move { s.call(p, M::POST, &path, Some(json!({ "zones": zones }))).await }
    };
    // Craps first (zones 6–9): roulette is refused until craps is done.
    let (status, t) = reveal(vec![6]).await;
    assert_eq!((status, &t["first_surface"]), (StatusCode::OK, &json!("craps")));
    let (status, err) = reveal(vec![2]).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("first_surface_unfinished")));
    let (status, err) = s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("zones_left")));
    assert_eq!(reveal(vec![7, 8, 9]).await.0, StatusCode::OK);
    let (status, t) = reveal(vec![0, 1, 2, 3, 4, 5, 10, 11, 11]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(t["revealed"], json!([6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 10, 11]));
    let (status, err) = reveal(vec![12]).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    let lot = s.lot_of(&bought["ticket"]).await;
    let (status, done) = s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(done["balance_cents"], 9_700 + lot);
}

#[tokio::test]
async fn a_retry_with_the_same_key_returns_the_same_ticket_and_debits_once() {
    let s = default_server().await;
    let p = s.guest().await;
    let (first_status, first) = s.buy(&p, "auto", "same").await;
    let (second_status, second) = s.buy(&p, "auto", "same").await;
    assert_eq!((first_status, second_status), (StatusCode::CREATED, StatusCode::OK));
    assert_eq!(first["ticket"]["id"], second["ticket"]["id"]);
    assert_eq!(s.balance(&p).await, 9_700);
    let (status, err) = s.buy(&p, "jouez", "same").await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("idempotency_key_reused")));
    let r =
        s.http.post(s.url("/api/tickets")).bearer_auth(&p.token).json(&json!({"mode": "auto"})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "a purchase without a key is refused");
    // Keys are compared byte for byte, as received: a key with a space inside is refused, never taken for
    // another. (Whitespace around a header's value is not part of it in HTTP: " same " is "same".)
    for refused in ["sa me", "same\t1"] {
        let (status, err) = s.buy(&p, "auto", refused).await;
        assert_eq!((status, err["error"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")), "{refused:?}");
    }
    for other_key in ["Same", "same.", "same-"] {
        let (status, other) = s.buy(&p, "auto", other_key).await;
        assert_eq!(status, StatusCode::CREATED, "another key, another ticket: {other}");
    }
    assert_eq!(s.balance(&p).await, 9_700 - 900);
}

#[tokio::test]
async fn no_money_no_ticket() {
    let s = default_server().await;
    let p = s.guest().await;
    for i in 0..33 {
        assert_eq!(s.buy(&p, "jouez", &format!("k{i}")).await.0, StatusCode::CREATED);
    }
    assert_eq!(s.balance(&p).await, 100, "wins of unfinished tickets are not in the balance");
    let (status, err) = s.buy(&p, "auto", "k-broke").await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(err["error"], "insufficient_funds");
    assert_eq!(s.balance(&p).await, 100);
    // Demo money tops the wallet up.
    let (status, me) = s.call(&p, M::POST, "/api/wallet/deposit", Some(json!({"amount_cents": 1_000}))).await;
    assert_eq!((status, me["balance_cents"].as_i64()), (StatusCode::OK, Some(1_100)));
    let (status, _) = s.call(&p, M::POST, "/api/wallet/deposit", Some(json!({"amount_cents": 1_000_000}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_abandoned_ticket_is_settled_by_the_server_and_can_still_be_finished() {
    let s = server(Duration::from_secs(1)).await;
    let p = s.guest().await;
    let (_, bought) = s.buy(&p, "jouez", "left").await;
    let id = bought["ticket"]["id"].as_str().unwrap().to_owned();
    let lot = s.lot_of(&bought["ticket"]).await;
    s.call(&p, M::POST, &format!("/api/tickets/{id}/reveal"), Some(json!({"zones": [0]}))).await;
    let mut state = Value::Null;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        state = s.call(&p, M::GET, &format!("/api/tickets/{id}"), None).await.1;
        if state["state"] == "settled" {
            break;
        }
    }
    assert_eq!(state["state"], "settled", "{state}");
    assert_eq!(state["revealed"], json!([0]), "the ticket comes back where it was");
    assert_eq!(state["win_cents"], lot);
    assert_eq!(s.balance(&p).await, 9_700 + lot);
    s.call(
        &p,
        M::POST,
        &format!("/api/tickets/{id}/reveal"),
        Some(json!({"zones": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]})),
    )
    .await;
    let (_, done) = s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await;
    assert_eq!(done["ticket"]["state"], "finished");
    assert_eq!(done["balance_cents"], 9_700 + lot, "settled once, not again on completion");
}

#[tokio::test]
async fn history_lists_the_last_tickets_and_players_never_see_each_other() {
    let s = default_server().await;
    let (a, b) = (s.guest().await, s.guest().await);
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(s.buy(&a, "auto", &format!("h{i}")).await.1["ticket"]["id"].as_str().unwrap().to_owned());
    }
    let (status, history) = s.call(&a, M::GET, "/api/tickets?limit=10", None).await;
    assert_eq!(status, StatusCode::OK);
    let listed: Vec<&str> = history.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().take(10).map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    assert!(history[0]["payload"].as_str().unwrap().split('.').count() == 3);
    // The next page goes on from the last ticket of this one.
    let (status, older) = s.call(&a, M::GET, &format!("/api/tickets?limit=10&before={}", listed[9]), None).await;
    assert_eq!(status, StatusCode::OK);
    let older: Vec<&str> = older.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(older, [ids[1].as_str(), ids[0].as_str()]);
    let (status, err) = s.call(&b, M::GET, &format!("/api/tickets?before={}", ids[0]), None).await;
    assert_eq!(
        (status, err["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found")),
        "no paging from another's ticket"
    );

    let (status, err) = s.call(&b, M::GET, &format!("/api/tickets/{}", ids[0]), None).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    assert_eq!(s.call(&b, M::POST, &format!("/api/tickets/{}/complete", ids[0]), None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.call(&b, M::GET, "/api/tickets", None).await.1, json!([]));
}

#[tokio::test]
async fn register_login_logout() {
    let s = default_server().await;
    let creds = json!({"name": "lucie", "password": "trèfle-à-quatre"});
    let r = s.http.post(s.url("/api/register")).json(&creds).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The session's cookie, among the others the answer sets (in no set order).
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap())
        .find(|c| c.starts_with("vegas_session="))
        .unwrap();
    assert!(
        cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict") && cookie.contains("; Secure"),
        "{cookie}"
    );
    let r = s.http.post(s.url("/api/register")).json(&creds).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    // One name however it is typed: case, width, or a lookalike letter of another script.
    for same in ["Lucie", "ＬＵＣＩＥ"] {
        let r = s
            .http
            .post(s.url("/api/register"))
            .json(&json!({"name": same, "password": "another-password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "{same}");
    }
    let r = s
        .http
        .post(s.url("/api/register"))
        .json(&json!({"name": "lucіe", "password": "another-password"}))
        .send()
        .await
        .unwrap();
    let err: Value = r.json().await.unwrap();
    assert!(err["message"].as_str().unwrap().contains("mixes scripts"), "{err}");
    let r = s
        .http
        .post(s.url("/api/login"))
        .json(&json!({"name": "ＬＵＣＩＥ", "password": "trèfle-à-quatre"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "a name logs in however it is typed");
    let r = s.http.post(s.url("/api/register")).json(&json!({"name": "x", "password": "short"})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = s
        .http
        .post(s.url("/api/login"))
        .json(&json!({"name": "lucie", "password": "wrong-password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = s.http.post(s.url("/api/login")).json(&creds).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let p = Player { token: body["token"].as_str().unwrap().into() };
    let (_, me) = s.call(&p, M::GET, "/api/me", None).await;
    assert_eq!((me["name"].as_str(), me["guest"].as_bool()), (Some("lucie"), Some(false)));
    let out = s.http.post(s.url("/api/logout")).bearer_auth(&p.token).send().await.unwrap();
    let mut cleared: Vec<&str> =
        out.headers().get_all("set-cookie").iter().map(|c| c.to_str().unwrap().split_once('=').unwrap().0).collect();
    cleared.sort();
    assert_eq!(cleared, ["vegas_session", "vegas_signed_in"], "both forgotten");
    assert!(out.headers().get_all("set-cookie").iter().all(|c| c.to_str().unwrap().contains("Max-Age=0")));
    assert_eq!(s.call(&p, M::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_guest_becomes_an_account_and_keeps_its_balance_and_tickets() {
    let s = default_server().await;
    let guest = s.guest().await;
    let (_, bought) = s.buy(&guest, "auto", "before").await;
    let balance = s.balance(&guest).await;
    let (status, me) =
        s.call(&guest, M::POST, "/api/account", Some(json!({"name": "Zoé", "password": "as-de-pique"}))).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        (me["name"].as_str(), me["guest"].as_bool(), me["balance_cents"].as_i64()),
        (Some("Zoé"), Some(false), Some(balance))
    );
    let (status, err) =
        s.call(&guest, M::POST, "/api/account", Some(json!({"name": "Autre", "password": "as-de-pique"}))).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("already_registered")));
    let other = s.guest().await;
    let (status, err) =
        s.call(&other, M::POST, "/api/account", Some(json!({"name": "ZOÉ", "password": "as-de-pique"}))).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("name_taken")));
    let (status, _) = s.call(&other, M::POST, "/api/account", Some(json!({"name": "Zed", "password": "court"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a password of 8 characters or more");

    // Logged out, then in again by name: the same money and the same tickets.
    s.call(&guest, M::POST, "/api/logout", None).await;
    let r =
        s.http.post(s.url("/api/login")).json(&json!({"name": "zoé", "password": "as-de-pique"})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let again = Player { token: body["token"].as_str().unwrap().into() };
    assert_eq!(s.balance(&again).await, balance);
    let (_, history) = s.call(&again, M::GET, "/api/tickets", None).await;
    assert_eq!(history[0]["id"], bought["ticket"]["id"]);
    s.ledger_check().await;
}

#[tokio::test]
async fn a_sold_out_block_closes_reveals_its_seed_and_the_next_opens() {
    let s = default_server().await;
    let p = s.guest().await;
    s.db().execute("UPDATE block_sales SET sold = ?1 WHERE block = 1", [BLOCK_SIZE - 1]).unwrap();
    let (_, last) = s.buy(&p, "auto", "last").await;
    assert_eq!(last["ticket"]["serial"], "E1-B1-1499999");
    let (_, next) = s.buy(&p, "auto", "next").await;
    assert_eq!(next["ticket"]["serial"], "E1-B2-0000000");
    let blocks: Value = s.http.get(s.url("/api/blocks")).send().await.unwrap().json().await.unwrap();
    assert_eq!((blocks[0]["open"].as_bool(), blocks[0]["seed"].as_str().map(str::len)), (Some(false), Some(64)));
    assert_eq!(
        (blocks[1]["open"].as_bool(), &blocks[1]["seed"]),
        (Some(true), &Value::Null),
        "an open block keeps its seed"
    );
    assert_eq!(blocks[1]["prize_table"][0], json!({"count": 2, "lot_cents": 4_000_000}));

    s.db().execute("UPDATE block_sales SET sold = ?1, closed_at = 0 WHERE block = 2", [BLOCK_SIZE]).unwrap();
    let (status, err) = s.buy(&p, "auto", "none-left").await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::CONFLICT, Some("sold_out")));
    assert_eq!(s.balance(&p).await, 9_400, "a refused sale takes nothing");
}

/// Whether a ticket's payload and inclusion proof lead to `root`, as a player's browser checks them.
fn proven(payload: &str, jwks: &Jwks, proof: &Value, root: &[u8; 32]) -> bool {
    let claims = verify(payload, jwks).expect("the payload verifies").claims;
    let salt = claims.salt.as_deref().map(|s| from_hex(s).expect("a hex salt"));
    let leaf = merkle::leaf(&mut Vec::new(), salt.as_ref(), claims.serial, &claims.zones, claims.lot_cents);
    let path: Vec<[u8; 32]> =
        proof["path"].as_array().unwrap().iter().map(|h| from_hex(h.as_str().unwrap()).unwrap()).collect();
    let (index, count) = (proof["index"].as_u64().unwrap() as usize, proof["leaf_count"].as_u64().unwrap() as usize);
    index == claims.serial.index as usize && merkle::verify_proof(leaf, index, count, &path, root)
}

#[tokio::test]
async fn each_ticket_is_proven_in_its_committed_block_and_a_closed_block_is_verified_from_its_seed() {
    let s = default_server().await;
    let p = s.guest().await;
    let jwks = s.jwks().await;
    s.db().execute("UPDATE block_sales SET sold = ?1 WHERE block = 1", [BLOCK_SIZE - 2]).unwrap();
    let open: PublishedBlock = serde_json::from_str(&s.text("/api/blocks/1/1").await).unwrap();
    assert_eq!((open.seed.as_deref(), open.scheme), (None, 2), "an open block keeps its seed");
    let root = from_hex(&open.root).unwrap();

    let (_, bought) = s.buy(&p, "auto", "first").await;
    let ticket = &bought["ticket"];
    let (status, proof) =
        s.call(&p, M::GET, &format!("/api/tickets/{}/proof", ticket["id"].as_str().unwrap()), None).await;
    assert_eq!(status, StatusCode::OK);
    let payload = ticket["payload"].as_str().unwrap();
    assert!(proven(payload, &jwks, &proof, &root), "the proof leads to the published root");
    let mut tampered = proof.clone();
    tampered["path"][0] = json!(vegas::block::hex(&[0x5A; 32]));
    assert!(!proven(payload, &jwks, &tampered, &root), "a tampered proof is refused");
    assert!(!proven(payload, &jwks, &proof, &[0; 32]), "another root refuses the proof");
    let other = s.guest().await;
    let (status, _) =
        s.call(&other, M::GET, &format!("/api/tickets/{}/proof", ticket["id"].as_str().unwrap()), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a proof is its buyer's");

    let file = s.data.path().join("block.json");
    std::fs::write(&file, s.text("/api/blocks/1/1").await).unwrap();
    let refused = support::process::vegas_refused(s.data.path(), &["verify", file.to_str().unwrap()]);
    assert!(refused.contains("still open"), "{refused}");

    // The last ticket closes the block and publishes its seed: anyone can now recompute any ticket.
    let (_, last) = s.buy(&p, "auto", "last").await;
    let claims = verify(last["ticket"]["payload"].as_str().unwrap(), &jwks).unwrap().claims;
    let closed = s.text("/api/blocks/1/1").await;
    assert_eq!(serde_json::from_str::<PublishedBlock>(&closed).unwrap().root, open.root, "the root never changes");
    std::fs::write(&file, &closed).unwrap();
    let output = support::process::vegas(s.data.path(), &["verify", file.to_str().unwrap(), "--ticket", "1499999"]);
    let printed = String::from_utf8(output.stdout).unwrap();
    assert!(printed.contains(&format!("ticket E1-B1-1499999: lot {}", claims.lot_cents)), "{printed}");
    assert!(
        printed.contains(&format!("zones: {}", vegas::json::to_string(&claims.zones).unwrap())),
        "the ticket sold is the one the seed composes:\n{printed}"
    );
    assert!(printed.contains(&format!("salt: {}", claims.salt.unwrap())), "{printed}");
    assert!(
        printed.contains("1500000 tickets recomputed from the seed, verified") && printed.contains(&open.root),
        "{printed}"
    );

    std::fs::write(&file, closed.replace(&open.root, &vegas::block::hex(&[1; 32]))).unwrap();
    let refused = support::process::vegas_refused(s.data.path(), &["verify", file.to_str().unwrap()]);
    assert!(refused.contains("differs from the committed root"), "{refused}");
}

#[tokio::test]
async fn bad_requests_get_a_json_4xx_never_a_5xx() {
    let s = default_server().await;
    let p = s.guest().await;
    let post = |path: &'static str, body: &'static [u8]| {
        s.http
            .post(s.url(path))
            .bearer_auth(&p.token)
            .header("content-type", "application/json")
            .header("Idempotency-Key", "x")
            .body(body)
    };
    let huge = vec![b'a'; 1 << 20];
    let cases: Vec<(reqwest::RequestBuilder, StatusCode)> = vec![
        (post("/api/tickets", b"{not json"), StatusCode::BAD_REQUEST),
        (post("/api/tickets", br#"{"mode": 3}"#), StatusCode::BAD_REQUEST),
        (post("/api/tickets", br#"{"mode": "quick"}"#), StatusCode::BAD_REQUEST),
        (post("/api/tickets", br#"{"mode": "auto", "extra": 1}"#), StatusCode::BAD_REQUEST),
        (post("/api/tickets", b""), StatusCode::BAD_REQUEST),
        (
            s.http
                .post(s.url("/api/tickets"))
                .bearer_auth(&p.token)
                .header("Idempotency-Key", "y")
                .body(r#"{"mode":"auto"}"#),
            StatusCode::BAD_REQUEST,
        ),
        (
            s.http
                .post(s.url("/api/tickets"))
                .bearer_auth(&p.token)
                .header("content-type", "application/json")
                .body(huge),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            s.http.post(s.url("/api/tickets")).header("Idempotency-Key", "z").json(&json!({"mode": "auto"})),
            StatusCode::UNAUTHORIZED,
        ),
        (s.http.get(s.url("/api/me")).bearer_auth("forged"), StatusCode::UNAUTHORIZED),
        (s.http.get(s.url("/api/tickets?limit=abc")).bearer_auth(&p.token), StatusCode::BAD_REQUEST),
        (s.http.get(s.url("/api/tickets?limit=0")).bearer_auth(&p.token), StatusCode::BAD_REQUEST),
        (s.http.get(s.url("/api/tickets?limit=101")).bearer_auth(&p.token), StatusCode::BAD_REQUEST),
        (s.http.get(s.url("/api/nowhere")), StatusCode::NOT_FOUND),
        (s.http.delete(s.url("/api/tickets")).bearer_auth(&p.token), StatusCode::METHOD_NOT_ALLOWED),
        (
            s.http.post(s.url("/api/tickets/t-none/reveal")).bearer_auth(&p.token).json(&json!({"zones": "all"})),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (i, (request, expected)) in cases.into_iter().enumerate() {
        let r = request.send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or_else(|e| panic!("case {i}: no JSON body: {e}"));
        assert_eq!(status, expected, "case {i}: {body}");
        assert!(body["error"].is_string() && body["message"].is_string(), "case {i}: {body}");
    }
    assert_eq!(s.balance(&p).await, 10_000, "no bad request moved money");
}

#[tokio::test]
async fn serves_health_keys_and_security_headers() {
    let s = default_server().await;
    let r = s.http.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        r.headers()["keep-alive"],
        "timeout=9",
        "clients are told to drop an idle connection before the server does (10 s)"
    );
    let jwks = s.jwks().await;
    assert_eq!(jwks.keys.len(), 1);
}

#[tokio::test]
async fn serves_the_app_compressed_to_browsers_that_accept_it() {
    let s = default_server().await;
    let dist = s.data.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let wasm: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ (i / 4096) as u8).collect();
    std::fs::write(dist.join("app_bg.wasm"), &wasm).unwrap();
    for (accept, encoding) in [("br, gzip", Some("br")), ("gzip", Some("gzip")), ("identity", None)] {
        let r = s.http.get(s.url("/app_bg.wasm")).header("accept-encoding", accept).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers().get("content-encoding").map(|v| v.to_str().unwrap()), encoding, "{accept}");
        let body = r.bytes().await.unwrap();
        if encoding.is_some() {
            assert!(body.len() < wasm.len() / 4, "{accept}: {} bytes for {}", body.len(), wasm.len());
        } else {
            assert_eq!(body.as_ref(), wasm.as_slice());
        }
    }
}

/// The auth scheme's name in any case; API answers (tokens, balances) never cached.
#[tokio::test]
async fn a_bearer_token_in_any_case_and_api_answers_never_cached() {
    let s = default_server().await;
    let p = s.guest().await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r =
            s.http.get(s.url("/api/me")).header("authorization", format!("{scheme} {}", p.token)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{scheme}");
        assert_eq!(r.headers()["cache-control"], "no-store");
    }
    let r = s.http.get(s.url("/api/me")).header("authorization", format!("Basic {}", p.token)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "another scheme is not a session");
    let r = s.http.post(s.url("/api/guest")).send().await.unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store", "a new session's token");
}

/// Files compressed at build are sent as they are; files named after their content are cached for a
/// year, the pages never without asking again; the preview's page is served with its own script allowed.
#[tokio::test]
async fn serves_build_compressed_files_as_they_are_and_caches_only_hashed_names() {
    let dist = tempfile::tempdir().unwrap();
    let (page, preview) = (
        "<html><script type=\"module\">game()</script></html>",
        "<html><script type=\"module\">preview()</script></html>",
    );
    std::fs::create_dir_all(dist.path().join("preview")).unwrap();
    std::fs::write(dist.path().join("index.html"), page).unwrap();
    std::fs::write(dist.path().join("preview/index.html"), preview).unwrap();
    let wasm = "vegas-0123456789abcdef_bg.wasm";
    std::fs::write(dist.path().join(wasm), b"the wasm itself").unwrap();
    std::fs::write(dist.path().join(format!("{wasm}.br")), b"as brotli 11 made it").unwrap();
    std::fs::write(dist.path().join(format!("{wasm}.gz")), b"as gzip 9 made it").unwrap();
    let s = server_with_dist(dist.path()).await;

    for (accept, encoding, body) in [
        ("br, gzip", Some("br"), "as brotli 11 made it"),
        ("gzip", Some("gzip"), "as gzip 9 made it"),
        ("identity", None, "the wasm itself"),
    ] {
        let r = s.http.get(s.url(&format!("/{wasm}"))).header("accept-encoding", accept).send().await.unwrap();
        assert_eq!(r.headers().get("content-encoding").map(|v| v.to_str().unwrap()), encoding, "{accept}");
        assert_eq!(r.headers()["cache-control"], "public, max-age=31536000, immutable");
        assert_eq!(r.text().await.unwrap(), body);
    }
    for (path, body) in [("/", page), ("/jeu", page), ("/preview/", preview)] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        assert_eq!(
            (r.status(), r.headers()["cache-control"].to_str().unwrap()),
            (StatusCode::OK, "no-cache"),
            "{path}"
        );
        let csp = r.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert_eq!(csp.matches("'sha256-").count(), 2, "both pages' loaders are allowed: {csp}");
        assert_eq!(r.text().await.unwrap(), body, "{path}");
    }
    let missing = s.http.get(s.url("/vegas-fedcba9876543210.js")).send().await.unwrap();
    assert_eq!(
        missing.headers()["cache-control"],
        "no-cache",
        "a name not found (answered with the page) is never cached"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_players_buying_at_once_never_share_a_ticket_or_lose_a_cent() {
    let s = std::sync::Arc::new(default_server().await);
    let players = 16;
    let each = 8;
    let mut tasks = Vec::new();
    for n in 0..players {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let p = s.guest().await;
            // Each player's purchases at once too, each on a task of its own.
            let mut buys = tokio::task::JoinSet::new();
            for i in 0..each {
                let (s, p) = (s.clone(), p.clone());
                buys.spawn(async move {
                    let (status, body) =
                        s.buy(&p, if i % 2 == 0 { "auto" } else { "jouez" }, &format!("c{n}-{i}")).await;
                    assert_eq!(status, StatusCode::CREATED, "{body}");
                    if i % 2 == 0 {
                        let id = body["ticket"]["id"].as_str().unwrap();
                        assert_eq!(
                            s.call(&p, M::POST, &format!("/api/tickets/{id}/complete"), None).await.0,
                            StatusCode::OK
                        );
                    }
                });
            }
            buys.join_all().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = s.ledger_check().await;
    let sold: u64 = report.blocks.iter().map(|b| b.sold).sum();
    assert_eq!(sold, (players * each) as u64);
    let db = s.db();
    let distinct: i64 = db
        .query_row("SELECT COUNT(DISTINCT emission || '-' || block || '-' || idx) FROM tickets", [], |r| r.get(0))
        .unwrap();
    assert_eq!(distinct, (players * each) as i64, "no ticket sold twice");
}

#[tokio::test]
async fn a_data_directory_keeps_the_key_it_signed_with_before_keys_lived_in_the_store() {
    let data = private_dir();
    std::fs::copy(template().join("vegas.sqlite3"), data.path().join("vegas.sqlite3")).unwrap();
    let secret = [7u8; 32];
    std::fs::write(data.path().join("signing-key.ed25519"), secret).unwrap();
    std::fs::set_permissions(
        data.path().join("signing-key.ed25519"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let config = test_config(data.path(), data.path().join("dist"), Duration::from_secs(60));
    let state = AppState::open(config).await.unwrap();
    let kid = vegas::payload::TicketSigner::from_secret(secret).kid().to_owned();
    assert_eq!(state.printer.jwks().keys.iter().map(|k| k.kid.clone()).collect::<Vec<_>>(), [kid]);
}

#[tokio::test]
async fn every_operation_of_the_openapi_document_is_a_route_of_the_server() {
    let s = default_server().await;
    let p = s.guest().await;
    let doc: Value = s.http.get(s.url("/api/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let mut operations = Vec::new();
    for (path, methods) in paths {
        for method in methods.as_object().unwrap().keys() {
            operations.push(format!("{} {path}", method.to_uppercase()));
        }
    }
    operations.sort();
    // The router registers each route with its operation (`routes!`): every one is documented, so the
    // document lists what the server answers, and no list is kept here to drift from it.
    assert!(operations.len() > 25, "{operations:?}");
    // Each one is a route of the server (never the API's "no such route" fallback, never 405).
    for operation in &operations {
        let (method, path) = operation.split_once(' ').unwrap();
        let request = s
            .http
            .request(
                method.parse().unwrap(),
                s.url(&path.replace("{id}", "t-none").replace("{emission}/{block}", "9/9")),
            )
            .bearer_auth(&p.token);
        let response = request.send().await.unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(
            status != StatusCode::METHOD_NOT_ALLOWED && !body.contains("API route not found"),
            "{operation}: {status} {body}"
        );
    }
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes.keys().collect::<Vec<_>>(), ["bearer", "cookie"]);
    let buy = &doc["paths"]["/api/tickets"]["post"];
    assert_eq!(buy["parameters"][0]["name"], "Idempotency-Key");
    assert!(buy["responses"]["402"].is_object() && buy["responses"]["500"].is_object());
}

/// OWASP's throttling without lockout: 100 wrong passwords for one name from 20 addresses use up the
/// name's allowance, yet its owner signs in at once from a device used before (its signed cookie), and
/// from a fresh address once the attack stops, within the name's refill (3 s on the server's clock).
#[tokio::test]
async fn an_attack_on_a_name_from_twenty_addresses_never_locks_its_owner_out() {
    let hand = ManualClock::at(Clock::system().now());
    let s = server_with(|config| Config { behind_proxy: true, ..config }, hand.clock()).await;
    let from = |client: &reqwest::Client, address: &str, password: &str| {
        client
            .post(s.url("/api/login"))
            .header("X-Forwarded-For", address)
            .json(&json!({ "name": "victim", "password": password }))
    };
    let owner = reqwest::Client::builder().cookie_store(true).build().unwrap();
    let registered = owner
        .post(s.url("/api/register"))
        .header("X-Forwarded-For", "192.0.2.1")
        .json(&json!({ "name": "victim", "password": "correct horse" }))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), StatusCode::OK);
    let cookies: Vec<&str> = registered.headers().get_all("set-cookie").iter().map(|c| c.to_str().unwrap()).collect();
    let device = cookies.iter().find(|c| c.starts_with("vegas_device=")).unwrap_or_else(|| panic!("{cookies:?}"));
    assert!(
        device.contains("HttpOnly") && device.contains("SameSite=Strict") && device.contains("Path=/api/login"),
        "{device}"
    );

    let attacker = reqwest::Client::new();
    let mut statuses = Vec::new();
    for i in 0..100 {
        statuses.push(from(&attacker, &format!("198.51.100.{}", i % 20 + 1), "guess").send().await.unwrap().status());
    }
    let refused = |status| statuses.iter().filter(|s| **s == status).count();
    assert_eq!(
        (refused(StatusCode::UNAUTHORIZED), refused(StatusCode::TOO_MANY_REQUESTS)),
        (20, 80),
        "the name's allowance, then 429"
    );

    assert_eq!(
        from(&owner, "192.0.2.1", "correct horse").send().await.unwrap().status(),
        StatusCode::OK,
        "the owner's device passes"
    );
    assert_eq!(
        from(&owner, "192.0.2.77", "correct horse").send().await.unwrap().status(),
        StatusCode::OK,
        "from any address"
    );
    let forged = format!("vegas_device={}.{}.{}", "p-someone", hand.clock().now(), "00".repeat(32));
    let with_forged = from(&attacker, "198.51.100.99", "correct horse").header("Cookie", forged).send().await.unwrap();
    assert_eq!(with_forged.status(), StatusCode::TOO_MANY_REQUESTS, "a cookie the server did not sign passes nothing");

    let fresh = reqwest::Client::new();
    let during = from(&fresh, "203.0.113.9", "correct horse").send().await.unwrap();
    assert_eq!(during.status(), StatusCode::TOO_MANY_REQUESTS, "a fresh address waits while the attack goes on");
    let wait: i64 = during.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=3).contains(&wait), "Retry-After: {wait}");
    hand.advance(wait);
    assert_eq!(
        from(&fresh, "203.0.113.9", "correct horse").send().await.unwrap().status(),
        StatusCode::OK,
        "the attack stopped: in {wait} s"
    );
}
