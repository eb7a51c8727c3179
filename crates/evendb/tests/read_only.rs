//! Read-only opens (`Options::read_only`): they read everything a normal
//! open reads (the `Sync` journal's writes a crash left out of the chunk
//! logs included), refuse every write with `Error::ReadOnly`, work where
//! no write can succeed (a full disk), and leave every file as it was, a
//! torn log tail included.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs, Storage};
use evendb::{Durability, Error, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn options(fs: &MemFs) -> Options {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .max_chunk_size(4096)
        .max_log_size(1024)
        .block_size(256)
        .maintenance_threads(0)
}

/// Every file of the directory and its bytes.
fn files(fs: &MemFs, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs.list(dir)
        .expect("list")
        .into_iter()
        .map(|n| {
            let bytes = fs.read_file(&dir.join(&n)).unwrap_or_default();
            (n, bytes)
        })
        .collect()
}

fn key(i: u32) -> Vec<u8> {
    format!("app{:02}|{i:06}", i % 7).into_bytes()
}

/// Writes `n` keys (some deleted) and closes the store; returns what it holds.
fn fill(fs: &MemFs, n: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = options(fs).open(common::dir()).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..n {
        let v = vec![i as u8; 40 + (i % 50) as usize];
        db.put(key(i), &v).expect("put");
        model.insert(key(i), v);
        if i % 9 == 0 && i > 0 {
            db.delete(key(i / 2)).expect("delete");
            model.remove(&key(i / 2));
        }
    }
    drop(db);
    model
}

/// Opens the store read-only and checks that it holds `model`.
fn open_read_only(fs: &MemFs, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> evendb::Db {
    let db = options(fs)
        .read_only(true)
        .open(common::dir())
        .expect("read-only open");
    let all: BTreeMap<Vec<u8>, Vec<u8>> = common::all(&db).into_iter().collect();
    assert_eq!(&all, model);
    db
}

#[test]
fn a_read_only_open_reads_everything_refuses_writes_and_changes_no_file() {
    let fs = MemFs::new();
    let model = fill(&fs, 3000);
    let before = files(&fs, &common::dir());
    assert!(before.len() > 10, "many chunks: {:?}", before.keys());

    let db = open_read_only(&fs, &model);
    for i in (0..3000).step_by(37) {
        assert_eq!(db.get(key(i)).expect("get"), model.get(&key(i)).cloned());
    }
    let app3 = db.prefix("app03|").count();
    assert_eq!(
        app3,
        model.keys().filter(|k| k.starts_with(b"app03|")).count()
    );
    assert!(db.verify_integrity().expect("verify").is_ok());
    for refused in [
        db.put("k", "v"),
        db.delete(key(1)),
        db.flush(),
        db.compact(),
    ] {
        assert!(matches!(refused, Err(Error::ReadOnly(_))), "{refused:?}");
    }
    // Reads still work after refused writes.
    assert_eq!(
        db.get(key(2999)).expect("get"),
        model.get(&key(2999)).cloned()
    );
    drop(db);
    assert_eq!(files(&fs, &common::dir()), before, "a read-only open wrote");

    // A normal open afterwards sees the same data and can write.
    let db = options(&fs).open(common::dir()).expect("open");
    db.put("after", "x").expect("put");
    assert_eq!(common::all(&db).len(), model.len() + 1);
}

#[test]
fn a_read_only_open_works_where_every_write_fails() {
    let fs = MemFs::new();
    let model = fill(&fs, 1500);
    // A full disk: every state-changing operation fails from now on.
    fs.set_fault(Some(Fault::FailFrom(1)));
    let err = options(&fs)
        .open(common::dir())
        .expect_err("a normal open writes");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    let db = open_read_only(&fs, &model);
    assert!(matches!(db.put("k", "v"), Err(Error::ReadOnly(_))));
    drop(db);
    assert_eq!(fs.counted_ops(), 1, "only the normal open's first write");
    // Space freed: a normal open recovers and writes.
    fs.set_fault(None);
    let db = options(&fs).open(common::dir()).expect("open");
    db.put("k", "v").expect("put");
}

#[test]
fn a_read_only_open_leaves_a_torn_tail_and_reads_before_it() {
    let fs = MemFs::new();
    let db = options(&fs)
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_secs(3600),
        })
        .open(common::dir())
        .expect("open");
    for i in 0..400 {
        db.put(key(i), vec![1u8; 60]).expect("put");
    }
    db.flush().expect("flush");
    for i in 400..800 {
        db.put(key(i), vec![2u8; 60]).expect("put");
    }
    fs.set_fault(Some(Fault::CrashAt(1)));
    drop(db);
    // Unsynced writes keep a random prefix, the last one torn.
    fs.crash(CrashMode::Random { seed: 7 });
    fs.set_fault(None);
    let before = files(&fs, &common::dir());
    let db = options(&fs)
        .read_only(true)
        .open(common::dir())
        .expect("read-only open");
    let got = common::all(&db);
    assert!(got.len() >= 400, "the flushed puts: {}", got.len());
    for i in 0..400 {
        assert_eq!(db.get(key(i)).expect("get"), Some(vec![1u8; 60]));
    }
    drop(db);
    assert_eq!(files(&fs, &common::dir()), before, "a read-only open wrote");
    // A normal open then recovers the same prefix (and may cut the tail).
    let db = options(&fs).open(common::dir()).expect("open");
    assert_eq!(common::all(&db), got);
}

