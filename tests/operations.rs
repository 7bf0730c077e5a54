//! The real server binary as an operator runs it: stopped by SIGTERM with purchases in flight, backed up
//! while it sells, scraped by Prometheus, probed by a load balancer, logging for a shipper.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod process;
}

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::process::{ServerProcess, binary, private_dir, vegas};

const NO_RATE_LIMIT: [&str; 8] = [
    "--auth-burst",
    "100000",
    "--auth-per-minute",
    "100000",
    "--max-connections-per-client",
    "100000",
    "--new-connections-per-second",
    "100000",
];

fn demo_server(dir: &tempfile::TempDir) -> ServerProcess {
    vegas(dir.path(), &["emission", "create", "--blocks", "1"]);
    ServerProcess::start(dir.path(), &[&["--demo"], &NO_RATE_LIMIT[..]].concat())
}

/// Straight to the process's stderr, past the test harness's capture: `make test` shows the figure.
fn print_figure(text: String) {
    std::io::stderr().write_all(format!("{text}\n").as_bytes()).unwrap();
}

async fn guest(http: &Client, base: &str) -> String {
    let body: Value = http.post(format!("{base}/api/guest")).send().await.unwrap().json().await.unwrap();
    body["token"].as_str().unwrap().to_owned()
}

/// What each buyer saw: for each Idempotency-Key, the ticket acknowledged (`None`: no answer came).
type Outcomes = Vec<(String, String, Option<String>)>;

