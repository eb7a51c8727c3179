//! Building munks and reading them out whole: from a funk (munk load), from
//! another munk (munk rebalance, split), and into table entries (funk
//! rebalance from a munk, the second phase of a split).

use super::{chain_charge, key_charge, Version};
use crate::entry::Entry;
use std::sync::Arc;

/// One key of a munk with its version chain (newest first).
#[derive(Debug, Clone)]
pub(crate) struct MunkEntry {
    pub key: Arc<[u8]>,
    pub head: Option<Arc<Version>>,
}

/// Bytes a key-value pair takes in a table besides key and value (the
/// entry header), counted in data sizes so munks and tables compare.
pub(crate) const ENTRY_DATA_OVERHEAD: u64 = 25;

impl MunkEntry {
    /// Bytes of data this entry stands for: its key and newest value, as a
    /// table would hold them (what chunk sizes are measured in).
    pub fn data_size(&self) -> u64 {
        let value = self
            .head
            .as_ref()
            .and_then(|h| h.value.as_ref())
            .map_or(0, |v| v.len() as u64);
        self.key.len() as u64 + value + ENTRY_DATA_OVERHEAD
    }

    /// Bytes this entry is charged in a munk: its key's and its version
    /// nodes' allocations (its cell is a slot of the munk's array).
    pub fn charge(&self) -> u64 {
        key_charge(self.key.len()) + chain_charge(&self.head)
    }

    /// A chain from one key's versions, newest first, as a funk read them:
    /// keeps what readers at or above `watermark` may need (see
    /// [`prune_chain`]). `None` if nothing is left.
    pub fn from_versions(key: &[u8], versions: Vec<Entry>, watermark: u64) -> Option<MunkEntry> {
        let mut kept: Vec<Entry> = Vec::with_capacity(versions.len());
        for e in versions {
            // One entry per version: the first seen is the newest.
            if kept.last().is_some_and(|l| l.version == e.version) {
                continue;
            }
            let below = e.version <= watermark;
            kept.push(e);
            if below {
                break;
            }
        }
        while kept
            .last()
            .is_some_and(|e| e.value.is_none() && e.version <= watermark)
        {
            kept.pop();
        }
        let mut head: Option<Arc<Version>> = None;
        for e in kept.into_iter().rev() {
            let node = Version::from_owned(e.value, e.version, e.counter).with_older(head.take());
            head = Some(Arc::new(node));
        }
        head.map(|h| MunkEntry {
            key: Arc::from(key),
            head: Some(h),
        })
    }

    /// Adds to `out` the versions of this key with a counter below
    /// `counter_below` whose records are not in the chunk's log (deferred
    /// `Sync` puts): a table cut there holds each of them or a newer one.
    pub fn unlogged_below(&self, counter_below: u64, out: &mut Vec<Arc<Version>>) {
        let mut node = self.head.clone();
        while let Some(n) = node {
            node = n.older();
            if n.counter() < counter_below && !n.is_logged() {
                out.push(n);
            }
        }
    }

    /// The entries of this key that a table cut at `counter_below` holds:
    /// versions with a counter below it, pruned for readers at or above
    /// `watermark`, newest first.
    pub fn table_entries(&self, counter_below: u64, watermark: u64) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        let mut node = self.head.clone();
        while let Some(n) = node {
            if n.counter() < counter_below && out.last().is_none_or(|l| l.version != n.version) {
                let below = n.version <= watermark;
                out.push(Entry {
                    key: self.key.to_vec(),
                    value: n.value.as_deref().map(<[u8]>::to_vec),
                    version: n.version,
                    counter: n.counter(),
                });
                if below {
                    break;
                }
            }
            node = n.older();
        }
        while out
            .last()
            .is_some_and(|e| e.value.is_none() && e.version <= watermark)
        {
            out.pop();
        }
        out
    }
}

/// Drops from a chain what no reader at or above `watermark` needs: every
/// version older than the newest one at or below the watermark, and that
/// one too if it is a tombstone whose record is in the chunk's log (the
/// munk holds the chunk's whole data, so "deleted" and "absent" read the
/// same). Cuts links in place: the dropped
/// nodes are needed by no one, even readers of another munk sharing them.
/// Puts may change the chain meanwhile (a munk rebuild prunes with no
/// lock held): a version a racing put links below the newest one at or
/// below the watermark is hidden by it, and a tombstone is unlinked only
/// if it is still next. Returns the chain, or `None` if nothing is left.
pub(crate) fn prune_chain(head: Option<Arc<Version>>, watermark: u64) -> Option<Arc<Version>> {
    let head = head?;
    let mut above: Option<Arc<Version>> = None;
    let mut node = Some(head.clone());
    while let Some(n) = node {
        if n.version <= watermark {
            // Stores are costly (see `Version::cut`): only where something
            // is dropped.
            n.cut();
            // A tombstone not yet in the chunk's log stays until it is:
            // dropped now, an older value on disk would come back.
            if n.value.is_none() && n.is_logged() {
                match &above {
                    None => return None,
                    Some(a) => a.cut_above(&n),
                }
            }
            break;
        }
        node = n.older();
        above = Some(n);
    }
    Some(head)
}

/// Prunes every entry (see [`prune_chain`]) and drops keys left empty.
pub(crate) fn pruned(entries: Vec<MunkEntry>, watermark: u64) -> Vec<MunkEntry> {
    entries
        .into_iter()
        .filter_map(|e| {
            prune_chain(e.head, watermark).map(|h| MunkEntry {
                key: e.key,
                head: Some(h),
            })
        })
        .collect()
}

/// Drops what range deletes at or below `watermark` removed: a key's
/// versions below its floor (see `tombstones`), and the key if nothing is
/// left above it. Cuts links in place, as [`prune_chain`] does: no reader
/// at or above the watermark reads below a floor under it (and the link
/// is cut only if no racing put has linked a version into it since).
pub(crate) fn without_deleted(
    entries: Vec<MunkEntry>,
    tombstones: &crate::tombstones::Tombstones,
    watermark: u64,
) -> Vec<MunkEntry> {
    if tombstones.is_empty() {
        return entries;
    }
    entries
        .into_iter()
        .filter_map(|e| {
            let floor = tombstones.floor(&e.key, watermark);
            if floor == 0 {
                return Some(e);
            }
            let head = e.head.clone()?;
            if head.version < floor {
                return None;
            }
            let mut node = head.clone();
            let mut below = node.older();
            while let Some(older) = below.take() {
                if older.version < floor {
                    node.cut_above(&older);
                    break;
                }
                below = older.older();
                node = older;
            }
            Some(MunkEntry {
                key: e.key,
                head: Some(head),
            })
        })
        .collect()
}

/// Cuts sorted entries into `parts` runs of about equal data size, never
/// empty. Fewer runs come back when there are fewer entries than parts.
pub(crate) fn cut(entries: Vec<MunkEntry>, parts: usize) -> Vec<Vec<MunkEntry>> {
    let parts = parts.clamp(1, entries.len().max(1));
    let total: u64 = entries.iter().map(MunkEntry::data_size).sum();
    let target = total.div_ceil(parts as u64).max(1);
    let mut out: Vec<Vec<MunkEntry>> = Vec::with_capacity(parts);
    let mut current = Vec::new();
    let mut bytes = 0;
    let n = entries.len();
    for (i, e) in entries.into_iter().enumerate() {
        let left = n - i;
        let runs_left = parts - out.len();
        let must_cut = !current.is_empty() && left < runs_left;
        if !current.is_empty() && runs_left > 1 && (bytes >= target || must_cut) {
            out.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += e.data_size();
        current.push(e);
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}
