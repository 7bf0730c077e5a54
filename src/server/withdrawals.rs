//! Withdrawals, as the player asks for them (real money only): the amount leaves the wallet at once
//! for the pending-withdrawals account, where it cannot be staked, until finance pays it or refuses it
//! in the back office.

use super::AppState;
use super::auth::Player;
use super::error::SessionRefusals;
use super::error::{ApiError, ApiJson, ErrorBody};
use super::store::back_office::Withdrawal;
use crate::api::{WithdrawalAsked, WithdrawalInfo};
use crate::money::Cents;
use axum::extract::State;
use serde::Deserialize;

/// The most one withdrawal may ask: 100 000 €.
const WITHDRAWAL_MAX_CENTS: u64 = 10_000_000;

/// A withdrawal as the API shows it (a function, not a `From`: the shared `api` types know nothing of
/// the server's).
fn shown(w: Withdrawal) -> WithdrawalInfo {
    WithdrawalInfo {
        id: w.id,
        amount_cents: w.amount.0,
        asked_at: w.asked_at,
        state: w.state.as_str().into(),
        decided_at: w.decided_at,
        reason: w.reason,
    }
}

fn real_money_only(state: &AppState) -> Result<(), ApiError> {
    if state.config.demo {
        Err(ApiError::Conflict(crate::api::ErrorCode::DemoMoney, "demo money cannot be withdrawn".into()))
    } else {
        Ok(())
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawalRequest {
    #[schema(minimum = 1, maximum = 10000000)]
    amount_cents: u64,
}

/// `POST /api/wallet/withdrawals`: asks to withdraw an amount of the balance (real money only).
#[utoipa::path(post, path = "/api/wallet/withdrawals", tag = "players", security(("bearer" = []), ("cookie" = [])),
    request_body = WithdrawalRequest,
    responses(
        (status = 200, description = "The withdrawal, pending, and the balance once the amount has left the \
            wallet", body = WithdrawalAsked),
        (status = 409, description = "`overdraft`: more than the balance; `demo_money`: a demo server pays nothing \
            out", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn ask(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<WithdrawalRequest>,
) -> Result<ApiJson<WithdrawalAsked>, ApiError> {
    real_money_only(&state)?;
    if !(1..=WITHDRAWAL_MAX_CENTS).contains(&body.amount_cents) {
        return Err(ApiError::BadRequest(format!("a withdrawal is 1 to {WITHDRAWAL_MAX_CENTS} cents")));
    }
    let withdrawal = state.store.ask_withdrawal(&player.id, Cents(body.amount_cents), state.config.clock.now()).await?;
    let balance = state.store.player(&player.id).await?.balance;
    Ok(ApiJson(WithdrawalAsked { withdrawal: shown(withdrawal), balance_cents: balance.0 }))
}

/// `GET /api/wallet/withdrawals`: the player's withdrawals, oldest first, with what became of each.
#[utoipa::path(get, path = "/api/wallet/withdrawals", tag = "players", security(("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "The player's withdrawals", body = Vec<WithdrawalInfo>), SessionRefusals))]
pub async fn list(State(state): State<AppState>, player: Player) -> Result<ApiJson<Vec<WithdrawalInfo>>, ApiError> {
    let withdrawals = state.store.withdrawals(None, Some(&player.id), 200).await?;
    Ok(ApiJson(withdrawals.into_iter().map(shown).collect()))
}
