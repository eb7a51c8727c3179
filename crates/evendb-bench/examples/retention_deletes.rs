//! Retention deletes on evendb and RocksDB: one app's events dropped by one
//! range delete, another's key by key, half the store by one range delete;
//! then reads of what was deleted, and the space each engine gives back.
//!
//! ```text
//! cargo run --release -p evendb-bench --example retention_deletes -- --dir /tmp/rd
//! cargo run --release -p evendb-bench --features rocksdb --example retention_deletes -- \
//!     --engine evendb,rocksdb --dir /tmp/rd --json rd.json
//! ```
//!
//! Per engine, in a directory of its own under `--dir` (removed at the
//! end): loads `--apps` apps (100) × `--events` events (10,000) keyed
//! `app{:05}|{timestamp:012}` with values of `--value-size` bytes (100,
//! `--value-kind random` by default: incompressible), in time order (each
//! event of every app, then the next), and compacts everything (the
//! "before" size). Then times:
//!
//! 1. app 1 deleted by one range delete (`[app00001|, app00002|)`);
//! 2. app 2 deleted key by key (`--events` deletes);
//! 3. apps 50-99 deleted by one range delete (`[app00050|, app00100|)`);
//! 4. reads of deleted data: gets of random deleted keys of each deleted
//!    app, and scans of each deleted app's prefix (up to 1,000 records),
//!    which must find nothing; a get and a 1,000-event scan of a live app
//!    for comparison;
//! 5. a flush (for evendb a checkpoint, after which its background work
//!    reclaims the deletes: chunks inside a deleted range dropped, the
//!    others rebuilt), the wait until evendb reports no range delete left
//!    (at most 30 s; none for RocksDB), and the reads of step 4 again;
//! 6. reclaiming: evendb `compact` (every chunk rebuilt); RocksDB
//!    `compact_range` over each deleted range;
//! 7. the reads of step 4 again;
//! 8. the engine closed and opened again (evendb's munks are then empty,
//!    so reads go to the rebuilt tables), and the reads once more.
//!
//! Disk bytes (allocated under the store's directory) after the load, after
//! the deletes and after reclaiming. Both engines are opened as the harness
//! opens them (`evendb` defaults; `rocksdb` = benchmark.sh's leveled
//! configuration), with the memory budget `--cache-size` (256 MiB) and LZ4
//! table compression in both (`--peer-compression lz4`, evendb's default),
//! buffered durability.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use clap::Parser;
use evendb_bench::engines::{self, Engine, EngineConfig, EngineKind, PeerCompression};
use evendb_bench::generator::{ValueKind, Values};
use evendb_bench::measure::disk_usage;
use serde::Serialize;

#[derive(Parser, Debug)]
struct Args {
    /// Engines, comma-separated: evendb, rocksdb, rocksdb-universal,
    /// rocksdb-default (RocksDB ones need `--features rocksdb`).
    #[arg(long, value_delimiter = ',', default_value = "evendb")]
    engine: Vec<String>,
    /// Where the stores go (one subdirectory per engine, removed after).
    #[arg(long, default_value = "/tmp/evendb-range-delete")]
    dir: std::path::PathBuf,
    #[arg(long, default_value_t = 100)]
    apps: u32,
    #[arg(long, default_value_t = 10_000)]
    events: u32,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long, value_enum, default_value = "random")]
    value_kind: ValueKind,
    /// The memory budget B (evendb's budget, RocksDB's block cache).
    #[arg(long, value_parser = evendb_bench::format::parse_size)]
    cache_size: Option<u64>,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

fn prefix(app: u32) -> Vec<u8> {
    format!("app{app:05}|").into_bytes()
}

fn key(app: u32, event: u32) -> Vec<u8> {
    format!(
        "app{app:05}|{:012}",
        1_700_000_000_000u64 + u64::from(event)
    )
    .into_bytes()
}

/// Timings of reads, in µs.
#[derive(Debug, Default, Serialize)]
struct Reads {
    /// Per deleted app (1, 2, 75): the first get of a deleted key, then
    /// the mean of 1,000 gets of random deleted keys.
    get_deleted_first_us: Vec<(u32, f64)>,
    get_deleted_mean_us: Vec<(u32, f64)>,
    /// Per deleted app: the first scan of its prefix, then the mean of 100.
    scan_deleted_first_us: Vec<(u32, f64)>,
    scan_deleted_mean_us: Vec<(u32, f64)>,
    /// A live app (app 10): mean of 1,000 gets, mean of 100 scans of
    /// 1,000 events.
    get_live_mean_us: f64,
    scan_live_1000_mean_us: f64,
}

