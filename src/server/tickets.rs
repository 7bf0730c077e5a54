//! Sales, play and settlement of tickets.
//!
//! A ticket's life: sold (stake debited, payload signed) → revealed zone by zone → completed (win
//! credited) — or, if the player never comes back, settled by the server after `settle_after`, so that
//! no win is ever lost. A settled ticket can still be opened, scratched and completed; it is never
//! credited twice (see [`store::settle`]).

use super::auth::{Player, random_hex};
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::{AppState, now, store};
use crate::block::{LotCode, compose_ticket, lot_of};
use crate::composer::Design;
use crate::payload::{FORMAT_VERSION, Jwks, Serial, TicketClaims};
use crate::api::{TicketAndBalance, TicketState, TicketView};
use crate::play::{Mode, jouez_allows};
use crate::rules::Zone;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

pub struct Cache {
    pub lots: HashMap<(u32, u32), Arc<Vec<LotCode>>>,
    pub designs: HashMap<[u8; 32], Arc<Design>>,
}

impl From<store::TicketRow> for TicketView {
    fn from(t: store::TicketRow) -> TicketView {
        let state = match (t.finished_at, t.credited_at) {
            (Some(_), _) => TicketState::Finished,
            (None, Some(_)) => TicketState::Settled,
            (None, None) => TicketState::Playing,
        };
        TicketView {
            serial: Serial { emission: t.emission, block: t.block, index: t.index }.to_string(),
            first_surface: t.revealed.first().and_then(|&z| Zone::from_index(z)).map(Zone::surface),
            win_cents: t.credited_at.map(|_| t.lot.0),
            id: t.id,
            mode: t.mode,
            payload: t.payload,
            revealed: t.revealed,
            state,
            sold_at: t.sold_at,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purchase {
    mode: Mode,
}

pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// `POST /api/tickets` with an `Idempotency-Key` header: buys the next ticket for 3 €.
/// 201 for a new sale; 200 with the same ticket for a retry of the same key.
pub async fn buy(State(state): State<AppState>, player: Player, headers: HeaderMap, ApiJson(body): ApiJson<Purchase>) -> Result<Response, ApiError> {
    let key = headers
        .get(IDEMPOTENCY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| (1..=200).contains(&k.len()))
        .ok_or_else(|| ApiError::BadRequest("send an Idempotency-Key header (1 to 200 characters) with every purchase".into()))?
        .to_owned();
    let app = state.clone();
    let owner = player.id.clone();
    let (sale, view, balance) = state
        .db(move |conn| {
            let sale = store::sell(conn, &owner, &key, now(), |conn, slot| {
                let lots = app.lots(conn, slot.emission, slot.block)?;
                let design = app.design(conn, &slot.design_hash)?;
                let lot = lot_of(lots[slot.index as usize]);
                let zones = compose_ticket(&design, &slot.seed, slot.index, lot)
                    .map_err(|e| ApiError::Internal(format!("the block's design cannot print its lot: {e}")))?;
                let id = format!("t-{}", random_hex::<12>());
                let claims = TicketClaims {
                    v: FORMAT_VERSION,
                    jti: id.clone(),
                    sub: owner.clone(),
                    iat: now(),
                    serial: Serial { emission: slot.emission, block: slot.block, index: slot.index },
                    zones,
                    lot_cents: lot,
                };
                Ok(store::NewTicket { payload: app.signer.sign(&claims), id, player_id: owner.clone(), mode: body.mode.as_str(), lot })
            })?;
            let id = match &sale {
                store::Sale::Replay(id) | store::Sale::Sold(id) => id.clone(),
            };
            let row = store::ticket(conn, &owner, &id)?;
            if row.mode != body.mode {
                return Err(ApiError::Conflict("idempotency_key_reused", "this Idempotency-Key already bought a ticket in another mode".into()));
            }
            Ok((sale, TicketView::from(row), store::balance(conn, &owner)?))
        })
        .await?;
    let status = if matches!(sale, store::Sale::Sold(_)) { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, ApiJson(TicketAndBalance { ticket: view, balance_cents: balance })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    limit: Option<u32>,
}

/// `GET /api/tickets?limit=N`: the player's last tickets, newest first (20 by default, 100 at most).
pub async fn history(State(state): State<AppState>, player: Player, ApiQuery(q): ApiQuery<HistoryQuery>) -> Result<ApiJson<Vec<TicketView>>, ApiError> {
    let limit = q.limit.unwrap_or(20).clamp(1, 100);
    let rows = state.db(move |c| store::history(c, &player.id, limit)).await?;
    Ok(ApiJson(rows.into_iter().map(TicketView::from).collect()))
}

/// `GET /api/tickets/{id}`: one of the player's tickets (another player's is 404).
pub async fn one(State(state): State<AppState>, player: Player, ApiPath(id): ApiPath<String>) -> Result<ApiJson<TicketView>, ApiError> {
    let row = state.db(move |c| store::ticket(c, &player.id, &id)).await?;
    Ok(ApiJson(row.into()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reveal {
    zones: Vec<usize>,
}

/// Adds `zones` to what is uncovered, enforcing « Jouez »: the first zone uncovered chooses the first
/// surface, and that surface is uncovered entirely before any other.
pub fn apply_reveal(mode: Mode, revealed: &mut Vec<usize>, zones: &[usize]) -> Result<(), ApiError> {
    for &z in zones {
        let zone = Zone::from_index(z).ok_or_else(|| ApiError::BadRequest(format!("zone {z} does not exist (zones are 0 to 11)")))?;
        if revealed.contains(&z) {
            continue;
        }
        let first = revealed.first().and_then(|&f| Zone::from_index(f)).map(Zone::surface);
        if let Some(first) = first.filter(|_| mode == Mode::Jouez)
            && !jouez_allows(first, |z| revealed.contains(&z.index()), zone)
        {
            return Err(ApiError::Conflict(
                "first_surface_unfinished",
                format!("uncover all of {} (the surface chosen first) before the others", first.name_fr()),
            ));
        }
        revealed.push(z);
    }
    Ok(())
}

/// `POST /api/tickets/{id}/reveal` `{"zones": [..]}`: records zones as the player uncovers them.
pub async fn reveal(State(state): State<AppState>, player: Player, ApiPath(id): ApiPath<String>, ApiJson(body): ApiJson<Reveal>) -> Result<ApiJson<TicketView>, ApiError> {
    let row = state
        .db(move |c| {
            let mut row = store::ticket(c, &player.id, &id)?;
            apply_reveal(row.mode, &mut row.revealed, &body.zones)?;
            store::set_revealed(c, &row.id, &row.revealed)?;
            Ok(row)
        })
        .await?;
    Ok(ApiJson(row.into()))
}

/// `POST /api/tickets/{id}/complete`: ends the game and credits the win once. A « Jouez » ticket must
/// have every zone uncovered; « Auto » uncovers what remains itself.
pub async fn complete(State(state): State<AppState>, player: Player, ApiPath(id): ApiPath<String>) -> Result<ApiJson<TicketAndBalance>, ApiError> {
    let (row, balance) = state
        .db(move |c| {
            let mut row = store::ticket(c, &player.id, &id)?;
            if row.finished_at.is_none() {
                let missing: Vec<usize> = (0..Zone::ALL.len()).filter(|z| !row.revealed.contains(z)).collect();
                if row.mode == Mode::Jouez && !missing.is_empty() {
                    return Err(ApiError::Conflict("zones_left", format!("uncover every zone first; still hidden: {missing:?}")));
                }
                row.revealed.extend(missing);
                store::set_revealed(c, &row.id, &row.revealed)?;
                store::settle(c, &row.id, true, now())?;
            }
            Ok((store::ticket(c, &player.id, &row.id)?, store::balance(c, &player.id)?))
        })
        .await?;
    Ok(ApiJson(TicketAndBalance { ticket: row.into(), balance_cents: balance }))
}

/// `GET /api/jwks` and `/.well-known/jwks.json`: the keys tickets are signed with.
pub async fn jwks(State(state): State<AppState>) -> ApiJson<Jwks> {
    ApiJson(state.signer.jwks())
}

impl AppState {
    fn lots(&self, conn: &rusqlite::Connection, emission: u32, block: u32) -> Result<Arc<Vec<LotCode>>, ApiError> {
        if let Some(lots) = self.cache().lots.get(&(emission, block)) {
            return Ok(lots.clone());
        }
        let lots = Arc::new(store::block_lots(conn, emission, block)?);
        self.cache().lots.insert((emission, block), lots.clone());
        Ok(lots)
    }
}

/// Settles, once, every ticket left unfinished for longer than `settle_after`.
pub async fn settle_abandoned(state: &AppState) -> Result<usize, ApiError> {
    let before = now() - state.config.settle_after.as_secs() as i64;
    state
        .db(move |c| {
            let ids = store::abandoned(c, before)?;
            let mut credited = 0;
            for id in ids {
                credited += usize::from(store::settle(c, &id, false, now())?);
            }
            Ok(credited)
        })
        .await
}

pub async fn settle_abandoned_forever(state: AppState) {
    let period = (state.config.settle_after / 4).clamp(std::time::Duration::from_millis(200), std::time::Duration::from_secs(30));
    let mut tick = tokio::time::interval(period);
    loop {
        tick.tick().await;
        match settle_abandoned(&state).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tickets = n, "settled abandoned tickets"),
            Err(e) => tracing::error!(error = %e, "settling abandoned tickets failed"),
        }
    }
}
