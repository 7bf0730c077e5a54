//! The real server binary as an attacker and a careless client meet it: bounded password hashing, rate
//! limits, connection timeouts and limits; and as an operator runs it: real money by default, funded
//! only through the wallet CLI.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod process;
}

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::process::{ServerProcess, private_dir, vegas, vegas_refused};

/// Rate limits out of the way, for the tests that are about something else.
const NO_RATE_LIMIT: [&str; 8] = [
    "--auth-burst",
    "100000",
    "--auth-per-minute",
    "100000",
    "--max-connections-per-client",
    "100000",
    "--new-connections-per-second",
    "100000",
];

/// A demo server on a fresh data directory with one block.
fn demo_server(dir: &tempfile::TempDir, extra: &[&str]) -> ServerProcess {
    vegas(dir.path(), &["emission", "create", "--blocks", "1"]);
    ServerProcess::start(dir.path(), &[&["--demo"], extra].concat())
}

fn credentials(name: &str, password: &str) -> Value {
    json!({ "name": name, "password": password })
}

/// The most memory the process has held (its peak resident set), in MiB.
fn peak_memory_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn a_real_money_server_mints_nothing_and_the_wallet_cli_funds_a_player() {
    let dir = private_dir();
    let data = dir.path().to_owned();
    vegas(&data, &["emission", "create", "--blocks", "1"]);
    let server = ServerProcess::start(&data, &[]);
    let (http, base) = (Client::new(), server.base());

    let (status, body) = send(http.post(format!("{base}/api/guest"))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("demo_off")), "no guest with free money");
    let identity = json!({"name": "alice", "password": "correct horse", "first_name": "Alice", "last_name": "Durand",
        "birth_date": "1985-07-14"});
    let response = http.post(format!("{base}/api/register")).json(&identity).send().await.unwrap();
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("vegas_session="))
        .unwrap();
    assert!(!cookie.contains("Secure"), "plain HTTP on loopback (a local run) keeps its cookie: {cookie}");
    let (status, body): (_, Value) = (response.status(), response.json().await.unwrap());
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["player"]["balance_cents"], 0, "a new player starts with nothing");
    assert_eq!(body["player"]["demo"], false);
    let token = body["token"].as_str().unwrap().to_owned();
    let (status, body) = send(
        http.post(format!("{base}/api/wallet/deposit")).bearer_auth(&token).json(&json!({"amount_cents": 10_000})),
    )
    .await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::CONFLICT, Some("demo_off")));
    let buy = |key: &str| {
        http.post(format!("{base}/api/tickets"))
            .bearer_auth(&token)
            .header("Idempotency-Key", key)
            .json(&json!({"mode": "auto"}))
    };
    let (status, body) = send(buy("first")).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("limits_required")), "{body}");
    let refused = vegas_refused(
        &data,
        &["wallet", "credit", "--player", "alice", "--amount", "10.50", "--reason", "bank transfer 4711"],
    );
    assert!(refused.contains("7-day deposit limit is not set"), "no money before the limits: {refused}");
    for flow in ["stake", "deposit"] {
        let limit = json!({"flow": flow, "span": "week", "amount_cents": 20_000});
        assert_eq!(
            send(http.put(format!("{base}/api/responsible/limits")).bearer_auth(&token).json(&limit)).await.0,
            StatusCode::OK
        );
    }
    assert_eq!(send(buy("first")).await.0, StatusCode::PAYMENT_REQUIRED);

    let out =
        vegas(&data, &["wallet", "credit", "--player", "alice", "--amount", "10.50", "--reason", "bank transfer 4711"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("10,50"), "the CLI prints the new balance");
    let (status, body) = send(buy("second")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["balance_cents"], 750);

    let refused =
        vegas_refused(&data, &["wallet", "debit", "--player", "alice", "--amount", "8", "--reason", "payout"]);
    assert!(refused.contains("not enough money"), "{refused}");
    let refused =
        vegas_refused(&data, &["wallet", "credit", "--player", "nobody", "--amount", "8", "--reason", "typo"]);
    assert!(refused.contains("no player"), "{refused}");
    vegas_refused(&data, &["wallet", "credit", "--player", "alice", "--amount", "-3", "--reason", "negative"]);
    let deck = data.join("deck.txt");
    std::fs::write(&deck, "40000\n").unwrap();
    let refused = vegas_refused(&data, &["serve", "--qa-deck", deck.to_str().unwrap()]);
    assert!(refused.contains("needs --demo"), "a real-money server sells no test ticket: {refused}");
    let id = body["ticket"]["id"].as_str().unwrap().to_owned();
    let (status, body) = send(http.post(format!("{base}/api/tickets/{id}/complete")).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after_win = body["balance_cents"].as_i64().unwrap();
    let amount = format!("{}.{:02}", after_win / 100, after_win % 100);
    vegas(&data, &["wallet", "debit", "--player", "alice", "--amount", &amount, "--reason", "payout"]);
    let (_, me) = send(http.get(format!("{base}/api/me")).bearer_auth(&token)).await;
    assert_eq!(me["balance_cents"], 0, "everything paid out");

    // A self-exclusion: no command lifts it, the operator's page shows it, the ban file closes the account.
    vegas(&data, &["wallet", "credit", "--player", "alice", "--amount", "5", "--reason", "bank transfer 4712"]);
    let exclusion = json!({"kind": "exclusion", "months": 6});
    assert_eq!(
        send(http.post(format!("{base}/api/responsible/pause")).bearer_auth(&token).json(&exclusion)).await.0,
        StatusCode::OK
    );
    let refused = vegas_refused(
        &data,
        &["wallet", "credit", "--player", "alice", "--amount", "5", "--reason", "bank transfer 4713"],
    );
    assert!(refused.contains("paused (exclusion)"), "{refused}");
    for lift in [
        &["player", "lift", "alice"][..],
        &["player", "unpause", "alice"],
        &["exclusions", "remove", "alice"],
        &["player", "show", "alice", "--lift"],
    ] {
        vegas_refused(&data, lift);
    }
    let page = String::from_utf8_lossy(&vegas(&data, &["player", "show", "alice"]).stdout).into_owned();
    assert!(
        page.contains("paused: exclusion until") && page.contains("limit_set") && page.contains("balance 5,00"),
        "{page}"
    );
    let ban_file = data.join("interdits.csv");
    std::fs::write(&ban_file, "nom;prenom;date_naissance\nDURAND;alice;14/07/1985\nAutre;Personne;01/01/1970\n")
        .unwrap();
    let out = String::from_utf8_lossy(&vegas(&data, &["exclusions", "import", ban_file.to_str().unwrap()]).stdout)
        .into_owned();
    assert!(
        out.contains("2 identities imported; 1 open account(s) matched")
            && out.contains("5,00")
            && out.contains("paid out"),
        "{out}"
    );
    let again = json!({"name": "alice2", "password": "correct horse", "first_name": "Alice", "last_name": "Durand",
        "birth_date": "1985-07-14"});
    let (status, body) = send(http.post(format!("{base}/api/register")).json(&again)).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("banned")), "{body}");

    // A command beside the live server leaves the WAL to it: it copies and empties nothing under the
    // server's writer (the copy of a crash's WAL is the server's, at its start).
    let wal = data.join("vegas.sqlite3-wal");
    let before = std::fs::metadata(&wal).unwrap().len();
    assert!(before > 0, "the server has written to its WAL");
    vegas(&data, &["ledger", "check"]);
    assert!(std::fs::metadata(&wal).unwrap().len() >= before, "`ledger check` beside the server emptied its WAL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_hundred_wrong_password_logins_at_once_hold_little_memory() {
    let dir = private_dir();
    let server = demo_server(&dir, &NO_RATE_LIMIT);
    let (http, base) = (Client::new(), server.base());
    let before = peak_memory_mib(server.pid());
    let mut logins = tokio::task::JoinSet::new();
    for i in 0..500 {
        let (http, base) = (http.clone(), base.clone());
        // Every name different, so that no per-account limit answers before the hash is tried.
        logins.spawn(async move {
            let response = http
                .post(format!("{base}/api/login"))
                .json(&credentials(&format!("nobody{i}"), "wrong password"))
                .send()
                .await
                .unwrap();
            (response.status(), response.headers().get("retry-after").is_some())
        });
    }
    let answers = logins.join_all().await;
    let peak = peak_memory_mib(server.pid());
    println!("peak memory: {before} MiB before, {peak} MiB after 500 concurrent logins");
    assert!(peak < 300, "the server held {peak} MiB");
    let refused = answers.iter().filter(|(s, _)| *s == StatusCode::UNAUTHORIZED).count();
    let busy = answers.iter().filter(|(s, retry)| *s == StatusCode::SERVICE_UNAVAILABLE && *retry).count();
    assert_eq!(refused + busy, 500, "each one refused, or told to come back later: {answers:?}");
    assert!(refused >= 2, "some were checked: {refused}");
    assert!(busy > 0, "some were told to come back later");
    // A refusal by design (busy, wrong password) is no fault: nothing of it is logged as an error, and
    // a first start is no crash.
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("a crash left"), "{log}");
}

