//! Reading the values of an unsorted segment's records: one at a time for
//! gets, and for scans several with one read when the records a scan takes
//! next lie close behind each other in the file.
//!
//! A scan walks an unsorted segment through its sorted index, so each
//! record it returns sits anywhere in the file. Often, though, the next
//! keys were appended one after another: the events of one app in a chunk
//! shared with other apps (the analytics stream), a run of updates to
//! neighbouring keys. Measured on the stream's queries at a 1 GiB cap, 95%
//! of the records a scan read from unsorted logs lay within 4 KiB of the one
//! read before, and the scans made up to 700K reads a second of one record
//! each.

use super::LogSegment;
use crate::error::{Error, Result};
use crate::funk::log::format::{RecordPtr, HEADER_LEN};

/// The largest gap between two records read together: within a page or
/// two, which the device reads anyway.
const NEAR_GAP: u64 = 4 * 1024;

/// The first read of several records spans at most this many bytes; each
/// next one twice as many, up to [`MAX_SPAN`] (as table scans grow their
/// reads: a scan that stops early has read little ahead).
const FIRST_SPAN: u64 = 16 * 1024;

/// The most bytes one read of several records spans.
const MAX_SPAN: u64 = 256 * 1024;

/// How many of the scan's next records are looked at for a joint read.
const LOOK_AHEAD: usize = 256;

/// The bytes of one unsorted segment a scan read last, kept for the records
/// it reads next: at most [`MAX_SPAN`] per unsorted segment of the chunk a
/// scan is reading, not charged to the memory budget.
#[derive(Debug, Default)]
pub(crate) struct ValueWindow {
    start: u64,
    bytes: Vec<u8>,
    span: u64,
}

impl ValueWindow {
    /// The bytes of `ptr`'s record, if the window holds them.
    fn record(&self, ptr: &RecordPtr) -> Option<&[u8]> {
        let at = usize::try_from(ptr.offset.checked_sub(self.start)?).ok()?;
        let len = usize::try_from(ptr.record_len()).ok()?;
        self.bytes.get(at..at.checked_add(len)?)
    }
}

impl LogSegment {
    /// Reads and checks the record at `ptr`; returns its value (`None` for a
    /// tombstone).
    pub fn read_value(&self, ptr: &RecordPtr) -> Result<Option<Vec<u8>>> {
        let mut buf = self.read_bytes(ptr.offset, ptr.offset + ptr.record_len())?;
        // The value moves to the front of the buffer read: no second
        // allocation.
        Ok(self.value_start(ptr, &buf)?.map(|start| {
            buf.drain(..start);
            buf
        }))
    }

