//! The stream's newest-first queries alone, on a store the stream built:
//! the read path measured without the background work that follows an
//! ingestion.
//!
//! ```text
//! evendb-bench --engine evendb --workload stream --records 5000000 --duration 10 \
//!     --memory-limit 1G --dir /tmp/keep --keep-data
//! cargo run --release -p evendb-bench --example latest_events -- \
//!     /tmp/keep/evendb-bench-data-*-evendb-stream 6
//! ```
//!
//! Opens the store read-only (no background work) with a memory budget of
//! 256 MiB (or the third argument, in MiB), picks apps with the stream's
//! popularity (60,000 apps, or the fourth argument), and asks each for its latest 1,000 events,
//! newest first (`prefix(app).rev().take(1000)`), for 4 s to warm up, then
//! for the number of seconds given. Prints queries per second, events per
//! query, bytes the process read per query (`rchar` of `/proc/self/io`:
//! page cache and device alike), and latency percentiles, one thread.

use anyhow::Context;
use evendb_bench::generator::{AppPopularity, Stream};
use std::time::{Duration, Instant};

/// Events a query asks for (the stream's longest scan).
const EVENTS: usize = 1000;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, secs, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: latest_events <store dir> <seconds> [budget MiB] [apps]");
    };
    let secs: f64 = secs.parse().context("seconds")?;
    let budget_mib: u64 = match rest.first() {
        Some(b) => b.parse().context("budget")?,
        None => 256,
    };
    let apps: u64 = match rest.get(1) {
        Some(a) => a.parse().context("apps")?,
        None => 60_000,
    };
    let db = evendb::Options::default()
        .read_only(true)
        .memory_budget(budget_mib << 20)
        .open(dir)?;
    let mut popularity = AppPopularity::new(apps)?;
    let mut rng = fastrand::Rng::with_seed(7);
    let mut query = |lat: Option<&mut Vec<Duration>>| -> anyhow::Result<usize> {
        let app = popularity.next_app(&mut rng);
        let start = Instant::now();
        let mut n = 0;
        for kv in db.prefix(Stream::app_prefix(app)).rev().take(EVENTS) {
            kv?;
            n += 1;
        }
        if let Some(lat) = lat {
            lat.push(start.elapsed());
        }
        Ok(n)
    };
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(4) {
        query(None)?;
    }
    let read_before = rchar()?;
    let (start, mut events, mut lat) = (Instant::now(), 0, Vec::new());
    while start.elapsed().as_secs_f64() < secs {
        events += query(Some(&mut lat))?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let read = rchar()? - read_before;
    lat.sort_unstable();
    let q = lat.len().max(1);
    let at = |p: f64| lat[((q as f64 * p) as usize).min(q - 1)].as_secs_f64() * 1e3;
    println!(
        "queries/s {:.0}  events/query {:.0}  KiB read/query {:.0}  p50 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms",
        q as f64 / elapsed,
        events as f64 / q as f64,
        read as f64 / q as f64 / 1024.0,
        at(0.5),
        at(0.99),
        at(0.999),
        at(1.0),
    );
    Ok(())
}

/// Bytes this process has read so far (`/proc/self/io`).
fn rchar() -> anyhow::Result<u64> {
    let io = std::fs::read_to_string("/proc/self/io").context("/proc/self/io")?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .context("no rchar in /proc/self/io")?
        .trim()
        .parse()
        .context("rchar")
}
