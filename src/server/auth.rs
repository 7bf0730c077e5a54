//! Players and sessions. A session token is 32 random bytes, given to the client once (as an HttpOnly,
//! SameSite=Strict cookie, and in the JSON body for API clients that send it as a bearer token) and
//! stored only as its SHA-256. Passwords are kept as argon2id hashes. A sign-in also leaves a long-lived
//! device cookie, signed by the server, that lets that device through the per-name login limit while
//! someone else guesses the name's password (see `limits`).

use super::cookies::{self, CookieJar, Key, Reach, SignedCookieJar};
use super::error::{AnyRequestRefusals, PasswordRefusals, SessionRefusals};
use super::error::{ApiError, ApiJson, ErrorBody};
use super::names::{self, PlayerName};
use super::store::Identity;
use super::store::responsible::SessionRecord;
use super::store::{Credit, Funding, NewPlayer, SigningKeyRecord};
use super::{AppState, os_random};
use crate::api::Me;
use crate::money::Cents;
use crate::payload::TicketSigner;
use axum::extract::{FromRequestParts, State};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

pub const COOKIE_NAME: &str = "vegas_session";
/// Beside the session's cookie, one the page's script can read (it holds no secret): whether to ask
/// for the session's player at load or to start a guest at once. Asked with no session, `/api/me`
/// would answer 401, and every first visit would log that error in the player's console.
pub const SIGNED_IN_COOKIE: &str = "vegas_signed_in";
/// The device cookie: `player.issued_at.hmac`, sent only to the login route.
pub const DEVICE_COOKIE: &str = "vegas_device";
const DEVICE_SECONDS: i64 = 365 * 24 * 3600;
const SESSION_SECONDS: i64 = 30 * 24 * 3600;
/// What a guest (or, in demo mode, a new player) starts with.
pub const DEMO_CREDIT: Cents = Cents::euros(100);
/// The most one demo top-up may add.
pub const DEMO_TOP_UP_MAX: Cents = Cents::euros(100);

/// An id or token: `N` random bytes in hex.
pub fn random_hex<const N: usize>() -> String {
    crate::block::hex(&os_random::<N>())
}

fn token_hash(token: &str) -> String {
    crate::block::hex(&Sha256::digest(token.as_bytes()))
}

pub const KEY_FILE_NAME: &str = "signing-key.ed25519";

