//! The unit of data: one version of one key.

/// The largest key evendb accepts, in bytes.
pub const MAX_KEY_SIZE: usize = 16 * 1024;
/// The largest value evendb accepts, in bytes.
pub const MAX_VALUE_SIZE: usize = 16 * 1024 * 1024;

/// One version of one key, as stored in a table or a log.
///
/// Versions order writes across the store (see `version`); the per-chunk
/// `counter` orders writes of one key that got the same version. The newest
/// entry of a key is the one with the largest `(version, counter)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub key: Vec<u8>,
    /// `None` is a tombstone (the key was deleted).
    pub value: Option<Vec<u8>>,
    pub version: u64,
    pub counter: u64,
}

impl Entry {
    pub fn stamp(&self) -> (u64, u64) {
        (self.version, self.counter)
    }

    /// Bytes of user data the entry carries (key plus value).
    pub fn user_bytes(&self) -> u64 {
        (self.key.len() + self.value.as_ref().map_or(0, Vec::len)) as u64
    }
}

/// Record kinds on disk. Values are on disk: never renumber.
pub(crate) const KIND_PUT: u8 = 1;
pub(crate) const KIND_DELETE: u8 = 2;

/// `range` as `[lo, hi)` (`hi = None`: unbounded): an excluded start or an
/// included end becomes the next key (the key and a zero byte).
pub(crate) fn half_open<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
    range: &R,
) -> (Vec<u8>, Option<Vec<u8>>) {
    use std::ops::Bound;
    let lo = match range.start_bound() {
        Bound::Included(k) => k.as_ref().to_vec(),
        Bound::Excluded(k) => [k.as_ref(), &[0u8]].concat(),
        Bound::Unbounded => Vec::new(),
    };
    let hi = match range.end_bound() {
        Bound::Included(k) => Some([k.as_ref(), &[0u8]].concat()),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    (lo, hi)
}

/// The smallest key greater than every key starting with `prefix`: the
/// exclusive end of the prefix's range; `None` when no key is (an empty
/// prefix, or one of only `0xFF` bytes), so the range is unbounded above.
///
/// ```
/// assert_eq!(evendb::prefix_end(b"app7|"), Some(b"app7}".to_vec()));
/// assert_eq!(evendb::prefix_end(b"a\xff"), Some(b"b".to_vec()));
/// assert_eq!(evendb::prefix_end(b"\xff"), None);
/// ```
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_handles_ff_bytes() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
