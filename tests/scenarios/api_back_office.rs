//! The back office over HTTP, on its own address: staff sign in with a password and a TOTP code, each
//! role is refused what it may not do, four eyes above the threshold, a suspension stops the player's
//! next purchase, and a withdrawal the player asks for is paid by finance and seen by the player.

use super::*;
use reqwest::redirect::Policy;
use sha2::Digest;
use vegas::money::Cents;
use vegas::server::back_office::{Power, staff};
use vegas::server::store::back_office::Role;
use vegas::server::store::responsible::{Flow, Span};
use vegas::server::store::{Credit, Funding, NewPlayer};

const PASSWORD: &str = "a long staff password";

/// A member signed in: a browser-like client that keeps the session cookie and does not follow
/// redirects (the tests read where each answer leads).
struct Member {
    http: reqwest::Client,
    actor: String,
}

impl Server {
    async fn add_staff(&self, name: &str, role: Role) -> String {
        let hash = vegas::server::passwords::Passwords::new(1).hash(PASSWORD.into()).await.unwrap();
        let new = staff::new_staff(name, role, hash).unwrap();
        self.store.add_staff(new, "cli:test", Clock::system().now()).await.unwrap().totp_secret
    }

    async fn sign_in_with(&self, name: &str, password: &str, code: &str) -> (reqwest::Client, reqwest::Response) {
        let http = reqwest::Client::builder().cookie_store(true).redirect(Policy::none()).build().unwrap();
        let form = [("name", name), ("password", password), ("code", code)];
        let answer = http.post(format!("{}/connexion", self.admin)).form(&form).send().await.unwrap();
        (http, answer)
    }

    async fn member(&self, name: &str, role: Role) -> Member {
        let secret = self.add_staff(name, role).await;
        let code = staff::code_at(&secret, Clock::system().now()).unwrap();
        let (http, answer) = self.sign_in_with(name, PASSWORD, &code).await;
        assert_eq!(
            (answer.status(), answer.headers()["location"].to_str().unwrap()),
            (StatusCode::SEE_OTHER, "/blocs")
        );
        let cookie = answer.headers()["set-cookie"].to_str().unwrap();
        assert!(
            cookie.starts_with("vegas_staff=") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        Member { http, actor: format!("staff:{name}") }
    }

    /// A real-money player with both 7-day limits set, `euros` deposited, and a session.
    async fn real_player(&self, id: &str, euros: u64) -> Player {
        let now = Clock::system().now();
        let new = NewPlayer {
            id: id.into(),
            name: None,
            password_hash: None,
            guest: false,
            identity: None,
            opening_credit: None,
        };
        self.store.create_player(new, now).await.unwrap();
        for flow in [Flow::Stake, Flow::Deposit] {
            self.store.change_limit(id, flow, Span::Week, Some(Cents::euros(5_000)), now).await.unwrap();
        }
        if euros > 0 {
            self.store
                .credit(
                    id,
                    Credit { funding: Funding::Cash, amount: Cents::euros(euros), reason: "virement".into() },
                    now,
                )
                .await
                .unwrap();
        }
        let token = format!("token-of-{id}");
        let hash = vegas::block::hex(&sha2::Sha256::digest(token.as_bytes()));
        self.store.create_session(&hash, id, now, now + 3600).await.unwrap();
        Player { token }
    }
}

impl Member {
    async fn get(&self, s: &Server, path: &str) -> (StatusCode, String) {
        let answer = self.http.get(format!("{}{path}", s.admin)).send().await.unwrap();
        (answer.status(), answer.text().await.unwrap())
    }

