//! Where the Raft log should live: appends of Raft entries into an evendb
//! store as `cluster/log_store.rs` writes them (a `Sync` store, one
//! `WriteBatch` per append, keys `l` + index big-endian, JSON entries),
//! against a purpose-made append-only file (length-prefixed JSON entries,
//! one `write` and one `fdatasync` per append), both as a file that grows
//! with each append and as one written with zeros first and then written
//! over (so that `fdatasync` flushes data only, not the file's size and
//! new blocks: what evendb's journal does with its segments).
//!
//! ```sh
//! cargo run --release -p evendb-server --example raft_log_store -- [DIR] [ROUNDS]
//! ```
//!
//! Appends of 1, 16 and 64 entries, each a `SET` of a 16-byte key and a
//! value of 100 B to 1 KiB; every store is new, in DIR (default: the
//! system's temporary directory). Each round runs every size on each log,
//! the first round in the order evendb, file, preallocated file, the next
//! in the reverse order, and so on for ROUNDS rounds (default 2). Prints one
//! Markdown row per run: appends and entries per second, and each
//! append's p50 and p99 latency. (The time to close a store is not
//! counted.)

use evendb_server::cluster::{Request, SetCond, TypeConfig};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Appends per run, by entries per append (a run of 1 to 3 s here).
const RUNS: [(usize, usize); 3] = [(1, 10_000), (16, 2_500), (64, 800)];

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Entry `index`: a `SET` with a value of 100 B to 1 KiB, JSON-encoded as
/// the log store keeps it.
fn entry(index: u64, rng: &mut Rng) -> Vec<u8> {
    let len = 100 + (rng.next() % 925) as usize;
    let value: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let e: Entry<TypeConfig> = Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Request::Set {
            key: format!("key-{index:012}").into_bytes(),
            value,
            cond: SetCond::Always,
            get: false,
        }),
    };
    serde_json::to_vec(&e).expect("an entry encodes")
}

/// Where appends go.
trait Log {
    /// Makes `entries` (index, bytes) durable.
    fn append(&mut self, entries: &[(u64, Vec<u8>)]);
    /// Closes the log (background writes finish).
    fn close(self: Box<Self>);
}

/// The log store's way: one `Sync` `WriteBatch` per append.
struct EvendbLog(evendb::Db);

impl Log for EvendbLog {
    fn append(&mut self, entries: &[(u64, Vec<u8>)]) {
        let mut batch = evendb::WriteBatch::new();
        for (index, bytes) in entries {
            let mut key = [0u8; 9];
            key[0] = b'l';
            key[1..].copy_from_slice(&index.to_be_bytes());
            batch.put(key, bytes);
        }
        self.0.write(&batch).expect("a durable batch");
    }

    fn close(self: Box<Self>) {
        self.0.flush().expect("flush");
    }
}

/// A purpose-made log: frames of a u32 LE length and the entry, one write
/// and one `fdatasync` per append, at the file's end (which grows) or
/// over zeros written beforehand.
struct FileLog {
    file: std::fs::File,
    buf: Vec<u8>,
    /// Where the next append goes.
    end: u64,
}

impl Log for FileLog {
    fn append(&mut self, entries: &[(u64, Vec<u8>)]) {
        use std::os::unix::fs::FileExt;
        self.buf.clear();
        for (_, bytes) in entries {
            self.buf
                .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.buf.extend_from_slice(bytes);
        }
        self.file.write_all_at(&self.buf, self.end).expect("append");
        self.end += self.buf.len() as u64;
        self.file.sync_data().expect("fdatasync");
    }

    fn close(self: Box<Self>) {}
}

/// Opens a log of `kind`; a preallocated file gets `bytes` of zeros first.
fn open(kind: &str, dir: &Path, bytes: usize) -> Box<dyn Log> {
    match kind {
        "evendb" => Box::new(EvendbLog(
            evendb::Options::default()
                .durability(evendb::Durability::Sync)
                .memory_budget(64 << 20)
                .open(dir)
                .expect("open the store"),
        )),
        _ => {
            std::fs::create_dir_all(dir).expect("mkdir");
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(dir.join("raft.log"))
                .expect("open the file");
            if kind == "file, preallocated" {
                let zeros = vec![0u8; 1 << 20];
                for _ in 0..bytes.div_ceil(zeros.len()) {
                    file.write_all(&zeros).expect("preallocate");
                }
                file.sync_all().expect("fsync");
            }
            Box::new(FileLog {
                file,
                buf: Vec::new(),
                end: 0,
            })
        }
    }
}

fn run(kind: &str, dir: &Path, per_append: usize, appends: usize) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ per_append as u64);
    let batches: Vec<Vec<(u64, Vec<u8>)>> = (0..appends)
        .map(|a| {
            (0..per_append)
                .map(|i| {
                    let index = (a * per_append + i + 1) as u64;
                    (index, entry(index, &mut rng))
                })
                .collect()
        })
        .collect();
    let entry_bytes: usize = batches.iter().flatten().map(|(_, b)| b.len()).sum();
    let framed = entry_bytes + 4 * appends * per_append;
    let mut log = open(kind, dir, framed);
    let mut latencies = Vec::with_capacity(appends);
    let start = Instant::now();
    for b in &batches {
        let t = Instant::now();
        log.append(b);
        latencies.push(t.elapsed());
    }
    let took = start.elapsed();
    log.close();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {kind} | {per_append} | {appends} | {:.0} | {:.0} | {:.2} | {:.2} |",
        appends as f64 / took.as_secs_f64(),
        (appends * per_append) as f64 / took.as_secs_f64(),
        ms(at(0.5)),
        ms(at(0.99)),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = args
        .first()
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(2);
    let dir = tempfile::tempdir_in(&root).expect("a directory for the logs");
    println!("| log | entries per append | appends | appends/s | entries/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|---|---|");
    let mut n = 0;
    for round in 0..rounds {
        for (per_append, appends) in RUNS {
            let mut kinds = ["evendb", "file", "file, preallocated"];
            if round % 2 == 1 {
                kinds.reverse();
            }
            for kind in kinds {
                n += 1;
                run(
                    kind,
                    &dir.path().join(format!("{n}-{}", kind.replace(", ", "-"))),
                    per_append,
                    appends,
                );
            }
        }
    }
}
