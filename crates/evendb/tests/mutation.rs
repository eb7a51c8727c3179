//! Mutation test: damage the files of a cleanly closed store in many ways
//! and require that every damage is either harmless or reported, and that
//! no open of a damaged store destroys live data.
//!
//! Two small stores, "A" and "B", are built once from the seed (several
//! chunks, tables and logs), plus an older copy of A taken after a clean
//! close partway through its history. Each mutated store is a fresh copy of
//! A with one mutation applied (bit flips, boundary values in 4/8-byte
//! fields, truncation, extension, zeroed / swapped / duplicated ranges, a
//! file replaced by one of B or of A's older copy, a file removed, an empty
//! or short CHECKPOINT). It is opened with `create_if_missing(false)`, read
//! in full (scan, gets) and verified, all under `catch_unwind`; the outcome
//! is one of:
//!
//! | outcome | meaning | allowed |
//! |---|---|---|
//! | `exact` | opened, every read matches (`exact+flagged`: `verify_integrity` reported something) | yes |
//! | `error` | a typed `evendb::Error` at open, read or verify (variant and stage counted) | yes |
//! | `reported-loss` | reads differ, but `verify_integrity` reported problems | yes |
//! | `silent-loss` | reads lack keys or show older values, and nothing reported it | no |
//! | `invented` | a read returned a pair never written to A | no |
//! | `panic` | the engine panicked | no |
//!
//! Then the mutation is undone — the pristine bytes of the mutated files are
//! copied back and added files removed; files the engine moved into
//! `lost+found/` are moved back; a MANIFEST or CHECKPOINT that the open
//! rewrote (epoch bump) is kept — and the store must reopen with exactly its
//! contents. Anything else is `live-data-deleted` (a live file deleted, the
//! store recreated, or contents cut off for good), which fails the test.
//!
//! The default run (540 mutated stores, 30 of each kind) takes about 12 s
//! in a debug build on 2 cores; stores live in `/dev/shm` when it exists,
//! since every open and close fsyncs (on a real disk, expect several times
//! that). Long runs, and replays of a reported failure:
//!
//! ```text
//! EVENDB_MUTATIONS=100000 cargo test --release -p evendb --test mutation -- --nocapture
//! EVENDB_SEED=S cargo test -p evendb --test mutation -- --nocapture
//! EVENDB_SEED=S EVENDB_MUTATION=I cargo test -p evendb --test mutation -- --nocapture
//! ```
//!
//! `EVENDB_SEED` fixes the base stores and every mutation; `EVENDB_MUTATION`
//! runs only mutation number `I` of that seed and prints its outcome. An
//! attempt that takes over two minutes is a hang: the run stops and prints
//! it.

mod common;

use common::mutation::{
    apply, count_class, generate, mutation_rng, read_files, undo, write_files, Class, Mutation,
    Sources, CHECKPOINT, MANIFEST,
};
use evendb::{Db, Durability, Options};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// Mutated stores in a default run.
const DEFAULT_MUTATIONS: usize = 540;
/// An attempt taking longer than this is a hang: the run is stopped and the
/// mutation printed.
const HANG: Duration = Duration::from_secs(120);

/// Options of every open: small enough for several chunks, tables and
/// logs, with a memory budget small enough that chunks lose their munks and
/// are rebuilt from their logs; no background thread, so every panic
/// happens under `catch_unwind`.
fn options() -> Options {
    Options::default()
        .durability(Durability::Sync)
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .block_size(512)
        .memory_budget(256 << 10)
        .maintenance_threads(0)
}

/// Options for building: `Buffered` with checkpoints only from `flush`, so
/// building takes few fsyncs; the clean close marks each epoch whole.
fn build_options() -> Options {
    options().durability(Durability::Buffered {
        sync_interval: Duration::from_secs(3600),
    })
}

/// A directory for one store, on tmpfs where the machine has one: every
/// open and close fsyncs several times, and this test checks what the
/// files say, not whether they reach the disk.
fn tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    shm.is_dir()
        .then(|| {
            tempfile::Builder::new()
                .prefix("evendb-mutation-")
                .tempdir_in(shm)
                .ok()
        })
        .flatten()
        .unwrap_or_else(|| tempfile::tempdir().expect("tempdir"))
}

// ---------------------------------------------------------------------------
// Base stores