    async fn post(&self, s: &Server, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let answer = self.http.post(format!("{}{path}", s.admin)).form(form).send().await.unwrap();
        let status = answer.status();
        let location = answer.headers().get("location").map(|l| l.to_str().unwrap().to_owned());
        (status, location.unwrap_or(answer.text().await.unwrap()))
    }
}

/// A request a role tries: the power it needs, the method, the path and the form.
type Try<'a> = (Power, M, String, Vec<(&'a str, &'a str)>);

fn real_money(config: Config) -> Config {
    Config { demo: false, ..config }
}

#[tokio::test]
async fn each_role_is_refused_what_it_may_not_do_and_its_refusals_change_nothing() {
    let s = server_with(real_money, Clock::system()).await;
    let mut members = Vec::new();
    for role in Role::ALL {
        members.push((role, s.member(&format!("m-{}", role.as_str()), role).await));
    }
    let office = &*s.store;
    let p = s.real_player("p-roles", 100).await;
    s.real_player("p-close", 7).await;
    // One of each thing a member may act on, for every role to try.
    let mut withdrawals = Vec::new();
    let mut adjustments = Vec::new();
    for _ in Role::ALL {
        withdrawals.push(
            s.call(&p, M::POST, "/api/wallet/withdrawals", Some(json!({ "amount_cents": 100 }))).await.1["withdrawal"]
                ["id"]
                .as_i64()
                .unwrap(),
        );
        adjustments.push(
            office
                .adjust("p-roles", 200_000, "correction", "staff:someone", Cents::euros(1_000), Clock::system().now())
                .await
                .unwrap()
                .id,
        );
    }
    for (i, (role, m)) in members.iter().enumerate() {
        let (w, a) = (withdrawals[i].to_string(), adjustments[i].to_string());
        let tries: Vec<Try> = vec![
            (Power::Read, M::GET, "/blocs".into(), vec![]),
            (Power::Read, M::GET, "/joueurs?q=p-roles".into(), vec![]),
            (Power::Read, M::GET, "/joueurs/p-roles".into(), vec![]),
            (Power::ReadMoney, M::GET, "/retraits".into(), vec![]),
            (Power::ReadMoney, M::GET, "/ajustements".into(), vec![]),
            (Power::ReadAudit, M::GET, "/journal".into(), vec![]),
            (Power::ReadMoney, M::GET, "/rapports".into(), vec![]),
            (Power::ReadMoney, M::GET, "/rapports/engagements?format=csv".into(), vec![]),
            (
                Power::Suspend,
                M::POST,
                "/joueurs/p-roles/suspension".into(),
                vec![("action", "suspendre"), ("reason", "vérification")],
            ),
            (
                Power::Suspend,
                M::POST,
                "/joueurs/p-roles/suspension".into(),
                vec![("action", "retablir"), ("reason", "vérifié")],
            ),
            (
                Power::MoveMoney,
                M::POST,
                "/joueurs/p-roles/ajustement".into(),
                vec![("direction", "credit"), ("amount", "1"), ("reason", "geste")],
            ),
            (
                Power::MoveMoney,
                M::POST,
                format!("/retraits/{w}"),
                vec![("decision", "payer"), ("reason", "virement 42")],
            ),
            (Power::MoveMoney, M::POST, format!("/ajustements/{a}"), vec![("decision", "approuver")]),
            (Power::ManageBlocks, M::POST, "/blocs/1/2/retrait".into(), vec![("reason", "défaut")]),
            (Power::ManageStaff, M::GET, "/personnel".into(), vec![]),
            (
                Power::ManageStaff,
                M::POST,
                "/personnel/m-support/role".into(),
                vec![("role", "support"), ("reason", "inchangé")],
            ),
            (Power::MoveMoney, M::POST, "/joueurs/p-close/fermeture".into(), vec![("reason", "demande du joueur")]),
        ];
        for (power, method, path, form) in tries {
            let (status, _) = if method == M::GET { m.get(&s, &path).await } else { m.post(&s, &path, &form).await };
            let allowed = staff::may(*role, power);
            assert_eq!(status == StatusCode::FORBIDDEN, !allowed, "{role:?} {method} {path}: {status}");
            if allowed {
                assert!(
                    status == StatusCode::OK || status == StatusCode::SEE_OTHER,
                    "{role:?} {method} {path}: {status}"
                );
            }
        }
    }
    // Only what a role was allowed reached the log, each under its author.
    let log = office.audit_log(0, 1_000).await.unwrap();
    let by = |actor: &str| log.iter().filter(|e| e.actor == actor).map(|e| e.action.as_str()).collect::<Vec<_>>();
    assert_eq!(by("staff:m-support"), ["player_suspended", "player_restored"]);
    assert_eq!(
        by("staff:m-finance"),
        ["adjustment_applied", "withdrawal_paid", "adjustment_approved", "account_closed"]
    );
    assert_eq!(by("staff:m-admin"), ["block_withdrawn"]);
    assert_eq!(by("staff:m-auditor"), Vec::<&str>::new());
    assert_eq!(office.verify_audit_log().await.unwrap(), Ok(log.len() as i64));
    s.ledger_check().await;
}

#[tokio::test]
async fn a_member_cannot_approve_their_own_adjustment_above_the_threshold() {
    let s = server_with(real_money, Clock::system()).await;
    let (ann, bob) = (s.member("ann", Role::Finance).await, s.member("bob", Role::Finance).await);
    let p = s.real_player("p-four-eyes", 10).await;
    let (status, to) = ann
        .post(
            &s,
            "/joueurs/p-four-eyes/ajustement",
            &[("direction", "credit"), ("amount", "1500"), ("reason", "erreur de gain")],
        )
        .await;
    assert_eq!((status, to.as_str()), (StatusCode::SEE_OTHER, "/joueurs/p-four-eyes?fait=ajustement-en-attente"));
    assert_eq!(s.balance(&p).await, 1_000, "nothing moves before a second member approves");
    let pending = s.store.adjustments(None, Some("p-four-eyes"), 10).await.unwrap();
    let path = format!("/ajustements/{}", pending[0].id);
    let (status, page) = ann.post(&s, &path, &[("decision", "approuver")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("quatre yeux"), "{page}");
    let (_, list) = ann.get(&s, "/ajustements").await;
    assert!(!list.contains("approve-adjustment"), "no approve button for the member who asked");
    assert_eq!(bob.post(&s, &path, &[("decision", "approuver")]).await.0, StatusCode::SEE_OTHER);
    assert_eq!(s.balance(&p).await, 1_000 + 150_000);
    let log = s.store.audit_log(0, 100).await.unwrap();
    assert_eq!(
        log.iter().map(|e| (e.actor.as_str(), e.action.as_str())).collect::<Vec<_>>(),
        [
            ("cli:test", "staff_added"),
            ("cli:test", "staff_added"),
            (ann.actor.as_str(), "adjustment_asked"),
            (bob.actor.as_str(), "adjustment_approved")
        ]
    );
    s.ledger_check().await;
}

#[tokio::test]
async fn a_wrong_totp_code_is_refused_and_sign_ins_are_rate_limited() {
    let s = server_with(real_money, Clock::system()).await;
    let secret = s.add_staff("cat", Role::Support).await;
    let now = Clock::system().now();
    let right = staff::code_at(&secret, now).unwrap();
    let wrong = format!("{:06}", (right.parse::<u32>().unwrap() + 500_000) % 1_000_000);
    let (_, answer) = s.sign_in_with("cat", PASSWORD, &wrong).await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    assert!(answer.headers().get("set-cookie").is_none());
    assert!(answer.text().await.unwrap().contains("Nom, mot de passe ou code incorrect."));
    let (_, answer) = s.sign_in_with("cat", "not the password", &right).await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED, "the right code with a wrong password");
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(s.sign_in_with("cat", PASSWORD, &wrong).await.1.status());
    }
    assert_eq!(
        statuses,
        [StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED, StatusCode::TOO_MANY_REQUESTS]
    );
    let (_, answer) = s.sign_in_with("cat", PASSWORD, &right).await;
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS, "locked out for a while, even with the right code");
    // Not signed in: every page leads to the sign-in.
    let anonymous = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    let answer = anonymous.get(format!("{}/joueurs", s.admin)).send().await.unwrap();
    assert_eq!(
        (answer.status(), answer.headers()["location"].to_str().unwrap()),
        (StatusCode::SEE_OTHER, "/connexion")
    );
    // The players' address serves no back office.
    let players_side = s.text("/connexion").await;
    assert!(!players_side.contains("back office"), "{players_side}");
}