/// The signing key a data directory kept in a file before keys lived in the store, if any.
pub fn key_file(data_dir: &Path) -> Result<Option<SigningKeyRecord>, String> {
    let path = data_dir.join(KEY_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let secret: [u8; 32] =
                bytes.try_into().map_err(|_| format!("{} is not a 32-byte Ed25519 secret", path.display()))?;
            Ok(Some(SigningKeyRecord {
                kid: TicketSigner::from_secret(secret).kid().to_owned(),
                secret,
                created_at: 0,
            }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The signed-in player, from the bearer token or the session cookie.
pub struct Player {
    pub id: String,
    /// The session's token, as the store keys it.
    pub token_hash: String,
    pub session: SessionRecord,
}

impl FromRequestParts<AppState> for Player {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Player, ApiError> {
        let token = session_token(&parts.headers).ok_or(ApiError::Unauthorized)?;
        let token_hash = token_hash(&token);
        let session =
            state.store.session(&token_hash, state.config.clock.now()).await?.ok_or(ApiError::Unauthorized)?;
        Ok(Player { id: session.player_id.clone(), token_hash, session })
    }
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    // The scheme's name is case-insensitive (RFC 9110 §11.1): `bearer` is `Bearer`.
    let bearer = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.split_once(' '));
    if let Some((_, token)) = bearer.filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")) {
        return Some(token.trim().to_owned());
    }
    cookies::value_of(headers, COOKIE_NAME)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct SessionBody {
    token: String,
    player: Me,
}

async fn me_of(state: &AppState, id: &str) -> Result<Me, ApiError> {
    let p = state.store.player(id).await?;
    let balance_cents = i64::try_from(p.balance.0).map_err(|_| ApiError::Internal("a balance beyond i64".into()))?;
    Ok(Me { balance_cents, id: p.id, name: p.name, guest: p.guest, demo: state.config.demo })
}

/// Opens a session for `player_id`: the cookie for browsers, the token in the body for API clients.
async fn start_session(state: &AppState, player_id: String) -> Result<Response, ApiError> {
    let token = random_hex::<32>();
    let hash = token_hash(&token);
    let now = state.config.clock.now();
    state.store.create_session(&hash, &player_id, now, now + SESSION_SECONDS).await?;
    let secure = state.config.secure_cookie;
    let jar = CookieJar::new()
        .add(cookies::ours(COOKIE_NAME, token.clone(), "/", SESSION_SECONDS, Reach::ServerOnly, secure))
        .add(cookies::ours(SIGNED_IN_COOKIE, "1".into(), "/", SESSION_SECONDS, Reach::Page, secure));
    let player = me_of(state, &player_id).await?;
    Ok((jar, ApiJson(SessionBody { token, player })).into_response())
}

fn new_player_id() -> String {
    format!("p-{}", random_hex::<12>())
}

fn demo_credit(amount: Cents) -> Credit {
    Credit { funding: Funding::Demo, amount, reason: "demo money".into() }
}

fn demo_only(state: &AppState) -> Result<(), ApiError> {
    if state.config.demo {
        Ok(())
    } else {
        Err(ApiError::Conflict(crate::api::ErrorCode::DemoOff, "demo money is only available in demo mode".into()))
    }
}

/// `POST /api/guest`: a new guest player with demo money (demo mode only).
#[utoipa::path(post, path = "/api/guest", tag = "players", security(()),
    responses(
        (status = 200, description = "A new guest and its session (also set as a cookie)", body = SessionBody),
        (status = 409, description = "`demo_off`: a real-money server has no guests", body = ErrorBody),
        (status = 429, description = "`rate_limited`: too many new sessions from this address", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        AnyRequestRefusals,
    ))]
pub async fn guest(State(state): State<AppState>) -> Result<Response, ApiError> {
    demo_only(&state)?;
    let player = NewPlayer {
        id: new_player_id(),
        name: None,
        password_hash: None,
        guest: true,
        identity: None,
        opening_credit: Some(demo_credit(DEMO_CREDIT)),
    };
    let player = state.store.create_player(player, state.config.clock.now()).await?;
    start_session(&state, player.id).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    #[schema(min_length = 3, max_length = 32)]
    name: String,
    #[schema(min_length = 8, max_length = 256)]
    password: String,
}

/// The longest password accepted (argon2 reads all of it; longer adds nothing but work).
const PASSWORD_MAX_BYTES: usize = 256;

/// A new account: its name and password, and for real money the identity the law asks for.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    #[schema(min_length = 3, max_length = 32)]
    name: String,
    #[schema(min_length = 8, max_length = 256)]
    password: String,
    /// Real money: required (matched against the national ban file).
    #[schema(min_length = 1, max_length = 64)]
    first_name: Option<String>,
    /// Real money: required.
    #[schema(min_length = 1, max_length = 64)]
    last_name: Option<String>,
    /// Real money: required, `YYYY-MM-DD`; under 18 is refused.
    #[schema(format = Date)]
    birth_date: Option<String>,
}

/// `POST /api/register`: a named player (credited with demo money in demo mode). For real money the
/// player declares a first name, a last name and a date of birth: a minor is refused, and so is an
/// identity the national ban file lists.
#[utoipa::path(post, path = "/api/register", tag = "players", security(()), request_body = Registration,
    responses(
        (status = 200, description = "The new player and its session (also set as a cookie)", body = SessionBody),
        (status = 403, description = "`under_age`: players are 18 or older; `banned`: the identity is in the national \
            ban file", body = ErrorBody),
        (status = 409, description = "`name_taken`: the name, or one that reads the same, is taken", body = ErrorBody),
        PasswordRefusals,
    ))]
pub async fn register(
    State(state): State<AppState>,
    ApiJson(form): ApiJson<Registration>,
) -> Result<Response, ApiError> {
    let identity = identity(&state, form.first_name, form.last_name, form.birth_date)?;
    let (name, hash) = new_credentials(&state, Credentials { name: form.name, password: form.password }).await?;
    let opening_credit = state.config.demo.then(|| demo_credit(DEMO_CREDIT));
    let player = NewPlayer {
        id: new_player_id(),
        name: Some(name),
        password_hash: Some(hash),
        guest: false,
        identity,
        opening_credit,
    };
    let player = state.store.create_player(player, state.config.clock.now()).await?;
    let response = start_session(&state, player.id.clone()).await?;
    Ok(DeviceCookie::issue(&state, &player.id, response))
}

/// A device the player signed in on: a cookie the server signed (HMAC-SHA256 with a key every instance
/// shares), naming the player and when it was given, good for a year. It proves nothing but that this
/// browser signed in as that player before, which is all the login limit asks (OWASP « device
/// cookies »); the password is checked all the same.
pub struct DeviceCookie;

impl DeviceCookie {
    fn key(state: &AppState) -> Key {
        cookies::signing_key(&state.device_key)
    }

