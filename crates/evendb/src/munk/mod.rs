//! The munk (memory chunk): a chunk's data in memory, serving its gets and
//! scans and absorbing its puts.
//!
//! Layout: an array of cells, one per key. A prefix of the array
//! (`0..sorted`) holds the keys the munk was built with, in key order; cells
//! claimed later are appended after it and linked into key order through
//! each cell's `next` index, so the list through `first` and `next` visits
//! every key in order. A lookup binary-searches the sorted prefix, then
//! walks the `next` links (a "bypass") from there, starting from a recently
//! inserted cell when that is closer. Each cell holds its key's versions as
//! a chain, newest first.
//!
//! Invariants:
//! - Cells are never removed or relinked once linked: a cell is written
//!   whole (`OnceLock::set`) before the compare-and-swap on its
//!   predecessor's `next` (AcqRel) makes it reachable, and readers load
//!   `next` with Acquire, so a reachable cell is always complete. Keys along
//!   the list strictly increase: an insert links between `pred` and `curr`
//!   only while `pred.next == curr` (the CAS checks it) and
//!   `pred.key < key < curr.key`.
//! - A chain is ordered by stamp (version, counter), newest first, and holds
//!   at most one entry per version: readers at any snapshot pick the newest
//!   entry at or below their version, so of two entries with one version
//!   only the newer is ever read. Chains change by compare-and-swap of the
//!   cell's `head` or of a node's `older` link; nodes are immutable
//!   otherwise, and memory is reclaimed by reference counts (`Arc`): a
//!   reader holding a node keeps it and what it links to alive.
//! - Entries are dropped from a chain only when no reader can need them:
//!   versions below the watermark `w` (the oldest version any snapshot,
//!   scan or checkpoint may read at) except the newest one at or below `w`.
//! - Puts to a munk hold their chunk's rebalance lock shared. A rebuild
//!   (munk rebalance, split) reads the munk while puts change it, then
//!   holds the lock exclusively, so that no put changes it, to carry over
//!   what changed since (`rebuild.rs`).
//! - `bytes` is this munk's charge to the memory budget: every growth is
//!   charged before it happens, every drop released, and the rest when the
//!   munk is dropped.

pub(crate) mod build;
mod rebuild;

pub(crate) use rebuild::{keys_at_size, merged, spare_cells, Carried, Snapshot, Unsettled};

pub(crate) use build::MunkEntry;

use crate::cache::budget::{heap_size, Kind, MemoryBudget, ARC_HEADER};
use crate::prefix::PrefixIndex;
use arc_swap::ArcSwapOption;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// "No cell": the end of the list, or "before the first cell".
pub(crate) const NIL: u32 = u32::MAX;

/// Walks longer than this ask for a munk rebalance.
const LONG_WALK: u32 = 128;

/// Recently inserted cells a lookup may start its walk from.
const HINTS: usize = 4;

/// Bytes charged per version node besides its value: the node's `Arc`
/// allocation as the allocator takes it.
pub(crate) const NODE_OVERHEAD: u64 = heap_size(ARC_HEADER + std::mem::size_of::<Version>());

/// Bytes charged for a value of `len` bytes (its boxed allocation).
pub(crate) const fn value_charge(len: usize) -> u64 {
    heap_size(len)
}

/// Bytes charged for a cell's key of `len` bytes (its `Arc<[u8]>`
/// allocation). The cell itself is a slot of the cell array, charged with
/// the array.
pub(crate) const fn key_charge(len: usize) -> u64 {
    heap_size(ARC_HEADER + len)
}

/// The bit of [`Version`]'s counter word saying its record is not in the
/// chunk's log yet (a deferred `Sync` put, see [`Version::unlogged`]).
/// Counters never come near it.
const UNLOGGED: u64 = 1 << 63;

/// One version of a key.
#[derive(Debug)]
pub(crate) struct Version {
    /// `None` for a tombstone.
    pub value: Option<Box<[u8]>>,
    pub version: u64,
    /// The chunk counter, with [`UNLOGGED`] set while the record is only
    /// in memory and the commit journal (one word: the node's allocation
    /// stays in its size class).
    counter: AtomicU64,
    older: Link,
}