#[tokio::test]
async fn a_suspended_players_next_purchase_is_refused() {
    let s = server_with(real_money, Clock::system()).await;
    let support = s.member("dan", Role::Support).await;
    let p = s.real_player("p-suspend", 20).await;
    let (status, bought) = s.buy(&p, "auto", "k1").await;
    assert_eq!(status, StatusCode::CREATED);
    // The ticket as the game recalls it: its twelve zones, each with its symbols in words.
    let (status, recall) =
        support.get(&s, &format!("/joueurs/p-suspend/billets/{}", bought["ticket"]["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(recall.matches("data-testid=\"ticket-zone\"").count(), 12, "{recall}");
    assert!(recall.contains("numéro ") && recall.contains(" + ") && recall.contains("carte bonus"), "{recall}");
    assert_eq!(support.get(&s, "/joueurs/p-suspend/billets/t-none").await.0, StatusCode::NOT_FOUND);
    let (status, to) = support
        .post(&s, "/joueurs/p-suspend/suspension", &[("action", "suspendre"), ("reason", "usurpation d'identité")])
        .await;
    assert_eq!((status, to.as_str()), (StatusCode::SEE_OTHER, "/joueurs/p-suspend?fait=suspendu"));
    let (status, body) = s.buy(&p, "auto", "k2").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("suspended")), "{body}");
    let (_, page) = support.get(&s, "/joueurs/p-suspend").await;
    assert!(page.contains("suspendu") && page.contains("data-testid=\"restore\""), "{page}");
    assert!(
        page.contains("Sessions ouvertes") && page.contains("depuis le "),
        "the player's open session is shown: {page}"
    );
    assert_eq!(
        support.post(&s, "/joueurs/p-suspend/suspension", &[("action", "suspendre"), ("reason", "")]).await.0,
        StatusCode::BAD_REQUEST,
        "a reason is required"
    );
}

