//! Backups of a live store: exactly one point in time, tables shared by
//! hard links where the file system allows.

mod common;

use evendb::{Db, Options};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type Pairs = BTreeMap<Vec<u8>, Vec<u8>>;

fn pairs(scan: evendb::Scan) -> Pairs {
    scan.collect::<Result<_, _>>().expect("scan")
}

/// Name and inode of every file in `dir` with extension `ext`.
fn inodes(dir: &Path, ext: &str) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(ext))
        .map(|e| {
            let name = e.file_name().into_string().unwrap();
            (name, e.metadata().unwrap().ino())
        })
        .collect()
}

/// A store on the real file system with no maintenance thread.
fn open_quiet(dir: &Path) -> Db {
    Options::default().maintenance_threads(0).open(dir).unwrap()
}

#[test]
fn a_backup_under_concurrent_writes_equals_a_snapshot_at_its_cut() {
    let seed = common::seed("a_backup_under_concurrent_writes_equals_a_snapshot_at_its_cut");
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default()
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .memory_budget(1 << 20)
        .open(dir.path())
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ t);
                while !stop.load(Ordering::Acquire) {
                    let key = format!("{:04}", rng.u32(..2000));
                    if rng.u8(..10) == 0 {
                        db.delete(&key).unwrap();
                    } else {
                        let value = format!("{t}:{}", rng.u64(..)).repeat(rng.usize(1..8));
                        db.put(&key, value).unwrap();
                    }
                    written.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let backups = tempfile::tempdir().unwrap();
    for b in 0..common::iterations(6) {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let before = written.load(Ordering::Relaxed);
        let dest = backups.path().join(format!("b{b}"));
        let snap = db.backup_with_snapshot(&dest).unwrap();
        let expected = pairs(snap.scan::<&[u8], _>(..));
        drop(snap);
        assert!(
            written.load(Ordering::Relaxed) > before,
            "writers ran during backup {b}"
        );
        let copy = Db::open(&dest).unwrap();
        assert!(copy.verify_integrity().unwrap().is_ok(), "backup {b}");
        let got = pairs(copy.scan::<&[u8], _>(..));
        assert_eq!(
            got.len(),
            expected.len(),
            "backup {b} holds as many pairs as the snapshot"
        );
        assert!(got == expected, "backup {b} differs from its snapshot");
    }
    stop.store(true, Ordering::Release);
    for w in writers {
        w.join().unwrap();
    }
    let s = db.stats();
    assert!(
        s.rebalances + s.splits > 0,
        "rebuilds ran during the backups"
    );
}

#[test]
fn a_backup_hard_links_tables_and_copies_logs() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_quiet(dir.path());
    for i in 0..300u32 {
        db.put(format!("k{i:04}"), [7u8; 50]).unwrap();
    }
    db.compact().unwrap();
    db.put("after", "compact").unwrap();
    let dest = dir.path().join("copy");
    db.backup(&dest).unwrap();

    let (src_tables, copy_tables) = (inodes(dir.path(), ".tbl"), inodes(&dest, ".tbl"));
    assert!(!copy_tables.is_empty());
    assert_eq!(src_tables, copy_tables, "tables are the same files");
    let (src_logs, copy_logs) = (inodes(dir.path(), ".log"), inodes(&dest, ".log"));
    assert!(!copy_logs.is_empty());
    for (name, ino) in &copy_logs {
        assert_ne!(src_logs.get(name), Some(ino), "{name} is a copy");
    }

    // The store moves on (its tables are rewritten and removed); the
    // backup keeps its own names for them.
    let expected = pairs(db.scan::<&[u8], _>(..));
    for i in 0..300u32 {
        db.put(format!("k{i:04}"), [8u8; 50]).unwrap();
    }
    db.compact().unwrap();
    assert!(inodes(dir.path(), ".tbl")
        .keys()
        .all(|n| !copy_tables.contains_key(n)));
    let copy = open_quiet(&dest);
    assert!(copy.verify_integrity().unwrap().is_ok());
    assert_eq!(pairs(copy.scan::<&[u8], _>(..)), expected);
}

#[test]
fn a_backup_on_storage_without_links_copies_every_file() {
    let fs = evendb::vfs::MemFs::new();
    let db = common::open_tiny(&fs);
    for i in 0..300u32 {
        db.put(format!("k{i:04}"), [7u8; 30]).unwrap();
    }
    let dest = std::path::PathBuf::from("/backup");
    db.backup(&dest).unwrap();
    let expected = pairs(db.scan::<&[u8], _>(..));
    assert_eq!(
        common::engine_files(&fs, &dest),
        common::engine_files(&fs, &common::dir())
    );
    drop(db);
    let copy = common::tiny(&fs).open(&dest).unwrap();
    assert_eq!(pairs(copy.scan::<&[u8], _>(..)), expected);
}
