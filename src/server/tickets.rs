//! Sales, play and settlement of tickets.
//!
//! A ticket's life: sold (stake debited, payload signed) → revealed zone by zone → completed (win
//! credited) — or, if the player never comes back, settled by the server after `settle_after`, so that
//! no win is ever lost. A settled ticket can still be opened, scratched and completed; it is never
//! credited twice (see [`super::store`]).

use super::AppState;
use super::auth::{Player, random_hex};
use super::error::{AnyRequestRefusals, SessionRefusals, TicketRefusals};
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use super::store::{self, SaleRequest, TicketRecord};
use crate::api::{InclusionProof, TicketAndBalance, TicketState, TicketView};
use crate::money::Cents;
use crate::payload::Jwks;
use crate::play::Mode;
use crate::rules::Zone;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::time::Duration;

fn view(t: TicketRecord, payload: String) -> TicketView {
    let state = match (t.finished_at, t.credited_at) {
        (Some(_), _) => TicketState::Finished,
        (None, Some(_)) => TicketState::Settled,
        (None, None) => TicketState::Playing,
    };
    TicketView {
        serial: t.serial.to_string(),
        first_surface: t.revealed.first().and_then(|&z| Zone::from_index(z)).map(Zone::surface),
        win_cents: t.credited_at.map(|_| t.lot.0),
        id: t.id,
        mode: t.mode,
        payload,
        revealed: t.revealed,
        revealed_at: t.revealed_at,
        state,
        sold_at: t.sold_at,
    }
}

fn balance_cents(balance: Cents) -> Result<i64, ApiError> {
    i64::try_from(balance.0).map_err(|_| ApiError::Internal(format!("a balance of {balance} does not fit the API")))
}

impl AppState {
    /// A ticket as its owner sees it, with its payload printed.
    async fn view(&self, ticket: TicketRecord) -> Result<TicketView, ApiError> {
        let payload = self.printer.payload(&self.store, &ticket).await?;
        Ok(view(ticket, payload))
    }
}

/// A ticket id: the time of sale in milliseconds, then 48 random bits. Ids in time order make the
/// store's indexes on them grow at one end instead of touching a random page for every sale.
fn new_ticket_id() -> String {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("t-{millis:012x}{}", random_hex::<6>())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Purchase {
    mode: Mode,
}

pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// `POST /api/tickets` with an `Idempotency-Key` header: buys the next ticket for 3 €.
/// 201 for a new sale; 200 with the same ticket for a retry of the same key.
#[utoipa::path(post, path = "/api/tickets", tag = "tickets", security(("bearer" = []), ("cookie" = [])), request_body
    = Purchase,
    params(("Idempotency-Key" = String, Header, pattern = "^[!-~]{1,200}$", description = "Names this purchase: sent \
        again, it answers the same ticket and debits nothing. 1 to 200 visible ASCII characters, compared byte for \
        byte.")),
    responses(
        (status = 201, description = "Sold: the ticket and the balance after its 3 € stake", body = TicketAndBalance),
        (status = 200, description = "This key bought this ticket already: the same answer, nothing \
            debited", body = TicketAndBalance),
        (status = 402, description = "`insufficient_funds`: the balance is under 3 €", body = ErrorBody),
        (status = 403, description = "`limit_reached`: a stake limit would be passed (`limit` says which, what is left \
            and when more frees up); `limits_required`: real money needs the 7-day limits set first; `paused`: a \
            break, self-exclusion or closure (`pause` says until when)", body = ErrorBody),
        (status = 409, description = "`sold_out`: no ticket is on sale; `idempotency_key_reused`: the key bought a \
            ticket of the other mode; `reality_check_due`: acknowledge the reality check first (`reality_check` sums \
            up the session)", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn buy(
    State(state): State<AppState>,
    player: Player,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Purchase>,
) -> Result<Response, ApiError> {
    // Compared byte for byte with the keys already used, never trimmed or folded. Visible ASCII only: HTTP
    // itself drops whitespace around a header's value (RFC 9110 §5.5), so none is allowed inside either.
    let key = headers
        .get(IDEMPOTENCY_HEADER)
        .map(|v| v.as_bytes())
        .filter(|k| (1..=200).contains(&k.len()) && k.iter().all(|b| b.is_ascii_graphic()))
        .and_then(|k| std::str::from_utf8(k).ok())
        .ok_or_else(|| {
            ApiError::BadRequest(
                "send an Idempotency-Key header of 1 to 200 visible ASCII characters with every purchase".into(),
            )
        })?
        .to_owned();
    let now = state.config.clock.now();
    if player.session.reality_due_at <= now {
        return Err(super::responsible::reality_check_due(&state, &player, now).await);
    }
    let limits_required = !state.config.demo;
    let request = SaleRequest {
        player_id: player.id,
        idempotency_key: key,
        mode: body.mode,
        ticket_id: new_ticket_id(),
        now,
        limits_required,
    };
    let sale = state.store.sell(request).await?;
    metrics::counter!(if sale.replayed { "vegas_purchase_replays_total" } else { "vegas_purchases_total" })
        .increment(1);
    let status = if sale.replayed { StatusCode::OK } else { StatusCode::CREATED };
    let balance_cents = balance_cents(sale.balance)?;
    let ticket = state.view(sale.ticket).await?;
    Ok((status, ApiJson(TicketAndBalance { ticket, balance_cents })).into_response())
}

#[derive(Deserialize, utoipa::ToSchema, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// How many tickets, 1 to 100 (20 by default).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The next page: the tickets sold before this one (the id of the last ticket of the page before).
    before: Option<String>,
}

/// `GET /api/tickets?limit=N&before=ID`: the player's tickets, newest first (20 by default, 100 at
/// most); `before` pages on from a ticket of theirs (another's, or none, is 404).
#[utoipa::path(get, path = "/api/tickets", tag = "tickets", security(("bearer" = []), ("cookie" = [])),
    params(HistoryQuery),
    responses(
        (status = 200, description = "The last tickets, newest first", body = Vec<TicketView>),
        (status = 404, description = "`before` is not a ticket of this player", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn history(
    State(state): State<AppState>,
    player: Player,
    ApiQuery(q): ApiQuery<HistoryQuery>,
) -> Result<ApiJson<Vec<TicketView>>, ApiError> {
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit is 1 to 100, not {limit}")));
    }
    let mut views = Vec::new();
    for ticket in state.store.history(&player.id, limit, q.before.as_deref()).await? {
        views.push(state.view(ticket).await?);
    }
    Ok(ApiJson(views))
}

/// `GET /api/tickets/{id}`: one of the player's tickets (another player's is 404).
#[utoipa::path(get, path = "/api/tickets/{id}", tag = "tickets", security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The ticket's id")),
    responses(
        (status = 200, description = "The ticket", body = TicketView),
        TicketRefusals,
    ))]
pub async fn one(
    State(state): State<AppState>,
    player: Player,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<TicketView>, ApiError> {
    let ticket = state.store.ticket(&player.id, &id).await?;
    Ok(ApiJson(state.view(ticket).await?))
}

/// `GET /api/tickets/{id}/proof`: the ticket's inclusion proof in its block's committed Merkle tree.
#[utoipa::path(get, path = "/api/tickets/{id}/proof", tag = "tickets", security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The ticket's id")),
    responses(
        (status = 200, description = "The sibling hashes from the ticket's leaf up to the root published before the \
            block's first sale", body = InclusionProof),
        TicketRefusals,
    ))]
