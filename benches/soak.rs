//! `make bench-soak`: one server, never restarted, under paced purchases for ten minutes — 5 000/s on
//! SQLite, then 2 000/s on PostgreSQL (`make bench-soak` starts a throw-away cluster) — to see whether
//! the latency at the end of a busy day is the latency at its start. Not in `make test`: about 25
//! minutes, some 4 000 000 purchases, all on loopback.
//!
//! 500 players buy on a schedule (open loop: a purchase's latency counts from its scheduled time). Of
//! each player's tickets, one in ten is « Auto » and completed at once, one in ten is « Jouez » with
//! three zones uncovered, and the rest are left unfinished: the server settles them 30 s after their
//! sale (`--settle-after 30`), so the settler credits some 4 500 tickets a second beside the sales.
//! Each player starts that cycle of ten at its own place, so that reveals and completions come at an
//! even rate: with every player in step, 500 reveals came in one tenth of each second and 500
//! completions in another, half a second later, and the slow purchases gathered there. The
//! windows start after a warm-up of 45 s, once settling has begun, so that each has the same work.
//! Every 30 s it prints the window's p50, p99 and max, its purchases slower than the target as the
//! load saw them and as the server timed them, the share of those that came in bursts (a tenth of a
//! second of the schedule holding 50 of them or more: something stalled them together), the commits
//! of the store's writer that took over 10 ms (the disk's fsync, as the sales feel it), the store's size, what
//! checkpoints copied into it, the
//! share of the pages the writer had to read (not in its cache), the write-ahead log's size, the
//! checkpoints run so far, the server's memory, the CPU time the host stole, how long tasks waited
//! for a CPU (the kernel's pressure stall information) and the disk's own fsync
//! latency (a probe beside the store); at the end, the purchases over the target per commit over
//! 10 ms (on SQLite), each window's p99 against the first, and `ledger check`.
//!
//! `VEGAS_SOAK_SECONDS` shortens the runs (to try a change; the figures that count are 600 s), and
//! `VEGAS_SOAK_STORE=sqlite` or `postgres` runs one of the two.

/// The load shares the server's two cores, so its own CPU is the server's loss: with glibc's allocator
/// malloc and free were a fifth of its samples. With the server's (and the answer's id read alone, not
/// a JSON tree) it took 0.22–0.24 cores instead of 0.25–0.27; with each player on a connection of its
/// own (`load::Line`), 0.20–0.22.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/load.rs"]
mod load;
#[path = "../tests/support/process.rs"]
mod process;

use load::{Line, Load, cpu_seconds, ms, players, report_first};
use process::{ServerProcess, private_dir, vegas};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;

const PLAYERS: usize = 500;
const WINDOW: Duration = Duration::from_secs(30);
const TARGET_P99: Duration = Duration::from_millis(25);
/// The last window's p99 may be this much above the first's.
const TARGET_DRIFT: f64 = 0.20;
/// Unfinished tickets are settled this long after their sale…
const SETTLE_AFTER: &str = "30";
/// …and the windows start once they are: every window measured has the same work, settling included.
const WARM_UP: Duration = Duration::from_secs(45);
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

/// Purchases a second on SQLite: `VEGAS_SOAK_RATE`, or 5 000 (what a host whose two cores the server
/// and the load share can sustain is in `docs/benchmarks.md`).
fn sqlite_rate() -> f64 {
    std::env::var("VEGAS_SOAK_RATE").ok().and_then(|s| s.parse().ok()).unwrap_or(5_000.0)
}