#[tokio::test]
async fn logins_are_limited_per_name_at_an_address_and_new_sessions_per_address() {
    let dir = private_dir();
    let server = demo_server(&dir, &[]);
    let (http, base) = (Client::new(), server.base());
    let login = |password: &str| http.post(format!("{base}/api/login")).json(&credentials("alice", password));
    assert_eq!(
        http.post(format!("{base}/api/register"))
            .json(&credentials("alice", "correct horse"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    for _ in 0..5 {
        assert_eq!(login("wrong guess").send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    }
    let limited = login("correct horse").send().await.unwrap();
    assert_eq!(
        limited.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "after five wrong tries from this address even the right password waits"
    );
    let wait: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&wait), "Retry-After: {wait}");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited");

    // Per address: 20 new sessions at once (7 made above), then one every 3 s.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(http.post(format!("{base}/api/guest")).send().await.unwrap().status());
    }
    let made = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let limited = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
    assert_eq!((made, limited), (13, 7), "{statuses:?}");
}

#[tokio::test]
async fn an_unknown_name_is_refused_as_slowly_as_a_wrong_password() {
    let dir = private_dir();
    let server = demo_server(&dir, &NO_RATE_LIMIT);
    let (http, base) = (Client::new(), server.base());
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for i in 0..15 {
        let name = format!("known{i}");
        http.post(format!("{base}/api/register")).json(&credentials(&name, "correct horse")).send().await.unwrap();
        for (name, times) in [(name, &mut known), (format!("unknown{i}"), &mut unknown)] {
            let start = Instant::now();
            let status = http
                .post(format!("{base}/api/login"))
                .json(&credentials(&name, "wrong password"))
                .send()
                .await
                .unwrap()
                .status();
            times.push(start.elapsed());
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
    }
    let (known, unknown) = (median(&mut known), median(&mut unknown));
    println!("median refusal: known name {known:?}, unknown name {unknown:?}");
    assert!(unknown * 2 > known && known * 2 > unknown, "known {known:?} against unknown {unknown:?}");
}

/// Reads until the server closes the connection (or `limit` passes); how long that took.
fn closed_within(mut stream: TcpStream, limit: Duration) -> Duration {
    let start = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return start.elapsed(),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return start.elapsed(),
            Err(e) => panic!("still open after {:?}: {e}", start.elapsed()),
        }
    }
}