pub async fn proof(
    State(state): State<AppState>,
    player: Player,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<InclusionProof>, ApiError> {
    let ticket = state.store.ticket(&player.id, &id).await?;
    Ok(ApiJson(state.printer.proof(&state.store, &ticket).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Reveal {
    /// Zones uncovered (0–11: Poker 0–1, Roulette 2–5, Craps 6–9, Jackpot 10–11).
    zones: Vec<usize>,
    /// How long ago each zone was uncovered, in seconds, in the order of `zones` (none: just now). A
    /// game that could not reach the server sends its zones later: each is recorded when it was
    /// uncovered, never before the sale or the zone before it.
    #[serde(default)]
    seconds_ago: Vec<u32>,
}

/// `POST /api/tickets/{id}/reveal` `{"zones": [..]}`: records zones as the player uncovers them.
#[utoipa::path(post, path = "/api/tickets/{id}/reveal", tag = "tickets", security(("bearer" = []), ("cookie" = [])),
    request_body = Reveal,
    params(("id" = String, Path, description = "The ticket's id")),
    responses(
        (status = 200, description = "The ticket with the zones recorded (those it had already are \
            ignored)", body = TicketView),
        (status = 409, description =
            "`first_surface_unfinished`: « Jouez » uncovers its first surface first; `ticket_finished`: the game is \
                over", body = ErrorBody),
        TicketRefusals,
    ))]
pub async fn reveal(
    State(state): State<AppState>,
    player: Player,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Reveal>,
) -> Result<ApiJson<TicketView>, ApiError> {
    if !body.seconds_ago.is_empty() && body.seconds_ago.len() != body.zones.len() {
        return Err(ApiError::BadRequest(format!(
            "seconds_ago has {} values for {} zones: one per zone, or none",
            body.seconds_ago.len(),
            body.zones.len()
        )));
    }
    let ticket = state.store.reveal(&player.id, &id, body.zones, body.seconds_ago, state.config.clock.now()).await?;
    Ok(ApiJson(state.view(ticket).await?))
}

/// `POST /api/tickets/{id}/complete`: ends the game and credits the win once. A « Jouez » ticket must
/// have every zone uncovered; « Auto » uncovers what remains itself.
#[utoipa::path(post, path = "/api/tickets/{id}/complete", tag = "tickets", security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The ticket's id")),
    responses(
        (status = 200, description = "Finished: the ticket with its win, and the balance once \
            credited", body = TicketAndBalance),
        (status = 409, description = "`zones_left`: « Jouez » needs every zone uncovered; `ticket_finished`: completed \
            already", body = ErrorBody),
        TicketRefusals,
    ))]
