//! Rebuilding a munk while puts go on (munk rebalance, munk split). The
//! new munks are built from a snapshot of the old one with no chunk lock
//! held; then, under the chunk's `rebalance` lock held exclusively, what
//! puts changed meanwhile is carried over: one walk of the old munk's
//! list, comparing chain heads, which allocates only for the keys put
//! since.

use super::{build, chain_charge, key_charge, same, Charge, Munk, MunkEntry, Version};
use crate::cache::budget::{Kind, MemoryBudget};
use crate::tombstones::Tombstones;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What a rebuild saw of the old munk: its cells in key order, each with
/// its index and its chain's head then. The heads are held so that none
/// is freed and another node allocated at its address taken for it.
pub(crate) struct Snapshot {
    seen: Vec<(u32, Option<Arc<Version>>)>,
}

/// A munk built from a snapshot, charged only its cell array until
/// [`Snapshot::carry_over`] hands it the old munk's charge for its keys
/// and chains.
pub(crate) struct Unsettled(Option<Munk>);

impl Unsettled {
    /// A munk over `entries` (sorted, distinct) with room for `spare` more
    /// keys.
    pub fn build(entries: Vec<MunkEntry>, spare: usize, budget: &Arc<MemoryBudget>) -> Self {
        Unsettled(Some(Munk::build(entries, spare, budget, Charge::ArrayOnly)))
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        // Never installed: the keys and chains stay the old munk's charge.
        if let Some(m) = &self.0 {
            m.bytes.store(m.array_bytes, Ordering::Relaxed);
        }
    }
}

/// The new munks after [`Snapshot::carry_over`], one per part (`None` for
/// a part without one), and per part the entries that changed after the
/// snapshot (key order): merged into the snapshot's, they give each
/// part's entries as the old munk holds them now.
pub(crate) struct Carried {
    pub munks: Vec<Option<Munk>>,
    pub changed: Vec<Vec<MunkEntry>>,
    /// Bytes charged for the entries of the parts without munks, which
    /// the caller holds while it needs them (`extra`, adjusted for what
    /// changed there).
    pub unowned: u64,
}

impl Munk {
    /// Taken by whoever rebuilds this munk, so that one thread builds its
    /// replacement while the others wait, then find it replaced.
    pub fn lock_rebuild(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.rebuilding.lock()
    }

    /// Every key with its chain, in key order, and what a rebuild needs to
    /// carry over the puts that come after. Puts may go on meanwhile.
    pub fn snapshot(&self) -> (Snapshot, Vec<MunkEntry>) {
        let n = self.claimed.load(Ordering::Relaxed) as usize;
        let (mut seen, mut entries) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut i = self.first.load(Ordering::Acquire);
        while let Some((c, next)) = self.at(i) {
            let head = c.head();
            seen.push((i, head.clone()));
            entries.push(MunkEntry {
                key: c.key.clone(),
                head,
            });
            i = next;
        }
        (Snapshot { seen }, entries)
    }

    /// [`Munk::snapshot`] with the entries pruned for readers at or above
    /// `watermark` and without what range deletes removed (see
    /// [`super::build::pruned`], [`super::build::without_deleted`]).
    pub fn pruned_snapshot(
        &self,
        watermark: u64,
        tombstones: &Tombstones,
    ) -> (Snapshot, Vec<MunkEntry>) {
        let (snapshot, entries) = self.snapshot();
        let entries = build::pruned(entries, watermark);
        (
            snapshot,
            build::without_deleted(entries, tombstones, watermark),
        )
    }

    /// Links `key` with its chain as a new key of a munk no one else
    /// reaches yet. False if no cell is left.
    fn adopt(&self, key: &Arc<[u8]>, head: Arc<Version>) -> bool {
        let Some(i) = self.claim() else {
            return false;
        };
        if let Some(c) = self.link(i, key, || key.clone(), &head) {
            c.head.store(Some(head));
        }
        true
    }
}

