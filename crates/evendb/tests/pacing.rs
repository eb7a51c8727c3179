//! Puts are paced, never stopped, when maintenance is behind: with the
//! maintenance threads held inside a rebuild, puts to the chunk it is
//! rebuilding go on (slowed down) instead of waiting for it or rebuilding
//! the chunk themselves, and everything is there once it lets go.

mod common;

use evendb::vfs::MemFs;
use evendb::{Durability, Options};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn puts_are_paced_while_maintenance_is_held_and_nothing_is_lost() {
    let seed = common::seed("pacing");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let hold = Arc::new(AtomicBool::new(true));
    let held = Arc::new(AtomicU64::new(0));
    let hook = {
        let (hold, held) = (hold.clone(), held.clone());
        move |name: &str| {
            if name == "rebalance.after_divert" || name == "run.after_write" {
                held.fetch_add(1, Ordering::SeqCst);
                // Held until the test lets go, or a minute at most, so a
                // put that waits for this rebuild fails the test below
                // instead of hanging it.
                let since = Instant::now();
                while hold.load(Ordering::SeqCst) && since.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            false
        }
    };
    let db = Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Buffered {
            sync_interval: Duration::from_secs(3600),
        })
        .max_chunk_size(4 << 20)
        .max_log_size(64 << 10)
        // No munks: every chunk writes through its log.
        .memory_budget(0)
        .maintenance_threads(1)
        .fail_points(hook)
        .open(common::dir())
        .expect("open");
    let mut model = BTreeMap::new();
    let started = Instant::now();
    // About ten times the log limit into one chunk, in random key order.
    for i in 0..3000u32 {
        let key = format!("k{:06}", rng.u32(0..50_000)).into_bytes();
        let mut value = format!("{i}-").into_bytes();
        value.resize(200, b'v');
        db.put(&key, &value).expect("put");
        model.insert(key, value);
    }
    let took = started.elapsed();
    let s = db.stats();
    assert!(
        held.load(Ordering::SeqCst) > 0,
        "seed {seed}: the maintenance thread never reached a rebuild"
    );
    assert!(
        hold.load(Ordering::SeqCst),
        "seed {seed}: the puts finished only after the held rebuild gave up ({took:?})"
    );
    assert!(s.put_pace_waits > 0, "seed {seed}: {s:#?}");
    assert!(s.put_pace_wait_micros >= s.put_pace_waits * 250, "{s:#?}");
    hold.store(false, Ordering::SeqCst);

    // Maintenance catches up: the chunk's logs go back under their limit.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = db.stats();
        let pending = s.puts > 0 && s.rebalances + s.log_runs + s.splits == 0;
        if !pending || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = db.stats();
    assert!(s.rebalances + s.log_runs + s.splits > 0, "{s:#?}");
    let all: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(all, model, "seed {seed}: the store differs from the puts");
    drop(db);
    let db = Options::default()
        .storage(Arc::new(fs.clone()))
        .memory_budget(0)
        .open(common::dir())
        .expect("reopen");
    let all: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(all, model, "seed {seed}: after a reopen");
}
