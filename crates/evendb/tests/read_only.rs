//! Read-only opens (`Options::read_only`): they read everything a normal
//! open reads, refuse every write with `Error::ReadOnly`, work where no
//! write can succeed (a full disk), and leave every file as it was, a torn
//! log tail included.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs, Storage};
use evendb::{Durability, Error, Options};
use std::collections::BTreeMap;
use std::path::Path;
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