/// The timeouts these tests give the server: what they check is that each one is kept, not its length.
const HEADER_TIMEOUT: Duration = Duration::from_millis(1_000);
const BODY_TIMEOUT: Duration = Duration::from_millis(600);
const REQUEST_TIMEOUT: Duration = Duration::from_millis(2_000);
/// What a timeout may take beyond its length on a busy machine before it counts as not kept.
const GRACE: Duration = Duration::from_secs(5);

fn short_timeouts() -> [String; 6] {
    let written = |d: Duration| humantime::format_duration(d).to_string();
    [
        "--header-timeout".into(),
        written(HEADER_TIMEOUT),
        "--body-timeout".into(),
        written(BODY_TIMEOUT),
        "--request-timeout".into(),
        written(REQUEST_TIMEOUT),
    ]
}

#[tokio::test]
async fn slow_silent_and_idle_connections_are_closed_and_big_bodies_refused_at_once() {
    let dir = private_dir();
    let timeouts = short_timeouts();
    let server = demo_server(&dir, &timeouts.iter().map(String::as_str).collect::<Vec<_>>());
    let addr = server.addr.clone();
    let open = || TcpStream::connect(&addr).unwrap();
    let (header, body, request) = (HEADER_TIMEOUT, BODY_TIMEOUT, REQUEST_TIMEOUT);

    let silent = open();
    let mut slow_header = open();
    slow_header.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut idle = open();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let checks =
        [silent, slow_header, idle].map(|stream| std::thread::spawn(move || closed_within(stream, header + GRACE)));
    let login_start =
        "POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{";
    // A body that stops coming: answered 408 once no piece came for the body timeout.
    let mut stalled_body = open();
    stalled_body.write_all(login_start.as_bytes()).unwrap();
    let stalled_body = std::thread::spawn(move || answer_after(stalled_body, body + GRACE, |_| ()));
    // A body that trickles in, a byte within each body timeout: answered 408 once the whole request
    // took the request timeout.
    let mut trickle = open();
    trickle.write_all(login_start.as_bytes()).unwrap();
    let trickle = std::thread::spawn(move || {
        answer_after(trickle, request + GRACE, move |stream| {
            for _ in 0..50 {
                std::thread::sleep(body / 2);
                if stream.write_all(b" ").is_err() {
                    return;
                }
            }
        })
    });

    let mut huge = open();
    huge.write_all(
        b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \
        100000000\r\n\r\n0123456789",
    )
    .unwrap();
    huge.set_read_timeout(Some(GRACE)).unwrap();
    let mut answer = vec![0u8; 1024];
    let n = huge.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    // Answered before the body timeout: refused on its declared length, not after waiting for it.
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "a JSON error: {answer}");

    for (what, check) in ["silent", "slow header", "idle keep-alive"].into_iter().zip(checks) {
        let took = check.join().unwrap();
        println!("{what} connection closed after {took:?} (header timeout {header:?})");
        assert!(took >= header - Duration::from_millis(100), "{what}: closed after {took:?}, before the timeout");
    }
    for (what, check, timeout) in [("stalled body", stalled_body, body), ("trickled body", trickle, request)] {
        let (took, answer) = check.join().unwrap();
        println!("{what} answered after {took:?} (timeout {timeout:?})");
        assert!(answer.starts_with("HTTP/1.1 408") && answer.contains("timed_out"), "{what}: {answer}");
        assert!(took >= timeout - Duration::from_millis(100), "{what}: answered after {took:?}, before the timeout");
    }
}

