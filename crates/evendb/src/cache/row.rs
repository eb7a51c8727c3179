//! The row cache: hot single keys of chunks without munks.
//!
//! As in the paper, a coarse LRU: each shard keeps a short queue of hash
//! tables; new entries go into the head table, and when it fills a new empty
//! head is pushed and the tail table is dropped whole, taking the keys
//! nobody read lately with it. Lookups usually hit the head. A value found
//! in an older table is shared with the head (`Arc`), not copied.
//!
//! The cache is never stale. A put to a munk-less chunk refreshes a key the
//! cache holds (in every table) but never adds one; a get adds the value it
//! read only if no put to the chunk completed meanwhile. Entries carry a
//! [`Tag`] (chunk id and generation), so entries from before a munk load or
//! eviction, or from a chunk since split, are never served.
//!
//! Invariants:
//! - Each shard's tables sit behind the shard's `RwLock`. Gets only
//!   `try_read` it: a get never blocks, and a contended shard is a miss.
//!   Inserts and refreshes take the write lock.
//! - A get's insert evaluates its freshness check (`still_current`) under
//!   the shard's write lock, the same lock every put's refresh of that key
//!   takes after the put's record is readable; so either the put's refresh
//!   comes after the insert (and overwrites it) or the check sees the put
//!   (and the insert is skipped).
//! - `bytes` (per shard, under its lock) is what the shard holds, charged
//!   to the memory budget before it is taken and released when dropped;
//!   growth the budget refuses is not taken (a refresh that cannot grow
//!   removes the key instead, which keeps the cache never stale).

use crate::cache::bloom::key_hash;
use crate::cache::budget::{heap_size, Kind, MemoryBudget, ARC_HEADER};
use parking_lot::RwLock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which chunk state an entry was read from; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    pub chunk_id: u64,
    pub generation: u64,
}

/// Bytes charged per entry for its hash-map slot: the slot and its control
/// byte, twice over (a table grows by doubling, so up to half its slots are
/// free).
const SLOT_CHARGE: u64 = 2 * (std::mem::size_of::<(RowKey, Entry)>() as u64 + 1);

/// Keys up to this long are held inside the table's slot.
const INLINE: usize = 22;

/// A cached key: inside the slot when short, so a lookup compares it
/// without following a pointer (a cache miss per hit otherwise: the key's
/// comparison was 4% of a get-only profile).
#[derive(Debug, Clone)]
enum RowKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl RowKey {
    fn new(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            RowKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            RowKey::Heap(key.into())
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            RowKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            RowKey::Heap(b) => b,
        }
    }

    /// Bytes the key takes outside the slot.
    fn heap_charge(key: &[u8]) -> u64 {
        if key.len() <= INLINE {
            0
        } else {
            heap_size(key.len())
        }
    }
}

// Hash and equality are those of the bytes, as `Borrow` requires.
impl std::borrow::Borrow<[u8]> for RowKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::hash::Hash for RowKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq for RowKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for RowKey {}

const SHARDS: usize = 16;

#[derive(Debug, Clone)]
struct Entry {
    value: Option<Arc<[u8]>>,
    tag: Tag,
    /// The `(version, counter)` of the write the value came from: a
    /// refresh by an older write (two puts racing to the cache after
    /// their appends) leaves a newer value in place.
    stamp: (u64, u64),
}

/// Bytes charged for an entry: its slot, and the key's and the value's
/// allocations as the allocator takes them.
fn charge(key: &[u8], value: Option<&[u8]>) -> u64 {
    SLOT_CHARGE + RowKey::heap_charge(key) + value.map_or(0, |v| heap_size(ARC_HEADER + v.len()))
}

/// Hashes a table's keys with xxh3 (a few nanoseconds for a short key,
/// against SipHash's tens), seeded per process so that keys chosen to
/// collide on one machine do not collide on another.
#[derive(Debug, Clone, Copy)]
struct KeyHash {
    seed: u64,
}

impl Default for KeyHash {
    fn default() -> Self {
        static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        KeyHash {
            seed: *SEED.get_or_init(|| fastrand::u64(..)),
        }
    }
}

impl std::hash::BuildHasher for KeyHash {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.seed)
    }
}

