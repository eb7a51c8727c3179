//! A small throughput baseline: puts, gets and scans with 1 and 2 threads.
//!
//! ```text
//! cargo run --release -p evendb --example baseline -- [records] [value_size]
//! ```
//!
//! Loads `records` keys (default 200,000, values of 800 bytes), then runs
//! each operation for a fixed count per thread and prints ops/s. Keys are
//! the paper's 14-byte form: a 4-byte prefix and a zero-padded decimal.

use evendb::Db;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn run(db: &Db, threads: usize, ops: u64, op: &str, records: u64, value: &[u8]) -> f64 {
    let done = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (db, done) = (db.clone(), &done);
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(t as u64 + 1);
                for _ in 0..ops {
                    let k = key(rng.u64(0..records));
                    match op {
                        "put" => db.put(&k, value).expect("put"),
                        "get" => assert!(db.get(&k).expect("get").is_some()),
                        _ => {
                            let n = db.scan(k..).take(100).count();
                            assert!(n > 0);
                        }
                    }
                }
                done.fetch_add(ops, Ordering::Relaxed);
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn main() -> Result<(), evendb::Error> {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let value_size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(800);
    let dir = tempfile::tempdir().map_err(|e| evendb::Error::Io {
        path: "tmp".into(),
        source: e,
    })?;
    let db = Db::open(dir.path())?;
    let value = vec![b'x'; value_size];
    let start = Instant::now();
    for i in 0..records {
        db.put(key(i), &value)?;
    }
    db.flush()?;
    let load = records as f64 / start.elapsed().as_secs_f64();
    println!("load (sequential put): {load:>10.0} ops/s  ({records} records x {value_size} B)");
    for (op, ops) in [("put", 50_000), ("get", 100_000), ("scan100", 5_000)] {
        for threads in [1, 2] {
            let rate = run(&db, threads, ops / threads as u64, op, records, &value);
            println!("{op:<8} threads={threads}: {rate:>10.0} ops/s");
        }
    }
    let s = db.stats();
    println!(
        "chunks={} rebalances={} splits={} engine write amplification={:.2}",
        s.chunks,
        s.rebalances,
        s.splits,
        s.write_amplification()
    );
    Ok(())
}
