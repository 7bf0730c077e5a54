//! The real server binary, killed with SIGKILL again and again while players buy concurrently, then
//! restarted on the same data. Afterwards nothing acknowledged is lost, nothing is sold twice, every
//! retried Idempotency-Key replays its ticket without a second debit, and `vegas ledger check` passes.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod http;
    pub mod process;
}

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::http::Retrying;
use support::process::{ServerProcess, private_dir, vegas};

const PLAYERS: usize = 12;
const TICKETS_EACH: usize = 25;
const KILLS: usize = 5;

async fn buy(shop: &Retrying, token: &str, key: &str) -> (StatusCode, Value) {
    shop.until_answered(0, |base| {
        shop.http
            .post(format!("{base}/api/tickets"))
            .bearer_auth(token)
            .header("Idempotency-Key", key)
            .json(&json!({"mode": "jouez"}))
    })
    .await
}

#[derive(Debug, Clone)]
struct Acknowledged {
    ticket_id: String,
    serial: String,
    balance: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_purchases_survive_sigkill() {
    let dir = private_dir();
    let data = dir.path().to_owned();
    vegas(&data, &["emission", "create", "--blocks", "1"]);
    let mut server = ServerProcess::start(&data, &["--demo"]);
    let shop = Arc::new(Retrying::new(vec![server.base()]));

    let mut tokens = Vec::new();
    for _ in 0..PLAYERS {
        let (status, body) = shop.until_answered(0, |base| shop.http.post(format!("{base}/api/guest"))).await;
        assert_eq!(status, StatusCode::OK);
        tokens.push(body["token"].as_str().unwrap().to_owned());
    }

    let answered = Arc::new(AtomicUsize::new(0));
    let mut players = tokio::task::JoinSet::new();
    for (p, token) in tokens.iter().enumerate() {
        let (shop, token, answered) = (shop.clone(), token.clone(), answered.clone());
        players.spawn(async move {
            let mut acknowledged: HashMap<String, Acknowledged> = HashMap::new();
            for n in 0..TICKETS_EACH {
                let key = format!("p{p}-k{n}");
                let (status, body) = buy(&shop, &token, &key).await;
                assert!(status == StatusCode::CREATED || status == StatusCode::OK, "{status}: {body}");
                let ack = Acknowledged {
                    ticket_id: body["ticket"]["id"].as_str().unwrap().to_owned(),
                    serial: body["ticket"]["serial"].as_str().unwrap().to_owned(),
                    balance: body["balance_cents"].as_i64().unwrap(),
                };
                // A retry of an answered key, now or after the next kill, replays the same ticket.
                if n % 5 == 4 {
                    let (again, replay) = buy(&shop, &token, &format!("p{p}-k{}", n - 2)).await;
                    assert_eq!(again, StatusCode::OK, "{replay}");
                    assert_eq!(
                        replay["ticket"]["id"].as_str(),
                        Some(acknowledged[&format!("p{p}-k{}", n - 2)].ticket_id.as_str())
                    );
                    assert_eq!(replay["balance_cents"].as_i64(), Some(ack.balance), "a replay debits nothing");
                }
                acknowledged.insert(key, ack);
                answered.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (token, acknowledged)
        });
    }

    // Meanwhile: kill the server without warning, and start it again, each time once another share of
    // the purchases has been answered (placed by what happened, not by the clock).
    let killer = {
        let answered = answered.clone();
        tokio::task::spawn_blocking(move || {
            for kill in 1..=KILLS {
                while answered.load(Ordering::Relaxed) < kill * PLAYERS * TICKETS_EACH / (KILLS + 1) {
                    std::thread::sleep(Duration::from_millis(2));
                }
                server.kill();
                // Down long enough for purchases to meet a closed port and be retried.
                std::thread::sleep(Duration::from_millis(100));
                server.restart();
            }
            server
        })
    };
    let results = players.join_all().await;
    let mut server = killer.await.unwrap();
    assert!(shop.retried() > 0, "no request was cut by a kill");

    let mut serials = HashSet::new();
    for (token, acknowledged) in &results {
        let (status, history) = shop
            .until_answered(0, |base| shop.http.get(format!("{base}/api/tickets?limit=100")).bearer_auth(token))
            .await;
        assert_eq!(status, StatusCode::OK);
        let held: HashMap<&str, &str> = history
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["id"].as_str().unwrap(), t["serial"].as_str().unwrap()))
            .collect();
        assert_eq!(held.len(), TICKETS_EACH, "one ticket per key, none lost, none extra");
        for ack in acknowledged.values() {
            assert_eq!(
                held.get(ack.ticket_id.as_str()),
                Some(&ack.serial.as_str()),
                "an acknowledged ticket is still there"
            );
            assert!(serials.insert(ack.serial.clone()), "{} sold twice", ack.serial);
        }
        let (_, me) = shop.until_answered(0, |base| shop.http.get(format!("{base}/api/me")).bearer_auth(token)).await;
        assert_eq!(me["balance_cents"].as_i64(), Some(10_000 - 300 * TICKETS_EACH as i64), "one debit per ticket");
    }
    assert_eq!(serials.len(), PLAYERS * TICKETS_EACH);

    // What a kill leaves in the WAL is copied into the database as the server starts again, before it
    // takes a request (not left to the checkpointer under sales): the WAL starts over empty.
    let (status, _) = shop.until_answered(0, |base| shop.http.post(format!("{base}/api/guest"))).await;
    assert_eq!(status, StatusCode::OK, "a last write before the kill");
    server.kill();
    let wal = data.join("vegas.sqlite3-wal");
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert!(left > 0, "the kill left a WAL");
    server.restart();
    let after = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert!(after < left, "the WAL a crash left is emptied on start ({left} bytes, then {after})");
    drop(server);
    let check = vegas(&data, &["ledger", "check"]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("ledger check passed"), "{report}");
    assert!(report.contains(&format!("{} sold", PLAYERS * TICKETS_EACH)), "{report}");
}
