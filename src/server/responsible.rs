//! « Jeu responsable »: the player's limits, breaks and self-exclusion, reality checks and the record of
//! it all, over HTTP. What they enforce is enforced by the store, with the sale or deposit it guards
//! (see `store::responsible`); these handlers only read requests and answer.

use super::AppState;
use super::auth::{Player, clear_cookie};
use super::error::SessionRefusals;
use super::error::{ApiError, ApiJson, ErrorBody, RealityCheck};
use super::store::responsible::{
    Actor, ChangeKind, Flow, Pause, PauseKind, REALITY_INTERVALS, ResponsibleEvent, Span, Standing,
};
use crate::api::PlaySession;
use crate::money::Cents;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// The highest limit a player may set: 100 000 €.
const LIMIT_MAX_CENTS: u64 = 10_000_000;
/// How far back the record is shown: 12 months.
const HISTORY_SECONDS: i64 = 365 * 86_400;

/// `GET /api/responsible`: the limits with what is left of each, pending raises, any pause, and the
/// reality-check interval.
#[utoipa::path(get, path = "/api/responsible", tag = "responsible", security(("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "The player's standing", body = Standing), SessionRefusals))]
pub async fn standing(State(state): State<AppState>, player: Player) -> Result<ApiJson<Standing>, ApiError> {
    Ok(ApiJson(state.store.standing(&player.id, state.config.clock.now()).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitRequest {
    flow: Flow,
    span: Span,
    /// The limit in cents (1 to 10 000 000); null removes it (the 7-day limits cannot be removed for
    /// real money).
    #[schema(minimum = 1, maximum = 10000000)]
    amount_cents: Option<u64>,
}

/// How a change of limit applies.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LimitChanged {
    /// `at_once` (a first or lower limit), `pending` (a raise or removal: confirm it from 48 h on), or
    /// `unchanged`.
    applies: &'static str,
    standing: Standing,
}

/// `PUT /api/responsible/limits`: sets, lowers, raises or removes one limit. Lower: at once. Higher or
/// none: pending for 48 h, then applied only when confirmed.
#[utoipa::path(put, path = "/api/responsible/limits", tag = "responsible", security(("bearer" = []), ("cookie" = [])),
    request_body = LimitRequest,
    responses((status = 200, description = "How the change applies, and the standing after \
        it", body = LimitChanged), SessionRefusals))]