/// A version's link to the next older one: an `ArcSwapOption` that skips
/// arc-swap where the link is empty and stays so. arc-swap settles what
/// readers owe a link on every store, swap and drop by walking every
/// thread's debt slots, even for an empty link. In a sequential load,
/// where no version has an older one, those walks (with the cells' heads',
/// which must stay) took 9% of the CPU samples, 7% with empty links
/// skipped. An empty link holds no reference, so no reader can owe it
/// one, and leaving it undropped leaks nothing. Loads and compare-and-swaps
/// go to the `ArcSwapOption` itself (`Deref`).
#[derive(Debug)]
struct Link(ManuallyDrop<ArcSwapOption<Version>>);

impl Link {
    fn empty() -> Self {
        Link(ManuallyDrop::new(ArcSwapOption::empty()))
    }

    /// A link made holding `older`: nothing to settle, unlike a store.
    fn new(older: Option<Arc<Version>>) -> Self {
        Link(ManuallyDrop::new(ArcSwapOption::new(older)))
    }

    /// Links `older`; empty over empty is skipped.
    fn store(&self, older: Option<Arc<Version>>) {
        if older.is_none() && self.0.load().is_none() {
            return;
        }
        self.0.store(older);
    }

    /// Empties the link, returning what it held; an empty link is left
    /// alone.
    fn take(&self) -> Option<Arc<Version>> {
        if self.0.load().is_none() {
            return None;
        }
        self.0.swap(None)
    }
}

impl std::ops::Deref for Link {
    type Target = ArcSwapOption<Version>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.0.load().is_some() {
            drop(std::mem::replace(&mut *self.0, ArcSwapOption::empty()));
        }
    }
}

impl Version {
    /// A version whose record is in its chunk's files.
    pub fn new(value: Option<&[u8]>, version: u64, counter: u64) -> Self {
        Self::with_counter(value.map(Box::from), version, counter)
    }

    /// A version that takes ownership of its value (no copy).
    pub fn from_owned(value: Option<Vec<u8>>, version: u64, counter: u64) -> Self {
        Self::with_counter(value.map(Vec::into_boxed_slice), version, counter)
    }

    /// A `Sync` put's version whose record is in the commit journal but not
    /// in the chunk's log: the checkpointer (or whatever takes the munk
    /// away first) writes it there (`DbInner::log_deferred`).
    pub fn unlogged(value: Option<&[u8]>, version: u64, counter: u64) -> Self {
        Self::with_counter(value.map(Box::from), version, counter | UNLOGGED)
    }

    fn with_counter(value: Option<Box<[u8]>>, version: u64, counter: u64) -> Self {
        Version {
            value,
            version,
            counter: AtomicU64::new(counter),
            older: Link::empty(),
        }
    }

    /// The chunk counter the put took.
    pub fn counter(&self) -> u64 {
        self.counter.load(Ordering::Relaxed) & !UNLOGGED
    }

    /// False while the record is only in memory and the journal.
    pub fn is_logged(&self) -> bool {
        self.counter.load(Ordering::Acquire) & UNLOGGED == 0
    }

    /// Notes the record written to the chunk's log.
    pub fn mark_logged(&self) {
        self.counter.fetch_and(!UNLOGGED, Ordering::Release);
    }

    pub fn stamp(&self) -> (u64, u64) {
        (self.version, self.counter())
    }

    /// The next older version, if kept.
    pub fn older(&self) -> Option<Arc<Version>> {
        self.older.load_full()
    }

    pub fn set_older(&self, older: Option<Arc<Version>>) {
        self.older.store(older);
    }

    /// This version, `older` linked below it: for a version no other
    /// thread can see yet (see [`link_older`]).
    pub fn with_older(mut self, older: Option<Arc<Version>>) -> Self {
        self.relink(older);
        self
    }

