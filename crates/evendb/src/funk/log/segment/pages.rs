//! Writing a log segment's appends in whole pages (segments not stored in
//! blocks): see [`LogSegment::write_pages`] and the zero padding of
//! `format`.

use super::*;
use crate::funk::log::format::LOG_PAGE;

impl LogSegment {
    /// Writes the buffer of a segment not in blocks in whole pages
    /// ([`LOG_PAGE`]), in one vectored write: from the page boundary at or
    /// below the file's written end, the bytes already there (`tail`, read
    /// back if not kept), then the buffer, then zeros up to the next page
    /// boundary (the zero padding that replay takes for the file's end,
    /// see `format`). The next write rewrites the last page with its new
    /// records. Measured reason: an append that wrote part of a page made
    /// the kernel read the page back first when it had been reclaimed since
    /// the last append (P zipf-composite at 8x the memory, 256 MiB cgroup:
    /// puts of munk-less chunks, written through, waited up to 77 ms, and
    /// another writer of the file waited for that page's lock meanwhile).
    ///
    /// That needs a page the device has (synced, or written back, then
    /// reclaimed): a write within [`FRESH_PAGE`] of the last one, with no
    /// sync of the segment since, finds its page dirty in the page cache
    /// and writes only its new bytes (whole-page writes for every put to a
    /// munk-less chunk took P at 8x the memory from 5.7-6.1 to 7.0-7.7 µs
    /// of CPU a put, three alternating runs).
    pub(super) fn write_pages(&self, a: &mut AppendState) -> Result<()> {
        let at = a.len - a.buffer.len() as u64;
        let page = at - at % LOG_PAGE;
        let head = (at - page) as usize;
        let now = std::time::Instant::now();
        let fresh = a.tail.len() == head
            && a.last_page_write
                .is_some_and(|t| now.saturating_duration_since(t) < FRESH_PAGE);
        if a.tail.len() != head {
            // Not known yet (the segment was opened): read it.
            a.tail.clear();
            a.tail.resize(head, 0);
            if let Err(e) = self.file.read_at(page, &mut a.tail) {
                a.tail.clear();
                return Err(Error::io(&self.path, e));
            }
        }
        let end = a.len;
        let pad = (end.next_multiple_of(LOG_PAGE) - end) as usize;
        let written = match fresh {
            true => self.file.write_at(at, &a.buffer),
            false => self
                .file
                .write_vectored_at(page, &[&a.tail, &a.buffer, &ZEROS[..pad]]),
        };
        written.map_err(|e| Error::io(&self.path, e))?;
        a.last_page_write = Some(now);
        // The last page's bytes, for the next write: the last ones of what
        // was there and the buffer (`write_out` gives them back past the
        // buffers' share and a thirty-second of the budget).
        let last = (end % LOG_PAGE) as usize;
        if last == 0 {
            a.tail = Vec::new();
        } else {
            let from_buffer = last.min(a.buffer.len());
            a.tail.drain(..head - (last - from_buffer));
            a.tail.reserve_exact(from_buffer);
            let new = a.buffer.len() - from_buffer;
            a.tail
                .extend_from_slice(a.buffer.get(new..).unwrap_or_default());
        }
        a.buffer.clear();
        a.file_len = end;
        self.written.store(end, Ordering::Release);
        self.published.store(end, Ordering::Release);
        Ok(())
    }
}

/// How long after a write of a log's last page the next write may write
/// only its new bytes, if the segment was not synced meanwhile: the page
/// is then dirty in the page cache (the kernel writes dirty pages back
/// after 30 s, or under memory pressure; the checkpointer syncs logs
/// every 100 ms by default).
const FRESH_PAGE: std::time::Duration = std::time::Duration::from_millis(100);