/// Runs `send` on a clone of the stream, and reads the first answer; when it came, and what it says.
fn answer_after(
    mut stream: TcpStream,
    limit: Duration,
    send: impl FnOnce(&mut TcpStream) + Send + 'static,
) -> (Duration, String) {
    let start = Instant::now();
    let mut sender = stream.try_clone().unwrap();
    std::thread::spawn(move || send(&mut sender));
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut answer = vec![0u8; 2048];
    let n = stream.read(&mut answer).unwrap_or(0);
    (start.elapsed(), String::from_utf8_lossy(&answer[..n]).into_owned())
}

#[tokio::test]
async fn connections_past_the_limit_wait_and_the_server_keeps_answering() {
    let dir = private_dir();
    let timeouts = short_timeouts();
    let flags = [&["--max-connections", "40"][..], &timeouts.iter().map(String::as_str).collect::<Vec<_>>()].concat();
    let server = demo_server(&dir, &flags);
    let idle: Vec<TcpStream> = (0..90).map(|_| TcpStream::connect(&server.addr).unwrap()).collect();
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid())).unwrap().count();
    assert!(fds < 100, "the server holds {fds} descriptors for 90 idle connections");
    // Once the idle ones time out, the waiting ones are served in turn and a new client is answered.
    let start = Instant::now();
    let response =
        Client::new().get(format!("{}/healthz", server.base())).timeout(Duration::from_secs(60)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    println!("/healthz answered after {:?} behind 90 idle connections", start.elapsed());
    drop(idle);
}