    /// Gives this version a new link to `older`, made rather than stored
    /// into (its owner has it alone: see [`link_older`]).
    fn relink(&mut self, older: Option<Arc<Version>>) {
        self.older = Link::new(older);
    }

    /// Drops everything older than this version (nothing to do, and no
    /// cost, when nothing is linked: see [`Link`]).
    pub fn cut(&self) {
        self.older.store(None);
    }

    /// Drops what is older than this version if it is still `below` (the
    /// next older one): a put that lost a race may have linked a version
    /// in between since, which must stay.
    pub fn cut_above(&self, below: &Arc<Version>) {
        let expected = Some(below.clone());
        let _ = self.older.compare_and_swap(&expected, None::<Arc<Version>>);
    }

    /// Runs `f` on the newest version of the chain starting here that is
    /// at or below `max_version`, without taking references (no reference
    /// count traffic on hot keys).
    pub fn with_visible<R>(&self, max_version: u64, f: impl FnOnce(&Version) -> R) -> Option<R> {
        if self.version <= max_version {
            return Some(f(self));
        }
        let mut guard = self.older.load();
        loop {
            let next = match guard.as_ref() {
                None => return None,
                Some(n) if n.version <= max_version => return Some(f(n)),
                Some(n) => n.older.load(),
            };
            guard = next;
        }
    }

    /// Bytes charged for this node: what the allocator holds for it.
    pub fn charge(&self) -> u64 {
        NODE_OVERHEAD + self.value.as_ref().map_or(0, |v| value_charge(v.len()))
    }
}

/// Bytes charged for a whole chain.
pub(crate) fn chain_charge(head: &Option<Arc<Version>>) -> u64 {
    let mut total = 0;
    let mut node = head.clone();
    while let Some(n) = node {
        total += n.charge();
        node = n.older();
    }
    total
}

#[derive(Debug)]
pub(crate) struct Cell {
    pub key: Arc<[u8]>,
    head: ArcSwapOption<Version>,
    next: AtomicU32,
}

impl Cell {
    /// The newest version, if any.
    pub fn head(&self) -> Option<Arc<Version>> {
        self.head.load_full()
    }

    /// The value of the newest version at or below `max_version`: `None`
    /// if there is none, `Some(None)` for a tombstone, ignoring versions
    /// below `floor` (a range delete's): `Some(None)` if the newest one at
    /// or below `max_version` is below it. Takes no reference.
    pub fn read_from(&self, max_version: u64, floor: u64) -> Option<Option<Vec<u8>>> {
        let head = self.head.load();
        head.as_ref()?.with_visible(max_version, |v| {
            if v.version < floor {
                None
            } else {
                v.value.as_deref().map(<[u8]>::to_vec)
            }
        })
    }
}

/// Why a put could not be taken by the munk as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every cell is claimed: rebalance the munk first.
    Full,
    /// The memory budget has no room for the put.
    NoMemory(u64),
}

/// How a new munk pays for its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charge {
    /// Take over this many bytes already charged — for the same keys and
    /// chains by the munk it replaces (see [`Munk::hand_over`]), or by a
    /// munk load for the entries and the cell array it reserved — charging
    /// or releasing only the difference. A munk that replaces another
    /// inherits no array: the old munk's array stays charged until its
    /// last reader lets go of it.
    Inherit(u64),
    /// Charge the cell array only: the keys and chains are the munk's it
    /// replaces, which still holds their charge until
    /// [`Snapshot::carry_over`] hands it over.
    ArrayOnly,
}

/// A put the munk has made room for; see [`Munk::reserve`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reservation {
    /// The key has this cell.
    Existing(u32),
    /// The key is new; this cell is claimed for it.
    New(u32),
}

