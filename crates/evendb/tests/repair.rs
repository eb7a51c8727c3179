//! `evendb::repair`: salvage into a new store, with what was lost reported.

use evendb::{Db, Options};
use std::collections::BTreeMap;
use std::path::Path;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A closed store with several chunks, tables and logs, some keys deleted.
fn store(dir: &Path) -> Model {
    let db = Options::default()
        .max_chunk_size(32 << 10)
        .max_log_size(8 << 10)
        .open(dir)
        .unwrap();
    let mut m = Model::new();
    for round in 0..3u32 {
        for i in 0..600u32 {
            let key = format!("key{:05}", (i * 7919) % 1000).into_bytes();
            if (i + round) % 13 == 0 {
                db.delete(&key).unwrap();
                m.remove(&key);
            } else {
                let value = format!("v{round}-{i}").repeat(3).into_bytes();
                db.put(&key, &value).unwrap();
                m.insert(key, value);
            }
        }
    }
    db.compact().unwrap();
    for i in 0..50u32 {
        let key = format!("key{:05}", i * 3).into_bytes();
        db.put(&key, b"late").unwrap();
        m.insert(key, b"late".to_vec());
    }
    drop(db);
    m
}

fn contents(dir: &Path) -> Model {
    let db = Db::open(dir).unwrap();
    db.scan::<&[u8], _>(..).map(|r| r.unwrap()).collect()
}

fn files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn repairing_a_sound_store_copies_it_exactly_and_reports_no_loss() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    let want = store(&src);
    let report = evendb::repair(&src, &dest).unwrap();
    assert!(report.is_lossless(), "{report:?}");
    assert_eq!(report.keys_written, want.len() as u64);
    assert_eq!(contents(&dest), want);
    assert_eq!(contents(&src), want, "the source is only read");
}

#[test]
fn a_damaged_table_block_loses_only_its_keys_and_is_named() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    let want = store(&src);
    let table = files(&src, "tbl").into_iter().next().expect("a table");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[48 + 40] ^= 0x10; // inside the first data block
    std::fs::write(&table, &bytes).unwrap();
    let report = evendb::repair(&src, &dest).unwrap();
    assert!(!report.is_lossless());
    let name = table.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        report.damaged.iter().any(|d| d.contains(&name)),
        "{:?}",
        report.damaged
    );
    let got = contents(&dest);
    assert!(got.len() < want.len(), "the damaged block's keys are gone");
    for (k, v) in &got {
        assert_eq!(want.get(k), Some(v), "no wrong or invented value");
    }
}

#[test]
fn without_a_manifest_every_file_is_read_and_the_report_warns() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    let want = store(&src);
    std::fs::remove_file(src.join("MANIFEST")).unwrap();
    assert!(matches!(
        Db::open(&src),
        Err(evendb::Error::NoManifest { .. })
    ));
    let report = evendb::repair(&src, &dest).unwrap();
    assert!(!report.warnings.is_empty());
    let got = contents(&dest);
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{}", String::from_utf8_lossy(k));
    }
}

#[test]
fn repair_refuses_a_destination_that_holds_files() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    store(&src);
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::write(dest.join("x"), b"keep").unwrap();
    assert!(matches!(
        evendb::repair(&src, &dest),
        Err(evendb::Error::InvalidArgument(_))
    ));
    assert_eq!(std::fs::read(dest.join("x")).unwrap(), b"keep");
}