/// Past its cap, an address's new connection is closed as soon as it is accepted; another address is
/// served all the same.
#[tokio::test]
async fn an_address_past_its_cap_has_its_new_connections_closed_and_others_do_not() {
    let dir = private_dir();
    let server = demo_server(&dir, &["--max-connections-per-client", "3"]);
    // From an address of their own: the start's health check (from 127.0.0.1) may still be held by the
    // server for a moment on a busy machine, and would take one of the three places.
    let from = |ip: &str| {
        let (ip, target): (std::net::IpAddr, std::net::SocketAddr) =
            (ip.parse().unwrap(), server.addr.parse().unwrap());
        async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind((ip, 0).into()).unwrap();
            socket.connect(target).await.unwrap()
        }
    };
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(from("127.0.0.2").await);
    }
    let mut fourth = from("127.0.0.2").await;
    // On a busy machine the server may take a while to accept; what must not happen is a close by the
    // header timeout (the server's default here), as a silent connection under the cap would get.
    let header = vegas::server::Timeouts::DEFAULT.header;
    let start = Instant::now();
    let read = tokio::time::timeout(header * 3, tokio::io::AsyncReadExt::read(&mut fourth, &mut [0u8; 16]))
        .await
        .expect("closed");
    assert!(
        matches!(&read, Ok(0)) || read.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "closed, not kept: {read:?}"
    );
    println!("a connection past the cap closed after {:?}", start.elapsed());
    assert!(start.elapsed() < header, "closed as accepted, not at the header timeout: {:?}", start.elapsed());
    for mut kept in held.drain(..2) {
        let read =
            tokio::time::timeout(Duration::from_millis(300), tokio::io::AsyncReadExt::read(&mut kept, &mut [0u8; 16]))
                .await;
        assert!(read.is_err(), "a connection under the cap is kept: {read:?}");
    }
    let other = Client::builder().local_address(Some("127.0.0.3".parse().unwrap())).build().unwrap();
    assert_eq!(other.get(format!("{}/healthz", server.base())).send().await.unwrap().status(), StatusCode::OK);
    drop(held);
    // Its places come back as the server sees its connections close (a moment, on a busy machine).
    let again = Client::builder().local_address(Some("127.0.0.2".parse().unwrap())).build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let back = loop {
        match again.get(format!("{}/healthz", server.base())).send().await {
            Ok(answer) => break answer.status(),
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("its places never came back: {e}"),
        }
    };
    assert_eq!(back, StatusCode::OK, "its places back");
}

/// Behind a proxy every client comes through the proxy's connections: what one forwarded address may
/// hold is its requests in flight.
#[tokio::test]
async fn behind_a_proxy_a_forwarded_address_past_its_cap_is_told_to_wait_and_others_are_served() {
    let dir = private_dir();
    let server = demo_server(&dir, &["--behind-proxy", "--max-connections-per-client", "1"]);
    // A request of 1.2.3.4 in flight: its body comes slowly.
    let mut slow = TcpStream::connect(&server.addr).unwrap();
    write!(
        slow,
        "POST /api/login HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 1.2.3.4\r\nContent-Type: \
        application/json\r\nContent-Length: 100\r\n\r\n{{\"na"
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let healthz = |forwarded: &'static str| {
        Client::new().get(format!("{}/healthz", server.base())).header("x-forwarded-for", forwarded).send()
    };
    let refused = healthz("1.2.3.4").await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(healthz("5.6.7.8").await.unwrap().status(), StatusCode::OK, "another address is served");
    drop(slow);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(healthz("1.2.3.4").await.unwrap().status(), StatusCode::OK, "its request over, its place back");
}

