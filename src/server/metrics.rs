//! What an operator watches, in Prometheus' text format (`GET /metrics` on the back office's address,
//! never the players'). Counters and histograms are recorded where things happen (the `metrics`
//! crate's macros, cheap enough for every request); what is a state rather than an event (the settler's
//! backlog, the WAL's size, the pool) is read when Prometheus scrapes.
//!
//! | metric | what |
//! |---|---|
//! | `vegas_http_requests_total{route,method,status}` | answers, per route template |
//! | `vegas_http_request_duration_seconds{route,method}` | time to answer, histogram |
//! | `vegas_purchases_total` / `vegas_purchase_replays_total` | tickets sold / retries answered again |
//! | `vegas_payloads_total{printed}` | ticket payloads signed `now`, or served as printed `before` |
//! | `vegas_wins_paid_total`, `vegas_wins_paid_cents_total` | wins credited when a player completes |
//! | `vegas_tickets_settled_total` | unfinished tickets the settler credited |
//! | `vegas_settler_backlog_tickets`, `vegas_settler_lag_seconds` | due tickets not yet settled, and how late the
//! oldest is |
//! | `vegas_sqlite_wal_bytes`, `vegas_sqlite_wal_frames` | the WAL file's size; the frames it holds since it started
//! over |
//! | `vegas_sqlite_checkpoint_written_bytes_total` | bytes the checkpoints copied into the database (each page changed
//! between two passes, once) |
//! | `vegas_sqlite_writer_pages_total{from}` | pages the writer looked at: found in its cache (`cache`) or read
//! (`file`) |
//! | `vegas_sqlite_temporary_files_total` | files the writer or the checkpointer had SQLite create for itself (a
//! savepoint's journal, a sort): 0 while they stay in memory as set |
//! | `vegas_sqlite_cache_walks_avoided_total` | commits that did not walk a connection's page cache for nothing
//! (`store::sqlite::page_cache`; stays 0 if the layer could not be installed) |
//! | `vegas_sqlite_commit_seconds` | the writer's commits of a group of writes, fsync included: the disk's latency as
//! the sales feel it |
//! | `vegas_sqlite_checkpoint_pause_seconds` | the writer's pauses to finish a checkpoint (after which the WAL starts
//! over) |
//! | `vegas_db_pool_connections{state}`, `vegas_db_pool_waiting`, `vegas_db_pool_wait_seconds` | PostgreSQL's pool |
//! | `vegas_rate_limit_refusals_total{limit}` | requests and connections refused for a rate or a cap |
//! | `vegas_password_hashes_waiting` | requests waiting for a password-hashing slot |

use super::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;

