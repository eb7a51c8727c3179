//! [`WriteBatch`]: puts and deletes applied together, all or nothing.

/// The most key and value bytes one batch may carry.
pub const MAX_BATCH_SIZE: usize = 64 * 1024 * 1024;

/// Puts and deletes that [`Db::write`](crate::Db::write) applies
/// atomically: no get, scan or snapshot sees some of them without the
/// others, and after a crash the store holds all of them or none (in both
/// durability modes). A later operation on a key overrides an earlier one
/// in the same batch.
///
/// A batch is only a list until it is written; it can be written, cleared
/// and filled again.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let db = evendb::Db::open(dir.path())?;
/// let mut batch = evendb::WriteBatch::new();
/// batch.put("app7|2026-11-24T10:00|evt1", "login");
/// batch.put("app7|2026-11-24T10:00|evt2", "click");
/// batch.delete("app7|2026-11-23T09:00|evt9");
/// assert_eq!(batch.len(), 3);
/// db.write(&batch)?;
/// assert_eq!(db.get("app7|2026-11-24T10:00|evt2")?.as_deref(), Some(&b"click"[..]));
/// # Ok::<(), evendb::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch::default()
    }

    /// An empty batch with room for `ops` operations.
    pub fn with_capacity(ops: usize) -> Self {
        WriteBatch {
            ops: Vec::with_capacity(ops),
            bytes: 0,
        }
    }

    /// Adds a put of `key`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.bytes += key.len() + value.len();
        self.ops.push((key.to_vec(), Some(value.to_vec())));
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.bytes += key.len();
        self.ops.push((key.to_vec(), None));
    }

    /// The number of operations added.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if no operation was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Key and value bytes added (what [`MAX_BATCH_SIZE`] bounds).
    pub fn size_in_bytes(&self) -> usize {
        self.bytes
    }

    /// Removes every operation, keeping the allocation for reuse.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.bytes = 0;
    }

    /// The operations in the order they were added: a key and its value,
    /// or `None` for a delete.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.ops.iter().map(|(k, v)| (k.as_slice(), v.as_deref()))
    }

    pub(crate) fn ops(&self) -> &[(Vec<u8>, Option<Vec<u8>>)] {
        &self.ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_counts_its_operations_and_bytes_and_clears_for_reuse() {
        let mut b = WriteBatch::with_capacity(4);
        assert!(b.is_empty());
        b.put("ab", "cde");
        b.delete("f");
        assert_eq!((b.len(), b.size_in_bytes()), (2, 6));
        let ops: Vec<_> = b.iter().collect();
        assert_eq!(
            ops,
            vec![(&b"ab"[..], Some(&b"cde"[..])), (&b"f"[..], None)]
        );
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.size_in_bytes(), 0);
    }
}
