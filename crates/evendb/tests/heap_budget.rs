//! The store's live heap stays inside its memory budget plus a fixed
//! overhead, whatever the workload does: a global allocator counts every
//! live byte of this test process while writers load and update skewed
//! composite keys, a scanner reads ranges and gets read keys, on a real
//! file system, with data many times the budget. Rebuilds, runs, munk
//! loads and splits all happen on the way; any buffer they leave uncharged
//! (a log's write buffer, the logs a rebuild merges) shows here as heap
//! above the bound.
//!
//! The bound is the budget plus a fixed overhead plus one merge's unsorted
//! logs (what may pass the budget when nothing can be evicted for it).
//! One test in this file: the counter sees every thread of the process.

use evendb::{Durability, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// What the allocator takes for `n` bytes (glibc: an 8-byte header,
/// 16-byte rounding), as the budget charges it.
fn held(n: usize) -> usize {
    ((n + 8 + 15) & !15).max(32)
}

// SAFETY: every call is passed to the system allocator unchanged; the
// counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout is passed to the system allocator
        // unchanged, as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(held(layout.size()), Ordering::Relaxed) + held(layout.size());
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every
        // allocation of this allocator is).
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(held(layout.size()), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`, and the
        // caller guarantees `new_size` is valid for it.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(held(layout.size()), Ordering::Relaxed);
            let now = LIVE.fetch_add(held(new_size), Ordering::Relaxed) + held(new_size);
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const BUDGET: u64 = 8 << 20;

const CHUNK: u64 = 512 << 10;
const LOG: u64 = 256 << 10;

/// What the store holds outside its budget by design (docs/design.md §9):
/// per chunk and per open file its structures, a scan's or a get's read
/// buffers (the scans' shared pool keeps up to 2 MiB of them; small
/// here), a table writer's block, per thread its pending-operation slot.
const FIXED_OVERHEAD: usize = 2 << 20;

/// What one merge may hold past the budget when evicting cannot make room
/// for it (one at a time, `maintenance::room::hold_work`): the unsorted
/// logs of a chunk whose munk was just evicted, up to twice the chunk
/// size, and its own log up to eight times its limit (where a put waits).
const ONE_MERGE: usize = (2 * CHUNK + 8 * LOG) as usize;

fn key(app: u64, seq: u64) -> Vec<u8> {
    format!("app{app:04}|{seq:012}").into_bytes()
}

#[test]
fn live_heap_stays_inside_the_budget_plus_a_fixed_overhead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = LIVE.load(Ordering::Relaxed);
    let db = Arc::new(
        Options::default()
            .memory_budget(BUDGET)
            .max_chunk_size(CHUNK)
            .max_log_size(LOG)
            .durability(Durability::Buffered {
                // Long: buffers are written when full, not by syncs.
                sync_interval: std::time::Duration::from_secs(60),
            })
            .maintenance_threads(1)
            .open(dir.path())
            .expect("open"),
    );
    // After open: what the test itself holds from here on is a few keys.
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let value = vec![0x5au8; 700];
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|t| {
            let db = db.clone();
            let value = value.clone();
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(t + 1);
                for i in 0..40_000u64 {
                    // A time-ordered stream per app, most events in a few
                    // apps, and updates of older events.
                    let app = if rng.bool() {
                        rng.u64(0..4)
                    } else {
                        rng.u64(0..500)
                    };
                    let seq = if rng.u8(0..100) < 70 {
                        i * 2 + t
                    } else {
                        rng.u64(0..(i * 2 + 1))
                    };
                    db.put(key(app, seq), &value).expect("put");
                }
            })
        })
        .collect();
    let reader = {
        let db = db.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rng = fastrand::Rng::with_seed(99);
            let mut scanned = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let app = rng.u64(0..500);
                let from = key(app, rng.u64(0..80_000));
                for r in db.scan(from..).take(100) {
                    r.expect("scan");
                    scanned += 1;
                }
                for _ in 0..20 {
                    let k = key(rng.u64(0..4), rng.u64(0..80_000));
                    db.get(&k).expect("get");
                }
            }
            scanned
        })
    };
    for w in writers {
        w.join().expect("writer");
    }
    // Then reads alone, and a compaction of everything.
    std::thread::sleep(std::time::Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let scanned = reader.join().expect("reader");
    db.compact().expect("compact");
    let stats = db.stats();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "peak live heap {:.1} MiB (budget {:.1} MiB, accounted peak {:.1} MiB); {} rows scanned; {} rebuilds, {} runs, {} adoptions, {} munk loads, {} chunks",
        peak as f64 / 1048576.0,
        BUDGET as f64 / 1048576.0,
        stats.memory_peak as f64 / 1048576.0,
        scanned,
        stats.rebalances,
        stats.log_runs,
        stats.log_adoptions,
        stats.munk_loads,
        stats.chunks,
    );
    assert!(
        stats.chunks > 30,
        "the data is many chunks: {}",
        stats.chunks
    );
    let bound = BUDGET as usize + FIXED_OVERHEAD + ONE_MERGE;
    assert!(
        peak <= bound,
        "live heap peaked at {peak} bytes: over the budget ({BUDGET}) plus the fixed overhead ({FIXED_OVERHEAD}) and one merge past it ({ONE_MERGE})"
    );
}
