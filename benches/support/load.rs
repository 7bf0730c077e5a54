//! What the server benchmarks share: players buying over HTTP from this process, and the figures of a
//! run.
// Shared by `make bench-server` and `make bench-soak`; each uses part of it.
#![allow(dead_code)]

use super::process::ServerProcess;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
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
        sorted
            .get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }

    pub fn line(&self) -> String {
        format!(
            "{:>7.0}/s  p50 {:>7}  p99 {:>7}  {} failed",
            self.rate(),
            ms(self.percentile(0.50)),
            ms(self.percentile(0.99)),
            self.errors
        )
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
        let http =
            Client::builder().pool_max_idle_per_host(1024).pool_idle_timeout(Duration::from_secs(5)).build().unwrap();
        Load { http, base: server.base() }
    }

    pub async fn guest(&self) -> String {
        let body: Value =
            self.http.post(format!("{}/api/guest", self.base)).send().await.unwrap().json().await.unwrap();
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
        let buy = self
            .http
            .post(format!("{}/api/tickets", self.base))
            .header("Idempotency-Key", key)
            .json(&serde_json::json!({ "mode": "jouez" }));
        self.send(buy, token, StatusCode::CREATED).await.map(drop)
    }

    /// The answer's body, if its status is `expected`.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        token: &str,
        expected: StatusCode,
    ) -> Result<Vec<u8>, String> {
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

/// One player's own keep-alive connection, driven by the player's task alone, as a player's browser
/// holds its own. The load shares the server's two cores: through a pooled client (URL parsing, a pool
/// checkout and a task handing each request to its connection) it took a quarter of a core.
pub struct Line {
    addr: String,
    authorization: HeaderValue,
    open: Option<Open>,
}

type Connection = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

struct Open {
    sender: http1::SendRequest<Full<Bytes>>,
    connection: Pin<Box<Connection>>,
}

impl Line {
    pub fn new(server: &ServerProcess, token: &str) -> Line {
        Line {
            addr: server.addr.clone(),
            authorization: HeaderValue::from_str(&format!("Bearer {token}")).expect("a token is ASCII"),
            open: None,
        }
    }

    /// Buys a ticket in `mode` (« jouez » or « auto »): its id.
    pub async fn buy_ticket(&mut self, key: &str, mode: &str) -> Result<String, String> {
        // Only the id is read: the rest of the answer (the signed payload) is skipped, not built into a tree.
        #[derive(serde::Deserialize)]
        struct Bought {
            ticket: Ticket,
        }
        #[derive(serde::Deserialize)]
        struct Ticket {
            id: String,
        }
        let body = serde_json::to_vec(&serde_json::json!({ "mode": mode })).unwrap();
        let answer = self.send("/api/tickets", Some(key), body, StatusCode::CREATED).await?;
        let bought: Bought = serde_json::from_slice(&answer).map_err(|e| e.to_string())?;
        Ok(bought.ticket.id)
    }

    /// Uncovers `zones` of a ticket.
    pub async fn reveal(&mut self, ticket: &str, zones: &[usize]) -> Result<(), String> {
        let body = serde_json::to_vec(&serde_json::json!({ "zones": zones })).unwrap();
        self.send(&format!("/api/tickets/{ticket}/reveal"), None, body, StatusCode::OK).await.map(drop)
    }

    /// Ends a ticket's game, its win credited.
    pub async fn complete(&mut self, ticket: &str) -> Result<(), String> {
        self.send(&format!("/api/tickets/{ticket}/complete"), None, Vec::new(), StatusCode::OK).await.map(drop)
    }

    /// POSTs `body` to `path`: the answer's body, if its status is `expected`. A connection the server
    /// closed (idle too long) is opened again before the request, never during it.
    async fn send(
        &mut self,
        path: &str,
        idempotency_key: Option<&str>,
        body: Vec<u8>,
        expected: StatusCode,
    ) -> Result<Bytes, String> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(HOST, &self.addr)
            .header(AUTHORIZATION, &self.authorization)
            .header(CONTENT_TYPE, "application/json");
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let request = request.body(Full::new(Bytes::from(body))).map_err(|e| e.to_string())?;
        if self.open.as_ref().is_none_or(|open| open.sender.is_closed()) {
            self.open = Some(self.connect().await?);
        }
        let Open { sender, connection } = self.open.as_mut().expect("opened above");
        let answer = async {
            sender.ready().await.map_err(|e| e.to_string())?;
            let answer = sender.send_request(request).await.map_err(|e| e.to_string())?;
            let status = answer.status();
            let body = answer.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>((status, body))
        };
        // The connection's own work (writing the request, reading the answer) is done as this task
        // waits for the answer, not by a task of its own.
        let outcome = tokio::select! {
            biased;
            answer = answer => answer,
            ended = connection.as_mut() => Err(format!("the connection ended during the request: {ended:?}")),
        };
        let (status, body) = outcome.inspect_err(|_| self.open = None)?;
        if status != expected {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(body)
    }

    async fn connect(&self) -> Result<Open, String> {
        let stream = TcpStream::connect(&self.addr).await.map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
        Ok(Open { sender, connection: Box::pin(connection) })
    }
}