#[test]
fn a_read_only_open_of_no_store_creates_nothing() {
    let fs = MemFs::new();
    let err = options(&fs)
        .read_only(true)
        .open(common::dir())
        .expect_err("no store");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    fs.create_dir_all(&common::dir()).expect("mkdir");
    let err = options(&fs)
        .read_only(true)
        .open(common::dir())
        .expect_err("empty directory");
    assert!(matches!(err, Error::NotAStore(_)), "{err}");
    assert!(files(&fs, &common::dir()).is_empty());
}

/// `Sync` options whose checkpointer can be stopped: while `hold` is set,
/// it waits at its first step, so the chunk logs are not synced and the
/// journal keeps every write (as when a crash comes within its 200 ms).
fn sync_options(fs: &MemFs, hold: &Arc<AtomicBool>) -> Options {
    let hold = hold.clone();
    options(fs)
        .durability(Durability::Sync)
        .fail_points(move |name| {
            while name == "journal.after_seal" && hold.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        })
}

fn jkey(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Writes a `Sync` store whose durable files hold a first generation of
/// keys and a range delete, then, with the checkpointer held, overwrites,
/// deletes, batches and range-deletes more (durable in the journal only,
/// the range delete in the MANIFEST), and crashes with `mode`. Returns
/// what every acknowledged write says the store holds.
fn crash_with_journal(fs: &MemFs, mode: CrashMode) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let hold = Arc::new(AtomicBool::new(false));
    let db = sync_options(fs, &hold).open(common::dir()).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..1200 {
        let v = vec![1u8; 30 + (i % 40) as usize];
        db.put(jkey(i), &v).expect("put");
        model.insert(jkey(i), v);
    }
    db.delete_range(jkey(100)..jkey(200)).expect("range delete");
    model.retain(|k, _| !(jkey(100)..jkey(200)).contains(k));
    db.flush().expect("flush");

    hold.store(true, Ordering::Release);
    // Overwrites, some over the range deleted above (newer than it: shown).
    for i in (0..300).step_by(3) {
        db.put(jkey(i), [2u8; 20]).expect("put");
        model.insert(jkey(i), vec![2u8; 20]);
    }
    // Deletes of durable keys.
    for i in (500..600).step_by(5) {
        db.delete(jkey(i)).expect("delete");
        model.remove(&jkey(i));
    }
    // A batch of new keys, overwrites and deletes.
    let mut b = evendb::WriteBatch::new();
    for i in 0..50u32 {
        b.put(format!("n{i:03}"), [3u8; 25]);
        model.insert(format!("n{i:03}").into_bytes(), vec![3u8; 25]);
    }
    for i in (700..800).step_by(4) {
        b.put(jkey(i), [4u8; 10]);
        model.insert(jkey(i), vec![4u8; 10]);
    }
    for i in (800..900).step_by(7) {
        b.delete(jkey(i));
        model.remove(&jkey(i));
    }
    db.write(&b).expect("batch");
    // A put the range delete after it hides, and one after it that stays.
    db.put(jkey(920), [5u8; 10]).expect("put");
    db.delete_range(jkey(900)..jkey(950)).expect("range delete");
    model.retain(|k, _| !(jkey(900)..jkey(950)).contains(k));
    db.put(jkey(910), [6u8; 10]).expect("put");
    model.insert(jkey(910), vec![6u8; 10]);
    // Power fails; the checkpointer never runs again.
    std::mem::forget(db);
    fs.crash(mode);
    model
}

/// Every pair of a scan read from both ends in turn.
fn from_both_ends(scan: evendb::Scan) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    let mut scan = scan;
    while let Some(kv) = scan.next() {
        front.push(kv.expect("scan"));
        let Some(kv) = scan.next_back() else { break };
        back.push(kv.expect("scan"));
    }
    back.reverse();
    front.extend(back);
    front
}

