//! The database server dies: three PostgreSQL nodes under Patroni in strict synchronous mode
//! (`tests/pg/patroni.sh`), two server instances taking the multi-host URL, players buying through
//! both. The primary is killed with SIGKILL mid-run; Patroni promotes the synchronous standby and the
//! instances find it by themselves. Afterwards every acknowledged ticket is on the new primary, none is
//! sold twice, every key that was sent again replays its ticket, and the ledger balances. Then the last
//! standby is stopped too: a purchase is not acknowledged until it is back.
//!
//! Needs Patroni and etcd (Debian's `patroni` and `etcd-server`, which `make tools` installs): ignored
//! by a plain `cargo test`, run by `make test` (`--include-ignored`).
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod http;
    pub mod process;
}

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::http::Retrying;
use support::process::{ServerProcess, private_dir, vegas};

const PLAYERS: usize = 12;
const TICKETS_EACH: usize = 30;
/// What an operator may expect from the kill to the first purchase served again (ttl 10 s, then the
/// promotion, then the last standby following the new primary).
const TIME_TO_SERVE_TARGET: Duration = Duration::from_secs(30);

/// The cluster of `tests/pg/patroni.sh`, stopped and deleted when dropped, whatever the test did.
struct Patroni {
    dir: PathBuf,
    url: String,
}

