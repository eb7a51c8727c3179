//! Tests of gets through the directory and of readable appends.

use super::*;
use crate::vfs::{MemFs, Storage};

/// The value of `key`'s newest record in `seg` (`Some(None)` for a
/// tombstone), or `None` if it has none.
fn newest_of(seg: &LogSegment, key: &str) -> Option<Option<Vec<u8>>> {
    let mut probe = FilterProbe::default();
    seg.lookup(
        key.as_bytes(),
        key_hash(key.as_bytes()),
        &|_, _| true,
        &mut probe,
    )
    .expect("lookup")
    .map(|(_, value)| value)
}

/// Appends `key` with `value` at `version` as a readable record.
fn append_readable(seg: &LogSegment, key: &str, value: &[u8], version: u64, counter: &AtomicU64) {
    seg.append_as(
        key.as_bytes(),
        Some(value),
        version,
        counter,
        AppendMode::Readable,
    )
    .expect("append");
}

/// Segment 1, new, in `dir` of `fs`.
fn new_segment(fs: &MemFs, dir: &Path, config: &LogConfig) -> LogSegment {
    fs.create_dir_all(dir).expect("directory");
    LogSegment::create(fs, dir, 1, 1, config).expect("create")
}

/// Finds the newest version of every key through the directory and the
/// open part, before and after a replay (which builds the directory in
/// one sort instead of seal by seal).
#[test]
fn gets_find_the_newest_record_through_directory_and_open_part() {
    let fs = MemFs::new();
    let dir = Path::new("/seg");
    let config = LogConfig::for_tests(512, 3);
    let seg = new_segment(&fs, dir, &config);
    let counter = AtomicU64::new(0);
    let mut newest = std::collections::BTreeMap::new();
    for i in 0..600u64 {
        let key = format!("k{:03}", (i * 37) % 50);
        let value = format!("v{i}");
        let deleted = i % 11 == 0;
        let value = (!deleted).then_some(value.as_bytes());
        seg.append(key.as_bytes(), value, i + 1, &counter, true)
            .expect("append");
        newest.insert(key, value.map(<[u8]>::to_vec));
    }
    let check = |seg: &LogSegment| {
        assert!(seg.part_count() > 20, "{} parts", seg.part_count());
        for (key, value) in &newest {
            let found = newest_of(seg, key).expect("every key has a record");
            assert_eq!(&found, value, "{key}");
        }
        let mut probe = FilterProbe::default();
        let absent = seg
            .lookup(b"nope", key_hash(b"nope"), &|_, _| true, &mut probe)
            .expect("lookup");
        assert!(absent.is_none());
    };
    check(&seg);
    let filters = seg.filter_bytes();
    drop(seg);
    assert_eq!(
        config.budget.used(),
        0,
        "a dropped segment returns its memory"
    );
    let replay = LogSegment::open(&fs, dir, 1, &config).expect("open");
    check(&replay.segment);
    assert_eq!(replay.segment.filter_bytes(), filters);
}

/// Readable appends are found by gets and whole-segment reads while
/// they are only in the write buffer, also when a read spans the
/// file's end, and reach the file when the buffer fills or is flushed.
#[test]
fn readable_appends_are_read_from_the_buffer_until_written() {
    let fs = MemFs::new();
    let dir = Path::new("/readable");
    let config = LogConfig::for_tests(4 << 10, 3);
    let seg = new_segment(&fs, dir, &config);
    let file_len = || {
        fs.open(&dir.join(LogSegment::file_name(1)))
            .and_then(|f| f.len())
    };
    let counter = AtomicU64::new(0);
    let mut newest = std::collections::BTreeMap::new();
    let (mut written_once, mut buffered_at_end) = (false, false);
    for i in 0..400u64 {
        let key = format!("k{:03}", (i * 7) % 90);
        let value = vec![b'a' + (i % 26) as u8; 100 + (i as usize * 31) % 700];
        seg.append_as(
            key.as_bytes(),
            Some(&value),
            i + 1,
            &counter,
            AppendMode::Readable,
        )
        .expect("append");
        newest.insert(key, value);
        let in_file = seg.written.load(Ordering::Acquire);
        written_once |= in_file > FIRST_RECORD;
        buffered_at_end = seg.len() > in_file;
        assert_eq!(
            seg.len(),
            seg.appended(),
            "every record is readable at once"
        );
        if i % 37 == 0 {
            // Every key's newest value, some from the file and some
            // from the buffer.
            for (key, value) in &newest {
                let found = newest_of(&seg, key).expect("the key's record is readable");
                assert_eq!(found.as_ref(), Some(value), "{key} after {i} appends");
            }
            let image = seg.image(seg.len()).expect("image");
            assert_eq!(
                image.records.len() as u64,
                i + 1,
                "a read across the file's end"
            );
        }
    }
    assert!(written_once, "a full buffer is written");
    assert!(buffered_at_end, "the last appends wait in the buffer");
    seg.flush().expect("flush");
    assert_eq!(seg.written.load(Ordering::Acquire), seg.len());
    assert!(file_len().expect("file") >= seg.len());
    drop(seg);
    let replay = LogSegment::open(&fs, dir, 1, &config).expect("open");
    assert_eq!(replay.segment.records(), 400);
}