pub async fn change_limit(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<LimitRequest>,
) -> Result<ApiJson<LimitChanged>, ApiError> {
    if body.amount_cents.is_some_and(|a| !(1..=LIMIT_MAX_CENTS).contains(&a)) {
        return Err(ApiError::BadRequest(format!("a limit is 1 to {LIMIT_MAX_CENTS} cents, or null for none")));
    }
    if body.amount_cents.is_none() && body.span == Span::Week && !state.config.demo {
        return Err(ApiError::BadRequest(
            "the 7-day limits are required to play for real money: lower or raise it, it cannot be removed".into(),
        ));
    }
    let now = state.config.clock.now();
    let kind = state.store.change_limit(&player.id, body.flow, body.span, body.amount_cents.map(Cents), now).await?;
    let applies = match kind {
        ChangeKind::AtOnce => "at_once",
        ChangeKind::Raise => "pending",
        ChangeKind::Same => "unchanged",
    };
    Ok(ApiJson(LimitChanged { applies, standing: state.store.standing(&player.id, now).await? }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitName {
    flow: Flow,
    span: Span,
}

/// `POST /api/responsible/limits/confirm`: applies a pending raise, from 48 h after it was asked until
/// it lapses (7 days later).
#[utoipa::path(post, path = "/api/responsible/limits/confirm", tag = "responsible", security(("bearer" = []),
    ("cookie" = [])), request_body = LimitName,
    responses(
        (status = 200, description = "Applied: the standing after it", body = Standing),
        (status = 404, description = "`not_found`: no raise of this limit is pending", body = ErrorBody),
        (status = 409, description = "`raise_not_yet`: not 48 h yet; `raise_lapsed`: unconfirmed too long, ask \
            again", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn confirm_raise(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<LimitName>,
) -> Result<ApiJson<Standing>, ApiError> {
    let now = state.config.clock.now();
    state.store.confirm_raise(&player.id, body.flow, body.span, now).await?;
    Ok(ApiJson(state.store.standing(&player.id, now).await?))
}

/// A break or a self-exclusion, as asked.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case", tag = "kind")]
pub enum PauseRequest {
    /// A break of 1, 7 or 30 days.
    Break {
        #[schema(minimum = 1, maximum = 30)]
        days: u32,
    },
    /// A self-exclusion of 6, 12 or 60 months, or of an exact number of days from 1 to 365.
    Exclusion {
        #[schema(minimum = 6, maximum = 60)]
        months: Option<u32>,
        #[schema(minimum = 1, maximum = 365)]
        days: Option<u32>,
    },
}

impl PauseRequest {
    /// The pause it asks for, starting `now`.
    fn pause(&self, now: i64) -> Result<Pause, ApiError> {
        let day = 86_400;
        match *self {
            PauseRequest::Break { days } if [1, 7, 30].contains(&days) => {
                Ok(Pause { kind: PauseKind::Break, until: now + i64::from(days) * day })
            }
            PauseRequest::Break { .. } => Err(ApiError::BadRequest("a break is 1, 7 or 30 days".into())),
            PauseRequest::Exclusion { months: Some(months), days: None } if [6, 12, 60].contains(&months) => {
                Ok(Pause { kind: PauseKind::Exclusion, until: add_months(now, months)? })
            }
            PauseRequest::Exclusion { months: None, days: Some(days) } if (1..=365).contains(&days) => {
                Ok(Pause { kind: PauseKind::Exclusion, until: now + i64::from(days) * day })
            }
            PauseRequest::Exclusion { .. } => Err(ApiError::BadRequest(
                "a self-exclusion is 6, 12 or 60 months, or 1 to 365 days: one of months or days".into(),
            )),
        }
    }
}

/// `now` plus `months` calendar months, at the same time of day (the 31st becomes the month's last day).
fn add_months(now: i64, months: u32) -> Result<i64, ApiError> {
    let at = time::OffsetDateTime::from_unix_timestamp(now).map_err(|e| ApiError::Internal(e.to_string()))?;
    let total = at.month() as i32 - 1 + months as i32;
    let (year, month) = (
        at.year() + total / 12,
        time::Month::try_from((total % 12 + 1) as u8).map_err(|e| ApiError::Internal(e.to_string()))?,
    );
    let day = at.day().min(month.length(year));
    let date = time::Date::from_calendar_date(year, month, day).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(at.replace_date(date).unix_timestamp())
}

/// `POST /api/responsible/pause`: a break or a self-exclusion, at once: every session of the player
/// ends (this one too: the cookie is cleared), no purchase and no deposit until it ends; a ticket
/// already bought can still be finished. Nothing lifts it early.
#[utoipa::path(post, path = "/api/responsible/pause", tag = "responsible", security(("bearer" = []), ("cookie" = [])),
    request_body = PauseRequest,
    responses(
        (status = 200, description = "Paused until `until`; signed out", body = Pause),
        (status = 409, description = "`already_paused`: a pause as long or longer is in force", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn pause(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<PauseRequest>,
) -> Result<Response, ApiError> {
    let now = state.config.clock.now();
    let pause = body.pause(now)?;
    state.store.pause(&player.id, pause, Actor::Player, now).await?;
    Ok(clear_cookie(ApiJson(pause).into_response()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RealityInterval {
    /// 15, 30 or 60.
    #[schema(minimum = 15, maximum = 60)]
    minutes: u32,
}

/// `PUT /api/responsible/reality-check`: the minutes between reality checks (15, 30 or 60).
#[utoipa::path(put, path = "/api/responsible/reality-check", tag = "responsible", security(("bearer" = []), ("cookie"
    = [])), request_body = RealityInterval,
    responses((status = 200, description = "Set: the standing after it", body = Standing), SessionRefusals))]
pub async fn set_reality_interval(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<RealityInterval>,
) -> Result<ApiJson<Standing>, ApiError> {
    if !REALITY_INTERVALS.contains(&body.minutes) {
        return Err(ApiError::BadRequest("a reality check comes every 15, 30 or 60 minutes".into()));
    }
    let now = state.config.clock.now();
    state.store.set_reality_interval(&player.id, body.minutes, now).await?;
    Ok(ApiJson(state.store.standing(&player.id, now).await?))
}

/// `GET /api/responsible/session`: the session's time and net (staked − won), and its reality check.
#[utoipa::path(get, path = "/api/responsible/session", tag = "responsible", security(("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "This session", body = PlaySession), SessionRefusals))]
pub async fn session(State(state): State<AppState>, player: Player) -> Result<ApiJson<PlaySession>, ApiError> {
    let now = state.config.clock.now();
    let due = player.session.reality_due_at <= now;
    if due {
        state.store.reality_check_shown(&player.token_hash, now).await?;
    }
    play_session(&state, &player, now).await
}

async fn play_session(state: &AppState, player: &Player, now: i64) -> Result<ApiJson<PlaySession>, ApiError> {
    Ok(ApiJson(PlaySession {
        started_at: player.session.started_at,
        check: check_of(state, player, now).await?,
        reality_due_at: player.session.reality_due_at,
        reality_check_due: player.session.reality_due_at <= now,
    }))
}

async fn check_of(state: &AppState, player: &Player, now: i64) -> Result<RealityCheck, ApiError> {
    let play = state.store.play_since(&player.id, player.session.started_at).await?;
    Ok(RealityCheck::new(now - player.session.started_at, play))
}

/// The refusal of a purchase while the session's reality check is due (recorded as shown).
pub async fn reality_check_due(state: &AppState, player: &Player, now: i64) -> ApiError {
    let shown = state.store.reality_check_shown(&player.token_hash, now).await;
    match (shown, check_of(state, player, now).await) {
        (Ok(()), Ok(check)) => ApiError::RealityCheckDue(check),
        (Err(e), _) => e.into(),
        (_, Err(e)) => e,
    }
}

/// `POST /api/responsible/reality-check/acknowledge`: « Continuer »: the next check comes an interval
/// from now. (« Arrêter » is `POST /api/logout`.)
#[utoipa::path(post, path = "/api/responsible/reality-check/acknowledge", tag = "responsible", security(("bearer" =
    []), ("cookie" = [])),
    responses((status = 200, description = "Acknowledged: this session after \
        it", body = PlaySession), SessionRefusals))]
pub async fn acknowledge(State(state): State<AppState>, player: Player) -> Result<ApiJson<PlaySession>, ApiError> {
    let now = state.config.clock.now();
    state.store.acknowledge_reality_check(&player.token_hash, now).await?;
    let session = state.store.session(&player.token_hash, now).await?.ok_or(ApiError::Unauthorized)?;
    play_session(&state, &Player { session, ..player }, now).await
}

/// `GET /api/responsible/history`: the last 12 months of the record, oldest first: every limit set,
/// lowered, raise asked, confirmed, lapsed or cancelled, break, exclusion, and reality check.
#[utoipa::path(get, path = "/api/responsible/history", tag = "responsible", security(("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "The record", body = Vec<ResponsibleEvent>), SessionRefusals))]
pub async fn history(
    State(state): State<AppState>,
    player: Player,
) -> Result<ApiJson<Vec<ResponsibleEvent>>, ApiError> {
    Ok(ApiJson(state.store.responsible_events(&player.id, state.config.clock.now() - HISTORY_SECONDS).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_calendar_months_and_a_missing_day_is_the_months_last() {
        let day = |y, m, d| time::Date::from_calendar_date(y, m, d).unwrap().midnight().assume_utc().unix_timestamp();
        assert_eq!(add_months(day(2026, time::Month::December, 5), 6).unwrap(), day(2027, time::Month::June, 5));
        assert_eq!(add_months(day(2026, time::Month::August, 31), 6).unwrap(), day(2027, time::Month::February, 28));
        assert_eq!(add_months(day(2026, time::Month::December, 5), 60).unwrap(), day(2031, time::Month::December, 5));
    }
}
