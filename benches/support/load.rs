//! What the server benchmarks share: players buying over HTTP from this process, and the figures of a
//! run.
// Shared by `make bench-server` and `make bench-soak`; each uses part of it.
#![allow(dead_code)]

use super::process::ServerProcess;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

#[derive(Default)]
pub struct Run {
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    pub errors: usize,
}

impl Run {
    pub fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted.get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1))).copied().unwrap_or_default()
    }

    pub fn line(&self) -> String {
        format!("{:>7.0}/s  p50 {:>7}  p99 {:>7}  {} failed", self.rate(), ms(self.percentile(0.50)), ms(self.percentile(0.99)), self.errors)
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// CPU seconds used so far by a process (user + system), from /proc.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Prints the first failure of a run (the others are only counted).
pub fn report_first(errors_so_far: usize, error: &str) -> bool {
    if errors_so_far == 0 {
        eprintln!("    a request failed: {error}");
    }
    true
}

pub struct Load {
    pub http: Client,
    pub base: String,
}

impl Load {
    pub fn new(server: &ServerProcess) -> Load {
        // Idle connections are dropped well before the server closes them (`Keep-Alive: timeout=9`), so
        // that no purchase is sent on a connection the server is closing.
        let http = Client::builder().pool_max_idle_per_host(1024).pool_idle_timeout(Duration::from_secs(5)).build().unwrap();
        Load { http, base: server.base() }
    }

    pub async fn guest(&self) -> String {
        let body: Value = self.http.post(format!("{}/api/guest", self.base)).send().await.unwrap().json().await.unwrap();
        body["token"].as_str().unwrap().to_owned()
    }

    pub async fn top_up(&self, token: &str, times: usize) {
        for _ in 0..times {
            let r = self
                .http
                .post(format!("{}/api/wallet/deposit", self.base))
                .bearer_auth(token)
                .json(&serde_json::json!({"amount_cents": 10_000}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
        }
    }

    /// Buys a « Jouez » ticket.
    pub async fn buy(&self, token: &str, key: &str) -> Result<(), String> {
        let buy = self.http.post(format!("{}/api/tickets", self.base)).header("Idempotency-Key", key).json(&serde_json::json!({ "mode": "jouez" }));
        self.send(buy, token, StatusCode::CREATED).await.map(drop)
    }

    /// Buys a ticket in `mode` (« jouez » or « auto »): its id.
    pub async fn buy_ticket(&self, token: &str, key: &str, mode: &str) -> Result<String, String> {
        let buy = self.http.post(format!("{}/api/tickets", self.base)).header("Idempotency-Key", key).json(&serde_json::json!({ "mode": mode }));
        // Only the id is read: the rest of the answer (the signed payload) is skipped, not built into a tree.
        #[derive(serde::Deserialize)]
        struct Bought {
            ticket: Ticket,
        }
        #[derive(serde::Deserialize)]
        struct Ticket {
            id: String,
        }
        let bought: Bought = serde_json::from_slice(&self.send(buy, token, StatusCode::CREATED).await?).map_err(|e| e.to_string())?;
        Ok(bought.ticket.id)
    }

    /// Uncovers `zones` of a ticket.
    pub async fn reveal(&self, token: &str, ticket: &str, zones: &[usize]) -> Result<(), String> {
        let url = format!("{}/api/tickets/{ticket}/reveal", self.base);
        self.send(self.http.post(url).json(&serde_json::json!({ "zones": zones })), token, StatusCode::OK).await.map(drop)
    }

    /// Ends a ticket's game, its win credited.
    pub async fn complete(&self, token: &str, ticket: &str) -> Result<(), String> {
        self.send(self.http.post(format!("{}/api/tickets/{ticket}/complete", self.base)), token, StatusCode::OK).await.map(drop)
    }

    /// The answer's body, if its status is `expected`.
    async fn send(&self, request: reqwest::RequestBuilder, token: &str, expected: StatusCode) -> Result<Vec<u8>, String> {
        let r = request.bearer_auth(token).send().await.map_err(|e| e.to_string())?;
        let status = r.status();
        let body = r.bytes().await.map_err(|e| e.to_string())?;
        if status != expected {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(body.to_vec())
    }
}

/// `count` new players, each topped up `top_ups(player)` times, in order.
pub async fn players(load: &Arc<Load>, count: usize, top_ups: impl Fn(usize) -> usize) -> Vec<String> {
    let mut setup = JoinSet::new();
    for p in 0..count {
        let (load, times) = (load.clone(), top_ups(p));
        setup.spawn(async move {
            let token = load.guest().await;
            load.top_up(&token, times).await;
            (p, token)
        });
    }
    let mut tokens = setup.join_all().await;
    tokens.sort();
    tokens.into_iter().map(|(_, token)| token).collect()
}
