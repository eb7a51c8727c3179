//! Munk charges against the heap: a counting allocator measures what the
//! allocator really holds for a munk's growth, and the memory budget must
//! have been charged at least that much (and not grossly more).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use evendb::{Db, Durability, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts, per thread, the bytes the allocator holds for live allocations
/// (usable size plus glibc's 8-byte chunk header).
struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn held(ptr: *mut u8) -> i64 {
    // SAFETY: `ptr` was returned by the system allocator and not freed yet.
    let usable = unsafe { libc::malloc_usable_size(ptr.cast()) };
    usable as i64 + 8
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counting only reads the size of blocks that allocator owns.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let n = held(p);
            LIVE.with(|c| c.set(c.get() + n));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let n = held(ptr);
        LIVE.with(|c| c.set(c.get() - n));
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// One big chunk with a munk, no background threads: everything the store
/// allocates happens on the test's thread.
fn open(dir: &std::path::Path) -> Db {
    let db = Options::default()
        .durability(Durability::Sync)
        .max_chunk_size(256 << 20)
        .max_log_size(256 << 20)
        .memory_budget(512 << 20)
        .maintenance_threads(0)
        .open(dir)
        .expect("open");
    for i in 0..100 {
        db.put(key(i), b"v").expect("put");
    }
    for _ in 0..3 {
        for i in 0..100 {
            db.get(key(i)).expect("get");
        }
    }
    assert_eq!(db.stats().munks, 1, "the chunk should have a munk by now");
    // Puts to the munk, so the log's buffer and the first filter parts are
    // there before anything is measured.
    for i in 0..100 {
        db.put(key(i), vec![1u8; 1000]).expect("put");
    }
    db
}

#[test]
fn a_munk_is_charged_at_least_what_the_allocator_holds_for_it() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = open(dir.path());
    let mut rng = fastrand::Rng::with_seed(7);
    let used_before = db.stats().memory_used as i64;
    let live_before = live();
    // New keys with small values (where headers and rounding weigh most),
    // then overwrites of each.
    let n = 20_000;
    for round in 0..3 {
        for i in 100..100 + n {
            let value = vec![round as u8; rng.usize(1..48)];
            db.put(key(i), value).expect("put");
        }
    }
    let live_after = live();
    let s = db.stats();
    let charged = s.memory_used as i64 - used_before;
    let heap = live_after - live_before;
    assert_eq!(s.munks, 1);
    // A few KiB of one-off structures besides the munk (the log's part
    // list, the allocator's bookkeeping of the thread) are not charged.
    let one_off = 16 << 10;
    assert!(
        charged + one_off >= heap,
        "the munk took {heap} bytes of heap but was charged {charged}"
    );
    assert!(
        charged <= heap + heap / 4,
        "the munk took {heap} bytes of heap but was charged {charged}: far more"
    );
}
