//! Bad input gets a clear, typed error and loses nothing.

mod common;

use evendb::vfs::{MemFs, Storage};
use evendb::{Db, Error, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes of the header that opens every table and log.
const FILE_HEADER: usize = 48;

#[test]
fn a_second_open_of_the_same_directory_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    match Db::open(dir.path()) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    Db::open(dir.path()).expect("the lock is released on close");
}

#[test]
fn oversized_keys_and_values_are_refused_before_any_io() {
    let fs = MemFs::new();
    let db = common::open_tiny(&fs);
    fs.set_fault(None);
    let big_key = vec![7u8; MAX_KEY_SIZE + 1];
    assert!(matches!(
        db.put(&big_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.delete(&big_key),
        Err(Error::InvalidArgument(_))
    ));
    let big_value = vec![7u8; MAX_VALUE_SIZE + 1];
    assert!(matches!(
        db.put(b"k", &big_value),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(fs.counted_ops(), 0, "no I/O for refused input");
    // Exactly at the limits is fine, and survives a reopen.
    let key = vec![1u8; MAX_KEY_SIZE];
    db.put(&key, vec![2u8; 1 << 20]).unwrap();
    db.put(b"", b"").unwrap();
    drop(db);
    let db = common::open_tiny(&fs);
    assert_eq!(db.get(&key).unwrap().map(|v| v.len()), Some(1 << 20));
    assert_eq!(
        db.get(b"").unwrap(),
        Some(Vec::new()),
        "an empty value is not a deletion"
    );
}

#[test]
fn a_directory_that_is_not_a_store_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
    match Db::open(dir.path()) {
        Err(Error::NotAStore(p)) => assert_eq!(p, dir.path()),
        other => panic!("expected NotAStore, got {other:?}"),
    }
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("notes.txt")]);
}

#[test]
fn unknown_files_in_a_store_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    drop(Db::open(dir.path()).unwrap());
    std::fs::write(dir.path().join("README.operator"), b"keep").unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    db.compact().unwrap();
    drop(db);
    assert_eq!(
        std::fs::read(dir.path().join("README.operator")).unwrap(),
        b"keep"
    );
}

fn file_with_ext(fs: &MemFs, ext: &str) -> std::path::PathBuf {
    let name = common::engine_files(fs, &common::dir())
        .into_iter()
        .find(|n| n.ends_with(ext))
        .unwrap_or_else(|| panic!("no {ext} file"));
    common::dir().join(name)
}

/// A copy of the store files `names` of `from`.
fn copy_of(from: &MemFs, names: &[String]) -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(&common::dir()).unwrap();
    for name in names {
        let path = common::dir().join(name);
        fs.create(&path).unwrap();
        fs.write_file(&path, &from.read_file(&path).unwrap());
    }
    fs
}

