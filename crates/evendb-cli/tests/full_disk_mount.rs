//! A full disk on a real file system: `load` into a store on a 24 MiB
//! tmpfs that the test mounts (as root; without root it says so and checks
//! nothing), then the store read while the disk is full, a reload after
//! space is freed, and the store read from a read-only mount.
//!
//! The library's own full-disk tests (`crates/evendb/tests/full_disk.rs`)
//! use `MemFs`'s capacity limit; this one checks that the real system's
//! ENOSPC and EROFS reach the user as the same clear outcomes.

mod common;

use common::{evendb, files, Run};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PAIRS: usize = 40_000;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's syntax: "24m") at `dir`; `None`
    /// when not running as root.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let uid = Command::new("id").arg("-u").output().expect("run id");
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return None;
        }
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "root could not mount a tmpfs at {dir:?}");
        Some(Tmpfs(dir.to_path_buf()))
    }

    /// Remounts with new options ("size=64m", "ro").
    fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The input's pairs, line by line: keys of seven apps in time order,
/// values of 800 hex digits that do not compress.
fn pairs() -> Vec<(String, String)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..PAIRS)
        .map(|i| {
            let value: String = (0..50)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    format!("{state:016x}")
                })
                .collect();
            (format!("app{:03}|{i:08}", i % 7), value)
        })
        .collect()
}

fn write_jsonl(path: &Path, pairs: &[(String, String)]) {
    let text: String = pairs
        .iter()
        .map(|(k, v)| format!("{{\"key\":\"{k}\",\"value\":\"{v}\"}}\n"))
        .collect();
    std::fs::write(path, text).expect("write input");
}

/// Every pair of the store, read through a read-only open (which writes
/// nothing, so it works on a full disk and a read-only mount).
fn read_only_contents(db: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = evendb::Options::default()
        .read_only(true)
        .open(db)
        .expect("read-only open");
    db.scan::<&[u8], _>(..)
        .collect::<Result<_, _>>()
        .expect("scan store")
}

/// The number after `word` in `text` ("at least 20586 pairs").
fn number_after(text: &str, word: &str) -> usize {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {text}"))
        + word.len();
    text[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {word:?} in {text}"))
}

/// Writes `path` until the disk is full.
fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).expect("create the filler");
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    // (A partial block may still fit.)
    while f.write_all(&block[..1]).is_ok() {}
}

fn assert_ok(run: &Run, what: &str) {
    assert_eq!(run.code, 0, "{what} failed: {run:?}");
}

#[test]
fn a_full_disk_loses_no_durable_pair_keeps_the_store_readable_and_a_reload_completes() {
    let work = tempfile::tempdir().expect("tempdir");
    let mnt = work.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mount point");
    let Some(fs) = Tmpfs::mount(&mnt, "24m") else {
        eprintln!("not root: the real full-disk test needs a tmpfs mount; checked nothing");
        return;
    };
    let pairs = pairs();
    let input = work.path().join("big.jsonl");
    write_jsonl(&input, &pairs);
    let db = mnt.join("store");

    // 1. The load meets the full disk: it says how many pairs are durable
    //    and where to reload from.
    let load = evendb(&db, &["load", input.to_str().expect("path")]);
    assert_eq!(load.code, 1, "load onto a full disk: {load:?}");
    assert!(load.stderr.contains("No space left on device"), "{load:?}");
    assert!(load.stderr.contains("free some disk space"), "{load:?}");
    let durable = number_after(&load.stderr, "at least");
    let resume = number_after(&load.stderr, "reload from line");
    assert!(
        durable > 0,
        "a flush happened before the disk filled: {load:?}"
    );
    assert_eq!(resume, durable + 1, "{load:?}");

    // 2. The store reads while the disk is full, with every durable pair
    //    and nothing that was not loaded; the read commands change no file.
    let held = read_only_contents(&db);
    assert!(
        held.len() >= durable,
        "{} pairs held, {durable} durable",
        held.len()
    );
    let input_map: BTreeMap<Vec<u8>, Vec<u8>> = pairs
        .iter()
        .map(|(k, v)| (k.clone().into_bytes(), v.clone().into_bytes()))
        .collect();
    for (k, v) in &held {
        assert_eq!(input_map.get(k), Some(v), "a pair the input does not have");
    }
    for (k, _) in &pairs[..durable] {
        assert!(held.contains_key(k.as_bytes()), "durable pair {k} lost");
    }
    let before = files(&db);
    let (k0, v0) = &pairs[0];
    let get = evendb(&db, &["get", k0]);
    assert_ok(&get, "get on a full disk");
    assert_eq!(get.stdout.trim_end(), v0);
    let scan = evendb(&db, &["scan", "--keys-only", "--prefix", "app003|"]);
    assert_ok(&scan, "scan on a full disk");
    assert_eq!(
        scan.stdout.lines().count(),
        held.keys().filter(|k| k.starts_with(b"app003|")).count()
    );
    for args in [&["verify"][..], &["stats"], &["chunks"]] {
        assert_ok(&evendb(&db, args), &format!("{args:?} on a full disk"));
    }
    assert!(
        files(&db) == before,
        "a read command changed the store's files"
    );

    // 3. A write on the full disk fails clearly and changes nothing, or,
    //    if it fits in space the store's files already hold, is kept. (The
    //    write that failed may have been a table, whose partial file is
    //    gone: fill what it left.)
    let filler = mnt.join("filler");
    fill(&filler);
    let mut input_map = input_map;
    let put = evendb(&db, &["put", "x", "y"]);
    if put.code == 0 {
        let mut with = held.clone();
        with.insert(b"x".to_vec(), b"y".to_vec());
        assert!(read_only_contents(&db) == with, "the put on a full disk");
        input_map.insert(b"x".to_vec(), b"y".to_vec());
    } else {
        assert_eq!(put.code, 1, "{put:?}");
        assert!(put.stderr.contains("No space left on device"), "{put:?}");
        assert!(read_only_contents(&db) == held);
    }

    // 4. Space freed: reloading from the line it named completes the load.
    std::fs::remove_file(&filler).expect("remove the filler");
    fs.remount("size=96m");
    let rest = work.path().join("rest.jsonl");
    write_jsonl(&rest, &pairs[resume - 1..]);
    assert_ok(
        &evendb(&db, &["load", rest.to_str().expect("path")]),
        "reload",
    );
    assert!(
        read_only_contents(&db) == input_map,
        "the reloaded store differs from the input"
    );

    // 5. A read-only mount: the read commands work, a write says why not.
    fs.remount("ro");
    assert!(read_only_contents(&db) == input_map);
    let get = evendb(&db, &["get", k0]);
    assert_ok(&get, "get on a read-only mount");
    assert_eq!(get.stdout.trim_end(), v0);
    assert_ok(&evendb(&db, &["verify"]), "verify on a read-only mount");
    let put = evendb(&db, &["put", "x", "y"]);
    assert_eq!(put.code, 1, "{put:?}");
    assert!(put.stderr.contains("Read-only file system"), "{put:?}");
}