fn patroni(args: &[&str]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pg/patroni.sh");
    let output = Command::new(script).args(args).output().unwrap();
    assert!(output.status.success(), "patroni.sh {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

impl Patroni {
    fn start() -> Patroni {
        let dir = std::env::temp_dir().join(format!("vegas-patroni-{}", std::process::id()));
        let url = patroni(&["start", dir.to_str().unwrap()]);
        Patroni { dir, url: url.lines().last().unwrap().to_owned() }
    }

    fn run(&self, verb: &str, node: Option<&str>) -> String {
        let mut args = vec![verb, self.dir.to_str().unwrap()];
        args.extend(node);
        patroni(&args)
    }

    fn leader(&self) -> String {
        self.run("leader", None)
    }

    fn sync_standby(&self) -> String {
        self.run("sync", None)
    }
}

impl Drop for Patroni {
    fn drop(&mut self) {
        let _ = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pg/patroni.sh"))
            .args(["down", self.dir.to_str().unwrap()])
            .output();
    }
}

/// Straight to the process's stderr, past the test harness's capture: `make test` shows the figures.
fn print_figure(text: String) {
    std::io::stderr().write_all(format!("{text}\n").as_bytes()).unwrap();
}

/// The URL with its hosts reordered so that the primary is not first: the pool must pass
/// `target_session_attrs=read-write` through for an instance to find it.
fn primary_not_first(url: &str, cluster: &Patroni) -> String {
    let (head, rest) = url.split_once('@').unwrap();
    let (hosts, tail) = rest.split_once('/').unwrap();
    let mut hosts: Vec<&str> = hosts.split(',').collect();
    let leader = cluster.leader();
    let index = leader.trim_start_matches("node").parse::<usize>().unwrap() - 1;
    let primary = hosts.remove(index);
    hosts.push(primary);
    format!("{head}@{}/{tail}", hosts.join(","))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs Patroni and etcd (Debian's patroni, etcd-server): `make test` runs it"]
async fn the_primary_killed_mid_run_loses_no_acknowledged_ticket_and_a_lone_primary_acknowledges_nothing() {
    let cluster = Patroni::start();
    let url = primary_not_first(&cluster.url, &cluster);
    let first_primary = cluster.leader();
    let dir = private_dir();
    let data = dir.path().to_owned();
    vegas(&data, &["--database", &url, "emission", "create", "--blocks", "1"]);
    // Rate limits out of the way: every retry during the failover would count against them.
    let args =
        ["--demo", "--database", &url, "--connections", "8", "--auth-burst", "100000", "--auth-per-minute", "100000"];
    let servers: Vec<ServerProcess> = (0..2).map(|_| ServerProcess::start(&data, &args)).collect();
    let shop = Arc::new(Retrying::new(servers.iter().map(ServerProcess::base).collect()));
    let wal_at_start = wal_position(&url).await;

    let answered = Arc::new(AtomicUsize::new(0));
    let mut players = tokio::task::JoinSet::new();
    for p in 0..PLAYERS {
        let (shop, answered) = (shop.clone(), answered.clone());
        players.spawn(async move {
            let (_, body) = shop.until_answered(p, |base| shop.http.post(format!("{base}/api/guest"))).await;
            let token = body["token"].as_str().unwrap().to_owned();
            let mut acknowledged = HashMap::new();
            let mut sent_again = Vec::new();
            for n in 0..TICKETS_EACH {
                let key = format!("p{p}-k{n}");
                let buy = |base: &str| {
                    shop.http
                        .post(format!("{base}/api/tickets"))
                        .bearer_auth(&token)
                        .header("Idempotency-Key", &key)
                        .json(&json!({"mode": "auto"}))
                };
                // Each purchase through the next instance in turn.
                let (status, body, attempts) = shop.answered_after(p + n, buy).await;
                assert!(status == StatusCode::CREATED || status == StatusCode::OK, "{status}: {body}");
                if attempts > 1 {
                    sent_again.push(key.clone());
                }
                acknowledged.insert(key, body["ticket"].clone());
                answered.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            (token, acknowledged, sent_again)
        });
    }

    // Once a third of the purchases are answered, the primary's machine dies: Patroni, PostgreSQL and
    // every backend killed at once. A probe buys every 100 ms from then on: the first purchase sent
    // after the kill and acknowledged gives the time to serve again.
    while answered.load(Ordering::Relaxed) < PLAYERS * TICKETS_EACH / 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let probe_token = shop.until_answered(0, |base| shop.http.post(format!("{base}/api/guest"))).await.1["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let killed_at = Instant::now();
    cluster.run("kill", Some(&first_primary));
    let mut refusals = HashMap::new();
    let served_again = {
        let mut attempt = 0usize;
        loop {
            let base = &shop.bases[attempt % 2];
            let buy = shop
                .http
                .post(format!("{base}/api/tickets"))
                .bearer_auth(&probe_token)
                .header("Idempotency-Key", format!("probe-{attempt}"));
            match buy.json(&json!({"mode": "auto"})).send().await {
                Ok(response) if response.status() == StatusCode::CREATED => break killed_at.elapsed(),
                Ok(response) => *refusals.entry(response.status().as_u16()).or_insert(0) += 1,
                Err(_) => *refusals.entry(0).or_insert(0) += 1,
            }
            assert!(killed_at.elapsed() < Duration::from_secs(120), "no purchase served within 120 s of the kill");
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    // Meanwhile the instances said « come back in a moment » (503 with Retry-After), not that they failed.
    assert_eq!(refusals.keys().copied().collect::<Vec<u16>>(), [503], "{refusals:?}");
    let results = players.join_all().await;
    let new_primary = cluster.leader();
    assert_ne!(new_primary, first_primary, "Patroni promoted a standby");

    // Every acknowledged ticket is on the new primary (every read goes there), once; no serial twice.
    let mut serials = HashSet::new();
    let mut replayed = 0;
    for (token, acknowledged, sent_again) in &results {
        let (status, history) = shop
            .until_answered(0, |base| shop.http.get(format!("{base}/api/tickets?limit=100")).bearer_auth(token))
            .await;
        assert_eq!(status, StatusCode::OK);
        let held: HashSet<&str> = history.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(held.len(), TICKETS_EACH, "one ticket per key, none lost, none extra");
        for ticket in acknowledged.values() {
            assert!(
                held.contains(ticket["id"].as_str().unwrap()),
                "acknowledged ticket {} is on the new primary",
                ticket["id"]
            );
            assert!(serials.insert(ticket["serial"].as_str().unwrap().to_owned()), "{} sold twice", ticket["serial"]);
        }
        // A key sent again during the failover replays the ticket it bought, whichever instance hears it.
        for key in sent_again {
            let again = |base: &str| {
                shop.http
                    .post(format!("{base}/api/tickets"))
                    .bearer_auth(token)
                    .header("Idempotency-Key", key)
                    .json(&json!({"mode": "auto"}))
            };
            let (status, body) = shop.until_answered(replayed, again).await;
            assert_eq!(status, StatusCode::OK, "a known key is replayed: {body}");
            assert_eq!(body["ticket"]["id"], acknowledged[key]["id"]);
            replayed += 1;
        }
        let (_, me) = shop.until_answered(1, |base| shop.http.get(format!("{base}/api/me")).bearer_auth(token)).await;
        assert_eq!(me["balance_cents"].as_i64(), Some(10_000 - 300 * TICKETS_EACH as i64), "one debit per ticket");
    }
    assert!(replayed > 0, "the kill cut no purchase: the test did not test a failover");
    let acknowledged = serials.len();
    let wal_per_purchase = (wal_position(&url).await - wal_at_start) / (acknowledged as f64);
    assert!(
        served_again <= TIME_TO_SERVE_TARGET,
        "served again {served_again:?} after the kill (target {TIME_TO_SERVE_TARGET:?})"
    );
    print_figure(format!(
        "failover: {acknowledged} purchases acknowledged, lost 0, sold twice 0, {replayed} keys sent again and \
            replayed; {first_primary} killed, {new_primary} promoted; first purchase served again {:.1} s after the \
            kill (target ≤ 30 s); {:.1} KB of WAL per purchase",
        served_again.as_secs_f64(),
        wal_per_purchase / 1000.0
    ));

    // Both instances' figures, from PostgreSQL's side (the pool), are valid Prometheus text.
    for server in &servers {
        let text =
            shop.http.get(format!("http://{}/metrics", server.admin)).send().await.unwrap().text().await.unwrap();
        assert!(text.contains("vegas_db_pool_connections{state=\"in_use\"}"), "{text}");
        promtool_passes(&text);
    }

    // With the last standby gone, a commit waits for it (strict synchronous mode): the purchase is not
    // acknowledged until the standby is back, and then it is.
    let standby = cluster.sync_standby();
    cluster.run("stop", Some(&standby));
    let patient = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let buy = patient
        .post(format!("{}/api/tickets", shop.bases[0]))
        .bearer_auth(&probe_token)
        .header("Idempotency-Key", "alone")
        .json(&json!({"mode": "auto"}));
    let pending = tokio::spawn(async move {
        let response = buy.send().await.unwrap();
        (Instant::now(), response.status(), response.json::<Value>().await.unwrap())
    });
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(!pending.is_finished(), "a purchase was acknowledged with no standby to hold it");
    let resumed_at = Instant::now();
    cluster.run("resume", Some(&standby));
    let (answered_at, status, body) = pending.await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    print_figure(format!(
        "no standby: a purchase waited unacknowledged for 8 s with {standby} stopped, and was acknowledged {:.1} s \
            after it was started again",
        answered_at.duration_since(resumed_at).as_secs_f64()
    ));

    // The players' tickets and the probe's (those bought after the kill, and the one bought alone).
    let sold = acknowledged + count_tickets(&shop, &probe_token).await;
    drop(servers);
    let check = vegas(&data, &["--database", &url, "ledger", "check"]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains(&format!("{sold} sold")), "{report}");
}

/// How far the primary's write-ahead log has got, in bytes (it goes on across a promotion).
async fn wal_position(url: &str) -> f64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let row = client.query_one("SELECT CAST(pg_current_wal_lsn() - '0/0' AS float8)", &[]).await.unwrap();
    row.get(0)
}

async fn count_tickets(shop: &Retrying, token: &str) -> usize {
    let (_, history) =
        shop.until_answered(0, |base| shop.http.get(format!("{base}/api/tickets?limit=100")).bearer_auth(token)).await;
    history.as_array().unwrap().len()
}

fn promtool_passes(text: &str) {
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
