//! `make bench-server`: purchases per second and their latency, against the real server binary on
//! loopback (SQLite, `synchronous=FULL`: every purchase answered is on disk), with load from other
//! processes: wrk (C, for closed loops, so that the load costs the server's two cores little) and this
//! one (for paced runs). Bounded: about six minutes in all, some 1 600 000 purchases.
//!
//! - `GET /healthz` in the same run, for scale: purchases/s ÷ healthz/s.
//! - Closed loop (each player buys again as soon as answered, `benches/wrk/buy.lua`) at 50 and 500
//!   players: the most the server sustains. Its latency is what that load queues up to: with 500
//!   players always waiting on an answer, latency is 500 ÷ the rate, whatever the server.
//! - Paced (open loop) at 500 players buying 5 000 tickets/s together: each purchase is scheduled,
//!   and its latency counts from its scheduled time (so a slow answer also delays the next ones and is
//!   charged to them, not hidden). Targets: ≥ 5 000 purchases/s, p99 < 25 ms.
//! - The same paced run again while the server settles 20 000 tickets that fall due a few seconds into
//!   it, against a run as long with nothing due, both on a server just restarted and warmed up by two
//!   seconds of the same load; five such pairs, alternating. Targets: the median pair adds less than
//!   10 ms to the p99, and credits the 20 000 at 5 000/s or more.
//! - The operator's commands beside the live server: `vegas ledger check` and `vegas wallet credit`,
//!   one after the other, during a paced run, against a paced run as long without them; three pairs.
//!   Target: each command succeeds, and the median pair adds less than 10 ms to the p99.
//! - A player with 20 000 tickets buys as fast as a new one.
//! - With a PostgreSQL server at hand (`make bench-server` starts one, `VEGAS_TEST_DATABASE`), the
//!   closed loop and a paced run again, through 1 and then 2 instances on it. Target: ≥ 2 000 durable
//!   purchases/s through 2 instances.

#[path = "support/load.rs"]
mod load;
#[path = "../tests/support/process.rs"]
mod process;

use load::{Load, Run, cpu_seconds, ms, players, report_first};
use process::{ServerProcess, private_dir, vegas};
use reqwest::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

const PLAYERS: usize = 500;
/// The server's limits per client, out of the way of a load that comes from one address.
const OUT_OF_THE_WAY: [&str; 8] = [
    "--auth-burst",
    "100000",
    "--auth-per-minute",
    "100000",
    "--max-connections-per-client",
    "100000",
    "--new-connections-per-second",
    "100000",
];
const TARGET_RATE: f64 = 5_000.0;
const TARGET_P99: Duration = Duration::from_millis(25);
const HEAVY_TICKETS: usize = 20_000;
const RUN: Duration = Duration::from_secs(5);
/// How long the run that settles 20 000 due tickets lasts; they must all be settled by its end.
const SETTLE_RUN: Duration = Duration::from_secs(25);
/// Pairs of runs, one with nothing due and one settling: a 25 s run's p99 moves by tens of ms on this
/// shared machine, and drifts over minutes, which the median of neighbouring pairs sees through.
const SETTLE_PAIRS: usize = 5;
/// Paced load a restarted server gets before a measured run: its first second (new connections, the
/// block's lots and proofs readied, empty caches) is the restart's, not settling's.
const WARM_UP: Duration = Duration::from_secs(2);
/// The server's `--settle-after`, in seconds.
const SETTLE_AFTER: i64 = 600;
/// The 20 000 tickets fall due this long after the restart: once the server is warm, early in the
/// measured run. The settler, asleep until the oldest unsettled ticket falls due, wakes for them.
const DUE_IN: Duration = Duration::from_secs(4);

/// The middle of the values (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

