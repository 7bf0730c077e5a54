//! `vegas serve`: the game, its API and the back office.

use super::Global;
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use vegas::composer::design::DEFAULT_DESIGN_TOML;
use vegas::money::Cents;
use vegas::server::connections::ClientCap;
use vegas::server::{AppState, Clock, Config, Database, Timeouts, blocks, limits, qa_deck};

#[derive(clap::Args)]
pub struct Serve {
    #[arg(long, env = "VEGAS_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// The back office (staff only), on its own address: loopback by default, never the players'
    /// address. Reach it through an SSH tunnel or a VPN, not the open Internet.
    #[arg(long, env = "VEGAS_ADMIN_ADDR", default_value = "127.0.0.1:8081")]
    admin_addr: SocketAddr,
    /// A staff credit or debit larger than this (in euros) waits for a second member's approval.
    #[arg(long, env = "VEGAS_ADJUSTMENT_THRESHOLD", default_value = "1000")]
    adjustment_threshold: Cents,
    /// The built web app (Trunk's output).
    #[arg(long, env = "VEGAS_DIST", default_value = "dist")]
    dist: PathBuf,
    /// Demo money: guests and new players get 100 €, and top up at will. Off by default: a real-money
    /// server never mints money (`vegas wallet credit` funds a player). `make run` turns it on.
    #[arg(long, env = "VEGAS_DEMO")]
    demo: bool,
    /// Seconds after its sale when the server settles an unfinished ticket.
    #[arg(long, env = "VEGAS_SETTLE_AFTER", default_value_t = 600)]
    settle_after: u64,
    /// Send the session cookie over HTTPS only. By default on, unless the server listens on loopback
    /// (a local run over plain HTTP); behind a TLS proxy on loopback, set it to true.
    #[arg(long, env = "VEGAS_SECURE_COOKIE")]
    secure_cookie: Option<bool>,
    /// Behind a reverse proxy that sets X-Forwarded-For: rate limits count its clients' addresses.
    /// Never set it when clients reach the server directly (they could pick their address).
    #[arg(long, env = "VEGAS_BEHIND_PROXY")]
    behind_proxy: bool,
    /// Guest creations, registrations and logins each client IP may make at once…
    #[arg(long, env = "VEGAS_AUTH_BURST", default_value_t = limits::Rate::PER_IP.burst)]
    auth_burst: u32,
    /// …and then per minute.
    #[arg(long, env = "VEGAS_AUTH_PER_MINUTE", default_value_t = limits::Rate::PER_IP.per_minute)]
    auth_per_minute: u32,
    /// Password hashes computed at once (19 MiB each); one per core by default.
    #[arg(long, env = "VEGAS_PASSWORD_HASHES")]
    password_hashes: Option<usize>,
    /// Client connections held at once (each is a file descriptor).
    #[arg(long, env = "VEGAS_MAX_CONNECTIONS", default_value_t = 4096)]
    max_connections: usize,
    /// Connections one client address may hold at once (behind --behind-proxy: requests in flight per
    /// forwarded address); past it, a new one is closed at once.
    #[arg(long, env = "VEGAS_MAX_CONNECTIONS_PER_CLIENT", default_value_t = ClientCap::DEFAULT.held)]
    max_connections_per_client: u32,
    /// New connections one client address may open a second (after a burst of twice as many).
    #[arg(long, env = "VEGAS_NEW_CONNECTIONS_PER_SECOND", default_value_t = ClientCap::DEFAULT.per_second)]
    new_connections_per_second: u32,
    /// How long a client may take to send a request's headers (`10s`, `500ms`); also how long an idle keep-alive
    /// connection is kept.
    #[arg(long, env = "VEGAS_HEADER_TIMEOUT", default_value_t = Timeouts::DEFAULT.header.into())]
    header_timeout: humantime::Duration,
    /// How long a request's body may pause between two pieces.
    #[arg(long, env = "VEGAS_BODY_TIMEOUT", default_value_t = Timeouts::DEFAULT.body.into())]
    body_timeout: humantime::Duration,
    /// How long a whole request may take, its answer included.
    #[arg(long, env = "VEGAS_REQUEST_TIMEOUT", default_value_t = Timeouts::DEFAULT.request.into())]
    request_timeout: humantime::Duration,
    /// TEST ONLY, never in service: the server's clock runs this many times faster than real time
    /// (reality checks, limits' windows, breaks, sessions, settlement), for end-to-end tests.
    #[arg(long, env = "VEGAS_TEST_ONLY_CLOCK_SPEED", value_parser = clap::value_parser!(i64).range(1..=100_000))]
    test_only_clock_speed: Option<i64>,
    /// QA: sell first the test tickets this file lists, in its order (one lot in euros or one design
    /// pattern name per line; see docs/testing.md). Only with --demo.
    #[arg(long, env = "VEGAS_QA_DECK")]
    qa_deck: Option<PathBuf>,
}