/// `buyers` guests buying « Auto » tickets as fast as answers come, until `selling` turns false or a
/// purchase gets no answer; each acknowledged ticket is noted with the time its answer came.
fn start_buyers(
    http: &Client,
    base: &str,
    buyers: usize,
    selling: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
) -> tokio::task::JoinSet<(String, Outcomes)> {
    let mut set = tokio::task::JoinSet::new();
    for b in 0..buyers {
        let (http, base, selling, answered) = (http.clone(), base.to_owned(), selling.clone(), answered.clone());
        set.spawn(async move {
            let token = guest(&http, &base).await;
            let mut outcomes = Vec::new();
            for i in 0.. {
                if !selling.load(Ordering::Relaxed) {
                    break;
                }
                let key = format!("b{b}-{i}");
                let buy = http
                    .post(format!("{base}/api/tickets"))
                    .bearer_auth(&token)
                    .header("Idempotency-Key", &key)
                    .json(&json!({ "mode": "auto" }));
                match buy.send().await {
                    Ok(response) if response.status() == StatusCode::CREATED => {
                        let body: Value = response.json().await.unwrap();
                        outcomes.push((key, token.clone(), Some(body["ticket"]["id"].as_str().unwrap().to_owned())));
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(response) if response.status() == StatusCode::PAYMENT_REQUIRED => {
                        let top_up = http
                            .post(format!("{base}/api/wallet/deposit"))
                            .bearer_auth(&token)
                            .json(&json!({ "amount_cents": 10_000 }));
                        assert_eq!(top_up.send().await.unwrap().status(), StatusCode::OK);
                    }
                    Ok(response) => {
                        panic!("a purchase answered {}: {}", response.status(), response.text().await.unwrap())
                    }
                    Err(_) => {
                        outcomes.push((key, token.clone(), None));
                        break;
                    }
                }
            }
            (token, outcomes)
        });
    }
    set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_answers_the_purchases_in_flight_stops_and_loses_none() {
    let dir = private_dir();
    let mut server = demo_server(&dir);
    let (http, base) = (Client::new(), server.base());
    let selling = Arc::new(AtomicBool::new(true));
    let answered = Arc::new(AtomicUsize::new(0));
    let buyers = start_buyers(&http, &base, 16, selling.clone(), answered.clone());
    while answered.load(Ordering::Relaxed) < 300 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = answered.load(Ordering::Relaxed);
    let (status, took) = tokio::task::block_in_place(|| server.terminate(Duration::from_secs(40)));
    let after_signal = answered.load(Ordering::Relaxed) - before;
    let results = buyers.join_all().await;
    assert!(status.success(), "SIGTERM ends the server with exit status 0, not {status}");
    // Within the request timeout (30 s) that bounds what it waits for; here, much less.
    assert!(took < Duration::from_secs(31), "stopped in {took:?}");
    let unanswered = results.iter().flat_map(|(_, o)| o).filter(|(_, _, t)| t.is_none()).count();
    print_figure(format!(
        "SIGTERM with 16 buyers: exit 0 in {took:?}; {after_signal} purchases answered after the signal, {unanswered} \
            sent and not acknowledged"
    ));

    // Started again on the same store: every acknowledged ticket is there, once; a purchase that got no
    // answer, sent again with its key, is sold once (now, or replayed if it was made).
    server.restart();
    for (token, outcomes) in &results {
        let history: Vec<Value> = http
            .get(format!("{base}/api/tickets?limit=100"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let held: HashMap<&str, &Value> = history.iter().map(|t| (t["id"].as_str().unwrap(), t)).collect();
        let acknowledged: Vec<&String> = outcomes.iter().filter_map(|(_, _, t)| t.as_ref()).collect();
        for id in &acknowledged {
            assert!(held.contains_key(id.as_str()), "acknowledged ticket {id} is in the store after the stop");
        }
        for (key, _, _) in outcomes.iter().filter(|(_, _, t)| t.is_none()) {
            let again = http
                .post(format!("{base}/api/tickets"))
                .bearer_auth(token)
                .header("Idempotency-Key", key)
                .json(&json!({ "mode": "auto" }));
            let status = again.send().await.unwrap().status();
            assert!(status == StatusCode::OK || status == StatusCode::CREATED, "{status}");
        }
        let history: Vec<Value> = http
            .get(format!("{base}/api/tickets?limit=100"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(history.len(), outcomes.len(), "one ticket per key, no more");
    }
    drop(server);
    let report = String::from_utf8(vegas(dir.path(), &["ledger", "check"]).stdout).unwrap();
    assert!(report.contains("sold"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_taken_while_the_server_sells_restores_every_ticket_acknowledged_before_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_dir();
    let server = demo_server(&dir);
    let (http, base) = (Client::new(), server.base());
    let selling = Arc::new(AtomicBool::new(true));
    let answered = Arc::new(AtomicUsize::new(0));
    let buyers = start_buyers(&http, &base, 8, selling.clone(), answered.clone());
    while answered.load(Ordering::Relaxed) < 2_000 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // What was acknowledged before the backup began: the answers counted so far.
    let acknowledged_before = answered.load(Ordering::Relaxed);
    let copies = private_dir();
    let dest = copies.path().join("vegas-backup.sqlite3");
    let started = Instant::now();
    let data = dir.path().to_owned();
    let dest_arg = dest.to_str().unwrap().to_owned();
    let output = tokio::task::spawn_blocking(move || vegas(&data, &["backup", &dest_arg])).await.unwrap();
    let took = started.elapsed();
    let during = answered.load(Ordering::Relaxed) - acknowledged_before;
    selling.store(false, Ordering::Relaxed);
    let results = buyers.join_all().await;
    assert!(during > 0, "the server sold while the backup ran");
    assert_eq!(
        std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
        0o600,
        "the copy holds the store's secrets: owner-only"
    );
    assert!(!copies.path().join("vegas-backup.sqlite3.partial").exists());
    let refused = std::process::Command::new(binary())
        .arg("--data")
        .arg(dir.path())
        .args(["backup", dest.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        !refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("exists already"),
        "a backup never overwrites"
    );

    // Restored into an empty data directory, as README says: the books balance, and every ticket
    // acknowledged before the backup began is in it.
    let restored = private_dir();
    std::fs::copy(&dest, restored.path().join("vegas.sqlite3")).unwrap();
    std::fs::set_permissions(restored.path().join("vegas.sqlite3"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let report = String::from_utf8(vegas(restored.path(), &["ledger", "check"]).stdout).unwrap();
    let store = rusqlite::Connection::open(restored.path().join("vegas.sqlite3")).unwrap();
    let in_copy: std::collections::HashSet<String> = store
        .prepare("SELECT id FROM tickets")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Each buyer's first tickets were answered first: the first `acknowledged_before` answers overall
    // are among them, and the copy holds at least as many tickets as were acknowledged before it.
    assert!(
        in_copy.len() >= acknowledged_before,
        "{} tickets in the copy, {acknowledged_before} acknowledged before it began",
        in_copy.len()
    );
    let all: Vec<&String> = results.iter().flat_map(|(_, o)| o.iter().filter_map(|(_, _, t)| t.as_ref())).collect();
    let in_copy_of_all = all.iter().filter(|id| in_copy.contains(id.as_str())).count();
    assert_eq!(in_copy_of_all, in_copy.len(), "the copy holds only acknowledged (or answered-later) tickets");
    // Tickets of each buyer are in the copy as a prefix of what it was answered: none missing in between.
    for (_, outcomes) in &results {
        let held: Vec<bool> =
            outcomes.iter().filter_map(|(_, _, t)| t.as_ref()).map(|id| in_copy.contains(id)).collect();
        assert!(
            held.windows(2).all(|w| w[0] || !w[1]),
            "a buyer's tickets are in the copy up to one instant, none missing before it"
        );
    }
    print_figure(format!(
        "backup under load: {} ({took:?}) while {during} purchases were answered; the restored copy holds {} tickets \
            ({acknowledged_before} acknowledged before it began), ledger check: {}",
        String::from_utf8_lossy(&output.stdout).trim(),
        in_copy.len(),
        report.lines().next().unwrap_or_default()
    ));
}

#[tokio::test]
async fn metrics_are_on_the_operators_address_pass_promtool_and_probes_tell_ready() {
    let dir = private_dir();
    // A real-money server with no block yet: alive, but not ready to sell.
    let server = ServerProcess::start(dir.path(), &[]);
    let http = Client::new();
    let base = server.base();
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), StatusCode::OK);
    let not_ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(not_ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(not_ready.text().await.unwrap(), "no block on sale");
    drop(server);

    let dir = private_dir();
    vegas(dir.path(), &["emission", "create", "--blocks", "1"]);
    let server = ServerProcess::start(dir.path(), &["--demo"]);
    let (base, admin) = (server.base(), format!("http://{}", server.admin));
    assert_eq!(http.get(format!("{base}/readyz")).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(http.get(format!("{admin}/readyz")).send().await.unwrap().status(), StatusCode::OK);
    let token = guest(&http, &base).await;
    for key in ["m1", "m2", "m2"] {
        let buy = http
            .post(format!("{base}/api/tickets"))
            .bearer_auth(&token)
            .header("Idempotency-Key", key)
            .json(&json!({ "mode": "auto" }));
        assert!(buy.send().await.unwrap().status().is_success());
    }
    // Past the per-address rate of new sessions (20 at once by default): refusals are counted.
    let mut refused = 0;
    for _ in 0..30 {
        refused += usize::from(
            http.post(format!("{base}/api/guest")).send().await.unwrap().status() == StatusCode::TOO_MANY_REQUESTS,
        );
    }
    assert!(refused > 0);

    let scraped = http.get(format!("{admin}/metrics")).send().await.unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    assert!(scraped.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = scraped.text().await.unwrap();
    let value = |series: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("vegas_purchases_total"), 2.0);
    assert_eq!(value("vegas_purchase_replays_total"), 1.0);
    assert_eq!(value(r#"vegas_http_requests_total{route="/api/tickets",method="POST",status="201"}"#), 2.0);
    assert_eq!(value(r#"vegas_http_request_duration_seconds_count{route="/api/tickets",method="POST"}"#), 3.0);
    assert_eq!(value(r#"vegas_rate_limit_refusals_total{limit="sessions_per_address"}"#), refused as f64);
    assert_eq!(value("vegas_settler_backlog_tickets"), 0.0);
    assert!(value("vegas_sqlite_wal_bytes") > 0.0);
    // The writer committed sales: it looked pages up, in its cache and (a store just opened) in the file.
    assert!(value(r#"vegas_sqlite_writer_pages_total{from="cache"}"#) > 0.0);
    assert!(value(r#"vegas_sqlite_writer_pages_total{from="file"}"#) > 0.0);
    // Every group of writes it committed was timed: at least the guest's, its credit and the two sales.
    assert!(value("vegas_sqlite_commit_seconds_count") >= 4.0);
    assert!(value("vegas_sqlite_commit_seconds_sum") > 0.0);
    assert_eq!(value("vegas_password_hashes_waiting"), 0.0);
    // Never on the players' address.
    let players_side = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(!players_side.contains("vegas_purchases_total"));

    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; `make tools` installs it)");
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    print_figure(format!(
        "promtool check metrics: passed on {} series",
        text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count()
    ));
}

#[test]
fn json_logs_are_one_object_per_line_for_a_log_shipper() {
    let dir = private_dir();
    let output = std::process::Command::new(binary())
        .arg("--data")
        .arg(dir.path())
        .args(["--log-format", "json", "migrate"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(output.status.success());
    let logs = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<Value> =
        logs.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert!(!lines.is_empty(), "migrating a new store logs its migrations");
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["timestamp"].is_string() && l["fields"]["message"].is_string()),
        "{logs}"
    );
}
