//! What an operator runs: a real-money server (the default), funded only through the wallet CLI.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod process;
}

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::process::{ServerProcess, vegas, vegas_refused};

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn a_real_money_server_mints_nothing_and_the_wallet_cli_funds_a_player() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_owned();
    vegas(&data, &["emission", "create", "--blocks", "1"]);
    let server = ServerProcess::start(&data, &[]);
    let (http, base) = (Client::new(), server.base());

    let (status, body) = send(http.post(format!("{base}/api/guest"))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("demo_off")), "no guest with free money");
    let (status, body) = send(http.post(format!("{base}/api/register")).json(&json!({"name": "alice", "password": "correct horse"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["player"]["balance_cents"], 0, "a new player starts with nothing");
    assert_eq!(body["player"]["demo"], false);
    let token = body["token"].as_str().unwrap().to_owned();
    let (status, body) = send(http.post(format!("{base}/api/wallet/deposit")).bearer_auth(&token).json(&json!({"amount_cents": 10_000}))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("demo_off")));
    let buy = |key: &str| http.post(format!("{base}/api/tickets")).bearer_auth(&token).header("Idempotency-Key", key).json(&json!({"mode": "auto"}));
    assert_eq!(send(buy("first")).await.0, StatusCode::PAYMENT_REQUIRED);

    let out = vegas(&data, &["wallet", "credit", "--player", "alice", "--amount", "10.50", "--reason", "bank transfer 4711"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("10,50"), "the CLI prints the new balance");
    let (status, body) = send(buy("second")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["balance_cents"], 750);

    let refused = vegas_refused(&data, &["wallet", "debit", "--player", "alice", "--amount", "8", "--reason", "payout"]);
    assert!(refused.contains("not enough money"), "{refused}");
    let refused = vegas_refused(&data, &["wallet", "credit", "--player", "nobody", "--amount", "8", "--reason", "typo"]);
    assert!(refused.contains("no player"), "{refused}");
    vegas_refused(&data, &["wallet", "credit", "--player", "alice", "--amount", "-3", "--reason", "negative"]);
    let id = body["ticket"]["id"].as_str().unwrap().to_owned();
    let (status, body) = send(http.post(format!("{base}/api/tickets/{id}/complete")).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after_win = body["balance_cents"].as_i64().unwrap();
    let amount = format!("{}.{:02}", after_win / 100, after_win % 100);
    vegas(&data, &["wallet", "debit", "--player", "alice", "--amount", &amount, "--reason", "payout"]);
    let (_, me) = send(http.get(format!("{base}/api/me")).bearer_auth(&token)).await;
    assert_eq!(me["balance_cents"], 0, "everything paid out");

    vegas(&data, &["ledger", "check"]);
}