#[tokio::test]
async fn a_withdrawal_asked_in_the_game_is_paid_by_finance_and_the_player_sees_it() {
    let s = server_with(real_money, Clock::system()).await;
    let finance = s.member("eve", Role::Finance).await;
    let p = s.real_player("p-payout", 30).await;
    let (status, body) = s.call(&p, M::POST, "/api/wallet/withdrawals", Some(json!({ "amount_cents": 2_500 }))).await;
    assert_eq!(
        (status, body["balance_cents"].as_i64(), body["withdrawal"]["state"].as_str()),
        (StatusCode::OK, Some(500), Some("pending")),
        "{body}"
    );
    let (status, body) = s.call(&p, M::POST, "/api/wallet/withdrawals", Some(json!({ "amount_cents": 600 }))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("overdraft")), "{body}");
    let (_, page) = finance.get(&s, "/retraits").await;
    assert!(page.contains("25,00") && page.contains("p-payout"), "{page}");
    let id = body_id(&s, &p).await;
    assert_eq!(
        finance.post(&s, &format!("/retraits/{id}"), &[("decision", "payer"), ("reason", "virement VIR-0042")]).await.0,
        StatusCode::SEE_OTHER
    );
    let (_, mine) = s.call(&p, M::GET, "/api/wallet/withdrawals", None).await;
    assert_eq!(
        (mine[0]["state"].as_str(), mine[0]["reason"].as_str()),
        (Some("paid"), Some("virement VIR-0042")),
        "{mine}"
    );
    let report = s.ledger_check().await;
    assert!(report.blocks.iter().all(|b| b.stakes_balance == 0));
    let demo = default_server().await;
    let guest = demo.guest().await;
    let (status, body) =
        demo.call(&guest, M::POST, "/api/wallet/withdrawals", Some(json!({ "amount_cents": 100 }))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("demo_money")), "{body}");
}

async fn body_id(s: &Server, p: &Player) -> i64 {
    s.call(p, M::GET, "/api/wallet/withdrawals", None).await.1[0]["id"].as_i64().unwrap()
}

#[tokio::test]
async fn reports_say_what_they_are_on_screen_and_as_csv_and_say_when_nothing_happened() {
    let s = server_with(real_money, Clock::system()).await;
    let auditor = s.member("ida", Role::Auditor).await;
    let p = s.real_player("p-report", 50).await;
    assert_eq!(s.buy(&p, "auto", "k1").await.0, StatusCode::CREATED);
    s.call(&p, M::POST, "/api/wallet/withdrawals", Some(json!({ "amount_cents": 1_000 }))).await;
    let today = vegas::server::dates::iso_day(Clock::system().now());
    let answer =
        auditor.http.get(format!("{}/rapports/journalier?jour={today}&format=csv", s.admin)).send().await.unwrap();
    assert_eq!(answer.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(
        answer.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"vegas-journalier-")
    );
    let csv = answer.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "rapport;Résumé journalier des comptes joueurs");
    assert_eq!(lines[1], format!("période;{today} (00:00 à 24:00 UTC)"));
    assert!(lines[2].starts_with("généré le;") && lines[3].starts_with("version;vegas "), "{csv}");
    assert_eq!(lines[5], "joueur;nom;ouverture;dépôts;démo;mises;gains;retraits;ajustements;clôture;équilibré");
    let row = lines.iter().find(|l| l.starts_with("p-report;")).unwrap_or_else(|| panic!("{csv}"));
    let balance = s.balance(&p).await;
    assert_eq!(
        *row,
        format!(
            "p-report;(invité);0,00;50,00;0,00;3,00;{};10,00;0,00;{},{:02};oui",
            cents_csv(balance - 3_700),
            balance / 100,
            balance % 100
        )
    );
    let (status, page) = auditor.get(&s, "/rapports/journalier?jour=2020-01-01").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("Aucune activité.") && page.contains("2020-01-01 (00:00 à 24:00 UTC)") && page.contains("vegas "),
        "{page}"
    );
    let csv = auditor.get(&s, "/rapports/journalier?jour=2020-01-01&format=csv").await.1;
    assert!(csv.contains("\naucune activité\n"), "{csv}");
    let (_, liabilities) = auditor.get(&s, "/rapports/engagements").await;
    assert!(liabilities.contains("retraits en attente") && liabilities.contains("10,00"), "{liabilities}");
    assert_eq!(auditor.get(&s, "/rapports/journalier?jour=hier").await.0, StatusCode::BAD_REQUEST);
    let (_, blocks) = auditor.get(&s, "/rapports/blocs?format=csv").await;
    assert!(blocks.contains("E1-B1;en vente;1;1499999;3,00;"), "{blocks}");
}

/// Cents as the CSV writes them.
fn cents_csv(cents: i64) -> String {
    format!("{},{:02}", cents / 100, cents % 100)
}