/// What a store holds and everything it ever held.
#[derive(Default, Clone)]
struct History {
    expected: Map,
    /// Every (key, value) ever put.
    ever: BTreeSet<(Vec<u8>, Vec<u8>)>,
}

/// Everything the mutations are made from.
struct Bases {
    /// A, B, and A after its first session, before the writes of the
    /// second rebuilt and split its chunks.
    files: Sources,
    history: History,
    /// Keys written to A and deleted since, and keys never written, for
    /// gets.
    gone_keys: Vec<Vec<u8>>,
    never_keys: Vec<Vec<u8>>,
}

/// Spatially local keys `uNN|NNNN`, a few hot users; varied values tagged
/// with the store and op number, so values of B are never values of A.
fn key(rng: &mut fastrand::Rng) -> Vec<u8> {
    let user = if rng.u8(..4) == 0 {
        rng.u32(..48)
    } else {
        rng.u32(..8)
    };
    format!("u{user:02}|{:04}", rng.u32(..600)).into_bytes()
}

fn value(rng: &mut fastrand::Rng, tag: &str, op: usize) -> Vec<u8> {
    let len = match rng.u8(..100) {
        0..=4 => 0,
        5..=44 => rng.usize(1..16),
        45..=84 => rng.usize(16..128),
        85..=98 => rng.usize(128..600),
        _ => rng.usize(1500..3000),
    };
    if len == 0 && rng.bool() {
        return Vec::new(); // valid, and not a deletion
    }
    let mut v = format!("{tag}{op}:").into_bytes();
    if rng.bool() {
        v.extend((0..len).map(|_| rng.alphanumeric() as u8));
    } else {
        v.extend((0..len).map(|_| rng.u8(..)));
    }
    v
}

/// One random put, overwrite or delete.
fn step(db: &Db, rng: &mut fastrand::Rng, h: &mut History, tag: &str, op: usize) {
    let live: Option<Vec<u8>> = if h.expected.is_empty() || rng.u8(..100) >= 40 {
        None
    } else {
        let i = rng.usize(..h.expected.len());
        h.expected.keys().nth(i).cloned()
    };
    match live {
        Some(k) if rng.u8(..100) < 35 => {
            db.delete(&k).expect("delete");
            h.expected.remove(&k);
        }
        k => {
            let k = k.unwrap_or_else(|| key(rng));
            let v = value(rng, tag, op);
            db.put(&k, &v).expect("put");
            h.ever.insert((k.clone(), v.clone()));
            h.expected.insert(k, v);
        }
    }
}

fn tables(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            e.expect("entry")
                .file_name()
                .into_string()
                .expect("utf-8 name")
        })
        .filter(|n| Class::of(n) == Some(Class::Table))
        .collect()
}

/// Runs `ops` random puts, overwrites and deletes in two sessions, each
/// ended by a clean close; `between` sees the directory after the first.
/// The second session goes on until a table of the first was replaced.
fn build(
    dir: &Path,
    seed: u64,
    tag: &str,
    ops: usize,
    between: impl FnOnce(&Path, &History),
) -> History {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut h = History::default();
    let first = ops * 11 / 20;
    let db = build_options().open(dir).expect("create base store");
    for op in 0..first {
        step(&db, &mut rng, &mut h, tag, op);
    }
    db.flush().expect("flush");
    drop(db);
    between(dir, &h);
    let before = tables(dir);
    let db = build_options()
        .create_if_missing(false)
        .open(dir)
        .expect("reopen base store");
    let mut op = first;
    while op < ops || (op < 3 * ops && tables(dir).is_superset(&before)) {
        step(&db, &mut rng, &mut h, tag, op);
        op += 1;
    }
    if tables(dir).is_superset(&before) {
        // Some seeds (about one in twenty, e.g. 1795890306092643859)
        // replace no table of the first session within three times the
        // operations (that one took 13,690 for store A): a compaction
        // rebuilds every chunk.
        db.compact().expect("compact");
    }
    assert!(
        !tables(dir).is_superset(&before),
        "store {tag}: the second session must replace a table of the first"
    );
    db.flush().expect("flush");
    let chunks = db.stats().chunks;
    assert!(
        chunks >= 3,
        "store {tag} must have several chunks, has {chunks}"
    );
    drop(db);
    h
}

