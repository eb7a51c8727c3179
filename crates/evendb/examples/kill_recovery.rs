//! Kills a writing process with SIGKILL at random moments and checks, after
//! each kill, that the store reopens quickly to an exact prefix of the
//! writes, at or after the last flush the writer saw acknowledged.
//!
//! ```sh
//! cargo run --release --example kill_recovery -- --dir /tmp/kr --fill-mb 100 --cycles 50
//! cargo run --release --example kill_recovery -- --dir /tmp/kr2 --fill-mb 2000 --cycles 10
//! cargo run --release --example kill_recovery -- --dir /tmp/kr3 --fill-mb 100 --cycles 50 --sync
//! ```
//!
//! With `--sync` the store runs in `Durability::Sync` and the writer
//! reports every put durable once it returns: the recovered sequence must
//! be at least the last one reported (no acknowledged put lost) and at
//! most one more (the put in flight).
//!
//! The writer writes sequence numbers `s = start, start+1, ...`: write `s`
//! sets key `k|<slot(s)>` to `s`, where `slot` is a fixed hash, so the state
//! after writes `0..=S` is known for every `S`. After a kill the store must
//! equal that state for `S` = the largest sequence it holds (a prefix), and
//! `S` must be at least the last sequence the writer reported flushed. The
//! fill (`f|...` keys, written once, never checkpointed into tables: logs
//! may grow to 4 GiB) makes the logs large, to show that opening does not
//! read them.

use evendb::{Db, Options};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SLOTS: u64 = 20_000;
const FLUSH_EVERY: u64 = 2_000;

fn slot(s: u64) -> u64 {
    // A fixed mix (splitmix64 finalizer): spreads sequences over slots.
    let mut z = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % SLOTS
}

/// Set in the children's environment by `--sync`.
const SYNC_ENV: &str = "KILL_RECOVERY_SYNC";

/// In a child: whether the parent was given `--sync`.
fn sync_mode() -> bool {
    std::env::var_os(SYNC_ENV).is_some()
}

fn options(sync: bool) -> Options {
    let durability = if sync {
        evendb::Durability::Sync
    } else {
        evendb::Durability::default()
    };
    Options::default()
        .max_log_size(4 << 30)
        .max_chunk_size(64 << 20)
        .memory_budget(64 << 20)
        .durability(durability)
}

fn key(slot: u64) -> Vec<u8> {
    format!("k|{slot:05}").into_bytes()
}

fn value(s: u64) -> Vec<u8> {
    let mut v = s.to_string().into_bytes();
    v.resize(100, b'.');
    v
}

fn parse_value(v: &[u8]) -> u64 {
    let digits: Vec<u8> = v.iter().copied().take_while(u8::is_ascii_digit).collect();
    std::str::from_utf8(&digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("a value that was never written: {v:?}"))
}

/// The child that fills the store with `mb` MiB of `f|` records.
fn fill(dir: &Path, mb: u64) -> evendb::Result<()> {
    let db = options(sync_mode()).open(dir)?;
    let value = vec![b'x'; 1000];
    let n = (mb << 20) / 1024;
    for i in 0..n {
        db.put(format!("f|{i:012}"), &value)?;
    }
    db.flush()
}

/// The child that writes sequences from `start` until it is killed.
fn write(dir: &Path, start: u64) -> evendb::Result<()> {
    let sync = sync_mode();
    let db = options(sync).open(dir)?;
    let mut out = std::io::stdout().lock();
    let mut s = start;
    loop {
        db.put(key(slot(s)), value(s))?;
        if s == start {
            // The first put opened the chunk's funk (reading its log).
            let _ = writeln!(out, "ready");
            let _ = out.flush();
        }
        if sync {
            // Acknowledged, so durable.
            let _ = writeln!(out, "durable {s}");
            let _ = out.flush();
        } else if (s + 1).is_multiple_of(FLUSH_EVERY) {
            db.flush()?;
            let _ = writeln!(out, "durable {s}");
            let _ = out.flush();
        }
        s += 1;
    }
}

fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Checks the recovered `k|` keys; returns the recovered sequence `S`.
fn check(db: &Db, durable: Option<u64>) -> Option<u64> {
    let mut got = vec![None; SLOTS as usize];
    let mut max = None;
    for kv in db.prefix("k|") {
        let (k, v) = kv.expect("scan");
        let slot: usize = std::str::from_utf8(&k[2..]).unwrap().parse().unwrap();
        let s = parse_value(&v);
        got[slot] = Some(s);
        max = max.max(Some(s));
    }
    if let Some(d) = durable {
        assert!(
            max.is_some_and(|m| m >= d),
            "lost acknowledged writes: recovered up to {max:?}, {d} was flushed"
        );
    }
    let mut want = vec![None; SLOTS as usize];
    if let Some(m) = max {
        for s in 0..=m {
            want[slot(s) as usize] = Some(s);
        }
    }
    assert!(
        got == want,
        "not a prefix: the store holds {max:?} but not every earlier write"
    );
    max
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.get(1).map(String::as_str) == Some("child-fill") {
        let r = fill(Path::new(&args[2]), args[3].parse().unwrap());
        std::process::exit(i32::from(r.is_err()));
    }
    if args.get(1).map(String::as_str) == Some("child-write") {
        let r = write(Path::new(&args[2]), args[3].parse().unwrap());
        eprintln!("writer stopped: {r:?}");
        std::process::exit(1);
    }
    let dir = PathBuf::from(arg("--dir").expect("--dir DIR"));
    let fill_mb: u64 = arg("--fill-mb").map_or(100, |s| s.parse().unwrap());
    let cycles: u64 = arg("--cycles").map_or(30, |s| s.parse().unwrap());
    let seed: u64 = arg("--seed").map_or(1, |s| s.parse().unwrap());
    let sync = args.iter().any(|a| a == "--sync");
    let me = std::env::current_exe().unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let t = Instant::now();
    let status = Command::new(&me)
        .args(["child-fill", dir.to_str().unwrap(), &fill_mb.to_string()])
        .envs(sync.then_some((SYNC_ENV, "1")))
        .status()
        .unwrap();
    assert!(status.success(), "fill failed");
    println!(
        "filled {fill_mb} MiB in {:.1} s; logs {:.0} MiB",
        t.elapsed().as_secs_f64(),
        log_bytes(&dir) as f64 / (1 << 20) as f64
    );

    let mut rng = seed;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut start = 0;
    let mut opens = Vec::new();
    let mut past_flush = 0;
    for cycle in 0..cycles {
        let mut child = Command::new(&me)
            .args(["child-write", dir.to_str().unwrap(), &start.to_string()])
            .envs(sync.then_some((SYNC_ENV, "1")))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // Let it open and start writing, then kill it at a random moment.
        let _ = rx.recv_timeout(Duration::from_secs(300));
        std::thread::sleep(Duration::from_millis(50 + next() % 1500));
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        let _ = reader.join();
        let durable = rx
            .try_iter()
            .filter_map(|l| l.strip_prefix("durable ").and_then(|d| d.parse().ok()))
            .max();
        let t = Instant::now();
        let db = options(sync).open(&dir).expect("reopen after kill");
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        opens.push(open_ms);
        let recovered = check(&db, durable);
        if recovered > durable {
            past_flush += 1;
        }
        if sync {
            let in_flight = durable.map_or(0, |d| d + 1);
            assert!(
                recovered.is_none_or(|r| r <= in_flight),
                "recovered {recovered:?}, past the put in flight after {durable:?}"
            );
        }
        start = recovered.map_or(0, |s| s + 1);
        println!(
            "cycle {cycle}: open {open_ms:.1} ms, recovered through {recovered:?}, last flush {durable:?}"
        );
        drop(db);
    }
    opens.sort_by(f64::total_cmp);
    println!(
        "{cycles} kills, logs {:.0} MiB: open p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
         0 prefix violations, 0 lost flushed writes; {past_flush} recovered past the last flush they saw",
        log_bytes(&dir) as f64 / (1 << 20) as f64,
        percentile(&opens, 0.5),
        percentile(&opens, 0.99),
        opens.last().copied().unwrap_or(0.0),
    );
}