#[derive(Debug, Default, Serialize)]
struct Figures {
    engine: String,
    engine_config: String,
    keys: u64,
    load_s: f64,
    compact_after_load_s: f64,
    disk_after_load: u64,
    range_delete_one_app_ms: f64,
    delete_one_app_key_by_key_ms: f64,
    range_delete_50_apps_ms: f64,
    reads_before_reclaim: Reads,
    /// From the flush after the deletes until evendb reported no range
    /// delete left (its background reclaim done), in seconds.
    background_reclaim_s: f64,
    reads_after_background_reclaim: Reads,
    disk_after_deletes: u64,
    reclaim_s: f64,
    disk_after_reclaim: u64,
    reads_after_reclaim: Reads,
    /// The engine's figures after the reads that followed reclaiming
    /// (`chunks_dropped`: chunks evendb dropped unread).
    engine_stats: Vec<(String, u64)>,
    reopen_s: f64,
    reads_after_reopen: Reads,
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The deleted apps whose reads are timed: by range, key by key, in the
/// half deleted by one range.
const DELETED: [u32; 3] = [1, 2, 75];
const LIVE: u32 = 10;

fn reads(db: &dyn Engine, events: u32, rng: &mut fastrand::Rng) -> Result<Reads> {
    let mut r = Reads::default();
    for app in DELETED {
        let t = Instant::now();
        ensure!(db.get(&key(app, events / 2))?.is_none(), "app {app} found");
        r.get_deleted_first_us.push((app, us(t.elapsed())));
        let t = Instant::now();
        for _ in 0..1000 {
            ensure!(db.get(&key(app, rng.u32(..events)))?.is_none());
        }
        r.get_deleted_mean_us.push((app, us(t.elapsed()) / 1000.0));
        let (p, end) = (prefix(app), prefix(app + 1));
        let t = Instant::now();
        ensure!(db.scan(&p, Some(&end), 1000)?.records == 0);
        r.scan_deleted_first_us.push((app, us(t.elapsed())));
        let t = Instant::now();
        for _ in 0..100 {
            ensure!(db.scan(&p, Some(&end), 1000)?.records == 0);
        }
        r.scan_deleted_mean_us.push((app, us(t.elapsed()) / 100.0));
    }
    let t = Instant::now();
    for _ in 0..1000 {
        ensure!(db.get(&key(LIVE, rng.u32(..events)))?.is_some());
    }
    r.get_live_mean_us = us(t.elapsed()) / 1000.0;
    let (p, end) = (prefix(LIVE), prefix(LIVE + 1));
    let t = Instant::now();
    for _ in 0..100 {
        ensure!(db.scan(&p, Some(&end), 1000)?.records == 1000.min(events as usize));
    }
    r.scan_live_1000_mean_us = us(t.elapsed()) / 100.0;
    Ok(r)
}

fn run(kind: EngineKind, args: &Args) -> Result<Figures> {
    let dir = args.dir.join(kind.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let config = EngineConfig {
        cache_bytes: args.cache_size,
        peer_compression: PeerCompression::Lz4,
        ..EngineConfig::default()
    };
    let db = engines::open(kind, &dir, &config)?;
    let mut f = Figures {
        engine: kind.name().to_string(),
        engine_config: db.describe(),
        keys: u64::from(args.apps) * u64::from(args.events),
        ..Figures::default()
    };
    let mut rng = fastrand::Rng::with_seed(42);
    let mut values = Values::new(args.value_kind, &mut rng);
    let t = Instant::now();
    for e in 0..args.events {
        for app in 0..args.apps {
            db.put(&key(app, e), values.next(args.value_size, &mut rng))?;
        }
    }
    db.flush()?;
    f.load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    db.compact_range(None, None)?;
    f.compact_after_load_s = t.elapsed().as_secs_f64();
    f.disk_after_load = disk_usage(&dir);
    eprintln!(
        "{}: loaded {} keys in {:.1} s, compacted in {:.1} s, {:.1} MiB",
        kind.name(),
        f.keys,
        f.load_s,
        f.compact_after_load_s,
        f.disk_after_load as f64 / 1048576.0
    );

    let t = Instant::now();
    db.delete_range(&prefix(1), &prefix(2))?;
    f.range_delete_one_app_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    for e in 0..args.events {
        db.delete(&key(2, e))?;
    }
    f.delete_one_app_key_by_key_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    db.delete_range(&prefix(50), &prefix(100))?;
    f.range_delete_50_apps_ms = t.elapsed().as_secs_f64() * 1e3;
    f.reads_before_reclaim = reads(&*db, args.events, &mut rng)?;
    let t = Instant::now();
    db.flush()?;
    if kind == EngineKind::Evendb {
        let left = |db: &dyn Engine| {
            db.stats()
                .iter()
                .find(|(k, _)| k == "range_tombstones")
                .map_or(0, |(_, v)| *v)
        };
        // The checkpoint queued the reclaims; a later one retires them.
        while left(&*db) > 0 && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
            db.flush()?;
        }
    }
    f.background_reclaim_s = t.elapsed().as_secs_f64();
    f.disk_after_deletes = disk_usage(&dir);
    f.reads_after_background_reclaim = reads(&*db, args.events, &mut rng)?;

    let t = Instant::now();
    match kind {
        // One call rebuilds every chunk.
        EngineKind::Evendb => db.compact_range(None, None)?,
        _ => {
            for (a, b) in [(1, 2), (2, 3), (50, 100)] {
                db.compact_range(Some(&prefix(a)), Some(&prefix(b)))?;
            }
        }
    }
    f.reclaim_s = t.elapsed().as_secs_f64();
    f.disk_after_reclaim = disk_usage(&dir);
    f.reads_after_reclaim = reads(&*db, args.events, &mut rng)?;
    f.engine_stats = db.stats();
    drop(db);
    let t = Instant::now();
    let db = engines::open(kind, &dir, &config)?;
    f.reopen_s = t.elapsed().as_secs_f64();
    f.reads_after_reopen = reads(&*db, args.events, &mut rng)?;
    drop(db);
    std::fs::remove_dir_all(&dir)?;
    Ok(f)
}

fn print(f: &Figures) {
    let mib = |b: u64| b as f64 / 1048576.0;
    println!("== {} ({})", f.engine, f.engine_config);
    println!(
        "load {} keys: {:.1} s; compaction after it {:.1} s",
        f.keys, f.load_s, f.compact_after_load_s
    );
    println!(
        "delete app 1 by range: {:.3} ms; app 2 key by key: {:.1} ms; apps 50-99 by range: {:.3} ms",
        f.range_delete_one_app_ms, f.delete_one_app_key_by_key_ms, f.range_delete_50_apps_ms
    );
    for (label, r) in [
        ("before reclaiming", &f.reads_before_reclaim),
        (
            "after the background reclaim",
            &f.reads_after_background_reclaim,
        ),
        ("after reclaiming", &f.reads_after_reclaim),
        ("after reopening", &f.reads_after_reopen),
    ] {
        println!("reads {label} (µs; apps 1 range, 2 key by key, 75 in the half):");
        for i in 0..DELETED.len() {
            println!(
                "  app {:>2}: get first {:>8.1} mean {:>7.2}; prefix scan first {:>9.1} mean {:>9.1}",
                r.get_deleted_first_us[i].0,
                r.get_deleted_first_us[i].1,
                r.get_deleted_mean_us[i].1,
                r.scan_deleted_first_us[i].1,
                r.scan_deleted_mean_us[i].1
            );
        }
        println!(
            "  live app {LIVE}: get mean {:.2}; scan of 1000 events mean {:.1}",
            r.get_live_mean_us, r.scan_live_1000_mean_us
        );
    }
    println!(
        "disk: {:.1} MiB after the load, {:.1} MiB after the deletes' background reclaim ({:.2} s), {:.1} MiB after reclaiming ({:.2} s)",
        mib(f.disk_after_load),
        mib(f.disk_after_deletes),
        f.background_reclaim_s,
        mib(f.disk_after_reclaim),
        f.reclaim_s
    );
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut all = Vec::new();
    for name in &args.engine {
        let kind = EngineKind::from_name(name)
            .ok_or_else(|| anyhow::anyhow!("unknown engine `{name}`"))?;
        ensure!(
            kind.available(),
            "this build has no `{}` engine: build with `--features {}`",
            kind.name(),
            kind.feature().unwrap_or_default()
        );
        let f = run(kind, &args)?;
        print(&f);
        all.push(f);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&all)?)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