fn build_bases(seed: u64) -> Bases {
    let started = Instant::now();
    let a_dir = tempdir();
    let mut old = None;
    let history = build(a_dir.path(), seed, "A", 4000, |dir, h| {
        old = Some((read_files(dir), h.clone()));
    });
    let (old, old_history) = old.expect("A's first session ended");
    let a = read_files(a_dir.path());
    let b_dir = tempdir();
    // Same number of sessions as A, so B's epochs have A's numbers.
    build(
        b_dir.path(),
        seed ^ 0xB0B0_B0B0_B0B0_B0B0,
        "B",
        3400,
        |_, _| {},
    );
    let b = read_files(b_dir.path());

    for (name, files) in [("A", &a), ("B", &b), ("A's older copy", &old)] {
        assert!(files.contains_key(MANIFEST), "{name} has a MANIFEST");
        assert!(files.contains_key(CHECKPOINT), "{name} has a CHECKPOINT");
        assert!(count_class(files, Class::Table) >= 1, "{name} has a table");
        assert!(
            count_class(files, Class::Log) >= 3,
            "{name} has several logs"
        );
    }
    assert_ne!(
        a[MANIFEST], old[MANIFEST],
        "A's MANIFEST changed since its older copy"
    );
    assert_ne!(
        a[CHECKPOINT], old[CHECKPOINT],
        "A's CHECKPOINT changed since its older copy"
    );
    assert!(
        old.keys()
            .any(|n| Class::of(n) == Some(Class::Table) && !a.contains_key(n)),
        "a table of A's older copy was replaced since"
    );

    // Controls: the undamaged stores read exactly right.
    for (files, h, name) in [(&a, &history, "A"), (&old, &old_history, "A's older copy")] {
        let dir = tempdir();
        write_files(dir.path(), files);
        let db = options()
            .create_if_missing(false)
            .open(dir.path())
            .unwrap_or_else(|e| panic!("control: {name} opens: {e}"));
        let got: Map = common::all(&db).into_iter().collect();
        assert!(got == h.expected, "control: {name} reads its contents");
        let report = db.verify_integrity().expect("verify");
        assert!(report.is_ok(), "control: {name} verifies: {report:?}");
    }

    let gone_keys: Vec<Vec<u8>> = history
        .ever
        .iter()
        .map(|(k, _)| k)
        .filter(|k| !history.expected.contains_key(*k))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut never_keys: Vec<Vec<u8>> = vec![b"".to_vec(), b"zzz".to_vec(), vec![0xff; 3]];
    never_keys.extend(history.expected.keys().step_by(97).map(|k| {
        let mut k = k.clone();
        k.push(0);
        k
    }));
    println!(
        "base stores built in {:.1?}: A {} files ({} tables, {} logs), {} keys, {} pairs ever \
         written; B {} files; A's older copy {} files",
        started.elapsed(),
        a.len(),
        count_class(&a, Class::Table),
        count_class(&a, Class::Log),
        history.expected.len(),
        history.ever.len(),
        b.len(),
        old.len(),
    );
    Bases {
        files: Sources { a, b, old },
        history,
        gone_keys,
        never_keys,
    }
}

// ---------------------------------------------------------------------------
// Outcomes

/// What one open of a mutated store did (the table in the module docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Every read matched; `flagged` if `verify_integrity` still reported
    /// something.
    Exact {
        flagged: bool,
    },
    /// A typed error, at `stage` open, read or verify.
    Error {
        variant: String,
        stage: &'static str,
    },
    /// Reads were wrong or incomplete, and `verify_integrity` said so.
    ReportedLoss,
    /// Reads were wrong or incomplete, and nothing said so.
    SilentLoss,
    /// A read returned a pair never written to A.
    Invented,
    Panic,
}

impl Outcome {
    fn column(&self) -> &'static str {
        match self {
            Outcome::Exact { flagged: false } => "exact",
            Outcome::Exact { flagged: true } => "exact+flagged",
            Outcome::Error { .. } => "error",
            Outcome::ReportedLoss => "reported-loss",
            Outcome::SilentLoss => "silent-loss",
            Outcome::Invented => "invented",
            Outcome::Panic => "panic",
        }
    }

    fn fails(&self) -> bool {
        matches!(
            self,
            Outcome::SilentLoss | Outcome::Invented | Outcome::Panic
        )
    }
}

const COLUMNS: &[&str] = &[
    "exact",
    "exact+flagged",
    "error",
    "reported-loss",
    "silent-loss",
    "invented",
    "panic",
    "live-data-deleted",
];