    /// `response`, leaving a device cookie for `player_id` (a year, sent only to the login route).
    fn issue(state: &AppState, player_id: &str, response: Response) -> Response {
        let value = format!("{player_id}.{}", state.config.clock.now());
        let cookie = cookies::ours(
            DEVICE_COOKIE,
            value,
            "/api/login",
            DEVICE_SECONDS,
            Reach::ServerOnly,
            state.config.secure_cookie,
        );
        (SignedCookieJar::new(Self::key(state)).add(cookie), response).into_response()
    }

    /// Whether `headers` carry a device cookie of `player_id`, signed by this server and under a year old.
    fn known(state: &AppState, headers: &HeaderMap, player_id: &str) -> bool {
        let Some(cookie) = SignedCookieJar::from_headers(headers, Self::key(state)).get(DEVICE_COOKIE) else {
            return false;
        };
        let Some((player, issued_at)) = cookie.value().rsplit_once('.') else { return false };
        let fresh =
            issued_at.parse::<i64>().is_ok_and(|at| (0..DEVICE_SECONDS).contains(&(state.config.clock.now() - at)));
        player == player_id && fresh
    }
}

/// The client's address, as the rate limits count it.
pub struct ClientAddress(pub Option<std::net::IpAddr>);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<ClientAddress, ApiError> {
        Ok(ClientAddress(super::limits::client_address(parts, state.config.behind_proxy)))
    }
}

/// The identity of a registration: required for real money (an adult's), optional in demo mode.
fn identity(
    state: &AppState,
    first: Option<String>,
    last: Option<String>,
    birth: Option<String>,
) -> Result<Option<Identity>, ApiError> {
    let (Some(first_name), Some(last_name), Some(birth_date)) = (first, last, birth) else {
        return if state.config.demo {
            Ok(None)
        } else {
            Err(ApiError::InvalidIdentity(
                "a real-money account needs first_name, last_name and birth_date (YYYY-MM-DD)".into(),
            ))
        };
    };
    let (first_name, last_name) = (first_name.trim().to_owned(), last_name.trim().to_owned());
    for (what, name) in [("first_name", &first_name), ("last_name", &last_name)] {
        if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
            return Err(ApiError::InvalidIdentity(format!(
                "{what} is 1 to 64 characters, none of them a control character"
            )));
        }
    }
    let born = super::dates::parse_iso_day(&birth_date)
        .ok_or_else(|| ApiError::InvalidIdentity(format!("birth_date is a date as YYYY-MM-DD, not {birth_date:?}")))?;
    let today = super::dates::date_of(state.config.clock.now())
        .ok_or_else(|| ApiError::Internal("the clock is past the calendar".into()))?;
    if !is_adult(born, today) {
        return Err(ApiError::Forbidden(
            crate::api::ErrorCode::UnderAge,
            "players are 18 or older (loi 2010-476, art. 5)".into(),
        ));
    }
    Ok(Some(Identity { first_name, last_name, birth_date }))
}

/// Whether someone born on `born` is 18 on `today` (born on 29 February: from 1 March of a common year).
fn is_adult(born: time::Date, today: time::Date) -> bool {
    let years = today.year() - born.year();
    years > 18 || (years == 18 && (today.month() as u8, today.day()) >= (born.month() as u8, born.day()))
}

/// A name and a password a new account may have: the name checked, the password hashed.
async fn new_credentials(state: &AppState, creds: Credentials) -> Result<(PlayerName, String), ApiError> {
    let name = PlayerName::parse(&creds.name).map_err(ApiError::BadRequest)?;
    if creds.password.chars().count() < 8 || creds.password.len() > PASSWORD_MAX_BYTES {
        return Err(ApiError::BadRequest(format!(
            "a password has 8 characters or more, {PASSWORD_MAX_BYTES} bytes at most"
        )));
    }
    Ok((name, state.passwords.hash(creds.password).await?))
}

/// `POST /api/account`: the signed-in guest becomes an account with this name and password, keeping
/// its balance, its tickets and its session.
#[utoipa::path(post, path = "/api/account", tag = "players", security(("bearer" = []), ("cookie" = [])), request_body
    = Credentials,
    responses(
        (status = 200, description = "The player, named", body = Me),
        (status = 409, description = "`name_taken`: the name, or one that reads the same, is taken; \
            `already_registered`: this player already has an account", body = ErrorBody),
        PasswordRefusals,
    ))]
pub async fn claim_account(
    State(state): State<AppState>,
    player: Player,
    ApiJson(creds): ApiJson<Credentials>,
) -> Result<ApiJson<Me>, ApiError> {
    let (name, hash) = new_credentials(&state, creds).await?;
    state.store.register_guest(&player.id, name, hash).await?;
    Ok(ApiJson(me_of(&state, &player.id).await?))
}

/// `POST /api/login`. A wrong name and a wrong password are one answer, given in the same time.
#[utoipa::path(post, path = "/api/login", tag = "players", security(()), request_body = Credentials,
    responses(
        (status = 200, description = "The player and a new session (also set as a cookie)", body = SessionBody),
        (status = 401, description = "`bad_credentials`: wrong name or password", body = ErrorBody),
        PasswordRefusals,
    ))]
