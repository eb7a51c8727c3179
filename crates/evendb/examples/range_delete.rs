//! What a retention delete costs: dropping one app's events by one range
//! delete, against deleting the same number of keys one by one and in
//! write batches, and how much space comes back.
//!
//! ```text
//! cargo run --release -p evendb --example range_delete -- [dir] [apps] [events_per_app]
//! ```
//!
//! Loads `apps` apps (default 100) of `events_per_app` events (default
//! 10,000, values of 100 bytes) keyed `app | timestamp`, in time order,
//! then deletes three apps: one by `delete_prefix`, one key by key, one
//! in batches of 1,000 deletes. Prints each one's time, then the bytes of
//! tables and logs before and after a compaction. Without `dir`, a
//! temporary directory is used.

use evendb::{Db, WriteBatch};
use std::time::Instant;

fn key(app: u32, event: u32) -> String {
    format!(
        "app{app:05}|{:012}",
        1_700_000_000_000u64 + u64::from(event)
    )
}

fn disk(db: &Db) -> u64 {
    db.chunks()
        .expect("chunks")
        .iter()
        .map(|c| c.table_bytes + c.log_bytes)
        .sum()
}

fn main() -> evendb::Result<()> {
    let mut args = std::env::args().skip(1);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = args.next().map_or(tmp.path().to_path_buf(), Into::into);
    let apps: u32 = args.next().map_or(100, |a| a.parse().expect("apps"));
    let events: u32 = args.next().map_or(10_000, |a| a.parse().expect("events"));
    let db = Db::open(&dir)?;
    let value = [7u8; 100];
    let start = Instant::now();
    for e in 0..events {
        for app in 0..apps {
            db.put(key(app, e), value)?;
        }
    }
    db.flush()?;
    println!(
        "loaded {} keys in {:.1} s, {} chunks",
        u64::from(apps) * u64::from(events),
        start.elapsed().as_secs_f64(),
        db.stats().chunks
    );
    db.compact()?;
    let before = disk(&db);

    let t = Instant::now();
    db.delete_prefix(format!("app{:05}|", 1))?;
    let by_range = t.elapsed();

    let t = Instant::now();
    for e in 0..events {
        db.delete(key(2, e))?;
    }
    let one_by_one = t.elapsed();

    let t = Instant::now();
    let mut batch = WriteBatch::with_capacity(1000);
    for e in 0..events {
        batch.delete(key(3, e));
        if batch.len() == 1000 {
            db.write(&batch)?;
            batch.clear();
        }
    }
    db.write(&batch)?;
    let batched = t.elapsed();

    for app in 1..=3 {
        assert_eq!(db.prefix(format!("app{app:05}|")).count(), 0);
    }
    println!(
        "delete {events} keys: delete_prefix {:.3} ms, one by one {:.1} ms, batches of 1000 {:.1} ms",
        by_range.as_secs_f64() * 1e3,
        one_by_one.as_secs_f64() * 1e3,
        batched.as_secs_f64() * 1e3
    );
    // Half the store in one call: still one manifest write.
    let t = Instant::now();
    db.delete_range(key(50, 0)..)?;
    println!(
        "delete_range of apps 50.. ({} keys): {:.3} ms",
        u64::from(apps.saturating_sub(50)) * u64::from(events),
        t.elapsed().as_secs_f64() * 1e3
    );
    db.flush()?;
    let t = Instant::now();
    db.compact()?;
    println!(
        "tables and logs: {:.1} MiB before, {:.1} MiB after a compaction ({:.1} s)",
        before as f64 / 1048576.0,
        disk(&db) as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
