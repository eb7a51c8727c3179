//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod mutation;
pub mod prefix;

use evendb::vfs::MemFs;
use evendb::{Db, Durability, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The seed of a randomized test: `EVENDB_SEED` if set, else from the clock.
/// Printed so a failure can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("EVENDB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("{test}: seed {seed} (replay with EVENDB_SEED={seed})");
    seed
}

/// How many iterations a randomized test runs: `EVENDB_ITERATIONS` or `default`.
pub fn iterations(default: u64) -> u64 {
    std::env::var("EVENDB_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Options with tiny limits so splits, merges and rebalances happen often,
/// over an in-memory file system, deterministic (no background threads).
pub fn tiny(fs: &MemFs) -> Options {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Sync)
        .max_chunk_size(4096)
        .max_log_size(1024)
        .block_size(256)
        .maintenance_threads(0)
}

/// [`tiny`] for crash tests: `Sync` durability, or `Buffered` with
/// checkpoints only from the test's flushes (so a run is reproducible from
/// its seed), and a memory budget small enough that munks are loaded and
/// evicted all the time.
pub fn crash_options(fs: &MemFs, sync: bool, budget: u64) -> Options {
    tiny(fs)
        .durability(if sync {
            Durability::Sync
        } else {
            Durability::Buffered {
                sync_interval: std::time::Duration::from_secs(3600),
            }
        })
        .memory_budget(budget)
}

/// Options with multi-MiB chunks and half-MiB logs, a 2 MiB budget and
/// checkpoints only from the test's flushes: logs long enough to be
/// adopted as they are or written again sorted (runs), deterministic.
pub fn run_sized(fs: &MemFs) -> Options {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_secs(3600),
        })
        .max_chunk_size(2 << 20)
        .max_log_size(512 << 10)
        .block_size(4096)
        .memory_budget(2 << 20)
        .maintenance_threads(0)
}

/// What the store should hold, key by key.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// `ops` random writes of keys `0..keys` to the store and to `model`: a
/// delete with chance `deletes` in 256, else a put of the pair `record`
/// makes of the key's number.
pub fn random_writes(
    db: &Db,
    model: &mut Model,
    rng: &mut fastrand::Rng,
    (keys, ops): (u64, usize),
    deletes: u8,
    record: impl Fn(u64) -> (Vec<u8>, Vec<u8>),
) {
    for _ in 0..ops {
        let (k, v) = record(rng.u64(0..keys));
        if rng.u8(..) < deletes {
            db.delete(&k).expect("delete");
            model.remove(&k);
        } else {
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
    }
}

pub fn open_tiny(fs: &MemFs) -> Db {
    tiny(fs).open(dir()).expect("open")
}

pub fn all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.scan::<&[u8], _>(..)
        .collect::<Result<_, _>>()
        .expect("scan")
}

pub fn engine_files(fs: &MemFs, dir: &Path) -> Vec<String> {
    use evendb::vfs::Storage;
    let mut v: Vec<String> = fs
        .list(dir)
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".tbl") || n.ends_with(".log"))
        .collect();
    v.sort();
    v
}
