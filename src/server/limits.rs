//! Rate limits on what creates players and sessions (guests, registrations, logins): per client IP
//! (tower_governor), and for logins per account name as well, so that a password cannot be guessed by
//! spreading attempts over many addresses. A refused request is answered 429 with Retry-After.

use super::error::ApiError;
use axum::http::Request;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
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
    /// Per account name, on logins: five tries, then one every 20 seconds.
    pub const PER_ACCOUNT: Rate = Rate { burst: 5, per_minute: 3 };

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
        GovernorError::TooManyRequests { wait_time, .. } => ApiError::RateLimited { retry_after: wait_time.max(1) }.into_response(),
        other => ApiError::Internal(format!("rate limiting: {other}")).into_response(),
    }
}

/// Login attempts per account name.
pub struct PerAccount(DefaultKeyedRateLimiter<String>);

impl PerAccount {
    pub fn new(rate: Rate) -> PerAccount {
        let quota = Quota::with_period(rate.period()).expect("a period above zero").allow_burst(NonZeroU32::new(rate.burst.max(1)).expect("above zero"));
        PerAccount(DefaultKeyedRateLimiter::keyed(quota))
    }

    pub fn check(&self, name_key: &str) -> Result<(), ApiError> {
        self.0.check_key(&name_key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::RateLimited { retry_after: wait.as_secs().max(1) }
        })
    }

    /// Forgets names whose attempts are all in the past, so that the table does not grow forever.
    pub fn forget_idle(&self) {
        self.0.retain_recent();
    }
}
