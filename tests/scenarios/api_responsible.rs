//! « Jeu responsable » over HTTP, on a real-money server whose clock the tests move.

use super::*;
use vegas::money::Cents;
use vegas::server::store::{Credit, Funding, StoreError};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// A real-money server on `clock`.
async fn real_money_server(clock: Clock) -> Server {
    server_with(|config| Config { demo: false, ..config }, clock).await
}

fn adult(name: &str) -> Value {
    json!({ "name": name, "password": "correct horse", "first_name": "Alice", "last_name": "Martin", "birth_date":
        "1990-04-01" })
}

impl Server {
    async fn register(&self, form: Value) -> (StatusCode, Value) {
        let r = self.http.post(self.url("/api/register")).json(&form).send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    async fn login(&self, name: &str) -> Player {
        let r = self
            .http
            .post(self.url("/api/login"))
            .json(&json!({ "name": name, "password": "correct horse" }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        Player { token: r.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_owned() }
    }

    async fn cash(&self, player_id: &str, euros: u64, now: i64) -> Result<Cents, StoreError> {
        self.store
            .credit(
                player_id,
                Credit { funding: Funding::Cash, amount: Cents::euros(euros), reason: "bank transfer".into() },
                now,
            )
            .await
    }

    async fn limit(&self, p: &Player, flow: &str, span: &str, euros: Option<u64>) -> (StatusCode, Value) {
        let body = json!({ "flow": flow, "span": span, "amount_cents": euros.map(|e| e * 100) });
        self.call(p, M::PUT, "/api/responsible/limits", Some(body)).await
    }
}

fn limit_of<'a>(standing: &'a Value, flow: &str, span: &str) -> &'a Value {
    standing["limits"].as_array().unwrap().iter().find(|l| l["flow"] == flow && l["span"] == span).unwrap()
}

#[tokio::test]
async fn real_money_asks_an_adults_identity_then_limits_before_any_money_and_enforces_them() {
    let hand = ManualClock::at(Clock::system().now());
    let s = real_money_server(hand.clock()).await;
    let t0 = hand.clock().now();
    let (status, body) = s.register(json!({ "name": "alice", "password": "correct horse" })).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_identity")),
        "real money needs an identity: {body}"
    );
    let seventeen = time::OffsetDateTime::from_unix_timestamp(t0 - 17 * 365 * DAY).unwrap().date().to_string();
    let mut minor = adult("alice");
    minor["birth_date"] = json!(seventeen);
    let (status, body) = s.register(minor).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("under_age")), "{body}");
    let (status, body) = s.register(adult("alice")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (p, id) = (
        Player { token: body["token"].as_str().unwrap().to_owned() },
        body["player"]["id"].as_str().unwrap().to_owned(),
    );

    // Nothing is credited and nothing sold before both 7-day limits.
    assert_eq!(
        s.cash(&id, 50, t0).await,
        Err(StoreError::LimitsRequired(vegas::server::store::responsible::Flow::Deposit))
    );
    let (status, body) = s.buy(&p, "auto", "k0").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("limits_required")), "{body}");
    let (status, body) = s.limit(&p, "stake", "week", Some(10)).await;
    assert_eq!((status, body["applies"].as_str()), (StatusCode::OK, Some("at_once")), "{body}");
    assert_eq!(s.limit(&p, "deposit", "week", Some(100)).await.1["applies"], "at_once");
    assert_eq!(s.cash(&id, 50, t0).await, Ok(Cents::euros(50)));
    let (status, body) = s.limit(&p, "deposit", "week", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the 7-day limit cannot be removed for real money: {body}");

    // Buy until the stake limit: the refusal says which limit, what is left and when it frees.
    for key in ["k1", "k2", "k3"] {
        assert_eq!(s.buy(&p, "auto", key).await.0, StatusCode::CREATED);
    }
    let (status, body) = s.buy(&p, "auto", "k4").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("limit_reached")), "{body}");
    assert_eq!(
        body["limit"],
        json!({ "flow": "stake", "span": "week", "limit_cents": 1000, "left_cents": 100, "frees_at": t0 + 7 * DAY })
    );
    let (_, standing) = s.call(&p, M::GET, "/api/responsible", None).await;
    let week = limit_of(&standing, "stake", "week");
    assert_eq!(
        (week["used_cents"].as_i64(), week["left_cents"].as_i64(), week["next_frees_at"].as_i64()),
        (Some(900), Some(100), Some(t0 + 7 * DAY))
    );

    // A raise waits 48 h and then the player's confirmation; the session's reality check came meanwhile.
    let (status, body) = s.limit(&p, "stake", "week", Some(20)).await;
    assert_eq!((status, body["applies"].as_str()), (StatusCode::OK, Some("pending")));
    assert_eq!(body["standing"]["pending"][0]["confirmable_at"], t0 + 48 * HOUR);
    let confirm = json!({ "flow": "stake", "span": "week" });
    let (status, body) = s.call(&p, M::POST, "/api/responsible/limits/confirm", Some(confirm.clone())).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("raise_not_yet")), "{body}");
    hand.advance(48 * HOUR);
    let (status, body) = s.call(&p, M::POST, "/api/responsible/limits/confirm", Some(confirm)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(limit_of(&body, "stake", "week")["limit_cents"], 2000);
    let (status, body) = s.buy(&p, "auto", "k4").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("reality_check_due")), "{body}");
    assert_eq!(
        (body["reality_check"]["session_seconds"].as_i64(), body["reality_check"]["tickets"].as_i64()),
        (Some(48 * HOUR), Some(3))
    );
    let (status, body) = s.call(&p, M::POST, "/api/responsible/reality-check/acknowledge", None).await;
    assert_eq!((status, body["reality_check_due"].as_bool()), (StatusCode::OK, Some(false)), "{body}");
    assert_eq!(s.buy(&p, "auto", "k4").await.0, StatusCode::CREATED, "acknowledged: play goes on");

    let (_, history) = s.call(&p, M::GET, "/api/responsible/history", None).await;
    let kinds: Vec<&str> = history.as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "limit_set",
            "limit_set",
            "raise_asked",
            "raise_confirmed",
            "reality_check_shown",
            "reality_check_acknowledged"
        ]
    );
    s.ledger_check().await;
}

