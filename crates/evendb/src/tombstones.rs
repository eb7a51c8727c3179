//! Range tombstones: what `Db::delete_range` leaves.
//!
//! A tombstone deletes every record of a key in `[lo, hi)` whose version is
//! below its own: a reader at version `r` ignores, for a key, every record
//! below the newest tombstone covering the key at or below `r` (the key's
//! **floor**). Records written after the delete have larger versions and
//! stay. Rebuilds drop the records a tombstone deletes once no reader can
//! need them (the tombstone is at or below the oldest needed version).
//! Tombstones are kept in the manifest until no chunk holds a record one
//! deletes (see `db/range_delete.rs`); a store with none pays one empty
//! check per read.

/// One range delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub lo: Vec<u8>,
    /// Exclusive end; `None`: to the end of the key space.
    pub hi: Option<Vec<u8>>,
    pub version: u64,
}

impl RangeTombstone {
    pub fn covers(&self, key: &[u8]) -> bool {
        key >= self.lo.as_slice() && self.hi.as_deref().is_none_or(|h| key < h)
    }

    /// True if the tombstone's range holds all of `[lo, hi)`.
    pub fn contains(&self, lo: &[u8], hi: Option<&[u8]>) -> bool {
        self.lo.as_slice() <= lo
            && match (&self.hi, hi) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(th), Some(h)) => h <= th.as_slice(),
            }
    }

    /// True if the tombstone's range meets `[lo, hi)`.
    pub fn overlaps(&self, lo: &[u8], hi: Option<&[u8]>) -> bool {
        hi.is_none_or(|h| self.lo.as_slice() < h) && self.hi.as_deref().is_none_or(|h| lo < h)
    }
}

/// The store's range tombstones, swapped whole when one is added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tombstones {
    list: Vec<RangeTombstone>,
}

impl Tombstones {
    pub fn new(mut list: Vec<RangeTombstone>) -> Self {
        list.sort_by_key(|t| t.version);
        Tombstones { list }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The tombstones, oldest first.
    pub fn list(&self) -> &[RangeTombstone] {
        &self.list
    }

    /// The same tombstones but those in `gone`.
    pub fn without(&self, gone: &[RangeTombstone]) -> Tombstones {
        let mut list = self.list.clone();
        list.retain(|t| !gone.contains(t));
        Tombstones { list }
    }

    /// The same tombstones and `t`.
    pub fn with(&self, t: RangeTombstone) -> Tombstones {
        let mut list = self.list.clone();
        list.push(t);
        Tombstones::new(list)
    }

    /// True if one tombstone at or below `max_version` covers all of
    /// `[lo, hi)` (`hi = None`: to the end).
    pub fn cover(&self, lo: &[u8], hi: Option<&[u8]>, max_version: u64) -> bool {
        self.covering(lo, hi, max_version).is_some()
    }

    /// The newest tombstone at or below `max_version` that covers all of
    /// `[lo, hi)` (`hi = None`: to the end).
    pub fn covering(
        &self,
        lo: &[u8],
        hi: Option<&[u8]>,
        max_version: u64,
    ) -> Option<&RangeTombstone> {
        self.list
            .iter()
            .rev()
            .filter(|t| t.version <= max_version)
            .find(|t| t.contains(lo, hi))
    }

    /// True if a tombstone at or below `max_version` meets `[lo, hi)`.
    pub fn overlaps_below(&self, lo: &[u8], hi: Option<&[u8]>, max_version: u64) -> bool {
        self.list
            .iter()
            .any(|t| t.version <= max_version && t.overlaps(lo, hi))
    }

    /// The version below which a reader at `max_version` ignores `key`'s
    /// records: the newest tombstone covering `key` at or below
    /// `max_version`; 0 if none.
    pub fn floor(&self, key: &[u8], max_version: u64) -> u64 {
        self.newest_over(key, max_version).map_or(0, |t| t.version)
    }

    /// The newest tombstone at or below `max_version` covering `key`.
    pub fn newest_over(&self, key: &[u8], max_version: u64) -> Option<&RangeTombstone> {
        self.list
            .iter()
            .rev()
            .filter(|t| t.version <= max_version)
            .find(|t| t.covers(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(lo: &str, hi: Option<&str>, version: u64) -> RangeTombstone {
        RangeTombstone {
            lo: lo.into(),
            hi: hi.map(Into::into),
            version,
        }
    }

    #[test]
    fn the_floor_is_the_newest_covering_tombstone_a_reader_sees() {
        let ts = Tombstones::new(vec![t("b", Some("d"), 20), t("a", None, 10)]);
        assert_eq!(ts.floor(b"c", u64::MAX), 20);
        assert_eq!(
            ts.floor(b"c", 15),
            10,
            "a reader below 20 sees the older one"
        );
        assert_eq!(ts.floor(b"c", 9), 0);
        assert_eq!(ts.floor(b"d", u64::MAX), 10, "the end is exclusive");
        assert_eq!(ts.floor(b"0", u64::MAX), 0);
        assert!(ts.list()[0].overlaps(b"0", Some(b"b")));
        assert!(!ts.list()[1].overlaps(b"0", Some(b"b")));
        assert!(ts.list()[1].overlaps(b"c", None));
        assert!(ts.cover(b"b", Some(b"c"), u64::MAX));
        assert!(
            !ts.cover(b"b", Some(b"c"), 9),
            "not for a reader below both"
        );
        assert!(ts.cover(b"x", None, 10));
        assert_eq!(
            ts.covering(b"b", Some(b"c"), u64::MAX).map(|t| t.version),
            Some(20),
            "the newest of the two covering"
        );
        assert_eq!(
            ts.covering(b"b", Some(b"e"), u64::MAX).map(|t| t.version),
            Some(10)
        );
        assert!(ts.covering(b"0", Some(b"c"), u64::MAX).is_none());
        let left = ts.without(&[ts.list()[1].clone()]);
        assert_eq!(left.list(), &[t("a", None, 10)][..]);
    }
}
