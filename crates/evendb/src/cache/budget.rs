//! The one memory budget: munks, the row cache, Bloom filters, table and log
//! indexes and the working memory of rebuilds all draw from it, so the
//! store's accounted memory has one limit.
//!
//! Invariants:
//! - `used` is the sum of the per-kind counters; both are changed together by
//!   [`MemoryBudget::add`], [`MemoryBudget::try_reserve`] and
//!   [`MemoryBudget::release`]. All counters are plain atomics (Relaxed): they
//!   are figures for decisions, never used to publish data.
//! - Growth that may be refused (munk loads, munk puts, row-cache inserts,
//!   log segment indexes) goes through [`MemoryBudget::try_reserve`], which
//!   never takes `used` past `limit` minus a floor (1/64 of the limit, at
//!   most 4 MiB). Growth that cannot be refused (a log part's filter, a
//!   table's index when a funk opens, a rebuilt munk's cell array, a
//!   rebuild's log images) goes through [`MemoryBudget::add`]; the floor
//!   is its room, and whoever adds much makes room first (evicting munks).
//!   When it still pushes `used` over the limit, [`MemoryBudget::over`]
//!   asks the munk cache to evict.
//! - Write buffers and maintenance's working memory each have a share of
//!   the limit; what they do not use of it no reservation takes
//!   ([`MemoryBudget::free`] leaves it out).
//! - Charges are what the allocator holds ([`heap_size`]): capacity, not
//!   length, with allocation headers and rounding.
//! - `peak` is the largest `used` seen (updated on every growth), and
//!   `at_peak` what each kind held when it was last raised (a snapshot
//!   of Relaxed counters taken by the thread that raised it: a figure
//!   for operators, off by what other threads changed meanwhile).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes the allocator takes for a heap allocation of `n` bytes: the larger
/// of what glibc's malloc takes (the request plus an 8-byte header, rounded
/// up to 16 bytes, at least 32) and jemalloc's size class (four classes per
/// doubling up to 14 KiB, whole pages above). Charges are computed with it,
/// so charged memory is what either allocator holds, not the bytes asked
/// for. Measured reason for the classes: an 814-byte value takes jemalloc's
/// 896-byte class; charged as glibc takes it (832), munks of 814-byte
/// values held 10-13 MiB more than their charge at a 256 MiB budget.
pub(crate) const fn heap_size(n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let glibc = (n + 8 + 15) & !15;
    let glibc = if glibc < 32 { 32 } else { glibc };
    let class = size_class(n);
    (if class > glibc { class } else { glibc }) as u64
}

/// jemalloc's size class for `n` (> 0) bytes: multiples of 16 up to 128,
/// then four classes per doubling (160, 192, 224, 256, 320, ...) up to its
/// largest small class, 14 KiB; larger requests take whole pages (the
/// larger classes' unused pages are never touched, so they are not
/// resident).
const fn size_class(n: usize) -> usize {
    const SMALL_MAX: usize = 14 * 1024;
    const PAGE: usize = 4096;
    if n <= 128 {
        return (n + 15) & !15;
    }
    if n > SMALL_MAX {
        return (n + PAGE - 1) & !(PAGE - 1);
    }
    // n lies in (2^lg, 2^(lg+1)]; the classes there are 2^(lg-2) apart.
    let lg = usize::BITS - 1 - (n - 1).leading_zeros();
    let step = 1usize << (lg - 2);
    (n + step - 1) & !(step - 1)
}

/// Bytes of an `Arc`'s allocation besides its value: the two counters.
pub(crate) const ARC_HEADER: usize = 2 * std::mem::size_of::<usize>();

/// What a charge to the budget is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Munks: cell arrays, keys, value versions.
    Munks = 0,
    /// The row cache.
    RowCache = 1,
    /// Log directories and the open parts' Bloom filters.
    Filters = 2,
    /// Table block indexes held in memory.
    Indexes = 3,
    /// Working memory of maintenance while it runs: the log images a
    /// rebuild reads (a munk load charges its images to `Munks`).
    Work = 4,
    /// Log segments' write buffers: appends not written to their files yet.
    WriteBuffers = 5,
}

pub(crate) const KINDS: usize = 6;

