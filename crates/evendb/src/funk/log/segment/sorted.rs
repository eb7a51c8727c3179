//! A segment's sorted index, built from pieces of the log when a scan
//! first needs it (see `SegmentIndex`).

use super::*;

/// A count of sorted-index uses across the process: the order in which
/// memory pressure drops indexes (least recently used first).
fn index_tick() -> u64 {
    static TICK: AtomicU64 = AtomicU64::new(1);
    TICK.fetch_add(1, Ordering::Relaxed)
}

impl LogSegment {
    /// The sorted index of every record published so far, built or
    /// extended now if needed (reading only what it does not cover yet).
    /// It is kept for later scans while log indexes take less than a
    /// quarter of the memory budget (munks make room for it), or beyond
    /// that if the budget has room; otherwise it serves whoever holds it
    /// (the caller, and callers meanwhile).
    pub fn sorted_index(&self, room: &dyn Fn(u64)) -> Result<Arc<SegmentIndex>> {
        self.index_used.store(index_tick(), Ordering::Relaxed);
        let len = self.len();
        if let Some(ix) = self.index.load_full().filter(|ix| ix.covered >= len) {
            return Ok(ix);
        }
        if let Some(ix) = self.unkept.lock().upgrade().filter(|ix| ix.covered >= len) {
            return Ok(ix);
        }
        let g = self.index_build.lock();
        let current = self.index.load_full();
        if let Some(ix) = current.as_ref().filter(|ix| ix.covered >= len) {
            return Ok(ix.clone());
        }
        let from = current.as_ref().map_or(FIRST_RECORD, |ix| ix.covered);
        let base = SegmentIndex::default();
        let old = current.as_deref().unwrap_or(&base);
        let new = Arc::new(self.extend_index(old, from, len)?);
        let budget = &self.config.budget;
        let grow = new.bytes().saturating_sub(old.bytes());
        let shrink = old.bytes().saturating_sub(new.bytes());
        // Indexes may take a quarter of the budget whatever munks want
        // (munks are evicted to make room); past that, only free room.
        // Either way the reservation leaves the budget's floor free.
        let under_share = budget.kind_used(Kind::Indexes) + grow <= budget.limit() / 4;
        // Making room may drop indexes, this one's too: not under
        // `index_build`. The index is kept only if nobody changed it
        // meanwhile.
        drop(g);
        if under_share {
            room(grow + budget.floor());
        }
        let _g = self.index_build.lock();
        let unchanged = match (self.index.load_full(), &current) {
            (Some(now), Some(was)) => Arc::ptr_eq(&now, was),
            (None, None) => true,
            _ => false,
        };
        let kept = unchanged && budget.try_reserve(Kind::Indexes, grow, 0);
        if from == FIRST_RECORD || !kept {
            self.index_builds.fetch_add(1, Ordering::Relaxed);
        }
        if kept {
            budget.release(Kind::Indexes, shrink);
            self.index.store(Some(new.clone()));
        } else {
            *self.unkept.lock() = Arc::downgrade(&new);
        }
        Ok(new)
    }

    /// A sorted index of the records in `[start, end)` (`start` a record
    /// boundary; `end` clamped to the published length), built from
    /// pieces of the log and not kept: a merge's, which reads the values
    /// through it (see `funk::INDEXED_MERGE_BYTES`).
    pub fn index_between(&self, start: u64, end: u64) -> Result<SegmentIndex> {
        let end = end.min(self.len());
        self.extend_index(&SegmentIndex::default(), start.max(FIRST_RECORD), end)
    }

    /// `old` extended with the records in `[from, end)` (`from` a record
    /// boundary), read in pieces: only the index is held whole.
    fn extend_index(&self, old: &SegmentIndex, from: u64, end: u64) -> Result<SegmentIndex> {
        let mut at = from;
        old.extended(
            || {
                if at >= end {
                    return Ok(None);
                }
                let (image, stop) = self.image_piece(at, end)?;
                let piece = at;
                at = stop;
                Ok(Some((image, piece)))
            },
            end,
        )
    }

    /// True once scans had to read the whole log more than once to index
    /// it: its index was dropped to free memory and built again, or was
    /// not kept. Sorting the log into a run then costs one write of it,
    /// against a read of all of it at every such build.
    pub fn index_rebuilt(&self) -> bool {
        self.index_builds.load(Ordering::Relaxed) > 1
    }

    /// When a scan last used the sorted index; `None` without one.
    pub fn index_last_used(&self) -> Option<u64> {
        let used = self.index_used.load(Ordering::Relaxed);
        self.index.load().is_some().then_some(used)
    }

    /// Drops the sorted index (to free memory; it is rebuilt on demand).
    pub fn drop_index(&self) {
        let _g = self.index_build.lock();
        if let Some(old) = self.index.swap(None) {
            self.config.budget.release(Kind::Indexes, old.bytes());
        }
    }

    /// The whole records from offset `from` (a record boundary) on, up to
    /// `upto` (one too), reading about [`INDEX_PIECE`] bytes (more if one
    /// record is larger); returns them and where they end.
    fn image_piece(&self, from: u64, upto: u64) -> Result<(SegmentImage, u64)> {
        let upto = upto.min(self.len());
        let mut want = INDEX_PIECE;
        loop {
            let end = from.saturating_add(want).min(upto);
            let (image, stop) = self.decode_image(self.read_bytes(from, end)?, from);
            if stop == from && end < upto && want < (1 << 30) {
                want *= 2; // A record larger than the piece.
                continue;
            }
            if stop == from && from < upto {
                return Err(Error::corruption(
                    &self.path,
                    from,
                    "log record failed its checksum",
                ));
            }
            return Ok((image, stop));
        }
    }
}