/// A store with one table and one log: keys k000..k039 in the table, the
/// writes in `log_writes` in the log.
fn table_and_log(fs: &MemFs, log_writes: &[(&str, &str)]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = common::tiny(fs)
        .max_chunk_size(1 << 20)
        .max_log_size(1 << 20)
        .open(common::dir())
        .unwrap();
    let mut m = BTreeMap::new();
    for i in 0..40 {
        let (k, v) = (
            format!("k{i:03}").into_bytes(),
            format!("value-{i}").into_bytes(),
        );
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.compact().unwrap();
    for (k, v) in log_writes {
        db.put(k, v).unwrap();
        m.insert(k.as_bytes().to_vec(), v.as_bytes().to_vec());
    }
    m
}

/// A log file's bytes without the zero padding after its last record
/// (appends are written in whole 4 KiB pages). The records of these tests
/// end with a non-zero byte.
fn without_padding(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

fn read_all(fs: &MemFs) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Error> {
    let db = common::tiny(fs)
        .max_chunk_size(1 << 20)
        .max_log_size(1 << 20)
        .open(common::dir())?;
    db.scan::<&[u8], _>(..).collect()
}

#[test]
fn a_flipped_byte_in_a_table_block_is_corruption_naming_file_and_offset() {
    let fs = MemFs::new();
    table_and_log(&fs, &[]);
    let table = file_with_ext(&fs, ".tbl");
    let mut bytes = fs.read_file(&table).unwrap();
    bytes[FILE_HEADER + 30] ^= 0x40; // inside the first data block
    fs.write_file(&table, &bytes);
    let db = common::tiny(&fs).open(common::dir()).unwrap();
    match db.get("k000") {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, table);
            assert_eq!(
                offset, FILE_HEADER as u64,
                "the damaged block follows the header"
            );
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
    let scan: Result<Vec<_>, _> = db.scan::<&[u8], _>(..).collect();
    assert!(
        scan.unwrap_err().is_corruption(),
        "a scan errors rather than skipping"
    );
}

#[test]
fn a_flipped_byte_in_a_middle_log_record_is_corruption_naming_file_and_offset() {
    let fs = MemFs::new();
    table_and_log(&fs, &[("a", "1"), ("b", "2"), ("c", "3")]);
    let log = file_with_ext(&fs, ".log");
    let mut bytes = fs.read_file(&log).unwrap();
    let second_record = FILE_HEADER + 36 + 2; // file header, record header + "a" + "1"
    bytes[second_record + 10] ^= 0x01; // its key length
    fs.write_file(&log, &bytes);
    match read_all(&fs) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, log);
            assert_eq!(offset, second_record as u64);
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
}

/// A record cut short after the last checkpointed length (what a crash
/// leaves while a put is being written) is a torn tail: cut, counted, and
/// appends go on after it.
#[test]
fn a_torn_log_tail_after_the_checkpointed_length_is_cut() {
    let fs = MemFs::new();
    let mut want = table_and_log(&fs, &[("a", "1"), ("b", "2"), ("c", "3")]);
    let log = file_with_ext(&fs, ".log");
    let mut bytes = without_padding(fs.read_file(&log).unwrap());
    let last = bytes[bytes.len() - 39..].to_vec();
    bytes.extend_from_slice(&last[..30]); // a record's first 30 bytes
    fs.write_file(&log, &bytes);
    let db = common::tiny(&fs).open(common::dir()).unwrap();
    let got: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(got, want);
    assert_eq!(db.stats().torn_tail_bytes, 30);
    db.put("d", "4").unwrap();
    drop(db);
    want.insert(b"d".to_vec(), b"4".to_vec());
    assert_eq!(
        read_all(&fs).unwrap(),
        want,
        "appends continue after the cut"
    );
}

/// Regression (a log's end damaged in a cleanly closed store was cut as a
/// "torn tail" with only a warning, losing acknowledged puts): bytes lost
/// before the length the last checkpoint recorded durable are corruption.
#[test]
fn a_log_shorter_than_its_checkpointed_length_is_corruption() {
    for cut in [3usize, 38, 38 * 2] {
        let fs = MemFs::new();
        table_and_log(&fs, &[("a", "1"), ("b", "2"), ("c", "3")]);
        let log = file_with_ext(&fs, ".log");
        let bytes = without_padding(fs.read_file(&log).unwrap());
        fs.write_file(&log, &bytes[..bytes.len() - cut]);
        match read_all(&fs) {
            Err(Error::Corruption { file, detail, .. }) => {
                assert_eq!(file, log);
                assert!(detail.contains("checkpoint"), "{detail}");
            }
            other => panic!("cut {cut}: expected Corruption, got {other:?}"),
        }
    }
}

/// Every single-byte flip of every file is detected or harmless: the store
/// returns `Corruption` or exactly the right data, never wrong data, never
/// a panic. In a log, a flip in the last record reads as a torn tail.
#[test]
fn every_byte_flip_is_detected_or_harmless() {
    let writes = [("a", "1"), ("b", "22"), ("k005", "new")];
    let pristine = MemFs::new();
    let want = table_and_log(&pristine, &writes);
    let dir = common::dir();
    let names: Vec<String> = pristine
        .list(&dir)
        .unwrap()
        .into_iter()
        .filter(|n| n != "LOCK")
        .collect();
    let mut flips = 0;
    let mut detected = 0;
    for name in &names {
        let path = dir.join(name);
        let original = pristine.read_file(&path).unwrap();
        // A log's zero padding after its records holds nothing: a flip
        // there must be harmless, and is not counted.
        let padding = match name.ends_with(".log") {
            true => without_padding(original.clone()).len(),
            false => original.len(),
        };
        for i in 0..original.len() {
            let fs = copy_of(&pristine, &names);
            let mut bytes = original.clone();
            bytes[i] ^= 0x08;
            fs.write_file(&path, &bytes);
            flips += 1;
            if name == "CHECKPOINT" {
                // Two copies: a flip in one is reported and the other used;
                // the bytes between the slots are unused.
                let slot = 72 + u32::from_le_bytes(original[12..16].try_into().unwrap()) as usize;
                let in_slot = i < slot || (4096..4096 + slot).contains(&i);
                let db = common::tiny(&fs)
                    .max_chunk_size(1 << 20)
                    .max_log_size(1 << 20)
                    .open(&dir)
                    .unwrap_or_else(|e| panic!("{name} byte {i}: {e}"));
                assert_eq!(
                    common::all(&db).into_iter().collect::<BTreeMap<_, _>>(),
                    want
                );
                if !in_slot {
                    flips -= 1;
                } else if db.stats().checkpoint_slots_invalid == 1 {
                    detected += 1;
                }
                continue;
            }
            if i >= padding {
                flips -= 1;
                assert_eq!(read_all(&fs).unwrap(), want, "{name} padding byte {i}");
                continue;
            }
            match read_all(&fs) {
                Err(Error::Corruption { .. }) | Err(Error::UnsupportedVersion { .. }) => {
                    detected += 1
                }
                Err(e) => panic!("{name} byte {i}: unexpected error {e}"),
                Ok(got) if got == want => {}
                Ok(got) => panic!("{name} byte {i}: wrong data {got:?}"),
            }
        }
    }
    eprintln!(
        "{flips} flips over {} files, {detected} detected",
        names.len()
    );
    assert_eq!(detected, flips, "every byte of these files is checksummed");
    assert!(Path::new(&dir).is_absolute());
}

#[test]
fn opening_an_empty_directory_without_create_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let r = evendb::Options::default()
        .create_if_missing(false)
        .open(dir.path());
    assert!(matches!(r, Err(Error::NotAStore(_))), "{r:?}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no LOCK left behind"
    );
}
