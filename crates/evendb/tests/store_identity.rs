//! Misplaced, stale and foreign files never cost data: regression tests,
//! one per way an open used to destroy or hide data.

use evendb::{Error, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts() -> Options {
    Options::default()
        .max_chunk_size(32 << 10)
        .max_log_size(8 << 10)
}

/// Writes `n` keys of round `round` and closes the store cleanly.
fn session(dir: &Path, round: u32, n: u32, m: &mut Model) {
    let db = opts().open(dir).unwrap();
    for i in 0..n {
        let key = format!("key{:05}", (i * 7919) % 2000).into_bytes();
        let value = format!("r{round}-{i}").repeat(4).into_bytes();
        db.put(&key, &value).unwrap();
        m.insert(key, value);
    }
    db.compact().unwrap();
    // And some puts left in the logs.
    for i in 0..100 {
        let key = format!("key{:05}", i * 13).into_bytes();
        let value = format!("late{round}-{i}").into_bytes();
        db.put(&key, &value).unwrap();
        m.insert(key, value);
    }
    drop(db);
}

fn contents(dir: &Path) -> evendb::Result<Model> {
    let db = opts().open(dir)?;
    db.scan::<&[u8], _>(..).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name() != "LOCK")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The store's largest log file.
fn largest_log(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a log")
}

/// A store after two sessions, and a copy of it taken between them.
fn two_sessions() -> (tempfile::TempDir, PathBuf, PathBuf, Model) {
    let t = tempfile::tempdir().unwrap();
    let (dir, old) = (t.path().join("db"), t.path().join("old"));
    let mut m = Model::new();
    session(&dir, 1, 1500, &mut m);
    copy_dir(&dir, &old);
    session(&dir, 2, 1500, &mut m);
    (t, dir, old, m)
}

/// Old code: every open rewrote the MANIFEST and removed the files it did
/// not list, so restoring an older MANIFEST and running one read deleted
/// the only copies of the newer tables.
#[test]
fn an_older_manifest_is_refused_and_deletes_nothing() {
    let (_t, dir, old, want) = two_sessions();
    let current = std::fs::read(dir.join("MANIFEST")).unwrap();
    std::fs::copy(old.join("MANIFEST"), dir.join("MANIFEST")).unwrap();
    let before = listing(&dir);
    match contents(&dir) {
        Err(Error::Corruption { file, detail, .. }) => {
            assert!(file.ends_with("MANIFEST"), "{file:?}");
            assert!(detail.contains("older"), "{detail}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|m| m.len())),
    }
    assert_eq!(listing(&dir), before, "nothing written, nothing removed");
    std::fs::write(dir.join("MANIFEST"), current).unwrap();
    assert_eq!(contents(&dir).unwrap(), want);
}

/// Old code: the MANIFEST's checksum seed was a constant, so another
/// store's MANIFEST was accepted and the files it did not list deleted.
#[test]
fn a_manifest_of_another_store_is_refused_and_deletes_nothing() {
    let (t, dir, _old, want) = two_sessions();
    let other = t.path().join("other");
    session(&other, 9, 300, &mut Model::new());
    let current = std::fs::read(dir.join("MANIFEST")).unwrap();
    std::fs::copy(other.join("MANIFEST"), dir.join("MANIFEST")).unwrap();
    let before = listing(&dir);
    assert!(matches!(contents(&dir), Err(Error::Corruption { .. })));
    assert_eq!(listing(&dir), before);
    std::fs::write(dir.join("MANIFEST"), current).unwrap();
    assert_eq!(contents(&dir).unwrap(), want);
}

/// Old code: with the MANIFEST gone, a write recreated the store over the
/// old files (a new 000001.log over the old one, every other file deleted).
#[test]
fn evendb_files_without_a_manifest_are_refused_never_recreated() {
    let (_t, dir, _old, want) = two_sessions();
    let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
    std::fs::remove_file(dir.join("MANIFEST")).unwrap();
    let before = listing(&dir);
    match opts().create_if_missing(true).open(&dir) {
        Err(Error::NoManifest { files, .. }) => {
            assert!(files.iter().any(|f| f == "CHECKPOINT"), "{files:?}")
        }
        other => panic!("expected NoManifest, got {other:?}"),
    }
    assert_eq!(listing(&dir), before);
    std::fs::write(dir.join("MANIFEST"), manifest).unwrap();
    assert_eq!(contents(&dir).unwrap(), want);
}

/// Old code: an empty or short CHECKPOINT was skipped without a warning,
/// recovery cut the whole last session, and wrote the cut into the
/// MANIFEST for good.
#[test]
fn an_empty_or_short_checkpoint_is_refused_not_a_silent_cut() {
    for len in [0usize, 30, 100] {
        let (_t, dir, _old, want) = two_sessions();
        let path = dir.join("CHECKPOINT");
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, &good[..len]).unwrap();
        let before = listing(&dir);
        match contents(&dir) {
            Err(Error::Corruption { file, .. }) => assert!(file.ends_with("CHECKPOINT")),
            other => panic!(
                "length {len}: expected a refusal, got {:?}",
                other.map(|m| m.len())
            ),
        }
        assert_eq!(listing(&dir), before, "length {len}: nothing written");
        std::fs::write(&path, good).unwrap();
        assert_eq!(contents(&dir).unwrap(), want, "length {len}");
    }
}

/// Old code: the CHECKPOINT's seed was a constant too; another store's
/// checkpoint was accepted and recovery cut the session at its point.
#[test]
fn a_checkpoint_of_another_store_or_an_older_one_is_refused() {
    let (t, dir, old, want) = two_sessions();
    let other = t.path().join("other");
    session(&other, 9, 300, &mut Model::new());
    let path = dir.join("CHECKPOINT");
    let good = std::fs::read(&path).unwrap();
    for from in [other.join("CHECKPOINT"), old.join("CHECKPOINT")] {
        std::fs::copy(&from, &path).unwrap();
        let before = listing(&dir);
        match contents(&dir) {
            Err(Error::Corruption { file, .. }) => assert!(file.ends_with("CHECKPOINT")),
            other => panic!(
                "{from:?}: expected a refusal, got {:?}",
                other.map(|m| m.len())
            ),
        }
        assert_eq!(listing(&dir), before);
    }
    std::fs::write(&path, good).unwrap();
    assert_eq!(contents(&dir).unwrap(), want);
}

/// Old code: nothing recorded a log's durable length, so an emptied log or
/// one that lost its last records read as a shorter, sound log.
#[test]
fn an_emptied_log_is_corruption() {
    let (_t, dir, _old, _want) = two_sessions();
    let log = largest_log(&dir);
    let bytes = std::fs::read(&log).unwrap();
    assert!(bytes.len() > 48, "the log holds records");
    std::fs::write(&log, &bytes[..48]).unwrap();
    let db = opts().open(&dir).unwrap();
    let all: evendb::Result<Model> = db.scan::<&[u8], _>(..).collect();
    let report = db.verify_integrity().unwrap();
    assert!(
        all.is_err() || !report.is_ok(),
        "the loss is reported: {report:?}"
    );
}

/// A file that is not listed and not recorded obsolete is moved aside,
/// never deleted: old code deleted any unlisted engine-named file.
#[test]
fn an_unlisted_file_is_moved_to_lost_and_found_not_deleted() {
    let (_t, dir, old, want) = two_sessions();
    // A file of the first session that the second one replaced.
    let stray = std::fs::read_dir(&old)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| (n.ends_with(".tbl") || n.ends_with(".log")) && !dir.join(n).exists())
        .expect("a replaced file");
    // An open deletes what the MANIFEST records obsolete and clears the
    // record; the file then comes back (a restore from a backup).
    drop(opts().open(&dir).unwrap());
    std::fs::copy(old.join(&stray), dir.join(&stray)).unwrap();
    let db = opts().open(&dir).unwrap();
    let report = db.verify_integrity().unwrap();
    drop(db);
    assert!(!dir.join(&stray).exists());
    assert_eq!(
        std::fs::read(dir.join("lost+found").join(&stray)).unwrap(),
        std::fs::read(old.join(&stray)).unwrap()
    );
    assert_eq!(report.lost_and_found, vec![stray]);
    assert_eq!(contents(&dir).unwrap(), want);
}

/// A log extended by a huge sparse hole (after its checkpointed length) is
/// checked in bounded pieces and its tail reported, never allocated whole
/// (the tail: the hole, and the zero padding of the log's last page before
/// it).
#[test]
fn a_huge_sparse_log_tail_is_read_in_pieces_and_reported() {
    let (_t, dir, _old, want) = two_sessions();
    let log = largest_log(&dir);
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len + (64 << 20)).unwrap();
    drop(f);
    let db = opts().open(&dir).unwrap();
    let report = db.verify_integrity().unwrap();
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        report
            .torn_tails
            .iter()
            .any(|(n, b)| *n == name && (64 << 20..(64 << 20) + 4096).contains(b)),
        "{:?}",
        report.torn_tails
    );
    drop(db);
    assert_eq!(contents(&dir).unwrap(), want);
}