#[derive(Debug)]
pub(crate) struct Munk {
    cells: Box<[OnceLock<Cell>]>,
    claimed: AtomicU32,
    sorted: u32,
    /// The keys of the sorted prefix, searched by integer prefix.
    sorted_keys: PrefixIndex,
    first: AtomicU32,
    hints: [AtomicU32; HINTS],
    next_hint: AtomicU32,
    bytes: AtomicU64,
    /// The part of `bytes` that is the cell array itself.
    array_bytes: u64,
    /// Data size (see [`MunkEntry::data_size`]): exact when built, then
    /// grown by every put (overwrites included), so an upper bound.
    data_bytes: AtomicU64,
    long_walks: AtomicU32,
    /// Held by whoever rebuilds this munk (see [`Munk::lock_rebuild`]), so that
    /// one thread builds its replacement while the others wait for it.
    rebuilding: parking_lot::Mutex<()>,
    budget: Arc<MemoryBudget>,
}

impl Drop for Munk {
    fn drop(&mut self) {
        self.budget
            .release(Kind::Munks, self.bytes.load(Ordering::Relaxed));
    }
}

impl Munk {
    /// Bytes charged for the cell array of a munk with room for `capacity`
    /// keys, with its key prefixes (8 bytes a key, at most) and the munk's
    /// own `Arc` allocation.
    pub fn array_charge(capacity: usize) -> u64 {
        let capacity = capacity.clamp(1, NIL as usize - 1);
        heap_size(capacity * std::mem::size_of::<OnceLock<Cell>>())
            + heap_size(capacity * 8)
            + heap_size(ARC_HEADER + std::mem::size_of::<Munk>())
    }

    /// A munk over `entries` (sorted by key, distinct), with room for
    /// `spare` more keys, paid for as `charge` says.
    pub fn build(
        entries: Vec<MunkEntry>,
        spare: usize,
        budget: &Arc<MemoryBudget>,
        charge: Charge,
    ) -> Munk {
        let n = entries.len();
        let capacity = n.saturating_add(spare).clamp(1, NIL as usize - 1);
        let array_bytes = Munk::array_charge(capacity);
        let content: u64 = entries.iter().map(MunkEntry::charge).sum();
        let data: u64 = entries.iter().map(MunkEntry::data_size).sum();
        let inherited = match charge {
            Charge::Inherit(bytes) => bytes,
            Charge::ArrayOnly => content,
        };
        let charge = array_bytes + content;
        budget.add(Kind::Munks, charge.saturating_sub(inherited));
        budget.release(Kind::Munks, inherited.saturating_sub(charge));
        let cells: Box<[OnceLock<Cell>]> = (0..capacity).map(|_| OnceLock::new()).collect();
        let sorted_keys = PrefixIndex::new(entries.iter().map(|e| &*e.key));
        for (i, e) in entries.into_iter().enumerate() {
            let next = if i + 1 < n { (i + 1) as u32 } else { NIL };
            let _ = cells[i].set(Cell {
                key: e.key,
                head: ArcSwapOption::new(e.head),
                next: AtomicU32::new(next),
            });
        }
        Munk {
            cells,
            claimed: AtomicU32::new(n as u32),
            sorted: n as u32,
            sorted_keys,
            first: AtomicU32::new(if n == 0 { NIL } else { 0 }),
            hints: std::array::from_fn(|_| AtomicU32::new(NIL)),
            next_hint: AtomicU32::new(0),
            bytes: AtomicU64::new(charge),
            array_bytes,
            data_bytes: AtomicU64::new(data),
            long_walks: AtomicU32::new(0),
            rebuilding: parking_lot::Mutex::new(()),
            budget: budget.clone(),
        }
    }

    fn cell(&self, i: u32) -> Option<&Cell> {
        self.cells.get(i as usize).and_then(OnceLock::get)
    }

    fn next_of(&self, pred: u32) -> u32 {
        if pred == NIL {
            self.first.load(Ordering::Acquire)
        } else {
            self.cell(pred)
                .map_or(NIL, |c| c.next.load(Ordering::Acquire))
        }
    }

    fn key_of(&self, i: u32) -> Option<&[u8]> {
        self.cell(i).map(|c| &*c.key)
    }