/// The variant name of an error, from its `Debug` form (the enum is
/// non-exhaustive, and grows).
fn variant(e: &evendb::Error) -> String {
    let d = format!("{e:?}");
    d.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("?")
        .to_string()
}

/// What the reads of one open found.
#[derive(Default)]
struct Reads {
    /// The first error: variant, stage, message.
    error: Option<(String, &'static str, String)>,
    /// Pairs never written to A that a read returned.
    invented: Vec<String>,
    /// Missing keys, older values, deleted keys back, disorder.
    wrong: Vec<String>,
}

impl Reads {
    fn fail(&mut self, e: evendb::Error, stage: &'static str) {
        if self.error.is_none() {
            self.error = Some((variant(&e), stage, e.to_string()));
        }
    }
}

fn show(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

/// Scans everything and gets a sample of live, gone and never-written keys.
fn read_everything(db: &Db, bases: &Bases, rng: &mut fastrand::Rng) -> Reads {
    let h = &bases.history;
    let mut r = Reads::default();
    let mut got = Map::new();
    let mut last: Option<Vec<u8>> = None;
    for item in db.scan::<&[u8], _>(..) {
        match item {
            Ok((k, v)) => {
                if !h.ever.contains(&(k.clone(), v.clone())) {
                    r.invented
                        .push(format!("scan {} = {} bytes", show(&k), v.len()));
                }
                if last.as_ref().is_some_and(|l| *l >= k) {
                    r.wrong.push(format!("scan out of order at {}", show(&k)));
                }
                last = Some(k.clone());
                got.insert(k, v);
            }
            Err(e) => {
                r.fail(e, "read");
                break;
            }
        }
    }
    if r.error.is_none() && got != h.expected {
        let missing = h.expected.keys().filter(|k| !got.contains_key(*k)).count();
        let differ = h
            .expected
            .iter()
            .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
            .count();
        let extra = got.keys().filter(|k| !h.expected.contains_key(*k)).count();
        r.wrong.push(format!(
            "scan: {missing} keys missing, {differ} with other values, {extra} deleted keys back"
        ));
    }
    let mut keys: Vec<&Vec<u8>> = Vec::new();
    for _ in 0..24 {
        if let Some((k, _)) = h.expected.iter().nth(rng.usize(..h.expected.len())) {
            keys.push(k);
        }
    }
    for _ in 0..8 {
        for some in [&bases.gone_keys, &bases.never_keys] {
            if !some.is_empty() {
                keys.push(&some[rng.usize(..some.len())]);
            }
        }
    }
    for k in keys {
        match db.get(k) {
            Ok(v) => {
                let want = h.expected.get(k);
                if v.as_ref() != want {
                    let known = v
                        .as_ref()
                        .is_none_or(|v| h.ever.contains(&(k.clone(), v.clone())));
                    let what = format!(
                        "get {} = {:?} bytes, want {:?}",
                        show(k),
                        v.as_ref().map(Vec::len),
                        want.map(Vec::len)
                    );
                    if known {
                        r.wrong.push(what);
                    } else {
                        r.invented.push(what);
                    }
                }
            }
            Err(e) => r.fail(e, "read"),
        }
    }
    r
}

/// Opens the mutated store, reads it and verifies it.
fn examine(dir: &Path, bases: &Bases, rng: &mut fastrand::Rng) -> (Outcome, String) {
    let db = match options().create_if_missing(false).open(dir) {
        Ok(db) => db,
        Err(e) => {
            let detail = e.to_string();
            return (
                Outcome::Error {
                    variant: variant(&e),
                    stage: "open",
                },
                detail,
            );
        }
    };
    let mut r = read_everything(&db, bases, rng);
    let mut flagged = Vec::new();
    match db.verify_integrity() {
        Ok(report) => {
            flagged.extend(report.problems.iter().cloned());
            flagged.extend(report.orphans.iter().map(|o| format!("orphan {o}")));
        }
        Err(e) => r.fail(e, "verify"),
    }
    drop(db);
    let first = |v: &[String]| v.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if !r.invented.is_empty() {
        return (Outcome::Invented, first(&r.invented));
    }
    if let Some((variant, stage, detail)) = r.error {
        return (Outcome::Error { variant, stage }, detail);
    }
    if r.wrong.is_empty() {
        return (
            Outcome::Exact {
                flagged: !flagged.is_empty(),
            },
            first(&flagged),
        );
    }
    let detail = first(&r.wrong);
    if flagged.is_empty() {
        (Outcome::SilentLoss, detail)
    } else {
        (
            Outcome::ReportedLoss,
            format!("{detail}; verify: {}", first(&flagged)),
        )
    }
}

/// After the undo, the store must open and read exactly its contents.
fn check_live_data(dir: &Path, bases: &Bases) -> Result<(), String> {
    let now: BTreeSet<String> = read_files(dir).into_keys().collect();
    let gone: Vec<&String> = bases
        .files
        .a
        .keys()
        .filter(|n| Class::of(n).is_some() && !now.contains(*n))
        .collect();
    let new = now
        .iter()
        .filter(|n| !bases.files.a.contains_key(*n))
        .count();
    let files = if gone.is_empty() {
        String::new()
    } else {
        format!(" (files of A gone: {gone:?}; {new} new files)")
    };
    let db = options()
        .create_if_missing(false)
        .open(dir)
        .map_err(|e| format!("reopen: {e}{files}"))?;
    let got: Result<Map, _> = db.scan::<&[u8], _>(..).collect();
    let got = got.map_err(|e| format!("scan after reopen: {e}{files}"))?;
    let want = &bases.history.expected;
    if &got != want {
        let lost = want.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
        let extra = got.keys().filter(|k| !want.contains_key(*k)).count();
        return Err(format!(
            "after reopen {lost} of {} pairs lost or changed, {extra} keys back{files}",
            want.len()
        ));
    }
    Ok(())
}

struct Attempt {
    outcome: Outcome,
    detail: String,
    /// Why the store did not read exactly after the undo.
    deleted: Option<String>,
    notes: Vec<String>,
}

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, turning a panic into its message.
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    CAPTURING.with(|c| c.set(true));
    let r = std::panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.with(|c| c.set(false));
    r.map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "panic".into())
    })
}