pub async fn login(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    ApiJson(creds): ApiJson<Credentials>,
) -> Result<Response, ApiError> {
    if creds.password.len() > PASSWORD_MAX_BYTES {
        return Err(ApiError::BadCredentials);
    }
    let name_key = names::key_of(&creds.name);
    let at = address.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
    state.logins_per_name_at_address.check(&format!("{name_key}|{at}"))?;
    let found = state.store.credentials(&name_key).await?;
    // A device the owner signed in on before passes the name's limit, which others' guesses may have used up.
    if !found.as_ref().is_some_and(|c| DeviceCookie::known(&state, &headers, &c.player_id)) {
        state.logins_per_name.check(&name_key)?;
    }
    let (id, stored) = found.map(|c| (c.player_id, c.password_hash)).unzip();
    if !state.passwords.verify(creds.password, stored).await? {
        return Err(ApiError::BadCredentials);
    }
    let id = id.ok_or(ApiError::BadCredentials)?;
    let response = start_session(&state, id.clone()).await?;
    Ok(DeviceCookie::issue(&state, &id, response))
}

/// `POST /api/logout`: ends this session and clears the cookie.
#[utoipa::path(post, path = "/api/logout", tag = "players", security((), ("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "Signed out (whether or not a session was \
        sent)", body = LoggedOut), AnyRequestRefusals))]
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(token) = session_token(&headers) {
        state.store.delete_session(&token_hash(&token)).await?;
    }
    Ok(clear_cookie(ApiJson(LoggedOut { ok: true }).into_response()))
}

/// `response`, telling the browser to forget its session cookie (and that it is signed in).
pub fn clear_cookie(response: Response) -> Response {
    let jar = CookieJar::new().add(cookies::forget(COOKIE_NAME, "/")).add(cookies::forget(SIGNED_IN_COOKIE, "/"));
    (jar, response).into_response()
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LoggedOut {
    ok: bool,
}

/// `GET /api/me`: who is signed in, and the balance (wins count only once credited).
#[utoipa::path(get, path = "/api/me", tag = "players", security(("bearer" = []), ("cookie" = [])),
    responses((status = 200, description = "The signed-in player", body = Me), SessionRefusals))]
pub async fn me(State(state): State<AppState>, player: Player) -> Result<ApiJson<Me>, ApiError> {
    Ok(ApiJson(me_of(&state, &player.id).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Deposit {
    #[schema(minimum = 1, maximum = 10000)]
    amount_cents: u64,
}

/// `POST /api/wallet/deposit`: demo money, at most 100 € at a time (demo mode only).
#[utoipa::path(post, path = "/api/wallet/deposit", tag = "players", security(("bearer" = []), ("cookie" = [])),
    request_body = Deposit,
    responses(
        (status = 200, description = "The player with the new balance", body = Me),
        (status = 403, description = "`limit_reached`: a deposit limit would be passed (`limit` says which, what is \
            left and when more frees up); `paused`: a break or self-exclusion (`pause` says until \
            when)", body = ErrorBody),
        (status = 409, description = "`demo_off`: real money comes only through the operator", body = ErrorBody),
        SessionRefusals,
    ))]
pub async fn demo_deposit(
    State(state): State<AppState>,
    player: Player,
    ApiJson(body): ApiJson<Deposit>,
) -> Result<ApiJson<Me>, ApiError> {
    demo_only(&state)?;
    let amount = Cents(body.amount_cents);
    if amount.is_zero() || amount > DEMO_TOP_UP_MAX {
        return Err(ApiError::BadRequest(format!("a demo deposit is 1 to {} cents", DEMO_TOP_UP_MAX.0)));
    }
    state.store.credit(&player.id, demo_credit(amount), state.config.clock.now()).await?;
    Ok(ApiJson(me_of(&state, &player.id).await?))
}

#[cfg(test)]
mod tests {
    use super::is_adult;
    use time::macros::date;

    #[test]
    fn a_player_is_an_adult_from_the_eighteenth_birthday_on() {
        assert!(!is_adult(date!(2008 - 12 - 06), date!(2026 - 12 - 05)));
        assert!(is_adult(date!(2008 - 12 - 05), date!(2026 - 12 - 05)));
        assert!(is_adult(date!(1950 - 01 - 01), date!(2026 - 12 - 05)));
        assert!(!is_adult(date!(2008 - 02 - 29), date!(2026 - 02 - 28)), "born on 29 February: not yet on the 28th");
        assert!(is_adult(date!(2008 - 02 - 29), date!(2026 - 03 - 01)));
    }
}
