//! Rate limits on what creates players and sessions (guests, registrations, logins): per client IP
//! (tower_governor); and for logins, per name at one address (a few tries, then one every 20 s) and per
//! name from every address together (so that a password cannot be guessed by spreading attempts over
//! many addresses). The last one is what an attacker could use to lock the owner out: a correct
//! password from a device the owner signed in on before (`auth::DeviceCookie`) passes it, and it
//! refills within a minute once the attack stops (OWASP's authentication guidance: throttle, never
//! lock out). A refused request is answered 429 with Retry-After. Keyed limits run on the server's
//! clock, which tests move.

use super::error::ApiError;
use axum::http::Request;
use governor::nanos::Nanos;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;
use tower_governor::GovernorError;
use tower_governor::governor::{GovernorConfig, GovernorConfigBuilder};
use tower_governor::key_extractor::{KeyExtractor, PeerIpKeyExtractor, SmartIpKeyExtractor};

/// Requests allowed at once (`burst`), then one more every `60 / per_minute` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub burst: u32,
    pub per_minute: u32,
}

impl Rate {
    /// Per client IP, on guest creation, registration and login together.
    pub const PER_IP: Rate = Rate { burst: 20, per_minute: 20 };
    /// Per name at one client address, on logins: five tries, then one every 20 seconds.
    pub const PER_NAME_AT_ADDRESS: Rate = Rate { burst: 5, per_minute: 3 };
    /// Per name from all addresses together, on logins (a known device passes it): twenty tries, then
    /// one every 3 seconds, so the owner gets back in within seconds of an attack's end.
    pub const PER_NAME: Rate = Rate { burst: 20, per_minute: 20 };

    fn period(self) -> Duration {
        Duration::from_nanos(60_000_000_000 / u64::from(self.per_minute.max(1)))
    }
}

/// The client's address: the peer's, or behind a reverse proxy the one it forwards (`X-Forwarded-For`,
/// `X-Real-IP`, `Forwarded`), which only a trusted proxy may set.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp {
    pub behind_proxy: bool,
}

impl KeyExtractor for ClientIp {
    type Key = IpAddr;

    fn extract<T>(&self, request: &Request<T>) -> Result<IpAddr, GovernorError> {
        if self.behind_proxy { SmartIpKeyExtractor.extract(request) } else { PeerIpKeyExtractor.extract(request) }
    }
}

pub type PerIp = Arc<GovernorConfig<ClientIp, governor::middleware::NoOpMiddleware<governor::clock::QuantaInstant>>>;

pub fn per_ip(rate: Rate, client_ip: ClientIp) -> PerIp {
    let config = GovernorConfigBuilder::default()
        .period(rate.period())
        .burst_size(rate.burst.max(1))
        .key_extractor(client_ip)
        .finish()
        .expect("a rate with a burst and a period");
    Arc::new(config)
}

/// tower_governor's refusal, in the API's JSON error format.
pub fn refusal(error: GovernorError) -> axum::response::Response {
    use axum::response::IntoResponse;
    match error {
        GovernorError::TooManyRequests { wait_time, .. } => {
            super::metrics::refused("sessions_per_address");
            ApiError::RateLimited { retry_after: wait_time.max(1) }.into_response()
        }
        other => ApiError::Internal(format!("rate limiting: {other}")).into_response(),
    }
}

/// The server's clock as governor reads it (whole seconds are enough for limits counted per minute).
#[derive(Debug, Clone)]
pub struct ServerClock(pub super::Clock);

impl governor::clock::Clock for ServerClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(u64::try_from(self.0.now()).unwrap_or(0).saturating_mul(1_000_000_000))
    }
}

/// Attempts per key (a name, or a name at an address), on the server's clock.
pub struct PerKey {
    limiter:
        RateLimiter<String, DefaultKeyedStateStore<String>, ServerClock, governor::middleware::NoOpMiddleware<Nanos>>,
    clock: ServerClock,
    /// Its refusals' label in `/metrics`.
    name: &'static str,
}

impl PerKey {
    pub fn new(name: &'static str, rate: Rate, clock: super::Clock) -> PerKey {
        let quota = Quota::with_period(rate.period())
            .expect("a period above zero")
            .allow_burst(NonZeroU32::new(rate.burst.max(1)).expect("above zero"));
        let clock = ServerClock(clock);
        PerKey { limiter: RateLimiter::new(quota, DefaultKeyedStateStore::default(), clock.clone()), clock, name }
    }

    pub fn check(&self, key: &str) -> Result<(), ApiError> {
        self.limiter.check_key(&key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(&self.clock));
            super::metrics::refused(self.name);
            ApiError::RateLimited { retry_after: wait.as_secs().max(1) }
        })
    }

    /// Forgets keys whose attempts are all in the past, so that the table does not grow forever.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
    }
}

/// The client's address as the rate limits count it ([`ClientIp`]), read from a request's parts.
pub fn client_address(parts: &axum::http::request::Parts, behind_proxy: bool) -> Option<IpAddr> {
    let mut request = Request::new(());
    *request.headers_mut() = parts.headers.clone();
    if let Some(peer) = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
        request.extensions_mut().insert(*peer);
    }
    ClientIp { behind_proxy }.extract(&request).ok()
}