#[tokio::test]
async fn a_break_signs_out_refuses_the_next_logins_purchase_and_nothing_lifts_it() {
    let hand = ManualClock::at(Clock::system().now());
    let s = real_money_server(hand.clock()).await;
    let (_, body) = s.register(adult("bruno")).await;
    let (p, id) = (
        Player { token: body["token"].as_str().unwrap().to_owned() },
        body["player"]["id"].as_str().unwrap().to_owned(),
    );
    s.limit(&p, "stake", "week", Some(100)).await;
    s.limit(&p, "deposit", "week", Some(100)).await;
    s.cash(&id, 30, hand.clock().now()).await.unwrap();
    let (_, bought) = s.buy(&p, "auto", "before").await;
    let ticket = bought["ticket"]["id"].as_str().unwrap().to_owned();

    let r = s
        .http
        .post(s.url("/api/responsible/pause"))
        .bearer_auth(&p.token)
        .json(&json!({ "kind": "break", "days": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"), "the cookie is cleared");
    let until = r.json::<Value>().await.unwrap()["until"].as_i64().unwrap();
    assert_eq!(until, hand.clock().now() + DAY);
    assert_eq!(s.call(&p, M::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED, "every session ended");

    let again = s.login("bruno").await;
    let (status, body) = s.buy(&again, "auto", "after").await;
    assert_eq!(
        (status, body["error"].as_str(), body["pause"]["until"].as_i64()),
        (StatusCode::FORBIDDEN, Some("paused"), Some(until)),
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("break"), "{body}");
    let (status, body) = s.call(&again, M::POST, &format!("/api/tickets/{ticket}/complete"), None).await;
    assert_eq!(status, StatusCode::OK, "a ticket bought before is finished: {body}");
    assert_eq!(
        s.cash(&id, 5, hand.clock().now()).await.map_err(|e| matches!(e, StoreError::Paused(_))),
        Err(true),
        "no deposit either"
    );

    // No route lifts it: neither a shorter pause, nor another kind, nor a limit changed.
    for pause in [json!({ "kind": "break", "days": 1 }), json!({ "kind": "exclusion", "days": 1 })] {
        let (status, body) = s.call(&again, M::POST, "/api/responsible/pause", Some(pause)).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("already_paused")), "{body}");
    }
    s.limit(&again, "stake", "week", Some(50)).await;
    assert_eq!(s.buy(&again, "auto", "after").await.0, StatusCode::FORBIDDEN);
    hand.advance(DAY - 1);
    let late = s.login("bruno").await;
    assert_eq!(s.buy(&late, "auto", "after").await.0, StatusCode::FORBIDDEN, "a second before its end");
    hand.advance(1);
    assert_eq!(s.buy(&late, "auto", "after").await.0, StatusCode::CREATED, "over at its second");
    let (_, history) = s.call(&late, M::GET, "/api/responsible/history", None).await;
    assert!(
        history.as_array().unwrap().iter().any(|e| e["kind"] == "break" && e["detail"]["until"] == until),
        "{history}"
    );
}

#[tokio::test]
async fn the_reality_check_comes_after_the_chosen_interval_and_the_session_shows_time_and_net() {
    let hand = ManualClock::at(Clock::system().now());
    let s = server_with(|config| config, hand.clock()).await;
    let p = s.guest().await;
    let (status, body) = s.call(&p, M::PUT, "/api/responsible/reality-check", Some(json!({ "minutes": 20 }))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "15, 30 or 60: {body}");
    assert_eq!(
        s.call(&p, M::PUT, "/api/responsible/reality-check", Some(json!({ "minutes": 15 }))).await.0,
        StatusCode::OK
    );
    assert_eq!(s.buy(&p, "auto", "a").await.0, StatusCode::CREATED);
    hand.advance(15 * 60 - 1);
    let (_, session) = s.call(&p, M::GET, "/api/responsible/session", None).await;
    assert_eq!(
        (
            session["reality_check_due"].as_bool(),
            session["check"]["staked_cents"].as_i64(),
            session["check"]["net_cents"].as_i64()
        ),
        (Some(false), Some(300), Some(300))
    );
    hand.advance(1);
    let (_, session) = s.call(&p, M::GET, "/api/responsible/session", None).await;
    assert_eq!(
        (session["reality_check_due"].as_bool(), session["check"]["session_seconds"].as_i64()),
        (Some(true), Some(15 * 60)),
        "{session}"
    );
    assert_eq!(s.buy(&p, "auto", "b").await.1["error"], "reality_check_due");
    s.call(&p, M::POST, "/api/responsible/reality-check/acknowledge", None).await;
    assert_eq!(s.buy(&p, "auto", "b").await.0, StatusCode::CREATED);
}