fn soak_length() -> Duration {
    Duration::from_secs(std::env::var("VEGAS_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600))
}

/// The schedule's stretches in which purchases slower than the target are counted together…
const STRETCH: Duration = Duration::from_millis(100);
/// …and a stretch holding this many of them (of the 500 due in it) is a burst.
const BURST: u32 = 50;

/// Latencies of the purchases scheduled in each window, the failed ones, and the purchases slower
/// than the target by stretch of the schedule.
#[derive(Default)]
struct Windows {
    latencies: Vec<Vec<Duration>>,
    failed: usize,
    slow_by_stretch: std::collections::HashMap<u64, u32>,
}

impl Windows {
    /// A purchase's latency (`None`: it failed) in its window (`None`: the warm-up, whose failures
    /// count all the same), scheduled `since_start` after the load began.
    fn record(&mut self, window: Option<usize>, since_start: Duration, latency: Option<Duration>) {
        match (window, latency) {
            (_, None) => self.failed += 1,
            (None, Some(_)) => {}
            (Some(window), Some(latency)) => {
                if self.latencies.len() <= window {
                    self.latencies.resize_with(window + 1, Vec::new);
                }
                self.latencies[window].push(latency);
                if latency > TARGET_P99 {
                    *self.slow_by_stretch.entry((since_start.as_millis() / STRETCH.as_millis()) as u64).or_default() +=
                        1;
                }
            }
        }
    }

    /// The slow purchases scheduled between `from` and `to` (since the load began) that came in bursts,
    /// and the bursts.
    fn in_bursts(&self, from: Duration, to: Duration) -> (u32, usize) {
        let stretches = (from.as_millis() / STRETCH.as_millis()) as u64..(to.as_millis() / STRETCH.as_millis()) as u64;
        let bursts: Vec<u32> = self
            .slow_by_stretch
            .iter()
            .filter(|(s, n)| stretches.contains(s) && **n >= BURST)
            .map(|(_, n)| *n)
            .collect();
        (bursts.iter().sum(), bursts.len())
    }
}

/// p50, p99 and max of one window.
fn spread(latencies: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let at = |q: f64| {
        sorted
            .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    (at(0.5), at(0.99), sorted.last().copied().unwrap_or_default())
}

/// What a window's line says of the store, read at the window's end.
enum Store {
    /// The data folder, and the server's counters at the last window's end.
    Sqlite(std::path::PathBuf, std::cell::Cell<SqliteCounters>),
    Postgres(tokio_postgres::Client),
}

/// What the SQLite store had done so far: bytes checkpoints copied into the database, pages its writer
/// found in its cache and pages it read, commits slower than [`SLOW_COMMIT`].
#[derive(Clone, Copy, Default)]
struct SqliteCounters {
    copied: f64,
    cached: f64,
    read: f64,
    slow_commits: f64,
}

fn mib(bytes: f64) -> String {
    format!("{:.0} MiB", bytes / 1_048_576.0)
}

/// A value of the server's `/metrics` (0 if absent).
async fn metric(http: &reqwest::Client, admin: &str, series: &str) -> f64 {
    let text = http.get(format!("http://{admin}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// How many of a histogram's observations (those whose labels include `labels`) took more than `limit`
/// so far, from the server's `/metrics` (`limit` is one of its buckets).
async fn observed_over(http: &reqwest::Client, admin: &str, histogram: &str, labels: &[&str], limit: Duration) -> f64 {
    let text = http.get(format!("http://{admin}/metrics")).send().await.unwrap().text().await.unwrap();
    let value = |series: String, le: Option<String>| {
        text.lines()
            .filter(|l| l.starts_with(&series) && labels.iter().all(|label| l.contains(label)))
            .find(|l| le.as_ref().is_none_or(|le| l.contains(le)))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let within = value(format!("{histogram}_bucket"), Some(format!("le=\"{}\"", limit.as_secs_f64())));
    value(format!("{histogram}_count"), None) - within
}

/// The SQLite writer's commits that took over [`SLOW_COMMIT`] so far.
async fn slow_commits(http: &reqwest::Client, admin: &str) -> f64 {
    observed_over(http, admin, "vegas_sqlite_commit_seconds", &[], SLOW_COMMIT).await
}

/// Purchases the server answered in more than `limit` so far, by its own clock (its latency histogram):
/// beside the load's count, it says how much of a window's tail was spent outside the server.
async fn served_slower_than(http: &reqwest::Client, admin: &str, limit: Duration) -> f64 {
    observed_over(
        http,
        admin,
        "vegas_http_request_duration_seconds",
        &["route=\"/api/tickets\"", "method=\"POST\""],
        limit,
    )
    .await
}

/// A commit of the SQLite store's writer this slow holds up every sale behind it: after one, the
/// writer works off the queue that built up while the players' requests keep coming.
const SLOW_COMMIT: Duration = Duration::from_millis(10);

/// The disk's own commit latency beside the server's: a 4 KiB write and `fdatasync` every 10 ms to a
/// file in the store's folder. A window whose purchases' tail rises with the probe's was slowed by
/// the disk under the store, not by the store's work.
struct DiskProbe {
    samples: Arc<Mutex<Vec<(std::time::Instant, Duration)>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl DiskProbe {
    fn start(folder: &std::path::Path) -> DiskProbe {
        use std::io::{Seek, Write};
        let probe = DiskProbe { samples: Default::default(), stop: Default::default() };
        let (samples, stop) = (probe.samples.clone(), probe.stop.clone());
        let mut file = std::fs::File::create(folder.join("disk-probe")).unwrap();
        std::thread::spawn(move || {
            let page = [0x5a_u8; 4096];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let started = std::time::Instant::now();
                file.rewind().and_then(|_| file.write_all(&page)).and_then(|_| file.sync_data()).unwrap();
                samples.lock().unwrap().push((started, started.elapsed()));
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        probe
    }

    /// The p99 and max of the probe's commits that started between `from` and `to`.
    fn window(&self, from: std::time::Instant, to: std::time::Instant) -> (Duration, Duration) {
        let latencies: Vec<Duration> =
            self.samples.lock().unwrap().iter().filter(|(at, _)| (from..to).contains(at)).map(|(_, l)| *l).collect();
        let (_, p99, max) = spread(&latencies);
        (p99, max)
    }
}

impl Drop for DiskProbe {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// CPU time the hypervisor gave other guests while this machine's processes were ready to run, so
/// far: a window whose tail grows with it was slowed by the host, not by the store.
fn stolen_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    // cpu user nice system idle iowait irq softirq steal…, in 1/100 s.
    stat.lines().next().and_then(|l| l.split_whitespace().nth(8)?.parse::<f64>().ok()).map_or(0.0, |ticks| ticks * 10.0)
}

impl Store {
    async fn describe(&self, http: &reqwest::Client, admin: &str) -> String {
        match self {
            Store::Sqlite(data, before) => {
                let size = |name: &str| std::fs::metadata(data.join(name)).map_or(0, |m| m.len()) as f64;
                // What the passes wrote into the database this window (the pages changed, each once a
                // pass), and the share of the pages the writer looked at that were not in its cache.
                let now = SqliteCounters {
                    copied: metric(http, admin, "vegas_sqlite_checkpoint_written_bytes_total").await,
                    cached: metric(http, admin, "vegas_sqlite_writer_pages_total{from=\"cache\"}").await,
                    read: metric(http, admin, "vegas_sqlite_writer_pages_total{from=\"file\"}").await,
                    slow_commits: slow_commits(http, admin).await,
                };
                let was = before.replace(now);
                let (cached, read) = (now.cached - was.cached, now.read - was.read);
                let checkpoints = metric(http, admin, "vegas_sqlite_checkpoint_pause_seconds_count").await;
                let paused = metric(http, admin, "vegas_sqlite_checkpoint_pause_seconds_sum").await;
                // Frames of 1 KiB pages (and their 24-byte headers): the log's length, not its file's.
                let frames = metric(http, admin, "vegas_sqlite_wal_frames").await;
                format!(
                    "commits over {} {:>3}  store {:>9}  copied back {:>8}  writer's cache misses {:>4.1} %  WAL {:>8} \
                        (file {:>8})  checkpoints {:>3} ({:.0} ms paused)",
                    ms(SLOW_COMMIT),
                    now.slow_commits - was.slow_commits,
                    mib(size("vegas.sqlite3")),
                    mib(now.copied - was.copied),
                    100.0 * read / (cached + read).max(1.0),
                    mib(frames * 1048.0),
                    mib(size("vegas.sqlite3-wal")),
                    checkpoints,
                    paused * 1000.0
                )
            }
            Store::Postgres(client) => {
                let row = client
                    .query_one(
                        "SELECT CAST(pg_database_size(current_database()) AS float8), CAST(pg_current_wal_lsn() - \
                            '0/0' AS float8), \
                         CAST(checkpoints_timed + checkpoints_req AS float8) FROM pg_stat_bgwriter",
                        &[],
                    )
                    .await
                    .unwrap();
                let (size, wal, checkpoints): (f64, f64, f64) = (row.get(0), row.get(1), row.get(2));
                let waiting = metric(http, admin, "vegas_db_pool_waiting").await;
                format!(
                    "store {:>9}  WAL written {:>9}  checkpoints {checkpoints:>3}  pool waiting {waiting}",
                    mib(size),
                    mib(wal)
                )
            }
        }
    }
}

/// Microseconds so far in which some runnable task of this machine waited for a CPU (the kernel's
/// pressure stall information): a window whose p50 rises with it ran on a machine short of CPU,
/// whatever the store did.
fn cpu_pressure_us() -> f64 {
    let pressure = std::fs::read_to_string("/proc/pressure/cpu").unwrap_or_default();
    pressure
        .lines()
        .find(|l| l.starts_with("some"))
        .and_then(|l| l.rsplit("total=").next()?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Resident memory of a process, from /proc.
fn memory(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0);
    mib(kib * 1024.0)
}

/// The soak: `rate` purchases a second for `length`, windows printed as they end. Returns whether
/// every target was met.
async fn soak(server: &ServerProcess, store: Store, rate: f64, length: Duration, p99_target: Option<Duration>) -> bool {
    let load = Arc::new(Load::new(server));
    let disk = DiskProbe::start(&server.data);
    let http = reqwest::Client::new();
    // Enough money for every ticket, wins aside: 3 € a ticket, 100 € a top-up.
    let tickets_each = (rate * (WARM_UP + length).as_secs_f64() / PLAYERS as f64).ceil() as usize;
    let top_ups = tickets_each * 3 / 100 + 2;
    println!("  setting up {PLAYERS} players with {top_ups} top-ups of 100 € each…");
    let tokens = players(&load, PLAYERS, |_| top_ups).await;
    let windows = Arc::new(Mutex::new(Windows::default()));
    let period = Duration::from_secs_f64(PLAYERS as f64 / rate);
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let mut buyers = JoinSet::new();
    for (p, token) in tokens.into_iter().enumerate() {
        let (mut line, windows) = (Line::new(server, &token), windows.clone());
        let mut next = start + period.mul_f64(p as f64 / PLAYERS as f64);
        buyers.spawn(async move {
            let mut n = 0usize;
            while next < start + WARM_UP + length {
                tokio::time::sleep_until(next).await;
                // `None` during the warm-up: not measured.
                let window = next
                    .checked_duration_since(start + WARM_UP)
                    .map(|since| (since.as_secs_f64() / WINDOW.as_secs_f64()) as usize);
                let key = format!("soak-{p}-{n}");
                let mode = if (n + p) % 10 == 5 { "auto" } else { "jouez" };
                let bought = line.buy_ticket(&key, mode).await;
                let latency = bought.as_ref().ok().map(|_| next.elapsed());
                if let Err(e) = &bought {
                    report_first(windows.lock().unwrap().failed, e);
                }
                windows.lock().unwrap().record(window, next - start, latency);
                // The player's play, after the purchase: not counted in its latency.
                if let Ok(ticket) = bought {
                    let played = match (n + p) % 10 {
                        0 => line.reveal(&ticket, &[0, 1, 2]).await,
                        5 => line.complete(&ticket).await,
                        _ => Ok(()),
                    };
                    if let Err(e) = played {
                        eprintln!("    playing a ticket failed: {e}");
                    }
                }
                next += period;
                n += 1;
            }
        });
    }
    let count = (length.as_secs_f64() / WINDOW.as_secs_f64()).ceil() as usize;
    println!("  {:>8}  {:>8} {:>8} {:>8}  {:>7}", "window", "p50", "p99", "max", "sold");
    // The counters' baselines at the first window's start: the warm-up's work is not a window's.
    tokio::time::sleep_until(start + WARM_UP).await;
    store.describe(&http, &server.admin).await;
    let (mut server_cpu, mut load_cpu, mut settled) = (
        cpu_seconds(server.pid()),
        cpu_seconds(std::process::id()),
        metric(&http, &server.admin, "vegas_tickets_settled_total").await,
    );
    let (mut served_slow, mut stolen, mut pressure) =
        (served_slower_than(&http, &server.admin, TARGET_P99).await, stolen_ms(), cpu_pressure_us());
    let (slow_commits_before, mut slow_in_all) = (slow_commits(&http, &server.admin).await, 0);
    let mut disk_maxes = Vec::with_capacity(count);
    for w in 0..count {
        // A window is printed once the purchases scheduled in it are answered (a second's grace).
        tokio::time::sleep_until(start + WARM_UP + WINDOW * (w as u32 + 1) + Duration::from_secs(1)).await;
        let (latencies, failed) = {
            let windows = windows.lock().unwrap();
            (windows.latencies.get(w).cloned().unwrap_or_default(), windows.failed)
        };
        let (p50, p99, max) = spread(&latencies);
        let about = store.describe(&http, &server.admin).await;
        let (server_now, load_now) = (cpu_seconds(server.pid()), cpu_seconds(std::process::id()));
        let settled_now = metric(&http, &server.admin, "vegas_tickets_settled_total").await;
        let (served_slow_now, stolen_now, pressure_now) =
            (served_slower_than(&http, &server.admin, TARGET_P99).await, stolen_ms(), cpu_pressure_us());
        let slow = latencies.iter().filter(|l| **l > TARGET_P99).count();
        slow_in_all += slow;
        let (in_bursts, bursts) =
            windows.lock().unwrap().in_bursts(WARM_UP + WINDOW * w as u32, WARM_UP + WINDOW * (w as u32 + 1));
        let window_start = (start + WARM_UP + WINDOW * w as u32).into_std();
        let (disk_p99, disk_max) = disk.window(window_start, window_start + WINDOW);
        disk_maxes.push(disk_max);
        println!(
            "  {:>4}–{:<3} {:>8} {:>8} {:>8}  {:>7}  over {} {:>5} (in the server {:>5}, in bursts {:>3.0} % in {:>2}) \
                 settled {:>6.0}  {about}  server {} {:.2} cores, load {:.2}, host stole {:.0} ms, tasks waited for a \
                 CPU {:.0} % of the time, disk's fsync p99 {} max {}{}",
            w * 30,
            (w + 1) * 30,
            ms(p50),
            ms(p99),
            ms(max),
            latencies.len(),
            ms(TARGET_P99),
            slow,
            served_slow_now - served_slow,
            100.0 * f64::from(in_bursts) / slow.max(1) as f64,
            bursts,
            settled_now - settled,
            memory(server.pid()),
            (server_now - server_cpu) / WINDOW.as_secs_f64(),
            (load_now - load_cpu) / WINDOW.as_secs_f64(),
            stolen_now - stolen,
            (pressure_now - pressure) / 1e6 / WINDOW.as_secs_f64() * 100.0,
            ms(disk_p99),
            ms(disk_max),
            if failed > 0 { format!("  {failed} failed so far") } else { String::new() }
        );
        (server_cpu, load_cpu, settled, served_slow, stolen, pressure) =
            (server_now, load_now, settled_now, served_slow_now, stolen_now, pressure_now);
    }
    buyers.join_all().await;
    if let Store::Sqlite(..) = store {
        // What one stalled commit costs the players, whatever the host's disk did this run.
        let stalled = slow_commits(&http, &server.admin).await - slow_commits_before;
        println!(
            "  purchases over {} per commit over {}: {:.0} ({slow_in_all} in {stalled:.0})",
            ms(TARGET_P99),
            ms(SLOW_COMMIT),
            slow_in_all as f64 / stalled.max(1.0)
        );
    }
    let settled = metric(&http, &server.admin, "vegas_tickets_settled_total").await;
    let backlog = metric(&http, &server.admin, "vegas_settler_backlog_tickets").await;
    let windows = windows.lock().unwrap();
    let p99s: Vec<Duration> = windows.latencies.iter().map(|l| spread(l).1).collect();
    let first = p99s[0].as_secs_f64();
    let ratios: Vec<String> = p99s.iter().map(|p| format!("{:.2}", p.as_secs_f64() / first)).collect();
    println!("  each window's p99 ÷ the first's: {}", ratios.join(" "));
    println!(
        "  settled by the server during the soak: {settled:.0} tickets; due and not settled at the end: {backlog:.0}"
    );
    let last = p99s.last().unwrap().as_secs_f64();
    let drift_met = last <= first * (1.0 + TARGET_DRIFT);
    println!(
        "  last window's p99 within 20 % of the first's ({} → {}): {}",
        ms(p99s[0]),
        ms(*p99s.last().unwrap()),
        verdict(drift_met)
    );
    let mut met = drift_met && windows.failed == 0;
    if let Some(target) = p99_target {
        let worst = p99s.iter().max().copied().unwrap_or_default();
        println!("  every window's p99 under {}: worst {} ({})", ms(target), ms(worst), verdict(worst < target));
        met &= worst < target;
        // Not a verdict: no store answers a durable purchase while the disk holds its flush, so the
        // windows in which the probe saw the disk hold one longer than the target are set apart.
        let calm: Vec<Duration> =
            p99s.iter().zip(&disk_maxes).filter(|(_, disk)| **disk <= target).map(|(p99, _)| *p99).collect();
        println!(
            "  of the {} windows in which the disk's probe saw no fsync over {}, {} had a p99 under it (worst {})",
            calm.len(),
            ms(target),
            calm.iter().filter(|p99| **p99 < target).count(),
            ms(calm.iter().max().copied().unwrap_or_default())
        );
    }
    println!("  failed purchases: {} ({})", windows.failed, verdict(windows.failed == 0));
    met
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn main() {
    let length = soak_length();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let only = std::env::var("VEGAS_SOAK_STORE").ok();
    if only.as_deref() != Some("postgres") {
        soak_sqlite(&runtime, length);
    }
    if only.as_deref() != Some("sqlite") {
        soak_postgres(&runtime, length);
    }
}

fn soak_sqlite(runtime: &tokio::runtime::Runtime, length: Duration) {
    let dir = private_dir();
    let data = dir.path();
    // Enough tickets for the whole soak, made before it starts.
    let rate = sqlite_rate();
    let blocks = ((rate * length.as_secs_f64()) / 1_500_000.0).ceil() as usize + 1;
    vegas(data, &["emission", "create", "--blocks", &blocks.to_string()]);
    let server =
        ServerProcess::start(data, &[&OUT_OF_THE_WAY[..], &["--demo", "--settle-after", SETTLE_AFTER]].concat());
    println!(
        "soak: `vegas serve` on SQLite (synchronous=FULL), never restarted, {rate} purchases/s for {} s",
        length.as_secs()
    );
    let sqlite_met = runtime.block_on(soak(
        &server,
        Store::Sqlite(data.to_owned(), Default::default()),
        rate,
        length,
        Some(TARGET_P99),
    ));
    drop(server);
    let check = vegas(data, &["ledger", "check"]);
    println!("  ledger check: {}", String::from_utf8_lossy(&check.stdout).lines().next().unwrap_or_default());
    println!("  SQLite soak targets: {}", verdict(sqlite_met));
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-soak.log");
    if std::fs::copy(data.join("server.log"), log).is_ok() {
        println!("  the server's log: {log}");
    }
}

fn soak_postgres(runtime: &tokio::runtime::Runtime, length: Duration) {
    let Ok(admin_url) = std::env::var("VEGAS_TEST_DATABASE") else {
        println!("PostgreSQL: skipped (no VEGAS_TEST_DATABASE; `make bench-soak` starts a cluster)");
        return;
    };
    runtime.block_on(async {
        let (admin, connection) = tokio_postgres::connect(&admin_url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        admin.batch_execute("CREATE DATABASE soak").await.unwrap();
    });
    let url = format!("{}/soak", admin_url.rsplit_once('/').unwrap().0);
    let dir = private_dir();
    let data = dir.path();
    let pg_blocks = ((2_000.0 * length.as_secs_f64()) / 1_500_000.0).ceil() as usize + 1;
    vegas(data, &["--database", &url, "emission", "create", "--blocks", &pg_blocks.to_string()]);
    let server = ServerProcess::start(
        data,
        &[&OUT_OF_THE_WAY[..], &["--demo", "--settle-after", SETTLE_AFTER, "--database", &url]].concat(),
    );
    println!(
        "soak: `vegas serve` on PostgreSQL (synchronous_commit=on), never restarted, 2 000 purchases/s for {} s",
        length.as_secs()
    );
    let pg_met = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        soak(&server, Store::Postgres(client), 2_000.0, length, None).await
    });
    drop(server);
    let check = vegas(data, &["--database", &url, "ledger", "check"]);
    println!("  ledger check: {}", String::from_utf8_lossy(&check.stdout).lines().next().unwrap_or_default());
    println!("  PostgreSQL soak targets: {}", verdict(pg_met));
}