pub async fn complete(
    State(state): State<AppState>,
    player: Player,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<TicketAndBalance>, ApiError> {
    let now = state.config.clock.now();
    let done = state.store.complete(&player.id, &id, now).await?;
    // Credited by this completion (a settled ticket was credited, and counted, by the settler).
    if !done.ticket.lot.is_zero() && done.ticket.credited_at == Some(now) {
        metrics::counter!("vegas_wins_paid_total").increment(1);
        metrics::counter!("vegas_wins_paid_cents_total").increment(done.ticket.lot.0);
    }
    let balance_cents = balance_cents(done.balance)?;
    Ok(ApiJson(TicketAndBalance { ticket: state.view(done.ticket).await?, balance_cents }))
}

/// `GET /api/jwks`: the keys tickets are signed with (the current ones and those before).
#[utoipa::path(get, path = "/api/jwks", tag = "public", security(()), responses((status = 200, description =
    "A JWK Set of Ed25519 keys", body = Jwks), AnyRequestRefusals))]
pub async fn jwks(State(state): State<AppState>) -> ApiJson<Jwks> {
    ApiJson(state.printer.jwks())
}

/// `GET /.well-known/jwks.json`: the same keys, where JOSE tools look for them.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "public", security(()), responses((status = 200,
    description = "A JWK Set of Ed25519 keys", body = Jwks), AnyRequestRefusals))]
pub async fn well_known_jwks(state: State<AppState>) -> ApiJson<Jwks> {
    jwks(state).await
}

/// Tickets credited per settlement batch: each batch is one short write, 16 tickets at first, twice as
/// many while a backlog remains, up to 32 (under a millisecond of SQLite's writer), with a breath
/// between batches that leaves the store to the sales; a backlog is still worked off at several
/// thousand a second. After a commit stalled by the disk, the writer works off the writes that queued
/// meanwhile, settlement batches among them: with batches of up to 128 (3 ms each) and a 5 ms breath,
/// alternated 90 s runs of `make bench-soak` made 92–241 purchases late per slow commit (3 runs), with
/// 32 and 2 ms 93–107 (2 runs).
const SETTLE_BATCHES: store::Batches = store::Batches { first: 16, most: 32, breath: Duration::from_millis(2) };
/// After a round in which a ticket failed (or the store did), wait this long before the next round.
const SETTLE_RETRY: Duration = Duration::from_secs(5);

/// Credits every ticket left unfinished for `settle_after`, round after round: a round settles all that
/// is due, passing (and logging) tickets that fail; then the settler sleeps until the oldest ticket not
/// yet credited falls due (a ticket sold later falls due later still), or, if any failed, tries the
/// round again after [`SETTLE_RETRY`].
pub async fn settle_due_forever(state: AppState) {
    let after = state.config.settle_after.as_secs() as i64;
    let clock = &state.config.clock;
    loop {
        let wait = match store::settle_round(&state.store, clock.now() - after, SETTLE_BATCHES, || clock.now()).await {
            Err(e) => {
                tracing::error!(error = %e, "settling due tickets failed");
                SETTLE_RETRY
            }
            Ok(round) => {
                if round.settled > 0 {
                    metrics::counter!("vegas_tickets_settled_total").increment(round.settled as u64);
                    tracing::info!(tickets = round.settled, "settled abandoned tickets");
                }
                for (ticket, error) in &round.failed {
                    tracing::error!(ticket, error, "a due ticket could not be settled; it is tried again next round");
                }
                if round.failed.is_empty() { until_next_due(&state, after).await } else { SETTLE_RETRY }
            }
        };
        // Due times are whole seconds: wake just after the second turns.
        tokio::time::sleep(wait + Duration::from_millis(50)).await;
    }
}

/// How long until the oldest ticket not yet credited falls due.
async fn until_next_due(state: &AppState, settle_after: i64) -> Duration {
    let now = state.config.clock.now();
    match state.store.unsettled(now - settle_after).await.map(|unsettled| unsettled.oldest_sale) {
        Ok(Some(sold_at)) => Duration::from_secs((sold_at + settle_after - now).clamp(0, settle_after) as u64),
        Ok(None) => state.config.settle_after,
        Err(e) => {
            tracing::error!(error = %e, "cannot tell when the next ticket falls due");
            SETTLE_RETRY
        }
    }
}