    /// `(pred, curr)` with `pred.key < key <= curr.key` (`NIL` for "before
    /// the first" and "past the last"), and the hops walked.
    fn locate(&self, key: &[u8]) -> (u32, u32, u32) {
        let idx = self
            .sorted_keys
            .lower_bound(key, |i| self.key_of(i as u32).is_some_and(|k| k < key));
        let mut pred = if idx == 0 { NIL } else { (idx - 1) as u32 };
        let mut curr = self.next_of(pred);
        // The hints help only a walk: skip them when none is needed.
        if self.key_of(curr).is_some_and(|k| k < key) {
            for h in &self.hints {
                let h = h.load(Ordering::Relaxed);
                if let Some(hk) = self.key_of(h) {
                    let better =
                        hk < key && (pred == NIL || self.key_of(pred).is_some_and(|pk| pk < hk));
                    if better {
                        pred = h;
                    }
                }
            }
            curr = self.next_of(pred);
        }
        let mut hops = 0;
        while let Some(k) = self.key_of(curr) {
            if k >= key {
                break;
            }
            pred = curr;
            curr = self.next_of(curr);
            hops += 1;
        }
        (pred, curr, hops)
    }

    /// The index of the cell of `key`, if the munk has it.
    fn find_index(&self, key: &[u8]) -> Option<u32> {
        // A key of the sorted prefix has that cell (cells are never
        // removed, keys never repeated); when the prefixes tell, no key is
        // read at all.
        if let Some(r) = self.sorted_keys.exact(key).filter(|r| !r.is_empty()) {
            return Some(r.start as u32);
        }
        let (_, curr, hops) = self.locate(key);
        if hops > LONG_WALK {
            self.long_walks.fetch_add(1, Ordering::Relaxed);
        }
        self.cell(curr).filter(|c| &*c.key == key).map(|_| curr)
    }

    /// The cell of `key`, if the munk has it.
    fn find(&self, key: &[u8]) -> Option<&Cell> {
        self.find_index(key).and_then(|i| self.cell(i))
    }

    /// The value of `key` at `max_version` (`None` if absent or deleted),
    /// copied out without taking references.
    #[cfg(test)]
    pub fn read(&self, key: &[u8], max_version: u64) -> Option<Vec<u8>> {
        self.read_from(key, max_version, 0)
    }

    /// [`Munk::read`] ignoring versions below `floor` (see `tombstones`).
    pub fn read_from(&self, key: &[u8], max_version: u64, floor: u64) -> Option<Vec<u8>> {
        self.find(key)?.read_from(max_version, floor).flatten()
    }

    /// Makes room for a put of `key` with a value of `value_len` bytes:
    /// claims a cell if the key is new and charges the budget (keeping
    /// `headroom` bytes of it free). Nothing is changed on refusal.
    pub fn reserve(
        &self,
        key: &[u8],
        value_len: usize,
        headroom: u64,
    ) -> Result<Reservation, Refusal> {
        let existing = self.find_index(key);
        let mut charge = NODE_OVERHEAD + value_charge(value_len);
        if existing.is_none() {
            charge += key_charge(key.len());
        }
        if !self.budget.try_reserve(Kind::Munks, charge, headroom) {
            return Err(Refusal::NoMemory(charge));
        }
        let res = match existing {
            Some(i) => Reservation::Existing(i),
            None => match self.claim() {
                Some(i) => Reservation::New(i),
                None => {
                    self.budget.release(Kind::Munks, charge);
                    return Err(Refusal::Full);
                }
            },
        };
        self.bytes.fetch_add(charge, Ordering::Relaxed);
        let data = value_len as u64
            + match res {
                Reservation::Existing(_) => 0,
                Reservation::New(_) => key.len() as u64 + build::ENTRY_DATA_OVERHEAD,
            };
        self.data_bytes.fetch_add(data, Ordering::Relaxed);
        Ok(res)
    }

