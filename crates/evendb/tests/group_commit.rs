//! `Sync` puts of many threads share their fsyncs (group commit), and
//! every acknowledged one survives a power loss that keeps only what was
//! synced.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs, SlowSync};
use evendb::{Durability, Options};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const THREADS: u64 = 8;
const PUTS: u64 = 40;

#[test]
fn concurrent_sync_puts_share_fsyncs_and_all_survive_a_power_loss() {
    let seed = common::seed("group_commit");
    let fs = MemFs::new();
    // Slow syncs: while one runs, the other threads' puts pile up behind it.
    let slow = SlowSync {
        inner: Arc::new(fs.clone()),
        delay: Duration::from_millis(2),
    };
    let db = Options::default()
        .storage(Arc::new(slow))
        .durability(Durability::Sync)
        .maintenance_threads(1)
        .open(common::dir())
        .expect("open");
    let acked: Mutex<BTreeMap<Vec<u8>, Vec<u8>>> = Mutex::default();
    let before = db.stats();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, acked) = (&db, &acked);
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ t);
                for i in 0..PUTS {
                    // Each thread its own keys, so the last acknowledged
                    // value of a key is its thread's last put of it.
                    let key = format!("k{:03}-{t}", rng.u64(0..20)).into_bytes();
                    let value = format!("{t}-{i}").into_bytes();
                    db.put(&key, &value).expect("put");
                    acked.lock().unwrap().insert(key, value);
                }
            });
        }
    });
    let s = db.stats();
    let puts = s.puts - before.puts;
    let syncs = (s.log_syncs - before.log_syncs) + (s.journal_syncs - before.journal_syncs);
    assert_eq!(puts, THREADS * PUTS);
    assert!(
        syncs * 2 <= puts,
        "seed {seed}: {syncs} syncs for {puts} concurrent puts: they did not share fsyncs"
    );

    // Power loss: every operation from now on fails (the close syncs
    // nothing), then only synced bytes and directory entries survive.
    fs.set_fault(Some(Fault::CrashAt(1)));
    drop(db);
    fs.crash(CrashMode::DropUnsynced);
    let db = Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Sync)
        .open(common::dir())
        .expect("reopen");
    let got: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(
        got,
        acked.into_inner().unwrap(),
        "seed {seed}: acknowledged Sync puts lost or changed by a power loss"
    );
}
