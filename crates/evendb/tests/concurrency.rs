//! Scans are atomic under concurrent writers, rebuilds and splits.
//!
//! Each writer owns a set of keys spread over the whole key space and
//! rewrites them in rounds, in a fixed order, with the round number as the
//! value. In any consistent snapshot, a writer's keys read in that order
//! show round r+1 on a prefix and round r on the rest; anything else is a
//! torn scan.

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Durability};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const WRITERS: u32 = 2;
const KEYS_PER_WRITER: u32 = 150;

fn key(writer: u32, i: u32) -> Vec<u8> {
    // Interleave writers over the key space so every chunk holds keys of each.
    format!("{:05}-{writer}", i * 7919 % 100_000).into_bytes()
}

fn check_cut(values: &[(u32, u32)], writer: u32) -> Result<(), String> {
    // values: (position in the writer's order, round), sorted by position.
    let rounds: Vec<u32> = values.iter().map(|&(_, r)| r).collect();
    let non_increasing = rounds.windows(2).all(|w| w[0] >= w[1]);
    let spread = rounds.iter().max().unwrap_or(&0) - rounds.iter().min().unwrap_or(&0);
    if non_increasing && spread <= 1 {
        Ok(())
    } else {
        Err(format!("writer {writer}: torn rounds {rounds:?}"))
    }
}

#[test]
fn scans_see_one_point_in_time_under_writers_and_rebuilds() {
    let fs = MemFs::new();
    let db: Db = common::tiny(&fs)
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_millis(5),
        })
        .maintenance_threads(1)
        .open(common::dir())
        .unwrap();
    let positions: Arc<std::collections::HashMap<Vec<u8>, (u32, u32)>> = Arc::new(
        (0..WRITERS)
            .flat_map(|w| (0..KEYS_PER_WRITER).map(move |i| (key(w, i), (w, i))))
            .collect(),
    );
    for w in 0..WRITERS {
        for i in 0..KEYS_PER_WRITER {
            db.put(key(w, i), 0u32.to_le_bytes()).unwrap();
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let scans = Arc::new(AtomicU64::new(0));
    let rounds = common::iterations(100) as u32;
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let db = db.clone();
            writers.push(s.spawn(move || {
                for round in 1..=rounds {
                    for i in 0..KEYS_PER_WRITER {
                        db.put(key(w, i), round.to_le_bytes()).unwrap();
                    }
                }
            }));
        }
        for _ in 0..2 {
            let (db, stop, scans, positions) =
                (db.clone(), stop.clone(), scans.clone(), positions.clone());
            s.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let mut per_writer: Vec<Vec<(u32, u32)>> = vec![Vec::new(); WRITERS as usize];
                    for kv in db.scan::<&[u8], _>(..) {
                        let (k, v) = kv.unwrap();
                        let (w, i) = positions[&k];
                        let round = u32::from_le_bytes(v.as_slice().try_into().unwrap());
                        per_writer[w as usize].push((i, round));
                    }
                    for (w, mut vals) in per_writer.into_iter().enumerate() {
                        assert_eq!(vals.len(), KEYS_PER_WRITER as usize, "a scan lost keys");
                        vals.sort();
                        check_cut(&vals, w as u32).unwrap();
                    }
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Release);
    });
    let s = db.stats();
    eprintln!(
        "{} scans checked; {} rebalances, {} splits, {} merges during the run",
        scans.load(Ordering::Relaxed),
        s.rebalances,
        s.splits,
        s.merges
    );
    assert!(scans.load(Ordering::Relaxed) > 0);
    assert!(
        s.rebalances + s.splits > 0,
        "rebuilds must overlap the scans"
    );
    for w in 0..WRITERS {
        for i in 0..KEYS_PER_WRITER {
            assert_eq!(
                db.get(key(w, i)).unwrap(),
                Some(rounds.to_le_bytes().to_vec())
            );
        }
    }
}
