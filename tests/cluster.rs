//! Three server instances on one PostgreSQL, players buying through all of them at once; one instance
//! is killed with SIGKILL mid-run and PostgreSQL itself is stopped at once (immediate shutdown, as a
//! crash) and restarted. Afterwards every acknowledged ticket exists, nothing is sold twice, the ledger
//! balances, and a ticket printed by one instance verifies against another instance's keys.
//!
//! Needs the cluster of `make test` (`VEGAS_TEST_DATABASE`, `VEGAS_TEST_PGDATA`): ignored by a plain
//! `cargo test`, run by `make test` (`--include-ignored`), and failing if run without it.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod http;
    pub mod process;
}

use reqwest::StatusCode;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::http::Retrying;
use support::process::{ServerProcess, private_dir, vegas};
use vegas::payload::{Jwks, verify};

const INSTANCES: usize = 3;
const PLAYERS: usize = 15;
const TICKETS_EACH: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (VEGAS_TEST_DATABASE, VEGAS_TEST_PGDATA): `make test` runs it"]
async fn three_instances_survive_a_killed_instance_and_a_database_crash() {
    let missing =
        "VEGAS_TEST_DATABASE and VEGAS_TEST_PGDATA are not set: run this through `make test` (tests/pg/cluster.sh)";
    let (admin_url, pgdata) =
        (std::env::var("VEGAS_TEST_DATABASE").expect(missing), std::env::var("VEGAS_TEST_PGDATA").expect(missing));
    let (admin, connection) = tokio_postgres::connect(&admin_url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    admin.batch_execute("CREATE DATABASE cluster").await.unwrap();
    let url = format!("{}/cluster", admin_url.rsplit_once('/').unwrap().0);

    let dir = private_dir();
    let data = dir.path().to_owned();
    vegas(&data, &["--database", &url, "emission", "create", "--blocks", "1"]);
    let mut servers: Vec<ServerProcess> = (0..INSTANCES)
        .map(|_| ServerProcess::start(&data, &["--demo", "--database", &url, "--connections", "8"]))
        .collect();
    let shop = Arc::new(Retrying::new(servers.iter().map(ServerProcess::base).collect()));

    let answered = Arc::new(AtomicUsize::new(0));
    let mut players = tokio::task::JoinSet::new();
    for p in 0..PLAYERS {
        let (shop, answered) = (shop.clone(), answered.clone());
        players.spawn(async move {
            let (_, body) = shop.until_answered(p, |base| shop.http.post(format!("{base}/api/guest"))).await;
            let token = body["token"].as_str().unwrap().to_owned();
            let mut acknowledged = HashMap::new();
            for n in 0..TICKETS_EACH {
                let key = format!("p{p}-k{n}");
                let buy = |base: &str| {
                    shop.http
                        .post(format!("{base}/api/tickets"))
                        .bearer_auth(&token)
                        .header("Idempotency-Key", &key)
                        .json(&json!({"mode": "jouez"}))
                };
                // Each purchase through the next instance in turn.
                let (status, body) = shop.until_answered(p + n, buy).await;
                assert!(status == StatusCode::CREATED || status == StatusCode::OK, "{status}: {body}");
                acknowledged.insert(key, body["ticket"].clone());
                answered.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            (token, acknowledged)
        });
    }

    // Mid-run: one instance dies without warning once a third of the purchases are answered, then the
    // database crashes and comes back at half (placed by what happened, not by the clock).
    let answered_reach = async |share: usize| {
        while answered.load(Ordering::Relaxed) < PLAYERS * TICKETS_EACH / share {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    answered_reach(3).await;
    servers[INSTANCES - 1].kill();
    answered_reach(2).await;
    let restart = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pg/cluster.sh"))
        .args(["crash-restart", &pgdata])
        .output()
        .unwrap();
    assert!(restart.status.success(), "{}", String::from_utf8_lossy(&restart.stderr));
    let results = players.join_all().await;
    assert!(shop.retried() > 0, "neither crash cut a request");

    let live = &shop.bases[..INSTANCES - 1];
    let mut jwks: Vec<Jwks> = Vec::new();
    for base in live {
        jwks.push(shop.http.get(format!("{base}/api/jwks")).send().await.unwrap().json().await.unwrap());
    }
    let mut serials = HashSet::new();
    for (token, acknowledged) in &results {
        let (status, history) = shop
            .until_answered(0, |base| shop.http.get(format!("{base}/api/tickets?limit=100")).bearer_auth(token))
            .await;
        assert_eq!(status, StatusCode::OK);
        let held: HashSet<&str> = history.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(held.len(), TICKETS_EACH, "one ticket per key, none lost, none extra");
        for ticket in acknowledged.values() {
            assert!(held.contains(ticket["id"].as_str().unwrap()), "an acknowledged ticket is still there");
            assert!(serials.insert(ticket["serial"].as_str().unwrap().to_owned()), "{} sold twice", ticket["serial"]);
            // Printed by whichever instance sold it, it verifies against every other instance's keys.
            for keys in &jwks {
                verify(ticket["payload"].as_str().unwrap(), keys).expect("a payload verifies on every instance");
            }
        }
        let (_, me) = shop.until_answered(1, |base| shop.http.get(format!("{base}/api/me")).bearer_auth(token)).await;
        assert_eq!(me["balance_cents"].as_i64(), Some(10_000 - 300 * TICKETS_EACH as i64), "one debit per ticket");
    }
    assert_eq!(serials.len(), PLAYERS * TICKETS_EACH);
    drop(servers);
    let check = vegas(&data, &["--database", &url, "ledger", "check"]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains(&format!("{} sold", PLAYERS * TICKETS_EACH)), "{report}");
}
