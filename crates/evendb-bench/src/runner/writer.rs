//! A worker thread's writes, one at a time or in batches.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use crate::engines::{Engine, PutBatch};
use crate::workload::Op;

/// A worker thread's writes. With a batch size of 1 every write is the
/// engine's plain put. With `N > 1` the writes of the worker's op stream
/// (puts, updates, inserts, the puts of read-modify-writes) gather in a
/// batch that is written atomically ([`Engine::put_batch`]) once it holds
/// `N` of them, and at the end of the phase whatever it holds. Gets and
/// scans of the stream run as they come, between the batch's writes.
pub(super) struct Writer<'a> {
    engine: &'a dyn Engine,
    /// Records that exist: raised by inserts once they are written.
    inserted: &'a AtomicU64,
    size: usize,
    batch: PutBatch,
    /// The operation kind of the pending batch (that of its first write;
    /// every workload has one kind of write).
    op: Op,
    /// One past the highest record number the pending batch inserts.
    inserted_mark: u64,
    /// Time the worker spent on the pending batch's operations so far.
    pub(super) pending_ns: u64,
    /// The batch the last call wrote, or failed to write.
    written: Option<BatchWritten>,
}

/// A batch written (or not, when its write failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BatchWritten {
    pub op: Op,
    /// Writes in the batch.
    pub ops: u64,
    /// Their key and value bytes.
    pub bytes: u64,
}