    /// Claims a free cell, if one is left.
    fn claim(&self) -> Option<u32> {
        let capacity = self.cells.len() as u32;
        self.claimed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                (c < capacity).then_some(c + 1)
            })
            .ok()
    }

    /// Adds a version of `key` under a reservation made for it. `watermark`
    /// is the oldest version any reader may still need.
    pub fn insert(&self, res: Reservation, key: &[u8], node: Version, watermark: u64) {
        let node = Arc::new(node);
        let cell = match res {
            Reservation::Existing(i) => self.cell(i),
            Reservation::New(i) => self.link(i, key, || Arc::from(key), &node),
        };
        if let Some(cell) = cell {
            let freed = push_version(cell, node, watermark);
            self.release(freed);
        }
    }

    /// Links the claimed cell `i` for `key` (stored as `own` makes it),
    /// holding `node` and the chain below it. Returns `None` once linked,
    /// or the cell of `key` if another put linked one first (the claimed
    /// cell then stays unused and unreachable).
    fn link(
        &self,
        i: u32,
        key: &[u8],
        own: impl FnOnce() -> Arc<[u8]>,
        node: &Arc<Version>,
    ) -> Option<&Cell> {
        let (mut pred, mut curr, _) = self.locate(key);
        if let Some(c) = self.cell(curr).filter(|c| &*c.key == key) {
            return Some(c);
        }
        let slot = self.cells.get(i as usize)?;
        let _ = slot.set(Cell {
            key: own(),
            head: ArcSwapOption::new(Some(node.clone())),
            next: AtomicU32::new(curr),
        });
        let mine = slot.get()?;
        loop {
            mine.next.store(curr, Ordering::Relaxed);
            let link = if pred == NIL {
                &self.first
            } else {
                &self.cell(pred)?.next
            };
            if link
                .compare_exchange(curr, i, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let h = self.next_hint.fetch_add(1, Ordering::Relaxed) as usize % HINTS;
                self.hints[h].store(i, Ordering::Relaxed);
                return None;
            }
            // Someone linked after `pred`: walk on from it.
            curr = self.next_of(pred);
            while let Some(k) = self.key_of(curr) {
                if k >= key {
                    break;
                }
                pred = curr;
                curr = self.next_of(curr);
            }
            if let Some(c) = self.cell(curr).filter(|c| &*c.key == key) {
                return Some(c);
            }
        }
    }

    fn release(&self, n: u64) {
        if n > 0 {
            // Saturating: `give_back` may have returned the charge first.
            let was = self
                .bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some(b.saturating_sub(n))
                })
                .unwrap_or(0);
            self.budget.release(Kind::Munks, n.min(was));
        }
    }

    /// Returns the munk's whole charge to the budget now, rather than when
    /// its last reader drops it: an eviction about to remove it gives it
    /// back before writing the munk's deferred records to the log, so that
    /// the log's growth does not take the budget past its limit while both
    /// are charged (`db::deferred`). Readers still holding the munk then
    /// hold memory no longer charged.
    pub fn give_back(&self) {
        let n = self.bytes.swap(0, Ordering::Relaxed);
        self.budget.release(Kind::Munks, n);
    }

    /// True when the munk should be rebalanced: cells nearly used up, or
    /// lookups walking long bypasses.
    pub fn wants_rebalance(&self) -> bool {
        let cap = self.cells.len() as u32;
        let claimed = self.claimed.load(Ordering::Relaxed);
        claimed >= cap - cap / 8 || self.long_walks.load(Ordering::Relaxed) > 16
    }

    /// Cells claimed since the munk was built: its new keys.
    pub fn new_keys(&self) -> usize {
        (self
            .claimed
            .load(Ordering::Relaxed)
            .saturating_sub(self.sorted)) as usize
    }

    /// Cells the munk was built with beyond its keys.
    pub fn spare(&self) -> usize {
        self.cells.len().saturating_sub(self.sorted as usize)
    }

    /// Cells not claimed yet: at most this many keys are new to the munk
    /// before it refuses them.
    pub fn unclaimed(&self) -> usize {
        self.cells.len().saturating_sub(self.keys())
    }

    /// Cells claimed: the keys the munk holds, plus cells lost to races.
    pub fn keys(&self) -> usize {
        self.claimed.load(Ordering::Relaxed) as usize
    }

    /// Bytes charged to the budget for this munk.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// An upper bound of the munk's data size, comparable with
    /// `max_chunk_size` (exact right after a rebuild).
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes.load(Ordering::Relaxed)
    }

    /// The data size of what the munk holds now: key and newest value of
    /// every key whose newest version is not a tombstone (see
    /// [`MunkEntry::data_size`]). A walk of the cells that takes no
    /// references, so it costs far less than a rebuild.
    pub fn live_data(&self) -> u64 {
        let mut total = 0;
        let mut i = self.first.load(Ordering::Acquire);
        while let Some((c, next)) = self.at(i) {
            let head = c.head.load();
            if let Some(value) = head.as_ref().and_then(|h| h.value.as_ref()) {
                total += (c.key.len() + value.len()) as u64 + build::ENTRY_DATA_OVERHEAD;
            }
            i = next;
        }
        total
    }

    /// Lowers the data size estimate from `before` (read before `live` was
    /// measured) to `live`, keeping what puts added meanwhile.
    pub fn recount(&self, before: u64, live: u64) {
        self.data_bytes
            .fetch_sub(before.saturating_sub(live), Ordering::Relaxed);
    }

    /// Hands this munk's charge for keys and chains over to the munks that
    /// replace it (see [`Charge::Inherit`]); it keeps only its cell array's.
    /// Call it when no put can reach this munk any more.
    pub fn hand_over(&self) -> u64 {
        let total = self.bytes.swap(self.array_bytes, Ordering::Relaxed);
        total.saturating_sub(self.array_bytes)
    }

    /// Cells claimed since the munk was built: the keys put since.
    pub fn recent_keys(&self) -> Vec<Arc<[u8]>> {
        let claimed = self.claimed.load(Ordering::Relaxed);
        (self.sorted..claimed)
            .filter_map(|i| self.cell(i).map(|c| c.key.clone()))
            .collect()
    }

    /// The first cell with key `>= key` (`NIL` if none).
    pub fn seek(&self, key: &[u8]) -> u32 {
        self.locate(key).1
    }

    /// A key of the munk's sorted part about `back` keys below `hi` (all
    /// keys for `None`), where a reverse scan's next window may start;
    /// `None` if there are fewer than that (start at the chunk's first key).
    pub fn key_before(&self, hi: Option<&[u8]>, back: usize) -> Option<Vec<u8>> {
        let below = match hi {
            Some(k) => self
                .sorted_keys
                .lower_bound(k, |i| self.key_of(i as u32).is_some_and(|x| x < k)),
            None => self.sorted as usize,
        };
        let at = below.checked_sub(back)?;
        self.key_of(at as u32).map(<[u8]>::to_vec)
    }

    /// The cell at `i` and the index of the next one in key order.
    pub fn at(&self, i: u32) -> Option<(&Cell, u32)> {
        let c = self.cell(i)?;
        Some((c, c.next.load(Ordering::Acquire)))
    }

    /// Calls `f`, in key order, with each key whose chain holds versions
    /// not yet in the chunk's log (deferred `Sync` puts, see
    /// [`Version::unlogged`]) and those versions, oldest first. Of a chain
    /// only what readers at or above `watermark` may need counts: it is
    /// walked down to its newest version at or below the watermark, which
    /// hides every older one.
    pub fn each_unlogged<E>(
        &self,
        watermark: u64,
        mut f: impl FnMut(&[u8], &[Arc<Version>]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut versions: Vec<Arc<Version>> = Vec::new();
        let mut i = self.first.load(Ordering::Acquire);
        while let Some((c, next)) = self.at(i) {
            let mut node = c.head();
            while let Some(n) = node {
                let last = n.version <= watermark;
                node = if last { None } else { n.older() };
                if !n.is_logged() {
                    versions.push(n);
                }
            }
            if !versions.is_empty() {
                versions.reverse();
                f(&c.key, &versions)?;
                versions.clear();
            }
            i = next;
        }
        Ok(())
    }

    /// Every key with its chain, in key order.
    pub fn entries(&self) -> Vec<MunkEntry> {
        let mut out = Vec::with_capacity(self.claimed.load(Ordering::Relaxed) as usize);
        let mut i = self.first.load(Ordering::Acquire);
        while let Some((c, next)) = self.at(i) {
            out.push(MunkEntry {
                key: c.key.clone(),
                head: c.head(),
            });
            i = next;
        }
        out
    }
}