/// Asserts that `got` is `want`, naming the first pair that differs (the
/// lists are too long to print whole).
fn same(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    let show = |kv: Option<&(Vec<u8>, Vec<u8>)>| {
        kv.map(|(k, v)| format!("{} = {v:?}", String::from_utf8_lossy(k)))
    };
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: pair {i} of {} (want {}) is {:?}, want {:?}",
            got.len(),
            want.len(),
            show(got.get(i)),
            show(want.get(i))
        );
    }
}

/// Checks every read of `db` against `model`.
fn check_reads(db: &evendb::Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    same(&common::all(db), &want, &format!("{what}: forward scan"));
    let rev: Vec<_> = db
        .scan::<&[u8], _>(..)
        .rev()
        .collect::<Result<_, _>>()
        .expect("reverse scan");
    let mut want_rev = want.clone();
    want_rev.reverse();
    same(&rev, &want_rev, &format!("{what}: reverse scan"));
    same(
        &from_both_ends(db.scan::<&[u8], _>(..)),
        &want,
        &format!("{what}: both ends"),
    );
    for i in 0..1250 {
        assert_eq!(
            db.get(jkey(i)).expect("get"),
            model.get(&jkey(i)).cloned(),
            "{what}: get {i}"
        );
    }
    for p in ["k00", "k05", "k09", "k091", "n0", "x"] {
        let want: Vec<_> = model
            .iter()
            .filter(|(k, _)| k.starts_with(p.as_bytes()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let got: Vec<_> = db.prefix(p).collect::<Result<_, _>>().expect("prefix");
        same(&got, &want, &format!("{what}: prefix {p}"));
        let mut got: Vec<_> = db
            .prefix(p)
            .rev()
            .collect::<Result<_, _>>()
            .expect("prefix");
        got.reverse();
        same(&got, &want, &format!("{what}: reverse prefix {p}"));
    }
    let (lo, hi) = (jkey(95), jkey(915));
    let want: Vec<_> = model
        .range(lo.clone()..=hi.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let got: Vec<_> = db
        .scan(lo.clone()..=hi.clone())
        .collect::<Result<_, _>>()
        .expect("scan");
    same(&got, &want, &format!("{what}: bounded scan"));
    let snap = db.snapshot();
    for i in (0..1250).step_by(7) {
        assert_eq!(
            snap.get(jkey(i)).expect("get"),
            model.get(&jkey(i)).cloned(),
            "{what}: snapshot get {i}"
        );
    }
    let mut got: Vec<_> = snap
        .scan(lo..=hi)
        .rev()
        .collect::<Result<_, _>>()
        .expect("scan");
    got.reverse();
    same(&got, &want, &format!("{what}: reverse snapshot scan"));
}

#[test]
fn a_read_only_open_shows_the_sync_journals_writes_and_writes_nothing() {
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::Random { seed: 3 },
        CrashMode::Random { seed: 11 },
    ] {
        let what = format!("{mode:?}");
        let fs = MemFs::new();
        let model = crash_with_journal(&fs, mode);
        let before = files(&fs, &common::dir());
        assert!(
            before.keys().any(|n| n.starts_with("JOURNAL-")),
            "{what}: no journal to replay"
        );

        // Used to refuse with `NeedsReplay`.
        let ro = options(&fs)
            .durability(Durability::Sync)
            .read_only(true)
            .open(common::dir())
            .unwrap_or_else(|e| panic!("{what}: read-only open: {e}"));
        let s = ro.stats();
        assert!(s.journal_replayed > 0, "{what}: nothing replayed");
        assert!(
            s.memory_write_buffers > 0,
            "{what}: no journaled write held in memory (nothing tested)"
        );
        check_reads(&ro, &model, &format!("{what}, read-only"));
        let mut b = evendb::WriteBatch::new();
        b.put("k", "v");
        for refused in [
            ro.put("k0001", "v"),
            ro.delete(jkey(2)),
            ro.write(&b),
            ro.delete_range(jkey(0)..jkey(5)),
            ro.flush(),
        ] {
            assert!(matches!(refused, Err(Error::ReadOnly(_))), "{refused:?}");
        }
        drop(ro);
        assert_eq!(
            files(&fs, &common::dir()),
            before,
            "{what}: a read-only open wrote"
        );

        // A read-write open replays the journal and shows the same.
        let db = options(&fs)
            .durability(Durability::Sync)
            .open(common::dir())
            .expect("open");
        assert_eq!(db.stats().journal_replayed, s.journal_replayed, "{what}");
        check_reads(&db, &model, &format!("{what}, replayed"));
    }
}
