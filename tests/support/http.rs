//! Sending until a server answers, for the tests that crash servers (or their database) on purpose.
// Shared by the cluster and failover tests; each uses part of it.
#![allow(dead_code)]

use reqwest::{Client, RequestBuilder, StatusCode};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub struct Retrying {
    pub http: Client,
    pub bases: Vec<String>,
    /// Requests sent again because a server was down, cut them, or failed them (5xx).
    pub retries: AtomicUsize,
}

impl Retrying {
    pub fn new(bases: Vec<String>) -> Retrying {
        Retrying {
            http: Client::builder().timeout(Duration::from_secs(10)).build().unwrap(),
            bases,
            retries: AtomicUsize::new(0),
        }
    }

    /// Sends to `bases[first]`, then to the next ones in turn, until one answers other than 5xx. A
    /// purchase sent again carries the same Idempotency-Key: it is the same purchase.
    pub async fn until_answered(&self, first: usize, request: impl Fn(&str) -> RequestBuilder) -> (StatusCode, Value) {
        let (status, body, _) = self.answered_after(first, request).await;
        (status, body)
    }

    /// As [`Retrying::until_answered`], with how many times the request was sent.
    pub async fn answered_after(
        &self,
        first: usize,
        request: impl Fn(&str) -> RequestBuilder,
    ) -> (StatusCode, Value, usize) {
        for attempt in 0..600 {
            let base = &self.bases[(first + attempt) % self.bases.len()];
            if let Ok(response) = request(base).send().await {
                let status = response.status();
                if let (false, Ok(body)) = (status.is_server_error(), response.json::<Value>().await) {
                    return (status, body, attempt + 1);
                }
            }
            self.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no server answered");
    }

    pub fn retried(&self) -> usize {
        self.retries.load(Ordering::Relaxed)
    }
}