/// Readable appends that come in key order (a sequential load) are
/// written through; once the segment's keys stop being in order, they
/// wait in the write buffer like any readable append.
#[test]
fn readable_appends_in_key_order_are_written_through() {
    let fs = MemFs::new();
    let seg = new_segment(
        &fs,
        Path::new("/ordered"),
        &LogConfig::for_tests(4 << 10, 3),
    );
    let counter = AtomicU64::new(0);
    let value = [b'v'; 200];
    let mut version = 0;
    let mut append = |key: String| {
        version += 1;
        append_readable(&seg, &key, &value, version, &counter);
    };
    let in_file = || seg.written.load(Ordering::Acquire);
    for i in 0..400 {
        append(format!("k{i:05}"));
        assert_eq!(in_file(), seg.len(), "in key order: written at once");
    }
    let mut buffered = false;
    for i in (0..400).rev() {
        append(format!("j{i:05}"));
        buffered |= in_file() < seg.len();
    }
    assert!(!seg.append.lock().span.banded, "no longer in key order");
    assert!(buffered, "out of order: left in the buffer");
}

/// A banded log lets its synced whole pages go from the page cache once a
/// megabyte of them has gathered, never a byte not synced as it is, and
/// its records are still read back; a log out of key order keeps its
/// pages (its run or rebuild reads them soon).
#[test]
fn banded_logs_let_synced_pages_go_from_the_page_cache() {
    let fs = MemFs::new();
    let config = LogConfig::for_tests(64 << 10, 3);
    let ordered = new_segment(&fs, Path::new("/ordered"), &config);
    let counter = AtomicU64::new(0);
    let value = [b'v'; 800];
    let mut version = 0;
    let mut append = |seg: &LogSegment, key: String| {
        version += 1;
        append_readable(seg, &key, &value, version, &counter);
    };
    // Half a megabyte synced: under the piece, nothing goes.
    for i in 0..600 {
        append(&ordered, format!("k{i:06}"));
    }
    assert!(ordered.sync_all().expect("sync"));
    assert_eq!(fs.cache_dropped(), (0, 0), "under a piece: kept");
    for i in 600..2_000 {
        append(&ordered, format!("k{i:06}"));
    }
    assert!(ordered.sync_all().expect("sync"));
    let (dropped, unsynced) = fs.cache_dropped();
    let synced = ordered.len();
    assert_eq!(dropped, synced & !4095, "every whole synced page");
    assert_eq!(unsynced, 0, "only synced bytes");
    // More appends, not synced yet: nothing more goes until the sync.
    for i in 2_000..3_500 {
        append(&ordered, format!("k{i:06}"));
    }
    assert_eq!(fs.cache_dropped().0, dropped);
    assert!(ordered.sync_all().expect("sync"));
    assert_eq!(fs.cache_dropped(), (ordered.len() & !4095, 0));
    for i in (0..3_500).step_by(97) {
        let key = format!("k{i:06}");
        assert_eq!(
            newest_of(&ordered, &key),
            Some(Some(value.to_vec())),
            "{key}"
        );
    }

    let before = fs.cache_dropped();
    let shuffled = LogSegment::create(&fs, Path::new("/ordered"), 2, 1, &config).expect("create");
    for i in 0..3_000u64 {
        append(&shuffled, format!("s{:06}", (i * 7_919) % 3_000));
    }
    assert!(!shuffled.append.lock().span.banded);
    assert!(shuffled.sync_all().expect("sync"));
    assert_eq!(fs.cache_dropped(), before, "out of key order: kept");
}
