//! What one client may take of the server's connections: at most [`ClientCap::held`] at once and
//! [`ClientCap::per_second`] new ones (a burst of twice that), so that one address — whatever it
//! opens, silent, slow or reopened as fast as it closes — cannot take the slots every other client
//! shares. A connection past either is closed as soon as it is accepted. Behind a trusted reverse
//! proxy, whose own connections are pooled for every client, the cap is on each forwarded address's
//! requests in flight instead ([`in_flight`]).

use super::AppState;
use super::error::ApiError;
use super::limits::ClientIp;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::{DefaultKeyedRateLimiter, Quota};
use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use tower_governor::key_extractor::KeyExtractor;

/// How much of the server one client address may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientCap {
    /// Connections (or, behind a proxy, requests in flight) at once.
    pub held: u32,
    /// New connections a second, after a burst of twice as many.
    pub per_second: u32,
}

impl ClientCap {
    /// A browser opens about six connections; an office behind one address, some dozens.
    pub const DEFAULT: ClientCap = ClientCap { held: 256, per_second: 100 };
}

/// The connections each client address holds, and how fast it opens new ones.
pub struct PerClient {
    held: Mutex<HashMap<IpAddr, u32>>,
    cap: ClientCap,
    opened: DefaultKeyedRateLimiter<IpAddr>,
}

/// One connection (or request) of a client, given back when dropped.
pub struct Held {
    clients: Arc<PerClient>,
    ip: IpAddr,
}

impl PerClient {
    pub fn new(cap: ClientCap) -> Arc<PerClient> {
        let per_second = NonZeroU32::new(cap.per_second.max(1)).expect("above zero");
        let burst = per_second.saturating_mul(NonZeroU32::new(2).expect("above zero"));
        Arc::new(PerClient {
            held: Mutex::default(),
            cap,
            opened: DefaultKeyedRateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)),
        })
    }

    /// A new connection from `ip`, if it opens no faster than its rate and holds fewer than its cap.
    pub fn connect(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        self.opened.check_key(&ip).ok()?;
        self.hold(ip)
    }

    /// One more of what `ip` may hold at once, if it holds fewer than its cap.
    fn hold(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(ip).or_default();
        if *count >= self.cap.held {
            return None;
        }
        *count += 1;
        Some(Held { clients: self.clone(), ip })
    }

    /// Forgets the rates of addresses that have opened nothing lately, so that the table does not grow
    /// forever (the counts of held connections go as their connections close).
    pub fn forget_idle(&self) {
        self.opened.retain_recent();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.clients.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Middleware behind a trusted proxy: each forwarded address's requests in flight are capped; one past
/// the cap is answered 429 with Retry-After.
pub async fn in_flight(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Ok(ip) = ClientIp { behind_proxy: true }.extract(&request) else { return next.run(request).await };
    match state.clients.hold(ip) {
        Some(_held) => next.run(request).await,
        None => {
            super::metrics::refused("requests_per_client");
            ApiError::RateLimited { retry_after: 1 }.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_up_to_its_cap_and_opens_no_faster_than_its_rate_and_others_are_not_counted() {
        let clients = PerClient::new(ClientCap { held: 3, per_second: 100 });
        let (one, other): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let held: Vec<Held> = (0..3).map(|_| clients.connect(one).expect("under its cap")).collect();
        assert!(clients.connect(one).is_none(), "a fourth at once");
        assert!(clients.connect(other).is_some(), "another address has its own cap");
        drop(held);
        assert!(clients.connect(one).is_some(), "a connection closed gives its place back");

        let clients = PerClient::new(ClientCap { held: 1_000, per_second: 5 });
        let opened: Vec<Held> = (0..10).map_while(|_| clients.connect(one)).collect();
        assert_eq!(opened.len(), 10, "a burst of twice the rate");
        assert!(clients.connect(one).is_none(), "then no faster than the rate");
        assert!(clients.connect(other).is_some());
    }
}