    /// [`read_value`](Self::read_value) for a scan that reads `next` after
    /// `ptr` (in the order it will ask for them): from `window` if it holds
    /// the record, else with one read that also takes those of the next
    /// records that follow it closely in the file, kept in `window`.
    pub fn read_value_ahead<'a>(
        &self,
        ptr: &RecordPtr,
        next: impl Iterator<Item = &'a RecordPtr>,
        window: &mut ValueWindow,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(bytes) = window.record(ptr) {
            return self.value_in(ptr, bytes);
        }
        let span = window.span.clamp(FIRST_SPAN, MAX_SPAN);
        let mut end = ptr.offset + ptr.record_len();
        for q in next.take(LOOK_AHEAD) {
            if q.offset < ptr.offset {
                // An older version of a key, written before: read alone if
                // the scan wants it.
                continue;
            }
            let q_end = q.offset + q.record_len();
            if q.offset > end + NEAR_GAP || q_end - ptr.offset > span {
                break;
            }
            end = end.max(q_end);
        }
        if end == ptr.offset + ptr.record_len() {
            return self.read_value(ptr);
        }
        self.read_bytes_into(ptr.offset, end, &mut window.bytes)?;
        window.start = ptr.offset;
        window.span = (span * 2).min(MAX_SPAN);
        match window.record(ptr) {
            Some(bytes) => self.value_in(ptr, bytes),
            None => self.read_value(ptr), // Not reached: the read began at it.
        }
    }

    /// The value of the record at `ptr` whose bytes are `buf`, checked.
    fn value_in(&self, ptr: &RecordPtr, buf: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .value_start(ptr, buf)?
            .map(|start| buf.get(start..).unwrap_or_default().to_vec()))
    }

    /// Checks the record at `ptr` whose bytes are `buf`; returns where its
    /// value starts in `buf` (`None` for a tombstone).
    fn value_start(&self, ptr: &RecordPtr, buf: &[u8]) -> Result<Option<usize>> {
        let (h, key) = self.decode_first(buf).ok_or_else(|| {
            Error::corruption(&self.path, ptr.offset, "log record failed its checksum")
        })?;
        if h.counter != ptr.counter || h.version != ptr.version {
            return Err(Error::corruption(
                &self.path,
                ptr.offset,
                "log record changed since it was indexed",
            ));
        }
        let start = HEADER_LEN + key.len();
        Ok((!ptr.tombstone && start <= buf.len()).then_some(start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::budget::MemoryBudget;
    use crate::codec::StoreId;
    use crate::funk::log::LogConfig;
    use crate::vfs::{MemFs, Storage};
    use std::path::Path;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    fn segment(fs: &MemFs) -> LogSegment {
        let dir = Path::new("/seg");
        let config = LogConfig {
            part_bytes: 64 * 1024,
            budget: Arc::new(MemoryBudget::new(1 << 30)),
            store: StoreId(4),
            durable: Arc::default(),
            read_only: false,
            write_back: false,
        };
        fs.create_dir_all(dir).expect("directory");
        LogSegment::create(fs, dir, 1, 1, &config).expect("create")
    }

    /// Reads the values of `[from, to)` in key order as a scan does;
    /// returns each key's newest value (`read_value_ahead` on the index's
    /// first entry of each key) and how many reads the file saw.
    fn scan(seg: &LogSegment, fs: &MemFs, from: &[u8], to: &[u8]) -> (Vec<Vec<u8>>, u64) {
        let index = seg.sorted_index(&|_| {}).expect("index");
        let range = index.range(from, Some(to));
        let mut window = ValueWindow::default();
        let mut out = Vec::new();
        let mut reads = 0;
        let mut last: Option<&[u8]> = None;
        for j in range.clone() {
            if last == Some(index.key(j)) {
                continue; // An older version.
            }
            last = Some(index.key(j));
            let ptr = index.record(j).expect("record");
            let next = (j + 1..range.end).filter_map(|k| index.record(k));
            let before = fs.bytes_read();
            let got = seg.read_value_ahead(ptr, next, &mut window);
            reads += u64::from(fs.bytes_read() > before);
            out.push(got.expect("read").unwrap_or_default());
        }
        (out, reads)
    }

    /// An app's events appended between other apps' (as a chunk shared by
    /// several apps takes them), read in key order: the values come back
    /// right, with a few reads that each take many of them, and a record
    /// far from the one before is read on its own.
    #[test]
    fn a_scan_reads_neighbouring_records_together() {
        let fs = MemFs::new();
        let seg = segment(&fs);
        let counter = AtomicU64::new(0);
        let mut version = 0;
        let mut put = |key: String, value: Option<Vec<u8>>| {
            version += 1;
            seg.append(key.as_bytes(), value.as_deref(), version, &counter, true)
                .expect("append");
        };
        for i in 0..400u32 {
            let value = (i % 50 != 7).then(|| vec![(i % 251) as u8; 200]);
            put(format!("a{i:05}"), value);
            put(format!("b{i:05}"), Some(vec![1; 150]));
            if i % 100 == 99 {
                // A gap wider than `NEAR_GAP`: the next record of `a` is
                // read on its own.
                put(format!("c{i:05}"), Some(vec![2; 3 * NEAR_GAP as usize]));
            }
        }
        let index = seg.sorted_index(&|_| {}).expect("index");
        let range = index.range(b"a", Some(b"b"));
        assert_eq!(range.len(), 400);
        let mut window = ValueWindow::default();
        let mut reads = 0;
        let mut last_start = None;
        for j in range.clone() {
            let ptr = index.record(j).expect("record");
            let next = (j + 1..range.end).filter_map(|k| index.record(k));
            let got = seg.read_value_ahead(ptr, next, &mut window).expect("read");
            assert_eq!(got, seg.read_value(ptr).expect("read alone"), "{j}");
            let i = j - range.start;
            let expected = (i % 50 != 7).then(|| vec![(i % 251) as u8; 200]);
            assert_eq!(got, expected, "record {i}");
            if window.record(ptr).is_none() || last_start != Some(window.start) {
                reads += 1;
                last_start = Some(window.start);
            }
        }
        // 400 records of ~430 bytes with the others' between them: spans of
        // 16, 32, 64, 128 and 256 KiB, and a new read after each far gap.
        assert!((4..=16).contains(&reads), "{reads} reads");
    }

    /// Keys written twice, the second time all after the first: a scan
    /// gets each key's newest value, still reading the newest versions
    /// together (an older version between them, earlier in the file, does
    /// not end a joint read).
    #[test]
    fn older_versions_do_not_split_joint_reads() {
        let fs = MemFs::new();
        let seg = segment(&fs);
        let counter = AtomicU64::new(0);
        for round in 0..2u8 {
            for i in 0..300u32 {
                let key = format!("k{i:05}");
                let value = vec![round * 100 + (i % 100) as u8; 120];
                seg.append(
                    key.as_bytes(),
                    Some(&value),
                    u64::from(round) * 1000 + u64::from(i) + 1,
                    &counter,
                    true,
                )
                .expect("append");
            }
        }
        let (values, reads) = scan(&seg, &fs, b"k", b"l");
        assert_eq!(values.len(), 300);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(v, &vec![100 + (i % 100) as u8; 120], "key {i}");
        }
        assert!(reads <= 8, "{reads} reads for 300 neighbouring records");
    }

    /// A damaged byte inside a joint read is reported as it is when the
    /// record is read alone: a checksum error at that record's offset.
    #[test]
    fn a_damaged_record_in_a_joint_read_is_reported() {
        let fs = MemFs::new();
        let seg = segment(&fs);
        let counter = AtomicU64::new(0);
        for i in 0..50u32 {
            let key = format!("k{i:05}");
            seg.append(
                key.as_bytes(),
                Some(&[7; 100]),
                u64::from(i) + 1,
                &counter,
                true,
            )
            .expect("append");
        }
        let index = seg.sorted_index(&|_| {}).expect("index");
        let victim = index.record(20).expect("record").clone();
        let path = Path::new("/seg").join(seg.path.file_name().expect("name"));
        let mut bytes = fs.read_file(&path).expect("file");
        let at = (victim.offset + victim.record_len() - 3) as usize;
        bytes[at] ^= 0x40;
        assert!(fs.write_file(&path, &bytes));
        let alone = seg.read_value(&victim).expect_err("damaged");
        let mut window = ValueWindow::default();
        let mut seen = None;
        for j in 0..50 {
            let ptr = index.record(j).expect("record");
            let next = (j + 1..50).filter_map(|k| index.record(k));
            if let Err(e) = seg.read_value_ahead(ptr, next, &mut window) {
                seen = Some((j, e));
                break;
            }
        }
        let (j, e) = seen.expect("the damage was found");
        assert_eq!(j, 20);
        assert_eq!(e.to_string(), alone.to_string());
    }
}
