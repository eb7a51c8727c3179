//! A full disk: writes fail with a typed error naming `ENOSPC`, nothing
//! acknowledged is lost, the store can be opened read-only while the disk
//! is full, and opens normally and takes writes once space is freed.

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Durability, Error, Options};
use std::sync::Arc;

fn options(fs: &MemFs, durability: Durability) -> Options {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(durability)
        .max_chunk_size(64 << 10)
        .max_log_size(16 << 10)
        .maintenance_threads(0)
}

fn key(i: u32) -> String {
    format!("app{:02}|{i:07}", i % 13)
}

/// Writes until the disk is full; returns how many puts were durable
/// when the first one failed, and that failure.
fn fill(db: &Db, sync: bool) -> (u32, Error) {
    let mut durable = 0;
    for i in 0.. {
        if let Err(e) = db.put(key(i), [i as u8; 200]) {
            return (durable, e);
        }
        if sync {
            durable = i + 1;
        } else if i % 500 == 499 {
            match db.flush() {
                Ok(()) => durable = i + 1,
                Err(e) => return (durable, e),
            }
        }
    }
    unreachable!()
}

fn is_enospc(e: &Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.raw_os_error() == Some(28) {
                return true;
            }
        }
        source = s.source();
    }
    e.to_string().contains("No space left")
}

#[test]
fn a_full_disk_loses_nothing_acknowledged_and_the_store_reopens_once_freed() {
    for (what, durability, sync) in [
        ("sync", Durability::Sync, true),
        (
            "buffered",
            Durability::Buffered {
                sync_interval: std::time::Duration::from_secs(3600),
            },
            false,
        ),
    ] {
        let fs = MemFs::new();
        let db = options(&fs, durability).open(common::dir()).unwrap();
        fs.set_capacity(Some(2 << 20));
        let (durable, err) = fill(&db, sync);
        assert!(durable > 1000, "{what}: only {durable} puts fitted");
        assert!(is_enospc(&err), "{what}: {err}");
        // Poisoned: later writes say why, and do not pretend.
        assert!(db.put("more", "x").is_err());
        drop(db);

        // Not a byte free: a normal open needs to write and fails clearly;
        // a read-only open writes nothing and reads everything acknowledged.
        fs.set_capacity(Some(0));
        let e = options(&fs, durability).open(common::dir()).unwrap_err();
        assert!(is_enospc(&e), "{what}: open on a full disk: {e}");
        let ro = options(&fs, durability)
            .read_only(true)
            .open(common::dir())
            .unwrap();
        for i in (0..durable).step_by(97) {
            assert!(ro.get(key(i)).unwrap().is_some(), "{what}: key {i} lost");
        }
        assert!(matches!(ro.put("k", "v"), Err(Error::ReadOnly(_))));
        drop(ro);

        // Space freed: the store opens, holds every acknowledged put, and
        // takes writes again.
        fs.set_capacity(None);
        let db = options(&fs, durability).open(common::dir()).unwrap();
        let n = common::all(&db).len() as u32;
        assert!(
            n >= durable,
            "{what}: {n} keys after reopening, {durable} acknowledged"
        );
        for i in 0..durable {
            assert_eq!(
                db.get(key(i)).unwrap().as_deref(),
                Some(&[i as u8; 200][..]),
                "{what}: key {i}"
            );
        }
        db.put("more", "x").unwrap();
        db.flush().unwrap();
    }
}