impl Serve {
    pub async fn run(self, global: &Global) -> Result<()> {
        check_addresses(self.addr, self.admin_addr)?;
        let qa_deck = match &self.qa_deck {
            Some(_) if !self.demo => {
                bail!("--qa-deck sells test tickets: it needs --demo, and is never allowed with real money")
            }
            Some(path) => Some(super::read(path)?),
            None => None,
        };
        let database = global.database();
        let embedded = matches!(database, Database::Sqlite(_));
        let defaults = Config::new(database, self.dist);
        let config = Config {
            demo: self.demo,
            settle_after: Duration::from_secs(self.settle_after),
            secure_cookie: self.secure_cookie.unwrap_or(!self.addr.ip().is_loopback()),
            behind_proxy: self.behind_proxy,
            auth_rate: limits::Rate { burst: self.auth_burst, per_minute: self.auth_per_minute },
            password_hashes: self.password_hashes.unwrap_or(defaults.password_hashes),
            max_connections: self.max_connections,
            client_cap: ClientCap {
                held: self.max_connections_per_client,
                per_second: self.new_connections_per_second,
            },
            timeouts: Timeouts {
                header: *self.header_timeout,
                body: *self.body_timeout,
                request: *self.request_timeout,
            },
            clock: self.test_only_clock_speed.map_or(defaults.clock.clone(), Clock::faster_for_tests),
            adjustment_threshold: self.adjustment_threshold,
            ..defaults
        };
        if let Some(speed) = self.test_only_clock_speed {
            tracing::warn!(
                speed,
                "TEST ONLY: the clock runs {speed} times faster than real time; never serve players so"
            );
        }
        let state = AppState::open(config).await.map_err(anyhow::Error::msg)?;
        // A first local launch must be playable at once. Several instances sharing a database never
        // make emissions by themselves: the operator does (`vegas emission create`).
        if self.demo && embedded && state.store.blocks().await?.is_empty() {
            tracing::info!("no block yet: making a first emission of one block");
            blocks::create_emission(&state.store, DEFAULT_DESIGN_TOML, 1, state.config.clock.now())
                .await
                .map_err(anyhow::Error::msg)?;
        }
        if let Some(deck) = qa_deck {
            qa_deck::install(&state, &deck).await.map_err(anyhow::Error::msg).context("--qa-deck")?;
        }
        vegas::server::serve(state, self.addr, self.admin_addr).await.map_err(anyhow::Error::msg)
    }
}

fn check_addresses(players: SocketAddr, operators: SocketAddr) -> Result<()> {
    // Port 0 asks the system for a free port each time, so two of them never collide.
    if players == operators && players.port() != 0 {
        bail!("--admin-addr must differ from --addr: the back office is never served to players");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_addresses;

    #[test]
    fn the_back_office_never_shares_the_players_address_but_two_free_ports_are_two() {
        let at = |text: &str| text.parse().expect("an address");
        assert!(check_addresses(at("127.0.0.1:8080"), at("127.0.0.1:8080")).is_err());
        assert!(check_addresses(at("127.0.0.1:8080"), at("127.0.0.1:8081")).is_ok());
        assert!(check_addresses(at("127.0.0.1:0"), at("127.0.0.1:0")).is_ok());
    }
}