/// One address that opens 4 400 connections and keeps them open and silent, opening another as each
/// is closed, cannot keep another address from being answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_address_holding_thousands_of_connections_leaves_room_for_the_others() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    rlimit::increase_nofile_limit(12_000).unwrap();
    let dir = private_dir();
    let timeouts = short_timeouts();
    let server = demo_server(&dir, &timeouts.iter().map(String::as_str).collect::<Vec<_>>());
    let target: std::net::SocketAddr = server.addr.parse().unwrap();
    // Another address of the loopback range, a new connection for each request: the same 40 requests
    // before the attack and during it, spread over more than the header timeout (in which a silent
    // connection is closed and opened again).
    let other =
        Client::builder().local_address(Some("127.0.0.3".parse().unwrap())).pool_max_idle_per_host(0).build().unwrap();
    let spacing = HEADER_TIMEOUT * 2 / 40;
    let requests = async || {
        let mut times = Vec::new();
        for _ in 0..40 {
            let start = Instant::now();
            let answered =
                other.get(format!("{}/healthz", server.base())).timeout(Duration::from_secs(30)).send().await;
            times.push(start.elapsed());
            assert_eq!(answered.map(|r| r.status()).ok(), Some(StatusCode::OK), "after {:?}", start.elapsed());
            tokio::time::sleep(spacing).await;
        }
        times.sort();
        times
    };
    let calm = requests().await;
    let (attacking, opened) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
    // 4 400 sockets from 127.0.0.1, kept by 55 tasks of 80 each: those the server closes read as
    // ended, and are opened again at once.
    let mut attackers = tokio::task::JoinSet::new();
    for _ in 0..55 {
        let (attacking, opened) = (attacking.clone(), opened.clone());
        attackers.spawn(async move {
            let mut held: Vec<tokio::net::TcpStream> = Vec::new();
            while attacking.load(Ordering::Relaxed) {
                held.retain(|socket| {
                    matches!(socket.try_read(&mut [0u8; 1]), Err(e) if e.kind() ==
                    std::io::ErrorKind::WouldBlock)
                });
                while held.len() < 80 && attacking.load(Ordering::Relaxed) {
                    match tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(target)).await {
                        Ok(Ok(socket)) => held.push(socket),
                        _ => break,
                    }
                    opened.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
    while opened.load(Ordering::Relaxed) < 4_400 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let attacked = requests().await;
    attacking.store(false, Ordering::Relaxed);
    attackers.join_all().await;
    let median = |times: &[Duration]| times[times.len() / 2];
    println!(
        "{} connections opened from one address; 40 /healthz from another: median {:?} and slowest {:?} during the \
            attack, {:?} and {:?} before",
        opened.load(Ordering::Relaxed),
        median(&attacked),
        attacked.last().unwrap(),
        median(&calm),
        calm.last().unwrap()
    );
    // Every request answered (above), and none made to wait for a place the attacker held: without the
    // cap per address, a connection waits for the attacker's silent ones to time out (the header
    // timeout). The attack's own load on the two cores slows them all, which the figures above show.
    let header = HEADER_TIMEOUT;
    assert!(*attacked.last().unwrap() < header / 2, "{attacked:?} against {calm:?}");
}

#[tokio::test]
async fn a_fault_of_ours_is_a_generic_500_whose_request_id_the_log_carries_with_the_cause() {
    let dir = private_dir();
    let server = demo_server(&dir, &[]);
    let (http, base) = (Client::new(), server.base());
    let guest: Value = http.post(format!("{base}/api/guest")).send().await.unwrap().json().await.unwrap();
    let token = guest["token"].as_str().unwrap();
    // The store loses a table behind the server's back: nothing a client did, so a 500.
    rusqlite::Connection::open(dir.path().join("vegas.sqlite3"))
        .unwrap()
        .execute_batch("ALTER TABLE tickets RENAME TO tickets_gone")
        .unwrap();
    let response = http.get(format!("{base}/api/tickets")).bearer_auth(token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let request_id = response.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body = response.text().await.unwrap();
    let fault: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((fault["error"].as_str(), fault["request_id"].as_str()), (Some("internal"), Some(request_id.as_str())));
    assert!(
        !body.contains("tickets") && !body.contains("table") && !body.contains("database"),
        "no internal text: {body}"
    );
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains(&request_id))
        .unwrap_or_else(|| panic!("no log line with {request_id}:\n{log}"));
    assert!(line.contains("no such table"), "the cause is logged: {line}");
}

#[test]
fn the_data_directory_and_its_files_are_owner_only_and_looser_ones_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_dir();
    let data = dir.path().join("data");
    vegas(&data, &["emission", "create", "--blocks", "1"]);
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    let files: Vec<_> =
        std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().path()).filter(|p| !p.ends_with("server.log")).collect();
    assert!(files.iter().any(|f| f.ends_with("vegas.sqlite3")), "{files:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let chmod = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    chmod(&data.join("vegas.sqlite3"), 0o644);
    let refused = vegas_refused(&data, &["blocks", "list"]);
    assert!(refused.contains("chmod 600") && refused.contains("vegas.sqlite3"), "{refused}");
    chmod(&data.join("vegas.sqlite3"), 0o600);
    chmod(&data, 0o755);
    assert!(vegas_refused(&data, &["blocks", "list"]).contains("chmod 700"));
    chmod(&data, 0o700);
    vegas(&data, &["blocks", "list"]);
}

#[test]
fn a_file_limit_below_the_connection_limit_lowers_it_and_says_so() {
    let dir = private_dir();
    vegas(dir.path(), &["emission", "create", "--blocks", "1"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    // The hard limit too, so that the server cannot raise its soft limit past it.
    let mut server = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 400 && exec \"$0\" \"$@\""])
        .arg(support::process::binary())
        .arg("--data")
        .arg(dir.path())
        .args([
            "serve",
            "--demo",
            "--max-connections",
            "4096",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--admin-addr",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "warn")
        .stderr(log)
        .spawn()
        .unwrap();
    let read_log = || std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !read_log().contains("allows fewer connections") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = read_log();
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        log.contains("allows fewer connections") && log.contains("wanted=4096 slots=144"),
        "400 descriptors less 256 kept: {log}"
    );
}

/// `vegas audit verify` through the binary: it passes on a log its commands wrote, and once a row is
/// rewritten behind the log's back (its trigger dropped, as someone holding the database file could),
/// it fails and names that row.
#[test]
fn audit_verify_names_the_row_rewritten_behind_the_logs_back() {
    let data = private_dir();
    for (name, role) in [("ann", "admin"), ("bob", "finance"), ("cat", "support")] {
        let added = std::process::Command::new(support::process::binary())
            .arg("--data")
            .arg(data.path())
            .args(["staff", "add", name, "--role", role])
            .env("RUST_LOG", "warn")
            .env("VEGAS_STAFF_PASSWORD", "a long staff password")
            .output()
            .unwrap();
        assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
        assert!(String::from_utf8_lossy(&added.stdout).contains("otpauth://totp/"));
    }
    vegas(data.path(), &["staff", "role", "cat", "--role", "auditor", "--reason", "changement de poste"]);
    let verified = String::from_utf8(vegas(data.path(), &["audit", "verify"]).stdout).unwrap();
    assert!(verified.contains("audit log verified: 4 rows"), "{verified}");
    let shown = String::from_utf8(vegas(data.path(), &["audit", "show"]).stdout).unwrap();
    assert_eq!(shown.lines().count(), 4, "{shown}");
    assert!(shown.lines().all(|l| l.contains(" cli:")), "the command line is the actor: {shown}");

    let conn = rusqlite::Connection::open(data.path().join("vegas.sqlite3")).unwrap();
    let refused = conn.execute_batch("UPDATE audit_log SET reason = 'promotion' WHERE seq = 4");
    assert!(refused.is_err_and(|e| e.to_string().contains("append-only")));
    conn.execute_batch(
        "DROP TRIGGER audit_log_append_only_update; UPDATE audit_log SET reason = 'promotion' WHERE seq = 4",
    )
    .unwrap();
    drop(conn);
    let broken = vegas_refused(data.path(), &["audit", "verify"]);
    assert!(broken.contains("audit log broken: audit log row 4"), "{broken}");
}

/// The operator's CLI beside a server that sells: 50 `vegas wallet credit` while guests buy without a
/// pause, every one made (none refused for the server holding the store), and the purchases' latency
/// while they ran printed (a figure, not a target of this test: `make bench-server` measures it paced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_cli_credits_beside_a_selling_server_are_all_made() {
    const CREDITS: usize = 50;
    let dir = private_dir();
    let server = demo_server(&dir, &NO_RATE_LIMIT);
    let (http, base) = (Client::new(), server.base());
    let (status, body) =
        send(http.post(format!("{base}/api/register")).json(&credentials("payee", "correct horse"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    for flow in ["stake", "deposit"] {
        let limit = json!({ "flow": flow, "span": "week", "amount_cents": 1_000_000 });
        assert_eq!(
            send(http.put(format!("{base}/api/responsible/limits")).bearer_auth(&token).json(&limit)).await.0,
            StatusCode::OK
        );
    }
    let selling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut buyers = tokio::task::JoinSet::new();
    for b in 0..4 {
        let (http, base, selling) = (http.clone(), base.clone(), selling.clone());
        buyers.spawn(async move {
            let guest = send(http.post(format!("{base}/api/guest"))).await.1["token"].as_str().unwrap().to_owned();
            let mut latencies = Vec::new();
            for i in 0.. {
                if !selling.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let started = Instant::now();
                let buy = http
                    .post(format!("{base}/api/tickets"))
                    .bearer_auth(&guest)
                    .header("Idempotency-Key", format!("b{b}-{i}"))
                    .json(&json!({ "mode": "auto" }));
                let status = buy.send().await.unwrap().status();
                latencies.push(started.elapsed());
                if status == StatusCode::PAYMENT_REQUIRED {
                    let top_up = http
                        .post(format!("{base}/api/wallet/deposit"))
                        .bearer_auth(&guest)
                        .json(&json!({ "amount_cents": 10_000 }));
                    assert_eq!(top_up.send().await.unwrap().status(), StatusCode::OK);
                } else {
                    assert_eq!(status, StatusCode::CREATED);
                }
            }
            latencies
        });
    }
    let data = dir.path().to_owned();
    let credited = tokio::task::spawn_blocking(move || {
        (0..CREDITS)
            .map(|i| {
                let started = Instant::now();
                vegas(
                    &data,
                    &["wallet", "credit", "--player", "payee", "--amount", "1", "--reason", &format!("virement {i}")],
                );
                started.elapsed()
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    selling.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut latencies: Vec<Duration> = buyers.join_all().await.into_iter().flatten().collect();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    let slowest_credit = credited.iter().max().unwrap();
    // Straight to the process's stderr, past the test harness's capture: `make test` shows the figure.
    let figure = format!(
        "{CREDITS} CLI credits beside the server, none refused (slowest {slowest_credit:?}); {} purchases meanwhile: p50 \
            {:?}, p99 {:?}\n",
        latencies.len(),
        at(0.5),
        at(0.99)
    );
    std::io::stderr().write_all(figure.as_bytes()).unwrap();
    let me = send(http.get(format!("{base}/api/me")).bearer_auth(&token)).await.1;
    assert_eq!(
        me["balance_cents"],
        100 * CREDITS + 10_000,
        "the {CREDITS} credits, and the demo money an account starts with: {me}"
    );
    assert!(latencies.len() > 200, "the server sold all along: {}", latencies.len());
    let audit = String::from_utf8(vegas(dir.path(), &["audit", "show", "--limit", "1000"]).stdout).unwrap();
    assert_eq!(audit.matches("wallet_credited").count(), CREDITS);
}