#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: u64,
    used: AtomicU64,
    peak: AtomicU64,
    by_kind: [AtomicU64; KINDS],
    /// Each kind's charge when `peak` was last raised.
    at_peak: [AtomicU64; KINDS],
    /// Bytes released since the budget was made (see `cache::trim`).
    released: AtomicU64,
}

/// A point-in-time view of the budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BudgetView {
    pub limit: u64,
    pub used: u64,
    pub peak: u64,
    pub munks: u64,
    pub row_cache: u64,
    pub filters: u64,
    pub indexes: u64,
    pub work: u64,
    pub write_buffers: u64,
    /// Each kind's charge when `peak` was reached, indexed by [`Kind`].
    pub at_peak: [u64; KINDS],
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Self {
        MemoryBudget {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            by_kind: Default::default(),
            at_peak: Default::default(),
            released: AtomicU64::new(0),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Bytes charged to `kind`.
    pub fn kind_used(&self, kind: Kind) -> u64 {
        self.by_kind[kind as usize].load(Ordering::Relaxed)
    }

    /// Bytes left before the limit (0 when over it), less the parts of the
    /// write buffers' and working memory's shares they do not use (see
    /// `try_reserve`).
    pub fn free(&self) -> u64 {
        self.limit
            .saturating_sub(self.used())
            .saturating_sub(self.unused_shares())
    }

    /// What the write buffers and working memory do not use of their
    /// shares.
    fn unused_shares(&self) -> u64 {
        self.unused_share(Kind::WriteBuffers) + self.unused_share(Kind::Work)
    }

    /// What `kind` does not use of its share (0 for a kind without one).
    pub fn unused_share(&self, kind: Kind) -> u64 {
        let share = match kind {
            Kind::WriteBuffers => self.write_buffer_share(),
            Kind::Work => self.work_share(),
            _ => 0,
        };
        share.saturating_sub(self.kind_used(kind))
    }

    /// The share of the budget kept for maintenance's working memory (the
    /// log images a merge or a run holds whole): an eighth, at most 32
    /// MiB. Reservations leave what working memory does not use of it
    /// free, so a merge's images do not evict munks. Measured reason: munks
    /// evicted for images free their values one by one, among other munks'
    /// values that stay, and the allocator keeps the pages they shared; in
    /// P,E100 at 1 GiB, RSS came up to 137 MiB above what was charged
    /// while merges at the start of E100 held 3-15 MiB images each.
    pub fn work_share(&self) -> u64 {
        (self.limit / 8).min(32 << 20)
    }

    /// True when accounted memory is above the limit.
    pub fn over(&self) -> bool {
        self.used() > self.limit
    }

    /// The share of the budget kept for log segments' write buffers: a
    /// sixteenth, at least 16 KiB (at most an eighth). Reservations leave what the buffers do
    /// not use of it free; past it, segments write their buffers early and
    /// give their memory back (see `LogSegment::append`).
    pub fn write_buffer_share(&self) -> u64 {
        (self.limit / 16).max(16 << 10).min(self.limit / 8)
    }

    /// Bytes every reservation leaves free, whatever headroom it asks for:
    /// room for the growth that cannot be refused (see the module doc).
    pub fn floor(&self) -> u64 {
        (self.limit / 64).min(4 << 20)
    }

    /// Charges `n` bytes if that keeps `used` at or below the limit minus
    /// `headroom` (at least [`MemoryBudget::floor`]); returns whether it
    /// did.
    pub fn try_reserve(&self, kind: Kind, n: u64, headroom: u64) -> bool {
        // The parts of the write buffers' and working memory's shares
        // they do not use yet are theirs: no reservation takes them.
        let cap = self
            .limit
            .saturating_sub(headroom.max(self.floor()))
            .saturating_sub(self.unused_shares());
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let Some(next) = cur.checked_add(n).filter(|&x| x <= cap) else {
                return false;
            };
            match self
                .used
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.by_kind[kind as usize].fetch_add(n, Ordering::Relaxed);
                    self.raise_peak(next);
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Charges `n` bytes unconditionally (growth that cannot be refused).
    pub fn add(&self, kind: Kind, n: u64) {
        if n == 0 {
            return;
        }
        let now = self.used.fetch_add(n, Ordering::Relaxed) + n;
        self.by_kind[kind as usize].fetch_add(n, Ordering::Relaxed);
        self.raise_peak(now);
    }

    /// Raises `peak` to `now` if it is larger, noting what each kind holds.
    fn raise_peak(&self, now: u64) {
        if self.peak.fetch_max(now, Ordering::Relaxed) < now {
            for (at, kind) in self.at_peak.iter().zip(&self.by_kind) {
                at.store(kind.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
    }

    /// Returns `n` bytes charged earlier to `kind`.
    pub fn release(&self, kind: Kind, n: u64) {
        if n == 0 {
            return;
        }
        self.used.fetch_sub(n, Ordering::Relaxed);
        self.by_kind[kind as usize].fetch_sub(n, Ordering::Relaxed);
        self.released.fetch_add(n, Ordering::Relaxed);
    }

    /// Moves the charge of one holder of `kind` from `*charged` to `now`
    /// (growth that cannot be refused, or a release).
    pub fn recharge(&self, kind: Kind, charged: &mut u64, now: u64) {
        if now != *charged {
            self.add(kind, now.saturating_sub(*charged));
            self.release(kind, charged.saturating_sub(now));
            *charged = now;
        }
    }

    /// Bytes released since the budget was made.
    pub fn released_total(&self) -> u64 {
        self.released.load(Ordering::Relaxed)
    }

    /// Charges `n` bytes of `kind` until the returned guard is dropped
    /// (working memory that cannot be refused).
    pub fn hold(&self, kind: Kind, n: u64) -> Held<'_> {
        self.add(kind, n);
        Held {
            budget: self,
            kind,
            n,
        }
    }

    /// A guard for `n` bytes of `kind` already charged, released when it
    /// is dropped.
    pub fn keep(&self, kind: Kind, n: u64) -> Held<'_> {
        Held {
            budget: self,
            kind,
            n,
        }
    }

    pub fn view(&self) -> BudgetView {
        let k = |kind: Kind| self.by_kind[kind as usize].load(Ordering::Relaxed);
        BudgetView {
            limit: self.limit,
            used: self.used(),
            peak: self.peak.load(Ordering::Relaxed),
            munks: k(Kind::Munks),
            row_cache: k(Kind::RowCache),
            filters: k(Kind::Filters),
            indexes: k(Kind::Indexes),
            work: k(Kind::Work),
            write_buffers: k(Kind::WriteBuffers),
            at_peak: std::array::from_fn(|i| self.at_peak[i].load(Ordering::Relaxed)),
        }
    }
}

/// A charge returned to the budget when dropped; see [`MemoryBudget::hold`].
#[derive(Debug)]
pub(crate) struct Held<'a> {
    budget: &'a MemoryBudget,
    kind: Kind,
    n: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.release(self.kind, self.n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds' charges at the peak are those of the moment it was
    /// last raised, whatever came after.
    #[test]
    fn the_peak_notes_what_each_kind_held() {
        let b = MemoryBudget::new(1 << 20);
        b.add(Kind::Munks, 100);
        b.add(Kind::Filters, 50);
        b.release(Kind::Munks, 100);
        b.add(Kind::Work, 30);
        let v = b.view();
        assert_eq!(v.peak, 150);
        assert_eq!(v.at_peak[Kind::Munks as usize], 100);
        assert_eq!(v.at_peak[Kind::Filters as usize], 50);
        assert_eq!(v.at_peak[Kind::Work as usize], 0);
        assert!(b.try_reserve(Kind::Indexes, 200, 0));
        let v = b.view();
        assert_eq!(v.peak, 280);
        assert_eq!(v.at_peak, [0, 0, 50, 200, 30, 0]);
    }

    #[test]
    fn reservations_never_pass_the_limit_minus_headroom() {
        let b = MemoryBudget::new(1000);
        // An eighth is kept for write buffers and another for working
        // memory: reservations stop at 650.
        assert_eq!(b.write_buffer_share(), 125);
        assert_eq!(b.work_share(), 125);
        assert!(b.try_reserve(Kind::Munks, 600, 100));
        assert!(!b.try_reserve(Kind::Munks, 51, 100));
        assert!(b.try_reserve(Kind::RowCache, 50, 100));
        assert_eq!(b.used(), 650);
        b.release(Kind::Munks, 600);
        let v = b.view();
        assert_eq!((v.used, v.munks, v.row_cache, v.peak), (50, 0, 50, 650));
    }

    #[test]
    fn write_buffers_have_their_share_kept_free() {
        let b = MemoryBudget::new(64 << 20);
        let share = b.write_buffer_share();
        assert_eq!(share, 4 << 20);
        let work = b.work_share();
        assert!(b.try_reserve(Kind::Munks, (60 << 20) - work - b.floor(), 0));
        assert_eq!(b.free(), b.floor());
        assert!(!b.try_reserve(Kind::Munks, 1, 0));
        // Buffers take their share without passing the limit...
        b.add(Kind::WriteBuffers, share);
        assert!(!b.over());
        // ... and once they give it back, it is kept for them again.
        b.release(Kind::WriteBuffers, share);
        assert!(!b.try_reserve(Kind::RowCache, 1, 0));
    }

    #[test]
    fn working_memory_has_its_share_kept_free() {
        let b = MemoryBudget::new(1 << 30);
        assert_eq!(b.work_share(), 32 << 20, "an eighth, at most 32 MiB");
        let b = MemoryBudget::new(64 << 20);
        let work = b.work_share();
        assert_eq!(work, 8 << 20);
        let rest = (64 << 20) - b.write_buffer_share() - work - b.floor();
        assert!(!b.try_reserve(Kind::Munks, rest + 1, 0));
        assert!(b.try_reserve(Kind::Munks, rest, 0));
        assert_eq!(b.unused_share(Kind::Work), work);
        // Working memory takes its share without passing the limit or
        // changing what is free for the others...
        let free = b.free();
        let held = b.hold(Kind::Work, work);
        assert_eq!(b.unused_share(Kind::Work), 0);
        assert_eq!(b.free(), free);
        assert!(!b.over());
        // ... and what passes the share is taken from the rest.
        let more = b.hold(Kind::Work, 1 << 20);
        assert_eq!(b.free(), free - (1 << 20));
        drop((held, more));
        assert_eq!(b.unused_share(Kind::Work), work);
        assert!(!b.try_reserve(Kind::RowCache, b.floor() + 1, 0));
    }

    #[test]
    fn every_reservation_leaves_the_floor_free_for_forced_growth() {
        let b = MemoryBudget::new(64 << 10);
        assert_eq!(b.floor(), 1 << 10);
        let share = b.write_buffer_share();
        assert_eq!(share, 8 << 10);
        let work = b.work_share();
        let rest = (64 << 10) - share - work;
        assert!(!b.try_reserve(Kind::RowCache, rest, 0));
        assert!(b.try_reserve(Kind::RowCache, rest - (1 << 10), 0));
        b.add(Kind::Filters, 1 << 10);
        b.add(Kind::WriteBuffers, share);
        let within = b.hold(Kind::Work, work);
        assert!(!b.over());
        let held = b.hold(Kind::Work, 1);
        assert!(b.over());
        drop(within);
        drop(held);
        assert_eq!(b.view().work, 0);
        assert!(!b.over());
    }

    #[test]
    fn heap_sizes_round_like_the_allocator() {
        assert_eq!(heap_size(0), 0);
        assert_eq!(heap_size(1), 32);
        assert_eq!(heap_size(24), 32);
        assert_eq!(heap_size(25), 48);
        // glibc's rounding where it takes more ...
        assert_eq!(heap_size(120), 128);
        assert_eq!(heap_size(1 << 20), (1 << 20) + 16);
        // ... jemalloc's classes where they do.
        assert_eq!(heap_size(130), 160);
        assert_eq!(heap_size(800), 896);
        assert_eq!(heap_size(814), 896);
        assert_eq!(heap_size(1025), 1280);
        assert_eq!(heap_size(14 * 1024), 14 * 1024 + 16);
        assert_eq!(heap_size(14 * 1024 + 1), 16 * 1024);
        assert_eq!(heap_size(20 * 1024 + 1), 24 * 1024);
    }

    #[test]
    fn forced_growth_may_pass_the_limit_and_is_reported() {
        let b = MemoryBudget::new(100);
        b.add(Kind::Filters, 150);
        assert!(b.over());
        assert_eq!(b.free(), 0);
        assert!(!b.try_reserve(Kind::Munks, 1, 0));
    }
}