fn attempt(bases: &Bases, m: &Mutation, seed: u64) -> Attempt {
    let dir = tempdir();
    write_files(dir.path(), &bases.files.a);
    apply(dir.path(), m);
    let mut rng = mutation_rng(seed ^ 0x5EED, m.index);
    let (outcome, detail) = match catch(|| examine(dir.path(), bases, &mut rng)) {
        Ok(r) => r,
        Err(msg) => (Outcome::Panic, msg),
    };
    let notes = undo(dir.path(), m, &bases.files.a);
    let (deleted, outcome) = match catch(|| check_live_data(dir.path(), bases)) {
        Ok(r) => (r.err(), outcome),
        Err(msg) => (
            Some(format!("reopen after undo panicked: {msg}")),
            Outcome::Panic,
        ),
    };
    Attempt {
        outcome,
        detail,
        deleted,
        notes,
    }
}

// ---------------------------------------------------------------------------
// The test

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

type Results = Vec<(Mutation, Attempt)>;

/// Runs the mutations `indexes` on all cores, each attempt watched for a
/// hang; results in index order.
fn run(bases: &Bases, seed: u64, indexes: &[usize]) -> Results {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(indexes.len().max(1));
    // Panics under `catch` are recorded, not printed; any other panic (of
    // the test itself) is printed as usual.
    let previous_hook: Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync> =
        Arc::from(std::panic::take_hook());
    let hook = previous_hook.clone();
    std::panic::set_hook(Box::new(move |info| {
        if CAPTURING.with(Cell::get) {
            let msg = info.to_string();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
        } else {
            hook(info);
        }
    }));
    let next = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let running: Mutex<BTreeMap<usize, (Instant, String)>> = Mutex::new(BTreeMap::new());
    let results: Mutex<Results> = Mutex::new(Vec::new());
    let joined = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(200));
                let running = running.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((_, what)) = running.values().find(|(t, _)| t.elapsed() > HANG) {
                    eprintln!("hang: no answer after {HANG:?} on {what}");
                    std::process::exit(2);
                }
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let (next, running, results) = (&next, &running, &results);
                s.spawn(move || {
                    while let Some(&i) = indexes.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let m = generate(&bases.files, seed, i);
                        if let Ok(mut r) = running.lock() {
                            r.insert(w, (Instant::now(), m.describe(seed)));
                        }
                        let a = attempt(bases, &m, seed);
                        if let Ok(mut r) = running.lock() {
                            r.remove(&w);
                        }
                        results.lock().expect("results").push((m, a));
                    }
                })
            })
            .collect();
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        done.store(true, Ordering::Release);
        joined
    });
    let _quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous_hook(info)));
    for j in joined {
        if let Err(e) = j {
            std::panic::resume_unwind(e);
        }
    }
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(m, _)| m.index);
    results
}