/// Links `older` below `node`, a version a put has not published yet. If
/// no other thread holds it (as a rule), it gets a new link: a store into
/// its link would settle what readers owe the link, walking every
/// thread's debt slots as a drop does, though no reader can have seen it. In P with 100-byte values at a
/// 1 GiB cap, such walks took 18% of the CPU samples: 3.3% were puts
/// linking their new version (the rest: munks dropped, 9%, and heads
/// swapped and versions dropped, which readers may owe).
fn link_older(node: &mut Arc<Version>, older: Option<Arc<Version>>) {
    match Arc::get_mut(node) {
        Some(v) => v.relink(older),
        None => node.set_older(older),
    }
}

/// Puts `node` into the chain of `cell`, keeping it ordered and dropping
/// what no reader can need (see the module invariants). Returns the bytes
/// of the nodes dropped from this chain.
fn push_version(cell: &Cell, mut node: Arc<Version>, watermark: u64) -> u64 {
    loop {
        let cur = cell.head.load_full();
        let Some(head) = cur.clone() else {
            link_older(&mut node, None);
            let prev = cell.head.compare_and_swap(&cur, Some(node.clone()));
            if prev.is_none() {
                return 0;
            }
            continue;
        };
        if node.stamp() <= head.stamp() {
            // A concurrent put of this key got ahead of this one.
            return insert_below(&head, node);
        }
        let (older, freed) = if head.version == node.version {
            // Same version: no snapshot can tell them apart; replace.
            (head.older(), head.charge())
        } else if node.version <= watermark {
            // The new version is the newest any reader needs.
            (None, chain_charge(&cur))
        } else {
            (Some(head.clone()), 0)
        };
        link_older(&mut node, older);
        let prev = cell.head.compare_and_swap(&cur, Some(node.clone()));
        let swapped = match (&*prev, &cur) {
            (Some(p), Some(c)) => Arc::ptr_eq(p, c),
            _ => false,
        };
        if swapped {
            let mut freed = freed;
            if node.version > watermark && head.version <= watermark {
                // `head` is now the newest at or below the watermark: what
                // is older than it is needed by no one.
                freed += chain_charge(&head.older.take());
            }
            return freed;
        }
    }
}

/// Inserts `node` somewhere below `head` (a put that lost a race with a
/// newer put of the same key). Returns bytes dropped.
fn insert_below(head: &Arc<Version>, mut node: Arc<Version>) -> u64 {
    let mut above = head.clone();
    loop {
        if above.version == node.version {
            // A newer entry of the same version hides this one for everyone.
            return node.charge();
        }
        let below = above.older.load_full();
        match &below {
            Some(b) if b.stamp() > node.stamp() => {
                above = b.clone();
                continue;
            }
            Some(b) if b.version == node.version => {
                // Replace the older entry of the same version.
                link_older(&mut node, b.older());
                let prev = above.older.compare_and_swap(&below, Some(node.clone()));
                if same(&prev, &below) {
                    return b.charge();
                }
            }
            _ => {
                link_older(&mut node, below.clone());
                let prev = above.older.compare_and_swap(&below, Some(node.clone()));
                if same(&prev, &below) {
                    return 0;
                }
            }
        }
    }
}

fn same(a: &Option<Arc<Version>>, b: &Option<Arc<Version>>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
        (None, None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