impl Load {
    /// A new player who has bought `HEAVY_TICKETS` tickets and finished none: its token and id.
    async fn heavy_player(self: &Arc<Self>) -> (String, String) {
        let token = self.guest().await;
        let me: Value = self
            .http
            .get(format!("{}/api/me", self.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        self.top_up(&token, HEAVY_TICKETS * 3 / 100 + 10).await;
        let mut buying = JoinSet::new();
        for lane in 0..64 {
            let (load, token) = (self.clone(), token.clone());
            buying.spawn(async move {
                for n in (lane..HEAVY_TICKETS).step_by(64) {
                    load.buy(&token, &format!("heavy-{n}")).await.unwrap();
                }
            });
        }
        buying.join_all().await;
        (token, me["id"].as_str().unwrap().to_owned())
    }
}

/// How long each run of a pair with and without the operator's commands lasts, and how many pairs.
const BESIDE_RUN: Duration = Duration::from_secs(10);
const BESIDE_PAIRS: usize = 3;

/// The operator's commands run beside the server, one after the other with a second between, until
/// `stop`: each one's time, and those that failed with why.
fn operator_commands(
    data: &std::path::Path,
    player: &str,
    stop: &std::sync::atomic::AtomicBool,
) -> (Vec<(&'static str, Duration)>, Vec<String>) {
    let (mut timed, mut failed) = (Vec::new(), Vec::new());
    let commands: [(&str, Vec<&str>); 2] = [
        ("ledger check", vec!["ledger", "check"]),
        (
            "wallet credit",
            vec![
                "wallet",
                "credit",
                "--player",
                player,
                "--amount",
                "1.00",
                "--reason",
                "bench: the operator beside the server",
            ],
        ),
    ];
    for (name, args) in commands.iter().cycle() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let started = Instant::now();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_vegas"))
            .arg("--data")
            .arg(data)
            .args(args)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        timed.push((*name, started.elapsed()));
        if !output.status.success() {
            failed.push(format!("{name}: {}", String::from_utf8_lossy(&output.stderr).trim()));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    (timed, failed)
}

/// Paced runs with the operator's commands beside them against runs as long without; prints each pair
/// and the median p99 added.
async fn beside_operator(load: &Arc<Load>, tokens: &[String], data: &std::path::Path, player: &str) {
    let mut added = Vec::new();
    let mut clean = true;
    for pair in 0..BESIDE_PAIRS {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let quiet =
            paced_for(std::slice::from_ref(load), tokens, TARGET_RATE, &format!("p-quiet-{pair}"), BESIDE_RUN).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let operator = {
            let (data, player, stop) = (data.to_owned(), player.to_owned(), stop.clone());
            tokio::task::spawn_blocking(move || operator_commands(&data, &player, &stop))
        };
        let busy =
            paced_for(std::slice::from_ref(load), tokens, TARGET_RATE, &format!("p-operator-{pair}"), BESIDE_RUN).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (timed, failed) = operator.await.unwrap();
        let difference = busy.percentile(0.99).as_secs_f64() - quiet.percentile(0.99).as_secs_f64();
        println!("  {:<48} {}", "same, nothing beside", quiet.line());
        println!("  {:<48} {}", "same, the operator's commands beside", busy.line());
        let slowest = |name: &str| timed.iter().filter(|(n, _)| *n == name).map(|(_, t)| *t).max().unwrap_or_default();
        println!(
            "    {} commands ({} failed), slowest ledger check {}, slowest wallet credit {}; p99 {:+.1} ms against the \
                run before",
            timed.len(),
            failed.len(),
            ms(slowest("ledger check")),
            ms(slowest("wallet credit")),
            difference * 1000.0
        );
        for why in &failed {
            println!("    failed: {why}");
        }
        clean &= failed.is_empty() && busy.errors == 0 && quiet.errors == 0;
        added.push(difference);
    }
    let median_added = median(added);
    println!(
        "  ledger check and wallet credit beside the server, p99 added (median of {BESIDE_PAIRS} pairs): {:+.1} ms, \
            every command and purchase answered: {} (target < 10 ms: {})",
        median_added * 1000.0,
        if clean { "yes" } else { "NO" },
        verdict(median_added < 0.010 && clean)
    );
}

/// Players together buy `rate` tickets a second, each on its own schedule and through instance
/// `player % instances`; a latency counts from the purchase's scheduled time.
async fn paced(loads: &[Arc<Load>], tokens: &[String], rate: f64, label: &str) -> Run {
    paced_for(loads, tokens, rate, label, RUN).await
}

async fn paced_for(loads: &[Arc<Load>], tokens: &[String], rate: f64, label: &str, length: Duration) -> Run {
    let period = Duration::from_secs_f64(tokens.len() as f64 / rate);
    let start = tokio::time::Instant::now() + Duration::from_millis(20);
    let mut players = JoinSet::new();
    for (p, token) in tokens.iter().enumerate() {
        let (load, token, label) = (loads[p % loads.len()].clone(), token.clone(), label.to_owned());
        let mut next = start + period.mul_f64(p as f64 / tokens.len() as f64);
        players.spawn(async move {
            let (mut latencies, mut errors, mut n) = (Vec::new(), 0, 0);
            while next < start + length {
                tokio::time::sleep_until(next).await;
                match load.buy(&token, &format!("{label}-{p}-{n}")).await {
                    Ok(()) => latencies.push(next.elapsed()),
                    Err(e) => errors += usize::from(report_first(errors, &e)),
                }
                next += period;
                n += 1;
            }
            (latencies, errors)
        });
    }
    gather(players, start.into_std()).await
}

async fn gather(players: JoinSet<(Vec<Duration>, usize)>, start: Instant) -> Run {
    let mut run = Run::default();
    for (latencies, errors) in players.join_all().await {
        run.latencies.extend(latencies);
        run.errors += errors;
    }
    run.elapsed = start.elapsed();
    run
}

/// What wrk measured: requests/s, p50 and p99, and the answers that were not 2xx.
struct Wrk {
    rate: f64,
    p50: Duration,
    p99: Duration,
    failed: u64,
}

impl Wrk {
    /// Several wrk runs at once, one per instance: their rates add up, their latencies are the worst.
    fn together(runs: Vec<Wrk>) -> Wrk {
        Wrk {
            rate: runs.iter().map(|r| r.rate).sum(),
            p50: runs.iter().map(|r| r.p50).max().unwrap_or_default(),
            p99: runs.iter().map(|r| r.p99).max().unwrap_or_default(),
            failed: runs.iter().map(|r| r.failed).sum(),
        }
    }

    fn line(&self) -> String {
        let failed = if self.failed > 0 { format!("  ({} failed)", self.failed) } else { String::new() };
        format!("{:>7.0}/s  p50 {:>7}  p99 {:>7}{failed}", self.rate, ms(self.p50), ms(self.p99))
    }
}

/// Runs wrk (one thread) against the server and reads its report.
fn wrk(base: &str, connections: usize, seconds: u64, script: Option<(&std::path::Path, &str)>) -> Wrk {
    let mut command = std::process::Command::new("wrk");
    command.args(["-t1", &format!("-c{connections}"), &format!("-d{seconds}s"), "--latency"]);
    match script {
        Some((tokens, prefix)) => {
            let lua = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/wrk/buy.lua");
            command.args(["-s", lua, base, "--"]).arg(tokens).arg(prefix);
        }
        None => _ = command.arg(format!("{base}/healthz")),
    }
    let output = command.output().expect("wrk is installed (make bench-server installs it)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "wrk failed: {report}{}", String::from_utf8_lossy(&output.stderr));
    let field =
        |prefix: &str| report.lines().map(str::trim).find_map(|l| l.strip_prefix(prefix)).map(str::trim).unwrap_or("0");
    let duration = |text: &str| {
        let (number, unit) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len()));
        let number: f64 = number.parse().unwrap_or(0.0);
        Duration::from_secs_f64(
            number
                * match unit {
                    "us" => 1e-6,
                    "ms" => 1e-3,
                    "s" => 1.0,
                    "m" => 60.0,
                    _ => 0.0,
                },
        )
    };
    Wrk {
        rate: field("Requests/sec:").parse().unwrap_or(0.0),
        p50: duration(field("50%")),
        p99: duration(field("99%")),
        failed: field("Non-2xx or 3xx responses:").parse().unwrap_or(0),
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// Tickets of `player` not yet credited, read from the store's file.
fn unsettled(data: &std::path::Path, player: &str) -> i64 {
    let conn = rusqlite::Connection::open(data.join("vegas.sqlite3")).unwrap();
    conn.query_row("SELECT COUNT(*) FROM tickets WHERE player_id = ?1 AND credited_at IS NULL", [player], |r| r.get(0))
        .unwrap()
}

/// Three paced runs, each from a quiet server (what the run before queued up is not charged to it):
/// the median one, as this shared machine's noise moves any one run.
async fn median_paced(load: &Arc<Load>, tokens: &[String], pid: u32, what: &str, label: &str) -> Run {
    let mut runs = Vec::new();
    for round in 1..=3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (cpu, own) = (cpu_seconds(pid), cpu_seconds(std::process::id()));
        let run = paced(std::slice::from_ref(load), tokens, TARGET_RATE, &format!("{label}-{round}")).await;
        let cores = (cpu_seconds(pid) - cpu) / run.elapsed.as_secs_f64();
        let load_cores = (cpu_seconds(std::process::id()) - own) / run.elapsed.as_secs_f64();
        println!(
            "  {:<48} {}  server {cores:.2} cores, load {load_cores:.2}",
            format!("paced at 5 000/s, {what} ({round})"),
            run.line()
        );
        runs.push(run);
    }
    runs.sort_by_key(|run| run.percentile(0.99));
    let median = runs.swap_remove(1);
    println!("  {:<48} {}", "  the median run", median.line());
    median
}

/// Sets all six limits of every player, far above what the benchmark stakes or deposits.
async fn limit_every_player(load: &Arc<Load>, tokens: &[String]) {
    let mut setting = JoinSet::new();
    for token in tokens {
        let (load, token) = (load.clone(), token.clone());
        setting.spawn(async move {
            for flow in ["stake", "deposit"] {
                for span in ["day", "week", "month"] {
                    let limit = serde_json::json!({ "flow": flow, "span": span, "amount_cents": 10_000_000 });
                    let r = load
                        .http
                        .put(format!("{}/api/responsible/limits", load.base))
                        .bearer_auth(&token)
                        .json(&limit)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), StatusCode::OK);
                }
            }
        });
    }
    setting.join_all().await;
}

/// Each instance's share of the players, in a file for wrk.
fn token_files(dir: &std::path::Path, label: &str, tokens: &[String], instances: usize) -> Vec<std::path::PathBuf> {
    (0..instances)
        .map(|i| {
            let path = dir.join(format!("tokens-{label}-{i}.txt"));
            let share: Vec<&str> = tokens.iter().skip(i).step_by(instances).map(String::as_str).collect();
            std::fs::write(&path, share.join("\n") + "\n").unwrap();
            path
        })
        .collect()
}

/// Purchases in a closed loop through every instance at once, `connections` in all.
fn closed_loop(servers: &[ServerProcess], connections: usize, files: &[std::path::PathBuf], label: &str) -> Wrk {
    std::thread::scope(|scope| {
        let runs: Vec<_> = servers
            .iter()
            .zip(files)
            .enumerate()
            .map(|(i, (server, file))| {
                let prefix = format!("{label}-{i}");
                scope.spawn(move || {
                    wrk(&server.base(), connections / servers.len(), RUN.as_secs(), Some((file, &prefix)))
                })
            })
            .collect();
        Wrk::together(runs.into_iter().map(|r| r.join().unwrap()).collect())
    })
}

/// The same load through 1 and then 2 instances sharing one PostgreSQL database.
fn postgres(admin_url: &str, runtime: &tokio::runtime::Runtime, sqlite_closed: &Wrk, sqlite_paced: &Run) {
    println!(
        "PostgreSQL (the cluster of `make bench-server`: fsync and synchronous_commit on, so every answered purchase \
            is durable)"
    );
    println!("  {:<48} {}", "SQLite, 500 players, closed loop (above)", sqlite_closed.line());
    println!("  {:<48} {}", "SQLite, paced at 5 000/s (above)", sqlite_paced.line());
    let mut through_two = 0.0;
    for instances in [1, 2] {
        let database = runtime.block_on(async {
            let (admin, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let name = format!("bench_{instances}");
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).await.unwrap();
            admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
            format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0)
        });
        let dir = private_dir();
        vegas(dir.path(), &["--database", &database, "emission", "create", "--blocks", "1"]);
        let servers: Vec<ServerProcess> = (0..instances)
            .map(|_| {
                ServerProcess::start(dir.path(), &[&OUT_OF_THE_WAY[..], &["--demo", "--database", &database]].concat())
            })
            .collect();
        let loads: Vec<Arc<Load>> = servers.iter().map(|s| Arc::new(Load::new(s))).collect();
        let tokens = runtime.block_on(players(&loads[0], PLAYERS, |_| 10));
        let files = token_files(dir.path(), "pg", &tokens, instances);
        let closed = closed_loop(&servers, PLAYERS, &files, &format!("pg{instances}"));
        println!("  {:<48} {}", format!("{instances} instance(s), 500 players, closed loop (wrk)"), closed.line());
        let paced_run = runtime.block_on(paced(&loads, &tokens, 2_000.0, &format!("pgp{instances}")));
        println!("  {:<48} {}", format!("{instances} instance(s), 500 players paced at 2 000/s"), paced_run.line());
        if instances == 2 {
            through_two =
                closed.rate.max(paced_run.rate()) * f64::from(u8::from(closed.failed == 0 && paced_run.errors == 0));
        }
        drop(servers);
        vegas(dir.path(), &["--database", &database, "ledger", "check"]);
    }
    println!(
        "  target, ≥ 2 000 durable purchases/s through 2 instances: {} ({through_two:.0}/s); ledger checks passed",
        verdict(through_two >= 2_000.0)
    );
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn main() {
    let dir = private_dir();
    let data = dir.path();
    vegas(data, &["emission", "create", "--blocks", "2"]);
    let mut server = ServerProcess::start(
        data,
        &[&OUT_OF_THE_WAY[..], &["--demo", "--settle-after", &SETTLE_AFTER.to_string()]].concat(),
    );
    // The load runs on one thread, so that the server has the rest of the machine.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (sqlite_closed, sqlite_paced) = runtime.block_on(async {
        let load = Arc::new(Load::new(&server));
        println!(
            "server load benchmark: `vegas serve` on loopback, SQLite with synchronous=FULL (every answered \
            purchase is durable)"
        );
        println!("  setting up {PLAYERS} players and {SETTLE_PAIRS} with {HEAVY_TICKETS} tickets each…");
        // Enough for every run: the operator's pairs alone buy 600 tickets a player.
        let tokens = players(&load, PLAYERS, |p| if p < 50 { 185 } else { 120 }).await;
        // Each leaves its tickets unfinished, for one settling run; the first also buys on afterwards.
        let mut heavy_players = Vec::new();
        for _ in 0..SETTLE_PAIRS {
            heavy_players.push(load.heavy_player().await);
        }
        let (heavy, _) = heavy_players[0].clone();

        let pid = server.pid();
        let (tokens50, tokens500) =
            (token_files(data, "50", &tokens[..50], 1).remove(0), token_files(data, "500", &tokens, 1).remove(0));
        let closed = |label: &str, connections: usize, script: Option<(&std::path::Path, &str)>| {
            let cpu = cpu_seconds(pid);
            let seconds = if script.is_some() { RUN.as_secs() } else { 3 };
            let run = wrk(&server.base(), connections, seconds, script);
            let cores = (cpu_seconds(pid) - cpu) / seconds as f64;
            println!("  {label:<48} {}  server {cores:.2} cores", run.line());
            run
        };
        let health = closed("GET /healthz, 50 connections (wrk)", 50, None);
        let closed50 = closed("purchases, 50 players, closed loop (wrk)", 50, Some((&tokens50, "c50")));
        let closed500 = closed("purchases, 500 players, closed loop (wrk)", 500, Some((&tokens500, "c500")));
        let steady = median_paced(&load, &tokens, pid, "no limits", "p1").await;
        // The same with every limit set on every player (24 h, 7 and 30 days of stakes and deposits),
        // high enough never to refuse: each sale then checks all three windows in its debit.
        println!("  setting every limit of every player…");
        let heavy_tokens: Vec<String> = heavy_players.iter().map(|(token, _)| token.clone()).collect();
        limit_every_player(&load, &[tokens.clone(), heavy_tokens].concat()).await;
        let limited = median_paced(&load, &tokens, pid, "limits on every player", "p2").await;
        println!(
            "  paced p99, the median run: {} without limits, {} with limits on every player",
            ms(steady.percentile(0.99)),
            ms(limited.percentile(0.99))
        );
        println!(
            "  purchases/s ÷ healthz/s: {:.1} % (50 players), {:.1} % (500 players)",
            100.0 * closed50.rate / health.rate,
            100.0 * closed500.rate / health.rate
        );
        let sustained = closed500.rate.max(steady.rate());
        let met = sustained >= TARGET_RATE
            && steady.percentile(0.99).max(limited.percentile(0.99)) < TARGET_P99
            && steady.errors + limited.errors == 0
            && closed500.failed == 0;
        println!("  target at 500 players, ≥ 5 000 durable purchases/s with p99 < 25 ms: {}", verdict(met));
        beside_operator(&load, &tokens, data, &heavy_players[0].1).await;

        // Settling is measured on a server just restarted and warmed up, against a run as long on a
        // server restarted and warmed up the same way with nothing due. Pairs of the two alternate, each
        // settling run with its own player's 20 000 tickets falling due.
        let mut added = Vec::new();
        let mut all_settled = true;
        let mut settle_rates = Vec::new();
        let mut load = load.clone();
        for (pair, (_, heavy_id)) in heavy_players.iter().enumerate() {
            server.kill();
            server.restart();
            load = Arc::new(Load::new(&server));
            paced_for(std::slice::from_ref(&load), &tokens, TARGET_RATE, &format!("p-warm-cold-{pair}"), WARM_UP).await;
            let cold =
                paced_for(std::slice::from_ref(&load), &tokens, TARGET_RATE, &format!("p-cold-{pair}"), SETTLE_RUN)
                    .await;
            println!(
                "  {:<48} {}",
                format!(
                    "same, restarted, nothing due ({:.0} \
                s)",
                    cold.elapsed.as_secs_f64()
                ),
                cold.line()
            );
            // This player's tickets fall due `DUE_IN` from now: the server finds them at its next start.
            server.kill();
            let due_at = Instant::now() + DUE_IN;
            let sold_at = unix_now() + DUE_IN.as_secs() as i64 - SETTLE_AFTER;
            let conn = rusqlite::Connection::open(data.join("vegas.sqlite3")).unwrap();
            conn.execute(
                "UPDATE tickets SET sold_at = ?1 WHERE player_id = \
                ?2",
                rusqlite::params![sold_at, heavy_id],
            )
            .unwrap();
            drop(conn);
            let due = unsettled(data, heavy_id);
            server.restart();
            load = Arc::new(Load::new(&server));
            let pid = server.pid();
            paced_for(std::slice::from_ref(&load), &tokens, TARGET_RATE, &format!("p-warm-settle-{pair}"), WARM_UP)
                .await;
            // The settler paces itself (a batch, a breath): the run lasts long enough for all of it.
            let run_ends = Instant::now() + SETTLE_RUN;
            let watch = {
                let (data, heavy_id) = (data.to_owned(), heavy_id.clone());
                tokio::task::spawn_blocking(move || {
                    while unsettled(&data, &heavy_id) > 0 && Instant::now() < run_ends {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Instant::now().saturating_duration_since(due_at)
                })
            };
            let cpu = cpu_seconds(pid);
            let settling =
                paced_for(std::slice::from_ref(&load), &tokens, TARGET_RATE, &format!("p-settle-{pair}"), SETTLE_RUN)
                    .await;
            let cores = (cpu_seconds(pid) - cpu) / settling.elapsed.as_secs_f64();
            let settled_in = watch.await.unwrap();
            let left = unsettled(data, heavy_id);
            all_settled &= left == 0 && settling.errors == 0;
            let difference = settling.percentile(0.99).as_secs_f64() - cold.percentile(0.99).as_secs_f64();
            println!(
                "  {:<48} {}  server {cores:.2} cores",
                format!("same, restarted, settling {due} due tickets ({:.0} s)", settling.elapsed.as_secs_f64()),
                settling.line()
            );
            let rate = (due - left) as f64 / settled_in.as_secs_f64();
            println!(
                "    {} tickets settled within {:.1} s of falling due ({rate:.0}/s), during the run; p99 {:+.1} ms \
                    against the run before",
                due - left,
                settled_in.as_secs_f64(),
                difference * 1000.0
            );
            added.push(difference);
            settle_rates.push(rate);
        }
        let median_rate = median(settle_rates);
        println!(
            "  settling 20 000 due tickets while sales go on (median of {SETTLE_PAIRS} pairs): {median_rate:.0}/s \
                (target ≥ 5 000/s: {})",
            verdict(median_rate >= 5_000.0)
        );
        let median_added = median(added);
        println!(
            "  settling 20 000 due tickets, p99 added (median of {SETTLE_PAIRS} pairs): {:+.1} ms (target < 10 ms: {})",
            median_added * 1000.0,
            verdict(median_added < 0.010 && all_settled)
        );

        // One purchase at a time, the player with 20 000 tickets and a new player in turn, so that both
        // meet the same moments of the server (a checkpoint, the machine's other work).
        let fresh = load.guest().await;
        load.top_up(&fresh, 10).await;
        let (mut heavy_run, mut fresh_run) = (Run::default(), Run::default());
        for n in 0..300 {
            for (token, run, label) in [(&heavy, &mut heavy_run, "seq-heavy"), (&fresh, &mut fresh_run, "seq-new")] {
                let sent = Instant::now();
                load.buy(token, &format!("{label}-{n}")).await.unwrap();
                run.latencies.push(sent.elapsed());
                run.elapsed += sent.elapsed();
            }
        }
        println!("  {:<48} {}", format!("one at a time, a player with {HEAVY_TICKETS} tickets"), heavy_run.line());
        println!("  {:<48} {}", "one at a time, a new player", fresh_run.line());
        let ratio = heavy_run.percentile(0.5).as_secs_f64() / fresh_run.percentile(0.5).as_secs_f64();
        println!("  p50 ratio, 20 000 tickets ÷ new: {ratio:.2} (as fast: {})", verdict(ratio < 1.25));
        (closed500, steady)
    });
    drop(server);
    vegas(data, &["ledger", "check"]);
    println!("  ledger check after the run: passed");
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-server.log");
    if std::fs::copy(data.join("server.log"), log).is_ok() {
        println!("  the server's log: {log}");
    }
    match std::env::var("VEGAS_TEST_DATABASE") {
        Ok(url) => postgres(&url, &runtime, &sqlite_closed, &sqlite_paced),
        Err(_) => println!("PostgreSQL: skipped (no VEGAS_TEST_DATABASE; `make bench-server` starts a cluster)"),
    }
}