/// The zeros a write pads its last page with.
static ZEROS: [u8; LOG_PAGE as usize] = [0; LOG_PAGE as usize];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{MemFs, Storage};

    const DIR: &str = "/pages";

    fn config() -> LogConfig {
        LogConfig::for_tests(16 << 10, 4)
    }

    /// [`config`] with a budget of `bytes` of its own.
    fn config_with_budget(bytes: u64) -> LogConfig {
        LogConfig {
            budget: Arc::new(MemoryBudget::new(bytes)),
            ..config()
        }
    }

    /// Segment 1 of a new directory [`DIR`] of `fs`.
    fn create(fs: &MemFs, config: &LogConfig) -> LogSegment {
        fs.create_dir_all(Path::new(DIR)).expect("directory");
        LogSegment::create(fs, Path::new(DIR), 1, 1, config).expect("create")
    }

    /// Appends `n` records with keys from `first` (values of varied
    /// sizes, some longer than a page), written through or buffered.
    fn append(seg: &LogSegment, first: u64, n: u64, counter: &AtomicU64, through: bool) {
        for i in first..first + n {
            let value = vec![b'a' + (i % 26) as u8; (i as usize * 397) % 5000 + 1];
            seg.append(
                format!("k{i:05}").as_bytes(),
                Some(&value),
                i + 1,
                counter,
                through,
            )
            .expect("append");
        }
    }

    /// The file holds the records, then nothing or zeros up to a page
    /// boundary; and every record reads back.
    fn check(fs: &MemFs, seg: &LogSegment, records: u64) {
        let bytes = fs.read_file(&seg.path).expect("file");
        let end = seg.len() as usize;
        assert!(bytes.len() >= end && bytes.len() - end < LOG_PAGE as usize);
        assert!(
            bytes.len() == end || (bytes.len() as u64).is_multiple_of(LOG_PAGE),
            "{} bytes for records ending at {end}",
            bytes.len()
        );
        assert!(bytes[end..].iter().all(|&b| b == 0), "padding is zeros");
        let image = seg.image(seg.len()).expect("image");
        assert_eq!(image.records.len() as u64, records);
        for (i, r) in image.records.iter().enumerate() {
            assert_eq!(image.key(r), format!("k{i:05}").as_bytes());
        }
    }

    #[test]
    fn appends_write_whole_pages_and_replay_takes_the_padding_for_the_end() {
        let fs = MemFs::new();
        let (dir, config, counter) = (Path::new(DIR), config(), AtomicU64::new(1));
        let seg = create(&fs, &config);
        // Written through, one record at a time: after a sync each write
        // rewrites the last page whole; in between, writes may write only
        // their bytes.
        for i in 0..40 {
            append(&seg, i, 1, &counter, true);
            check(&fs, &seg, i + 1);
            if i % 3 == 0 {
                seg.sync_to(seg.len()).expect("sync");
            }
        }
        // A write after a sync pads the last page.
        seg.sync_to(seg.len()).expect("sync");
        append(&seg, 40, 1, &counter, true);
        let len = fs.read_file(&seg.path).expect("file").len() as u64;
        assert_eq!(len % LOG_PAGE, 0, "{len} bytes");
        append(&seg, 41, 29, &counter, false);
        // Buffered, then written out together.
        seg.flush().expect("flush");
        check(&fs, &seg, 70);
        drop(seg);
        // The padding is the file's end, not a torn tail; appends go on
        // from the last record, reading the last page back first.
        let replay = LogSegment::open(&fs, dir, 1, &config).expect("open");
        assert_eq!(replay.truncated, 0);
        let seg = replay.segment;
        check(&fs, &seg, 70);
        append(&seg, 70, 5, &counter, true);
        check(&fs, &seg, 75);
        drop(seg);
        let replay = LogSegment::open(&fs, dir, 1, &config).expect("reopen");
        assert_eq!(replay.truncated, 0);
        check(&fs, &replay.segment, 75);
    }

    #[test]
    fn a_segment_past_the_buffers_share_keeps_its_last_page_for_the_next_write() {
        let fs = MemFs::new();
        // A budget whose write buffers' share (16 KiB) one buffer passes.
        let config = config_with_budget(256 << 10);
        // Other segments' buffers hold more than the share, less than the
        // share and a thirty-second of the budget (24 KiB) with this
        // segment's last page.
        config.budget.add(Kind::WriteBuffers, (16 << 10) + 64);
        let counter = AtomicU64::new(1);
        let seg = create(&fs, &config);
        append(&seg, 0, 10, &counter, false);
        seg.flush().expect("flush");
        assert!(seg.buffers_over_share());
        // After a sync the next write rewrites the last page whole.
        seg.sync_to(seg.len()).expect("sync");
        let end = seg.len();
        let page = end - end % LOG_PAGE;
        assert!(
            end > page && page > FILE_HEADER_LEN as u64,
            "records end inside a page"
        );
        // Damage that page's records in the file: a write that read the
        // page back would write the damage again.
        let mut bytes = fs.read_file(&seg.path).expect("file");
        bytes[page as usize] ^= 0xff;
        assert!(fs.write_file(&seg.path, &bytes));
        append(&seg, 10, 1, &counter, true);
        check(&fs, &seg, 11);
        // Past that, last pages are given back too.
        config.budget.add(Kind::WriteBuffers, 8 << 10);
        append(&seg, 11, 10, &counter, false);
        seg.flush().expect("flush");
        assert!(seg.append.lock().tail.is_empty());
        check(&fs, &seg, 21);
    }

    #[test]
    fn a_frozen_segment_gives_its_last_page_back() {
        let fs = MemFs::new();
        let config = config_with_budget(1 << 20);
        let counter = AtomicU64::new(1);
        let seg = create(&fs, &config);
        append(&seg, 0, 3, &counter, false);
        seg.flush().expect("flush");
        assert!(!seg.append.lock().tail.is_empty());
        assert!(config.budget.kind_used(Kind::WriteBuffers) > 0);
        seg.freeze().expect("freeze");
        assert!(seg.append.lock().tail.is_empty());
        assert_eq!(config.budget.kind_used(Kind::WriteBuffers), 0);
        check(&fs, &seg, 3);
    }

    #[test]
    fn a_new_segment_writes_its_first_page_from_memory() {
        let fs = MemFs::new();
        let (dir, config, counter) = (Path::new(DIR), config(), AtomicU64::new(1));
        let seg = create(&fs, &config);
        // Damage the header in the file: a first write that read its page
        // back would write the damage again.
        let mut bytes = fs.read_file(&seg.path).expect("file");
        bytes[0] ^= 0xff;
        assert!(fs.write_file(&seg.path, &bytes));
        append(&seg, 0, 3, &counter, true);
        check(&fs, &seg, 3);
        drop(seg);
        let replay = LogSegment::open(&fs, dir, 1, &config).expect("open");
        check(&fs, &replay.segment, 3);
    }

    #[test]
    fn a_padding_that_is_not_all_zeros_is_a_torn_tail() {
        let fs = MemFs::new();
        let (dir, config, counter) = (Path::new(DIR), config(), AtomicU64::new(1));
        let seg = create(&fs, &config);
        append(&seg, 0, 3, &counter, true);
        let (path, end) = (seg.path.clone(), seg.len());
        drop(seg);
        let mut bytes = fs.read_file(&path).expect("file");
        let padding = bytes.len() as u64 - end;
        assert!(padding > 1);
        *bytes.last_mut().expect("a byte") = 1;
        fs.write_file(&path, &bytes);
        let replay = LogSegment::open(&fs, dir, 1, &config).expect("open");
        assert_eq!(replay.truncated, padding, "cut at the last record");
        assert_eq!(replay.segment.len(), end);
        assert_eq!(fs.read_file(&path).expect("file").len() as u64, end);
        // Appends after the cut are padded again.
        append(&replay.segment, 3, 2, &counter, true);
        check(&fs, &replay.segment, 5);
    }
}