impl<'a> Writer<'a> {
    pub(super) fn new(engine: &'a dyn Engine, inserted: &'a AtomicU64, size: usize) -> Writer<'a> {
        Writer {
            engine,
            inserted,
            size: size.max(1),
            batch: PutBatch::new(),
            op: Op::Put,
            inserted_mark: 0,
            pending_ns: 0,
            written: None,
        }
    }

    /// Whether writes are gathered into batches.
    pub(super) fn batched(&self) -> bool {
        self.size > 1
    }

    /// Writes `value` under `key` for an operation of kind `op`, which
    /// inserts record number `insert` if given: at once without batches,
    /// else into the pending batch, written when full.
    pub(super) fn put(
        &mut self,
        op: Op,
        key: &[u8],
        value: &[u8],
        insert: Option<u64>,
    ) -> Result<()> {
        if !self.batched() {
            self.engine.put(key, value)?;
            if let Some(i) = insert {
                self.inserted.fetch_max(i + 1, Ordering::Relaxed);
            }
            return Ok(());
        }
        if self.batch.is_empty() {
            self.op = op;
        }
        self.batch.push(key, value);
        if let Some(i) = insert {
            self.inserted_mark = self.inserted_mark.max(i + 1);
        }
        if self.batch.len() >= self.size {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the pending batch, if any; [`Writer::take_written`] then
    /// tells what it held.
    pub(super) fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let outcome = self.engine.put_batch(&self.batch);
        self.written = Some(BatchWritten {
            op: self.op,
            ops: self.batch.len() as u64,
            bytes: self.batch.size_in_bytes() as u64,
        });
        self.batch.clear();
        if outcome.is_ok() && self.inserted_mark > 0 {
            self.inserted
                .fetch_max(self.inserted_mark, Ordering::Relaxed);
        }
        self.inserted_mark = 0;
        outcome
    }

    /// The batch written since the last call, with the time spent on it.
    pub(super) fn take_written(&mut self) -> Option<(BatchWritten, u64)> {
        let w = self.written.take()?;
        Some((w, std::mem::take(&mut self.pending_ns)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::engines::{Engine, ScanSummary};
    use anyhow::Result;

    /// An engine that only records the writes it is asked for.
    #[derive(Default)]
    struct Recorder {
        /// The keys of each write: one for a put, several for a batch.
        writes: Mutex<Vec<Vec<Vec<u8>>>>,
        fail_batches: bool,
    }

    impl Engine for Recorder {
        fn put(&self, key: &[u8], _value: &[u8]) -> Result<()> {
            self.writes.lock().unwrap().push(vec![key.to_vec()]);
            Ok(())
        }
        fn put_batch(&self, batch: &PutBatch) -> Result<()> {
            if self.fail_batches {
                anyhow::bail!("disk full");
            }
            let keys = batch.iter().map(|(k, _)| k.to_vec()).collect();
            self.writes.lock().unwrap().push(keys);
            Ok(())
        }
        fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }
        fn delete(&self, _key: &[u8]) -> Result<()> {
            Ok(())
        }
        fn scan(&self, _: &[u8], _: Option<&[u8]>, _: usize) -> Result<ScanSummary> {
            Ok(ScanSummary::default())
        }
        fn scan_rev(&self, _: &[u8], _: Option<&[u8]>, _: usize) -> Result<ScanSummary> {
            Ok(ScanSummary::default())
        }
        fn prefix_rev(&self, _: &[u8], _: usize) -> Result<ScanSummary> {
            Ok(ScanSummary::default())
        }
        fn flush(&self) -> Result<()> {
            Ok(())
        }
        fn describe(&self) -> String {
            "recorder".to_string()
        }
    }

    fn sizes(engine: &Recorder) -> Vec<usize> {
        engine.writes.lock().unwrap().iter().map(Vec::len).collect()
    }

    #[test]
    fn without_batches_every_write_is_a_plain_put_and_inserts_show_at_once() {
        let engine = Recorder::default();
        let inserted = AtomicU64::new(0);
        let mut w = Writer::new(&engine, &inserted, 1);
        assert!(!w.batched());
        w.put(Op::Insert, b"k0", b"v", Some(4)).unwrap();
        w.put(Op::Update, b"k1", b"v", None).unwrap();
        assert_eq!(sizes(&engine), vec![1, 1]);
        assert_eq!(inserted.load(Ordering::Relaxed), 5);
        assert_eq!(w.take_written(), None);
        w.flush().unwrap();
        assert_eq!(sizes(&engine), vec![1, 1]);
    }

    #[test]
    fn batches_of_three_gather_seven_writes_into_3_3_1_and_insert_once_written() {
        let engine = Recorder::default();
        let inserted = AtomicU64::new(0);
        let mut w = Writer::new(&engine, &inserted, 3);
        let mut written = Vec::new();
        for i in 0..7u64 {
            w.pending_ns += 10;
            w.put(Op::Insert, format!("k{i}").as_bytes(), b"value", Some(i))
                .unwrap();
            if i == 1 {
                // Two writes wait in the batch: nothing written, nothing inserted.
                assert!(engine.writes.lock().unwrap().is_empty());
                assert_eq!(inserted.load(Ordering::Relaxed), 0);
            }
            if i == 2 {
                assert_eq!(inserted.load(Ordering::Relaxed), 3);
            }
            written.extend(w.take_written());
        }
        w.flush().unwrap();
        written.extend(w.take_written());
        assert_eq!(sizes(&engine), vec![3, 3, 1]);
        let keys: Vec<Vec<u8>> = engine.writes.lock().unwrap().concat();
        let expected: Vec<Vec<u8>> = (0..7).map(|i| format!("k{i}").into_bytes()).collect();
        assert_eq!(keys, expected, "every write once, in stream order");
        assert_eq!(inserted.load(Ordering::Relaxed), 7);
        let batch = |ops: u64, ns: u64| {
            (
                BatchWritten {
                    op: Op::Insert,
                    ops,
                    bytes: ops * 7,
                },
                ns,
            )
        };
        // Each batch carries the time spent on its own writes only.
        assert_eq!(written, vec![batch(3, 30), batch(3, 30), batch(1, 10)]);
    }

    #[test]
    fn a_failed_batch_reports_all_its_writes_and_inserts_nothing() {
        let engine = Recorder {
            fail_batches: true,
            ..Recorder::default()
        };
        let inserted = AtomicU64::new(0);
        let mut w = Writer::new(&engine, &inserted, 2);
        w.put(Op::Put, b"a", b"1", Some(0)).unwrap();
        assert!(w.put(Op::Put, b"b", b"2", Some(1)).is_err());
        let (batch, _) = w.take_written().unwrap();
        assert_eq!((batch.op, batch.ops, batch.bytes), (Op::Put, 2, 4));
        assert_eq!(inserted.load(Ordering::Relaxed), 0);
        // The next batch starts empty.
        w.put(Op::Put, b"c", b"3", None).unwrap();
        assert_eq!(w.batch.len(), 1);
    }
}
