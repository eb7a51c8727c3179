//! A global allocator that records the largest single allocation each
//! thread makes, for tests that check nothing is reserved from a declared
//! size. Included with `#[path]` by the test files that install it (a
//! test binary has one global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    /// The largest allocation this thread made since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; only
// records sizes in a thread-local (which itself does not allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(new)));
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Forgets what this thread allocated so far.
pub fn reset() {
    LARGEST.with(|l| l.set(0));
}

/// The largest allocation this thread made since [`reset`].
pub fn largest() -> usize {
    LARGEST.with(Cell::get)
}