/// Latency buckets (seconds): a purchase takes a few milliseconds; a password check tens; a timeout 30 s.
const SECONDS_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The process's recorder: one per process, installed by the first server (tests start several).
pub fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            .expect("buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed: /metrics will stay empty");
        }
        describe();
        handle
    })
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "vegas_http_requests_total",
        "HTTP answers on the players' address, by route template, method and status"
    );
    describe_histogram!(
        "vegas_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer, by route template and method"
    );
    describe_counter!("vegas_purchases_total", "Tickets sold");
    describe_counter!(
        "vegas_purchase_replays_total",
        "Purchases retried with a known Idempotency-Key, answered with their ticket again"
    );
    describe_counter!(
        "vegas_payloads_total",
        "Ticket payloads served: signed now, or as printed before (kept in memory)"
    );
    describe_counter!("vegas_wins_paid_total", "Winning tickets credited when their player completed them");
    describe_counter!("vegas_wins_paid_cents_total", "Cents credited for those wins");
    describe_counter!("vegas_tickets_settled_total", "Unfinished tickets the settler credited");
    describe_gauge!("vegas_settler_backlog_tickets", "Tickets due for settlement and not settled yet");
    describe_gauge!(
        "vegas_settler_lag_seconds",
        metrics::Unit::Seconds,
        "How long past its due time the oldest unsettled ticket is (0 when none is late)"
    );
    describe_gauge!("vegas_sqlite_wal_bytes", metrics::Unit::Bytes, "Size of the embedded store's write-ahead log");
    describe_gauge!(
        "vegas_sqlite_wal_frames",
        "Frames in the write-ahead log since it last started over (pages written, not yet all copied back)"
    );
    describe_counter!(
        "vegas_sqlite_checkpoint_written_bytes_total",
        metrics::Unit::Bytes,
        "Bytes the checkpoints copied from the write-ahead log into the database"
    );
    describe_counter!(
        "vegas_sqlite_writer_pages_total",
        "Pages the writer looked at, by where it found them (cache, file)"
    );
    describe_counter!(
        "vegas_sqlite_temporary_files_total",
        "Temporary files SQLite created for the writer or the checkpointer (0 while they stay in memory, as the store \
            sets)"
    );
    describe_counter!(
        "vegas_sqlite_cache_walks_avoided_total",
        "Commits that did not walk a page cache for nothing (the store's page cache layer)"
    );
    describe_histogram!(
        "vegas_sqlite_commit_seconds",
        metrics::Unit::Seconds,
        "Time the embedded store's writer takes to commit a group of writes, its fsync included"
    );
    describe_histogram!(
        "vegas_sqlite_checkpoint_pause_seconds",
        metrics::Unit::Seconds,
        "Writer pauses to finish a checkpoint (the WAL starts again after one)"
    );
    describe_gauge!("vegas_db_pool_connections", "PostgreSQL connections in the pool, by state (in_use, idle)");
    describe_gauge!("vegas_db_pool_waiting", "Units of work waiting for a PostgreSQL connection");
    describe_histogram!(
        "vegas_db_pool_wait_seconds",
        metrics::Unit::Seconds,
        "Time to get a PostgreSQL connection from the pool"
    );
    describe_counter!(
        "vegas_rate_limit_refusals_total",
        "Requests and connections refused by a rate limit or a per-client cap, by limit"
    );
    describe_gauge!("vegas_password_hashes_waiting", "Requests waiting for a password-hashing slot");
}

/// Counts one refusal by a rate limit or a cap.
pub fn refused(limit: &'static str) {
    metrics::counter!("vegas_rate_limit_refusals_total", "limit" => limit).increment(1);
}

/// Middleware of the players' router: each answer counted and timed under its route template (never
/// the raw path, whose ids would make a series per ticket). The built app's files are one route.
pub async fn track(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = matched.as_ref().map_or("/{app files}", MatchedPath::as_str).to_owned();
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!("vegas_http_request_duration_seconds", "route" => route.clone(), "method" => method.clone())
        .record(started.elapsed().as_secs_f64());
    metrics::counter!("vegas_http_requests_total", "route" => route, "method" => method, "status" => status)
        .increment(1);
    response
}

/// `GET /metrics` (operator's address): the figures, with the states read now.
pub async fn scrape(State(state): State<AppState>) -> Response {
    let now = state.config.clock.now();
    let settle_after = state.config.settle_after.as_secs() as i64;
    match state.store.unsettled(now - settle_after).await {
        Ok(unsettled) => {
            metrics::gauge!("vegas_settler_backlog_tickets").set(unsettled.due as f64);
            let late = unsettled.oldest_sale.map_or(0, |sold_at| (now - sold_at - settle_after).max(0));
            metrics::gauge!("vegas_settler_lag_seconds").set(late as f64);
        }
        Err(e) => tracing::warn!(error = %e, "reading the settler's backlog for /metrics failed"),
    }
    state.store.record_gauges();
    metrics::gauge!("vegas_password_hashes_waiting").set(state.passwords.waiting() as f64);
    let handle = recorder();
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}

/// `GET /readyz`: whether this instance can sell — its store answers and a block is on sale. A load
/// balancer sends players only to a ready instance; `/healthz` says only that the process is alive.
#[utoipa::path(get, path = "/readyz", tag = "public", responses(
    (status = 200, description = "Ready: the store answers and a block is on \
        sale", body = String, content_type = "text/plain"),
    (status = 503, description = "Not ready: why, in words", body = String, content_type = "text/plain"),
))]
pub async fn ready(State(state): State<AppState>) -> Response {
    match state.store.blocks().await {
        Ok(blocks) if blocks.iter().any(|b| b.closed_at.is_none() && b.withdrawn_at.is_none() && b.sold < b.size) => {
            (StatusCode::OK, "ready").into_response()
        }
        Ok(_) => (StatusCode::SERVICE_UNAVAILABLE, "no block on sale").into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("the store does not answer: {e}")).into_response(),
    }
}