impl Snapshot {
    /// Carries what puts changed in `old` since the snapshot over to
    /// `parts`, the new munks of consecutive key ranges (`bounds[p]` is
    /// the first key of part `p + 1`; `None` for a part without a munk),
    /// built from the snapshot's entries, and hands them `old`'s charge
    /// for keys and chains. `extra` is the charge of the snapshot's
    /// entries of parts without munks (whose funks hold what was put
    /// there since). Call it only when no put can change `old` any more
    /// (the chunk's `rebalance` lock held exclusively).
    ///
    /// `None`, with nothing handed over, if a part has no cell left for
    /// the keys put since: rebuild from a new snapshot then.
    pub fn carry_over(
        self,
        old: &Munk,
        mut parts: Vec<Option<Unsettled>>,
        bounds: &[Vec<u8>],
        extra: u64,
    ) -> Option<Carried> {
        let n = parts.len();
        // Per part: its next cell of the sorted prefix (the kept keys, in
        // the order of the old list, sharing its key allocations), bytes
        // of keys and chains added and removed, data added.
        let mut next = vec![0u32; n];
        let (mut added, mut removed, mut data) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
        let mut changed: Vec<Vec<MunkEntry>> = (0..n).map(|_| Vec::new()).collect();
        let mut seen = self.seen.iter().peekable();
        let mut p = 0;
        let mut i = old.first.load(Ordering::Acquire);
        while let Some((c, after)) = old.at(i) {
            let then = seen.next_if(|(s, _)| *s == i).map(|(_, h)| h);
            i = after;
            while bounds.get(p).is_some_and(|b| *c.key >= **b) {
                p += 1;
            }
            let new = parts
                .get(p)
                .and_then(|u| u.as_ref())
                .and_then(|u| u.0.as_ref());
            let kept = new
                .and_then(|m| m.cell(next[p]))
                .filter(|k| Arc::ptr_eq(&k.key, &c.key));
            if kept.is_some() {
                next[p] += 1;
            }
            if then.is_some_and(|h| same(h, &c.head.load())) {
                continue;
            }
            // Put since the snapshot: a new key, or a new version.
            let Some(now) = c.head() else { continue };
            let entry = MunkEntry {
                key: c.key.clone(),
                head: Some(now.clone()),
            };
            added[p] += chain_charge(&entry.head);
            data[p] += entry.data_size();
            match (new, kept) {
                (_, Some(k)) => {
                    removed[p] += then.map_or(0, chain_charge);
                    k.head.store(Some(now));
                }
                (Some(new), None) => {
                    added[p] += key_charge(c.key.len());
                    if !new.adopt(&c.key, now) {
                        return None;
                    }
                }
                // A part without a munk: its funk has the record.
                (None, None) => match then {
                    Some(h) => removed[p] += chain_charge(h),
                    None => added[p] += key_charge(c.key.len()),
                },
            }
            changed[p].push(entry);
        }
        let inherited = old.hand_over();
        let mut unowned = extra;
        let mut charged = 0;
        let munks = parts
            .iter_mut()
            .enumerate()
            .map(|(p, u)| {
                let Some(m) = u.as_mut().and_then(|u| u.0.take()) else {
                    unowned = (unowned + added[p]).saturating_sub(removed[p]);
                    return None;
                };
                let before = m.bytes().saturating_sub(m.array_bytes);
                let content = (before + added[p]).saturating_sub(removed[p]);
                m.bytes.store(m.array_bytes + content, Ordering::Relaxed);
                m.data_bytes.fetch_add(data[p], Ordering::Relaxed);
                charged += content;
                Some(m)
            })
            .collect();
        charged += unowned;
        old.budget
            .add(Kind::Munks, charged.saturating_sub(inherited));
        old.budget
            .release(Kind::Munks, inherited.saturating_sub(charged));
        Some(Carried {
            munks,
            changed,
            unowned,
        })
    }
}

/// `entries` with `changed` (both in key order) merged in: a changed entry
/// replaces the entry of its key.
pub(crate) fn merged(entries: Vec<MunkEntry>, changed: Vec<MunkEntry>) -> Vec<MunkEntry> {
    if changed.is_empty() {
        return entries;
    }
    let mut out = Vec::with_capacity(entries.len() + changed.len());
    let mut changed = changed.into_iter().peekable();
    for e in entries {
        while let Some(c) = changed.next_if(|c| c.key < e.key) {
            out.push(c);
        }
        out.push(changed.next_if(|c| c.key == e.key).unwrap_or(e));
    }
    out.extend(changed);
    out
}

/// Spare cells (room for new keys) of a rebuilt munk of `keys` keys and
/// `data` bytes of data: half its keys; or, if new keys `filled` most of
/// the old munk's spare cells, room for the keys it may still take before
/// its data reaches `max_chunk_size` and it is split (estimated from its
/// bytes a key), plus half its keys for the puts that come while the split
/// runs, at most twice its keys. Measured reasons: a sequential load
/// rebuilt each munk three or four times between splits (1,208 rebuilds
/// for 309 splits), the last one just before the split, every one under
/// the chunk's `rebalance` lock, which puts wait for; and with a quarter
/// of its keys past the split size, the munk taking a sequential load's
/// appends was often full before its split was published (splits take 28
/// ms on average, up to 380), and each put that found it so rebuilt it
/// itself: with half, the load of P,E100 at 8× a 64 MiB budget found a
/// munk full 125-144 times against 216-258 (four alternating runs each),
/// E100 after it within its spread (docs/results/2026-12-02-full-munks).
pub(crate) fn spare_cells(keys: usize, data: u64, filled: bool, max_chunk_size: u64) -> usize {
    if !filled {
        return keys / 2 + 64;
    }
    let more = keys_at_size(keys, data, max_chunk_size).saturating_sub(keys);
    (more + keys / 2).clamp(64, 2 * keys + 64)
}

/// The keys a munk of `keys` keys and `data` bytes of data holds when its
/// data reaches `size`, at the same bytes a key.
pub(crate) fn keys_at_size(keys: usize, data: u64, size: u64) -> usize {
    let at = (keys as u64).saturating_mul(size) / data.max(1);
    usize::try_from(at).unwrap_or(usize::MAX)
}
