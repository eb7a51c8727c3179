//! Rebuilding a munk while puts go on (munk rebalance). The new munk is
//! built from a snapshot of the old one with no chunk lock held; then,
//! under the chunk's `rebalance` lock held exclusively, what puts changed
//! meanwhile is carried over: one walk of the old munk's list, comparing
//! chain heads, which allocates only for the keys put since.

use super::{chain_charge, key_charge, same, Charge, Munk, MunkEntry, Version};
use crate::cache::budget::Kind;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A munk built from a snapshot of another, not yet installed.
pub(crate) struct Rebuilt {
    munk: Option<Munk>,
    /// The old munk's cells the snapshot saw, in key order: index and
    /// chain head then. The heads are held so that none is freed and
    /// another node allocated at its address taken for it.
    seen: Vec<(u32, Option<Arc<Version>>)>,
    /// The old munk's data size before the snapshot.
    data_then: u64,
}

impl Drop for Rebuilt {
    fn drop(&mut self) {
        // Never installed: the keys and chains stay the old munk's charge.
        if let Some(m) = &self.munk {
            m.bytes.store(m.array_bytes, Ordering::Relaxed);
        }
    }
}

impl Munk {
    /// Taken by whoever rebuilds this munk, so that one thread builds its
    /// replacement while the others wait, then find it replaced.
    pub fn lock_rebuild(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.rebuilding.lock()
    }

    /// A new munk of this munk's entries as `keep` leaves them (pruned),
    /// with room for `spare(kept)` more keys. Puts may go on meanwhile;
    /// [`Rebuilt::finish`] carries over what they change. Only the new
    /// cell array is charged to the budget.
    pub fn rebuild(
        &self,
        keep: impl FnOnce(Vec<MunkEntry>) -> Vec<MunkEntry>,
        spare: impl FnOnce(&[MunkEntry]) -> usize,
    ) -> Rebuilt {
        let data_then = self.data_bytes();
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
        let entries = keep(entries);
        let spare = spare(&entries);
        let munk = Munk::build(entries, spare, &self.budget, Charge::ArrayOnly);
        Rebuilt {
            munk: Some(munk),
            seen,
            data_then,
        }
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

impl Rebuilt {
    /// The new munk with what puts changed in `old` since the snapshot
    /// carried over, taking over `old`'s charge for keys and chains. Call
    /// it only when no put can change `old` any more (the chunk's
    /// `rebalance` lock held exclusively). `None` if the new munk has no
    /// cell left for the keys put since: rebuild it whole then.
    pub fn finish(mut self, old: &Munk) -> Option<Munk> {
        let new = self.munk.as_ref()?;
        let (mut added, mut removed) = (0u64, 0u64);
        let mut seen = self.seen.iter().peekable();
        // The next cell of the new munk's sorted prefix: the kept keys, in
        // the order of the old list, sharing its key allocations.
        let mut j = 0u32;
        let mut i = old.first.load(Ordering::Acquire);
        while let Some((c, next)) = old.at(i) {
            let then = seen.next_if(|(s, _)| *s == i).map(|(_, h)| h);
            let kept = new.cell(j).filter(|n| Arc::ptr_eq(&n.key, &c.key));
            if kept.is_some() {
                j += 1;
            }
            i = next;
            if then.is_some_and(|h| same(h, &c.head.load())) {
                continue;
            }
            // Put since the snapshot: a new key, or a new version.
            let now = c.head();
            added += chain_charge(&now);
            match kept {
                Some(k) => {
                    removed += then.map_or(0, chain_charge);
                    k.head.store(now);
                }
                None => {
                    let Some(head) = now else { continue };
                    added += key_charge(c.key.len());
                    if !new.adopt(&c.key, head) {
                        return None;
                    }
                }
            }
        }
        let new = self.munk.take()?;
        let inherited = old.hand_over();
        let content = (new.bytes() - new.array_bytes + added).saturating_sub(removed);
        new.budget
            .add(Kind::Munks, content.saturating_sub(inherited));
        new.budget
            .release(Kind::Munks, inherited.saturating_sub(content));
        new.bytes
            .store(new.array_bytes + content, Ordering::Relaxed);
        let grown = old.data_bytes().saturating_sub(self.data_then);
        new.data_bytes.fetch_add(grown, Ordering::Relaxed);
        Some(new)
    }
}
