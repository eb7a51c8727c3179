//! Giving memory the store freed back to the operating system.
//!
//! glibc's malloc gives each thread an arena and returns an arena's free
//! memory to the system only from the top of its heaps. A store's memory
//! moves between threads all the time: puts fill munks on the callers'
//! threads, maintenance threads load and rebuild munks, gets fill the row
//! cache. Each arena then keeps its own high-water mark, and the resident
//! set grows to a multiple of the budget although the memory the store
//! holds stays inside it (examples/memory: 2.5× a 128 MiB budget).
//!
//! So, once the store has released an eighth of its budget since the last
//! time, and at most once a second (every 100 ms once it has released
//! half the budget), a maintenance thread asks glibc to
//! return free pages of every arena (`malloc_trim`). The call locks one
//! arena at a time while it walks it (measured 8–25 ms in all with a
//! 128 MiB budget), never on a thread serving a request. With another
//! global allocator (jemalloc, mimalloc), which purges on its own, the
//! call finds nothing to do; `Options::trim_freed_memory(false)` turns it
//! off.

use crate::cache::budget::MemoryBudget;
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// Least time between two trims after an eighth of the budget was freed.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Least time between two trims after half the budget was freed.
const MIN_INTERVAL_LARGE: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct Trimmer {
    enabled: bool,
    /// When the last trim ran and `MemoryBudget::released_total` then.
    last: Mutex<(Instant, u64)>,
}

impl Trimmer {
    pub fn new(enabled: bool) -> Self {
        Trimmer {
            enabled,
            last: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Trims if enough was freed since the last trim and it is time; returns
    /// how long the trim took, if one ran.
    pub fn maybe_trim(&self, budget: &MemoryBudget) -> Option<Duration> {
        self.maybe_trim_at(budget, Instant::now())
    }

    fn maybe_trim_at(&self, budget: &MemoryBudget, now: Instant) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        let released = budget.released_total();
        let mut last = self.last.try_lock()?;
        let freed = released.saturating_sub(last.1);
        let wait = if freed >= budget.limit() / 2 {
            MIN_INTERVAL_LARGE
        } else if freed >= budget.limit() / 8 {
            MIN_INTERVAL
        } else {
            return None;
        };
        if now.saturating_duration_since(last.0) < wait {
            return None;
        }
        let start = Instant::now();
        release_free_memory();
        *last = (now, released);
        Some(start.elapsed())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn release_free_memory() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // malloc_trim takes no pointer and only returns free pages of glibc's
    // heaps to the system; it locks each arena while it walks it.
    // SAFETY: no precondition: callable from any thread at any time.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::budget::Kind;

    #[test]
    fn trims_only_after_enough_was_freed_and_enough_time_passed() {
        let budget = MemoryBudget::new(80 << 20);
        let t = Trimmer::new(true);
        let start = t.last.lock().0;
        let at = |ms| start + Duration::from_millis(ms);
        budget.add(Kind::Munks, 60 << 20);
        budget.release(Kind::Munks, 9 << 20);
        assert!(
            t.maybe_trim_at(&budget, at(5_000)).is_none(),
            "under an eighth"
        );
        budget.release(Kind::Munks, 2 << 20);
        assert!(t.maybe_trim_at(&budget, at(900)).is_none(), "too soon");
        assert!(t.maybe_trim_at(&budget, at(1_000)).is_some());
        // Counted from the last trim: half the budget allows 100 ms.
        budget.release(Kind::Munks, 40 << 20);
        assert!(t.maybe_trim_at(&budget, at(1_050)).is_none());
        assert!(t.maybe_trim_at(&budget, at(1_100)).is_some());
        assert!(
            t.maybe_trim_at(&budget, at(9_000)).is_none(),
            "nothing freed since"
        );
    }

    #[test]
    fn a_disabled_trimmer_never_trims() {
        let budget = MemoryBudget::new(8 << 20);
        budget.add(Kind::Munks, 8 << 20);
        budget.release(Kind::Munks, 8 << 20);
        let t = Trimmer::new(false);
        let later = Instant::now() + Duration::from_secs(60);
        assert!(t.maybe_trim_at(&budget, later).is_none());
    }
}