/// State of one hash: the running xxh3 seed.
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    fn write_usize(&mut self, n: usize) {
        // The length a slice hashes first: folded in by the next write.
        self.0 ^= (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Debug, Default)]
struct Table {
    map: HashMap<RowKey, Entry, KeyHash>,
    bytes: u64,
}

#[derive(Debug, Default)]
struct Shard {
    /// Head (newest) first.
    tables: VecDeque<Table>,
}

impl Shard {
    fn bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.bytes).sum()
    }
}

/// A shard with its hit counts, on a cache line of its own: a get touches
/// the shard's lock anyway, and counts there instead of on a line shared
/// by every get (which bounced between cores on each one).
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot {
    shard: RwLock<Shard>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::ops::Deref for Slot {
    type Target = RwLock<Shard>;

    fn deref(&self) -> &RwLock<Shard> {
        &self.shard
    }
}

#[derive(Debug)]
pub(crate) struct RowCache {
    shards: Box<[Slot]>,
    /// Bytes one table of one shard may hold.
    table_capacity: u64,
    tables: usize,
    budget: Arc<MemoryBudget>,
    /// Hits as of the last halving, and the halved count of the hits
    /// before it: see [`RowCache::heat`].
    hits_at_decay: AtomicU64,
    decayed_hits: AtomicU64,
}

impl Drop for RowCache {
    fn drop(&mut self) {
        self.clear();
    }
}

impl RowCache {
    /// A cache of `capacity` bytes in all, over `tables` tables per shard
    /// (at least 2). Capacity 0 disables it.
    pub fn new(capacity: u64, tables: usize, budget: Arc<MemoryBudget>) -> Self {
        let tables = tables.max(2);
        RowCache {
            shards: (0..SHARDS).map(|_| Slot::default()).collect(),
            table_capacity: capacity / (SHARDS * tables) as u64,
            tables,
            budget,
            hits_at_decay: AtomicU64::new(0),
            decayed_hits: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &[u8]) -> &Slot {
        &self.shards[(key_hash(key) as usize) % self.shards.len()]
    }

    fn enabled(&self) -> bool {
        self.table_capacity > 0
    }

    /// The cached value of `key` read from the chunk state `tag`:
    /// `Some(None)` for a key cached as deleted. Never blocks: a shard busy
    /// with a writer is a miss.
    pub fn get(&self, key: &[u8], tag: Tag) -> Option<Option<Arc<[u8]>>> {
        if !self.enabled() {
            return None;
        }
        let slot = self.shard(key);
        let found = slot.try_read().and_then(|shard| {
            shard
                .tables
                .iter()
                .find_map(|t| t.map.get(key))
                .filter(|e| e.tag == tag)
                .map(|e| e.value.clone())
        });
        let counter = if found.is_some() {
            &slot.hits
        } else {
            &slot.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Adds what a get read, if `still_current()` holds under the shard's
    /// lock (no put to the chunk completed since the get read it).
    pub fn insert(
        &self,
        key: &[u8],
        value: Option<Arc<[u8]>>,
        stamp: (u64, u64),
        tag: Tag,
        still_current: impl FnOnce() -> bool,
    ) {
        if !self.enabled() {
            return;
        }
        let mut shard = self.shard(key).write();
        if !still_current() {
            return;
        }
        if shard
            .tables
            .front()
            .and_then(|t| t.map.get(key))
            .is_some_and(|e| e.tag == tag)
        {
            return;
        }
        // Share a value an older table already holds for this state.
        let value = shard
            .tables
            .iter()
            .skip(1)
            .find_map(|t| t.map.get(key).filter(|e| e.tag == tag))
            .map_or(value, |e| e.value.clone());
        let n = charge(key, value.as_deref());
        let head_full = shard
            .tables
            .front()
            .is_none_or(|t| t.bytes + n > self.table_capacity);
        if head_full {
            self.rotate(&mut shard);
        }
        if !self.budget.try_reserve(Kind::RowCache, n, 0) {
            return;
        }
        if let Some(head) = shard.tables.front_mut() {
            let old = head
                .map
                .insert(RowKey::new(key), Entry { value, tag, stamp });
            head.bytes += n;
            if let Some(old) = old {
                let freed = charge(key, old.value.as_deref());
                head.bytes -= freed;
                self.budget.release(Kind::RowCache, freed);
            }
        } else {
            self.budget.release(Kind::RowCache, n);
        }
    }

    /// Pushes a new empty head table; drops the tail table when the queue
    /// is full.
    fn rotate(&self, shard: &mut Shard) {
        shard.tables.push_front(Table::default());
        while shard.tables.len() > self.tables {
            if let Some(tail) = shard.tables.pop_back() {
                self.budget.release(Kind::RowCache, tail.bytes);
            }
        }
    }

    /// Refreshes `key` wherever the cache holds it (a put or delete to a
    /// munk-less chunk); never adds it.
    pub fn update_if_present(&self, key: &[u8], value: Option<&[u8]>, stamp: (u64, u64), tag: Tag) {
        if !self.enabled() {
            return;
        }
        let mut shard = self.shard(key).write();
        let mut shared: Option<Arc<[u8]>> = None;
        for t in shard.tables.iter_mut() {
            let Some(e) = t.map.get_mut(key) else {
                continue;
            };
            if e.stamp > stamp {
                continue;
            }
            let old = charge(key, e.value.as_deref());
            let new = charge(key, value);
            if new > old && !self.budget.try_reserve(Kind::RowCache, new - old, 0) {
                // No room to grow: forget the key rather than keep a stale
                // value.
                t.map.remove(key);
                t.bytes -= old;
                self.budget.release(Kind::RowCache, old);
                continue;
            }
            self.budget.release(Kind::RowCache, old.saturating_sub(new));
            t.bytes = t.bytes - old + new;
            e.value = value.map(|v| shared.get_or_insert_with(|| Arc::from(v)).clone());
            e.tag = tag;
            e.stamp = stamp;
        }
    }

    /// Bytes the cache holds (what it has charged to the budget).
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.read().bytes()).sum()
    }

    /// (hits, misses) so far.
    pub fn hit_counts(&self) -> (u64, u64) {
        let sum = |f: fn(&Slot) -> &AtomicU64| {
            self.shards
                .iter()
                .map(|s| f(s).load(Ordering::Relaxed))
                .sum()
        };
        (sum(|s| &s.hits), sum(|s| &s.misses))
    }

    /// Recent hits, halved with the chunks' heat (the munk cache's unit):
    /// what the cache is worth, to weigh against munks for memory.
    pub fn heat(&self) -> u64 {
        let hits = self.hit_counts().0;
        let recent = hits - self.hits_at_decay.load(Ordering::Relaxed).min(hits);
        self.decayed_hits.load(Ordering::Relaxed) + recent
    }

    /// Halves the heat; called when the chunks' heats are halved (by one
    /// thread at a time).
    pub fn decay(&self) {
        let now = self.hit_counts().0;
        let recent = now - self.hits_at_decay.load(Ordering::Relaxed).min(now);
        let old = self.decayed_hits.load(Ordering::Relaxed);
        self.decayed_hits
            .store((old + recent) / 2, Ordering::Relaxed);
        self.hits_at_decay.store(now, Ordering::Relaxed);
    }

    /// Drops the oldest table of every shard (the entries nobody read
    /// lately), to give the memory to munks; returns the bytes released.
    pub fn shrink(&self) -> u64 {
        let mut freed = 0;
        for s in self.shards.iter() {
            let mut shard = s.write();
            if let Some(tail) = shard.tables.pop_back() {
                freed += tail.bytes;
            }
        }
        self.budget.release(Kind::RowCache, freed);
        freed
    }

    /// Drops every entry.
    pub fn clear(&self) {
        for s in self.shards.iter() {
            let mut shard = s.write();
            let n = shard.bytes();
            shard.tables.clear();
            self.budget.release(Kind::RowCache, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: Tag = Tag {
        chunk_id: 1,
        generation: 0,
    };

    fn cache(capacity: u64) -> (RowCache, Arc<MemoryBudget>) {
        let b = Arc::new(MemoryBudget::new(1 << 30));
        (RowCache::new(capacity, 3, b.clone()), b)
    }

    fn v(s: &str) -> Option<Arc<[u8]>> {
        Some(Arc::from(s.as_bytes()))
    }

    #[test]
    fn short_and_long_keys_are_found_refreshed_and_charged() {
        let (c, budget) = cache(1 << 20);
        // An inline key is one slot wide: no larger than a boxed key was.
        assert!(std::mem::size_of::<RowKey>() <= 24);
        let keys: Vec<Vec<u8>> = [0, 1, INLINE - 1, INLINE, INLINE + 1, 300]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 7) as u8).collect())
            .collect();
        for k in &keys {
            c.insert(k, v("old"), (0, 0), TAG, || true);
        }
        for k in &keys {
            assert_eq!(c.get(k, TAG), Some(v("old")), "{}", k.len());
            c.update_if_present(k, Some(b"new"), (0, 0), TAG);
            assert_eq!(c.get(k, TAG), Some(v("new")), "{}", k.len());
        }
        // A key that is a prefix of a cached one, padded with zeros, is
        // another key.
        let mut padded = keys[1].clone();
        padded.push(0);
        assert_eq!(c.get(&padded, TAG), None);
        let expected: u64 = keys.iter().map(|k| charge(k, Some(b"new"))).sum();
        assert_eq!(c.bytes(), expected);
        assert_eq!(budget.kind_used(Kind::RowCache), expected);
        c.clear();
        assert_eq!(budget.kind_used(Kind::RowCache), 0);
    }

    #[test]
    fn heat_counts_recent_hits_and_shrinking_drops_the_oldest_table() {
        let (c, budget) = cache(3 * SHARDS as u64 * 4096);
        assert_eq!(c.heat(), 0);
        c.insert(b"old", v("1"), (0, 0), TAG, || true);
        for _ in 0..8 {
            assert!(c.get(b"old", TAG).is_some());
        }
        assert_eq!(c.heat(), 8);
        c.decay();
        assert_eq!(c.heat(), 4);
        c.decay();
        c.decay();
        assert_eq!(c.heat(), 1);
        // Misses are no heat.
        assert!(c.get(b"absent", TAG).is_none());
        assert_eq!(c.heat(), 1);
        // Fill the shards until "old" sits in an older table than the head.
        let mut i = 0u32;
        while c.shards.iter().any(|s| s.read().tables.len() < 2) {
            c.insert(&i.to_be_bytes(), v("x"), (0, 0), TAG, || true);
            i += 1;
        }
        let before = c.bytes();
        let freed = c.shrink();
        assert!(freed > 0 && freed < before);
        assert_eq!(c.bytes(), before - freed);
        assert_eq!(budget.kind_used(Kind::RowCache), c.bytes());
        while c.bytes() > 0 {
            c.shrink();
        }
        assert_eq!(budget.kind_used(Kind::RowCache), 0);
        assert!(c.get(b"old", TAG).is_none());
    }

    #[test]
    fn a_get_after_insert_hits_and_a_wrong_tag_misses() {
        let (c, _) = cache(1 << 20);
        c.insert(b"k", v("1"), (0, 0), TAG, || true);
        assert_eq!(c.get(b"k", TAG), Some(v("1")));
        let other = Tag {
            chunk_id: 1,
            generation: 1,
        };
        assert_eq!(c.get(b"k", other), None);
        assert_eq!(c.hit_counts(), (1, 1));
    }

    #[test]
    fn an_insert_whose_read_is_stale_is_dropped() {
        let (c, _) = cache(1 << 20);
        c.insert(b"k", v("old"), (0, 0), TAG, || false);
        assert_eq!(c.get(b"k", TAG), None);
    }

    #[test]
    fn puts_refresh_cached_keys_but_never_add_new_ones() {
        let (c, _) = cache(1 << 20);
        c.insert(b"k", v("1"), (0, 0), TAG, || true);
        c.update_if_present(b"k", Some(b"2"), (0, 0), TAG);
        c.update_if_present(b"other", Some(b"x"), (0, 0), TAG);
        assert_eq!(c.get(b"k", TAG), Some(v("2")));
        assert_eq!(c.get(b"other", TAG), None);
        c.update_if_present(b"k", None, (0, 0), TAG);
        assert_eq!(c.get(b"k", TAG), Some(None), "cached as deleted");
        // A refresh by an older write (it reached the cache after a newer
        // one) leaves the newer value.
        c.update_if_present(b"k", Some(b"new"), (9, 2), TAG);
        c.update_if_present(b"k", Some(b"stale"), (9, 1), TAG);
        assert_eq!(c.get(b"k", TAG), Some(v("new")));
        c.update_if_present(b"k", Some(b"newer"), (10, 0), TAG);
        assert_eq!(c.get(b"k", TAG), Some(v("newer")));
    }

    #[test]
    fn the_tail_table_is_dropped_when_the_head_fills() {
        let (c, b) = cache(64 << 10);
        for i in 0..5000u32 {
            c.insert(&i.to_le_bytes(), v("value"), (0, 0), TAG, || true);
            assert!(c.bytes() <= 64 << 10);
        }
        assert!(c.get(&0u32.to_le_bytes(), TAG).is_none(), "old keys go");
        assert!(
            c.get(&4999u32.to_le_bytes(), TAG).is_some(),
            "new keys stay"
        );
        assert_eq!(b.view().row_cache, c.bytes());
    }

    #[test]
    fn a_value_in_an_older_table_is_shared_not_copied() {
        let (c, _) = cache(16 * 3 * 2000);
        c.insert(b"k", v("shared"), (0, 0), TAG, || true);
        let first = c.get(b"k", TAG).flatten();
        // Fill the head of k's shard so k ends up in an older table.
        let mut i = 0u32;
        while c
            .shard(b"k")
            .read()
            .tables
            .front()
            .is_some_and(|t| t.map.contains_key(&b"k"[..]))
        {
            c.insert(&i.to_le_bytes(), v("x"), (0, 0), TAG, || true);
            i += 1;
        }
        c.insert(b"k", v("shared"), (0, 0), TAG, || true);
        let again = c.get(b"k", TAG).flatten();
        assert!(matches!((first, again), (Some(a), Some(b)) if Arc::ptr_eq(&a, &b)));
    }

    #[test]
    fn budget_charges_balance_to_zero_after_clear_and_drop() {
        let (c, b) = cache(1 << 20);
        for i in 0..100u32 {
            c.insert(&i.to_le_bytes(), v("value"), (0, 0), TAG, || true);
            c.update_if_present(&i.to_le_bytes(), Some(b"a longer value"), (0, 0), TAG);
        }
        assert!(b.view().row_cache > 0);
        c.clear();
        assert_eq!(b.view().row_cache, 0);
        c.insert(b"k", v("1"), (0, 0), TAG, || true);
        drop(c);
        assert_eq!(b.view().row_cache, 0);
    }

    #[test]
    fn a_disabled_cache_holds_nothing() {
        let (c, b) = cache(0);
        c.insert(b"k", v("1"), (0, 0), TAG, || true);
        assert_eq!(c.get(b"k", TAG), None);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_get_never_blocks_on_a_held_write_lock() {
        let (c, _) = cache(1 << 20);
        c.insert(b"k", v("1"), (0, 0), TAG, || true);
        let _writer = c.shard(b"k").write();
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(c.get(b"k", TAG), None));
        });
    }

    #[test]
    fn concurrent_puts_and_gets_never_leave_a_stale_value() {
        // The engine's protocol: a put bumps the chunk's count after its
        // record is readable, then refreshes the cache; a get notes the
        // count, reads, and inserts only if the count did not move.
        for _ in 0..200 {
            let (c, _) = cache(1 << 20);
            let applied = AtomicU64::new(0);
            let disk = parking_lot::Mutex::new(0u64);
            std::thread::scope(|s| {
                s.spawn(|| {
                    for n in 1..=50u64 {
                        *disk.lock() = n;
                        applied.fetch_add(1, Ordering::AcqRel);
                        c.update_if_present(b"k", Some(&n.to_le_bytes()), (0, 0), TAG);
                    }
                });
                s.spawn(|| {
                    for _ in 0..50 {
                        let seen = applied.load(Ordering::Acquire);
                        let value = *disk.lock();
                        c.insert(
                            b"k",
                            Some(Arc::from(&value.to_le_bytes()[..])),
                            (0, 0),
                            TAG,
                            || applied.load(Ordering::Acquire) == seen,
                        );
                    }
                });
            });
            if let Some(Some(v)) = c.get(b"k", TAG) {
                assert_eq!(
                    &*v,
                    &50u64.to_le_bytes()[..],
                    "stale value left in the cache"
                );
            }
        }
    }
}