type Counts = BTreeMap<&'static str, usize>;

/// Prints outcome counts by mutation kind and by file kind, and the errors
/// seen; returns the totals.
fn summarize(results: &Results) -> Counts {
    let mut by_kind: BTreeMap<&str, Counts> = BTreeMap::new();
    let mut by_class: BTreeMap<&str, Counts> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut totals = Counts::new();
    for (m, a) in results {
        let mut cols = vec![a.outcome.column()];
        if a.deleted.is_some() {
            cols.push("live-data-deleted");
        }
        for c in cols {
            *by_kind.entry(m.kind).or_default().entry(c).or_default() += 1;
            *by_class
                .entry(m.class.label())
                .or_default()
                .entry(c)
                .or_default() += 1;
            *totals.entry(c).or_default() += 1;
        }
        if let Outcome::Error { variant, stage } = &a.outcome {
            *errors.entry(format!("{variant} at {stage}")).or_default() += 1;
        }
    }
    let table = |title: &str, rows: &BTreeMap<&str, Counts>| {
        let mut out = format!("{title:<26}");
        for c in COLUMNS {
            out += &format!(" {c:>8}");
        }
        for (row, counts) in rows.iter().chain([(&"total", &totals)]) {
            out += &format!("\n{row:<26}");
            for c in COLUMNS {
                let w = c.len().max(8);
                out += &match counts.get(c) {
                    Some(n) => format!(" {n:>w$}"),
                    None => format!(" {:>w$}", "."),
                };
            }
        }
        out
    };
    println!(
        "\n{}\n\n{}\n\nerrors:",
        table("mutation", &by_kind),
        table("file", &by_class)
    );
    for (e, n) in &errors {
        println!("  {n:>6}  {e}");
    }
    totals
}

/// Prints each failure (the first 60) with what replays it; a replay of
/// one mutation is printed whatever its outcome. Returns the failures.
fn report_failures(results: &Results, seed: u64) -> usize {
    const SHOWN: usize = 60;
    let replay = results.len() == 1;
    let mut failures = 0;
    for (m, a) in results {
        let failed = a.outcome.fails() || a.deleted.is_some();
        failures += usize::from(failed);
        if !(failed || replay) || failures > SHOWN {
            continue;
        }
        println!(
            "\n{} {}",
            if failed { "FAIL" } else { "OK" },
            m.describe(seed)
        );
        let outcome = match &a.outcome {
            Outcome::Error { variant, stage } => format!("error {variant} at {stage}"),
            o => o.column().to_string(),
        };
        println!("     {outcome}: {}", a.detail);
        if let Some(d) = &a.deleted {
            println!("     live-data-deleted: {d}");
        }
        if !a.notes.is_empty() {
            println!("     undo: {}", a.notes.join("; "));
        }
    }
    if failures > SHOWN {
        println!("\n... and {} more failures", failures - SHOWN);
    }
    failures
}

#[test]
fn every_damage_of_a_cleanly_closed_store_is_harmless_or_reported_and_deletes_no_live_data() {
    let seed = common::seed("mutation");
    let started = Instant::now();
    let bases = build_bases(seed);
    let count = env_usize("EVENDB_MUTATIONS").unwrap_or(DEFAULT_MUTATIONS);
    let indexes: Vec<usize> = match env_usize("EVENDB_MUTATION") {
        Some(i) => vec![i],
        None => (0..count).collect(),
    };
    let results = run(&bases, seed, &indexes);
    println!(
        "\n{} mutated stores of seed {seed} in {:.1?}",
        results.len(),
        started.elapsed()
    );
    let totals = summarize(&results);
    let failures = report_failures(&results, seed);
    let count = |c: &str| totals.get(c).copied().unwrap_or(0);
    assert!(
        failures == 0,
        "seed {seed}: {failures} of {} mutated stores failed: {} panic, {} invented, {} \
         silent-loss, {} live-data-deleted (details above; replay with EVENDB_SEED={seed})",
        results.len(),
        count("panic"),
        count("invented"),
        count("silent-loss"),
        count("live-data-deleted"),
    );
}
