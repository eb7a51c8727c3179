//! Model checks of the put/scan handshake on the pending-operations array,
//! run on the production `Versions` and `PendingOps` (see `crate::sync`):
//! `RUSTFLAGS="--cfg loom" cargo test -p evendb --release --lib loom_`.
//!
//! A put here is `begin_put`, then a store of its version into a cell of
//! its own (its write), then the end of the ticket; a scan is
//! `acquire_snapshot`, then a read of the cells. The cells are `Relaxed`:
//! a scan that reads a put's write did so only because the handshake
//! ordered the two, never because the cell did.
//!
//! The property: a scan at version `v` finds the write of every put in its
//! range whose version is `<= v` (no such put lands after the scan read);
//! puts it did not wait for have versions `> v`, which the scan filters out.

use super::Versions;
use crate::sync::{model, AtomicBool, AtomicU64, Ordering, PREEMPTION_BOUND};
use loom::thread;
use std::sync::Arc;

/// The scan's range: `[b, y)`.
const LO: &[u8] = b"b";
const HI: &[u8] = b"y";

/// One put of `key`: returns its version after its write landed in `cell`
/// (as `version + 1`, 0 meaning "not landed").
fn put(versions: &Versions, key: &[u8], cell: &AtomicU64) -> u64 {
    let ticket = versions.begin_put(key);
    cell.store(ticket.version + 1, Ordering::Relaxed);
    ticket.version
}

/// One scan: its version, and what it read of each cell.
fn scan(versions: &Versions, cells: &[AtomicU64]) -> (u64, Vec<u64>) {
    let v = versions.acquire_snapshot(LO, Some(HI));
    let seen = cells.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    (v, seen)
}

/// Checks the property for puts of `keys` (with the versions they got)
/// against one scan.
fn assert_snapshot_exact(keys: &[&[u8]], put_versions: &[u64], v: u64, seen: &[u64]) {
    for ((key, &pv), &s) in keys.iter().zip(put_versions).zip(seen) {
        let in_range = *key >= LO && *key < HI;
        if in_range && pv <= v {
            assert_eq!(
                s,
                pv + 1,
                "the put of {key:?} at version {pv} belongs to the snapshot at {v} \
                 but landed after the scan read"
            );
        }
    }
}

/// `n` cells, one per put.
fn cells(n: usize) -> Arc<Vec<AtomicU64>> {
    Arc::new((0..n).map(|_| AtomicU64::new(0)).collect())
}

#[test]
fn loom_scan_sees_a_concurrent_put_iff_its_version_is_not_above() {
    model("one put, one scan", None, || {
        let versions = Arc::new(Versions::new(1));
        let cells = cells(1);
        let p = {
            let (versions, cells) = (versions.clone(), cells.clone());
            thread::spawn(move || put(&versions, b"k", &cells[0]))
        };
        let (v, seen) = scan(&versions, &cells);
        let pv = p.join().unwrap();
        assert_snapshot_exact(&[b"k"], &[pv], v, &seen);
    });
}

/// A put outside the scan's range that stays in flight until the scan
/// has its snapshot: if the scan waited for it, neither would ever finish
/// and the model checker would report the execution as endless.
#[test]
fn loom_scan_does_not_wait_for_a_put_outside_its_range() {
    model("a put out of range held open, one scan", None, || {
        let versions = Arc::new(Versions::new(1));
        let scanned = Arc::new(AtomicBool::new(false));
        let p = {
            let (versions, scanned) = (versions.clone(), scanned.clone());
            thread::spawn(move || {
                let ticket = versions.begin_put(b"z");
                while !scanned.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                drop(ticket);
            })
        };
        versions.acquire_snapshot(LO, Some(HI));
        scanned.store(true, Ordering::Release);
        p.join().unwrap();
    });
}

#[test]
fn loom_two_puts_and_a_scan_in_range_see_an_exact_snapshot() {
    model("two puts, one scan", PREEMPTION_BOUND, || {
        let versions = Arc::new(Versions::new(1));
        let cells = cells(2);
        let keys: [&'static [u8]; 2] = [b"k", b"m"];
        let puts: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| {
                let (versions, cells) = (versions.clone(), cells.clone());
                thread::spawn(move || put(&versions, key, &cells[i]))
            })
            .collect();
        let (v, seen) = scan(&versions, &cells);
        let pvs: Vec<u64> = puts.into_iter().map(|p| p.join().unwrap()).collect();
        assert_snapshot_exact(&keys, &pvs, v, &seen);
    });
}

/// Two puts from one thread reuse its slot: a scan waiting on the first
/// must not be fooled by the second (the slot's `seq` moves on).
#[test]
fn loom_a_reused_slot_does_not_hide_a_put_from_a_scan() {
    model("two puts in a row, one scan", PREEMPTION_BOUND, || {
        let versions = Arc::new(Versions::new(1));
        let cells = cells(2);
        let keys: [&'static [u8]; 2] = [b"k", b"m"];
        let p = {
            let (versions, cells) = (versions.clone(), cells.clone());
            thread::spawn(move || {
                [
                    put(&versions, keys[0], &cells[0]),
                    put(&versions, keys[1], &cells[1]),
                ]
            })
        };
        let (v, seen) = scan(&versions, &cells);
        let pvs = p.join().unwrap();
        assert_snapshot_exact(&keys, &pvs, v, &seen);
    });
}

/// A rebuild keeps what `oldest_needed` says readers need: it must never
/// be above a snapshot being taken at the same time.
#[test]
fn loom_oldest_needed_never_passes_a_snapshot_being_taken() {
    model("oldest_needed vs one scan", None, || {
        let versions = Arc::new(Versions::new(1));
        let s = {
            let versions = versions.clone();
            thread::spawn(move || versions.acquire_snapshot(LO, Some(HI)))
        };
        let oldest = versions.oldest_needed();
        let v = s.join().unwrap();
        assert!(
            oldest <= v,
            "oldest_needed gave {oldest} while a snapshot at {v} was being taken"
        );
    });
}
