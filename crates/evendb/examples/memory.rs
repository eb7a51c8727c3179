//! Memory against the budget: loads records, then runs a mixed workload
//! (gets, puts, scans over skewed key ranges), printing every second the
//! memory the store accounts for, its peak, and the process's resident set
//! size. At the end it prints the peak accounted memory, which must never
//! pass the budget (the example fails if it does), and the peak resident
//! set size (`VmHWM`), which also holds what the budget does not cover:
//! the binary, thread stacks, log write buffers, and the memory the
//! allocator keeps after it was freed (glibc keeps freed memory in
//! per-thread arenas; the store hands it back with `malloc_trim`, see
//! `Options::trim_freed_memory`).
//!
//! ```text
//! cargo run --release -p evendb --example memory -- [budget_mib] [records] [seconds]
//! ```
//!
//! Defaults: a 128 MiB budget, 400,000 records of 800 bytes (about 3x the
//! budget), 30 seconds of mixed work.

use evendb::{Db, Options};
use std::time::{Duration, Instant};

/// A figure of `/proc/self/status` in bytes (0 where there is none).
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn rss_bytes() -> u64 {
    status_bytes("VmRSS:")
}

fn peak_rss_bytes() -> u64 {
    status_bytes("VmHWM:")
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn report(db: &Db, phase: &str, start: Instant) {
    let s = db.stats();
    println!(
        "{phase:>6} {:>5.1}s  accounted {:>6.1} MiB (peak {:>6.1}, budget {:>6.1})  munks {:>6.1}  row {:>5.1}  filters {:>5.1}  indexes {:>5.1}  rss {:>6.1} MiB",
        start.elapsed().as_secs_f64(),
        s.memory_used as f64 / 1048576.0,
        s.memory_peak as f64 / 1048576.0,
        s.memory_budget as f64 / 1048576.0,
        s.memory_munks as f64 / 1048576.0,
        s.memory_row_cache as f64 / 1048576.0,
        s.memory_filters as f64 / 1048576.0,
        s.memory_indexes as f64 / 1048576.0,
        rss_bytes() as f64 / 1048576.0,
    );
}

fn main() -> evendb::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let budget = args.first().copied().unwrap_or(128) << 20;
    let records = args.get(1).copied().unwrap_or(400_000);
    let seconds = args.get(2).copied().unwrap_or(30);
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Options::default().memory_budget(budget).open(dir.path())?;
    let value = vec![0x5Au8; 800];
    let start = Instant::now();
    let mut next = Instant::now();
    for i in 0..records {
        db.put(key(i * 7919 % records), &value)?;
        if Instant::now() >= next {
            report(&db, "load", start);
            next += Duration::from_secs(1);
        }
    }
    report(&db, "load", start);
    let stop = Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let db = db.clone();
            let value = &value;
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(t + 1);
                while Instant::now() < stop {
                    // Skewed: a few hot ranges, as with composite keys.
                    let hot = rng.u64(0..100) < 80;
                    let base = if hot {
                        rng.u64(0..records / 20)
                    } else {
                        rng.u64(0..records)
                    };
                    let k = key(base);
                    match rng.u8(0..10) {
                        0..=4 => drop(db.get(&k)),
                        5..=7 => drop(db.put(&k, value)),
                        _ => drop(db.scan(k..).take(50).count()),
                    }
                }
            });
        }
        while Instant::now() < stop {
            std::thread::sleep(Duration::from_secs(1));
            report(&db, "mixed", start);
        }
    });
    let s = db.stats();
    let mib = |b: u64| b as f64 / 1048576.0;
    println!(
        "peak accounted {:.1} MiB of a {:.1} MiB budget; peak rss {:.1} MiB ({:.2}x the budget); final rss {:.1} MiB; {} trims of freed memory, {:.1} ms in all",
        mib(s.memory_peak),
        mib(s.memory_budget),
        mib(peak_rss_bytes()),
        peak_rss_bytes() as f64 / s.memory_budget as f64,
        mib(rss_bytes()),
        s.memory_trims,
        s.memory_trim_micros as f64 / 1000.0,
    );
    if s.memory_peak > s.memory_budget {
        eprintln!("accounted memory passed the budget");
        std::process::exit(1);
    }
    Ok(())
}
