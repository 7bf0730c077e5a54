//! `cargo bench --bench block`: one full block of 1 500 000 tickets, timed by phase, with peak memory.
//! Goal: shuffle + compose + evaluate + commit in under 3 s on the 2-core reference machine.

use std::time::Instant;
use vegas::block::{Block, audit, shuffled_lots};
use vegas::composer::Design;
use vegas::rules::prize_table::BLOCK_SIZE;

/// Peak resident memory of this process (Linux `VmHWM`), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let design = Design::default_design();
    let seed = [0x5E; 32];
    let threads = rayon::current_num_threads();

    let start = Instant::now();
    let lots = shuffled_lots(&seed);
    let shuffle = start.elapsed();
    drop(lots);

    let start = Instant::now();
    let block = Block::make(&design, 1, 1, &seed).expect("the shipped design makes blocks");
    let make = start.elapsed();

    let start = Instant::now();
    let report = audit(&design, 1, 1, &seed, &block.commitment()).expect("a fresh block audits");
    let audit_time = start.elapsed();

    let per_s = f64::from(BLOCK_SIZE) / make.as_secs_f64();
    println!("block of {} tickets on {threads} threads", report.tickets);
    println!("  shuffle alone                     {:>8.3} s", shuffle.as_secs_f64());
    println!(
        "  make (shuffle+compose+eval+root)  {:>8.3} s  ({per_s:.0} tickets/s)  goal < 3 s: {}",
        make.as_secs_f64(),
        if make.as_secs_f64() < 3.0 { "met" } else { "MISSED" }
    );
    println!("  audit (recompute + checks)        {:>8.3} s", audit_time.as_secs_f64());
    match peak_rss_mib() {
        Some(mib) => println!("  peak memory (VmHWM)               {mib:>8.1} MiB"),
        None => println!("  peak memory: not available on this platform"),
    }
}
