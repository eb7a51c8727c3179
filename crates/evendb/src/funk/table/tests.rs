//! Tables in each format: compressed and raw blocks (format 2), and
//! format 1 (before compression), read back by gets, iterators and block
//! reads.

use super::format;
use super::{TableReader, TableWriter};
use crate::codec::StoreId;
use crate::entry::Entry;
use crate::vfs::{MemFs, Storage};
use std::path::Path;
use std::sync::Arc;

const STORE: StoreId = StoreId(0x7a);

fn entries(compressible: bool) -> Vec<Entry> {
    let mut rng = fastrand::Rng::with_seed(5);
    (0..3000u32)
        .map(|i| {
            let value = if compressible {
                format!(
                    r#"{{"app":"app{:03}","event":"click","page":"/home","seq":{i}}}"#,
                    i % 50
                )
                .into_bytes()
            } else {
                (0..500).map(|_| rng.u8(..)).collect()
            };
            Entry {
                key: format!("key{i:06}").into_bytes(),
                value: (i % 17 != 0).then_some(value),
                version: u64::from(i) + 1,
                counter: 0,
            }
        })
        .collect()
}

/// Writes `entries` as table `number` and opens it; returns its size too.
fn table(
    fs: &MemFs,
    number: u64,
    entries: &[Entry],
    compress: bool,
    v1: bool,
) -> (Arc<TableReader>, u64) {
    let dir = Path::new("/t");
    fs.create_dir_all(dir).unwrap();
    let mut w = TableWriter::create(fs, dir, number, STORE, 1, 1024, compress).unwrap();
    if v1 {
        w = w.format_1();
    }
    for e in entries {
        w.add(e).unwrap();
    }
    let size = w.finish().unwrap();
    (
        Arc::new(TableReader::open(fs, dir, number, STORE).unwrap()),
        size,
    )
}

fn check(t: &Arc<TableReader>, want: &[Entry], what: &str) {
    let all: Vec<Entry> = t.iter_range(b"", None).collect::<Result<_, _>>().unwrap();
    assert!(all == want, "{what}: iterator");
    let from: Vec<Entry> = t.bulk_from(b"key001500").collect::<Result<_, _>>().unwrap();
    assert!(from == want[1500..], "{what}: iterator from a key");
    for e in want.iter().step_by(37) {
        assert_eq!(
            t.get(&e.key, &|_| true).unwrap().as_ref(),
            Some(e),
            "{what}: get"
        );
    }
    assert_eq!(t.get(b"key9", &|_| true).unwrap(), None);
    let blocks: Vec<Entry> = (0..t.block_count())
        .flat_map(|i| t.read_block(i).unwrap())
        .collect();
    assert!(blocks == want, "{what}: block reads");
}

#[test]
fn tables_of_every_format_read_back_and_compression_saves_space_only_where_it_can() {
    let fs = MemFs::new();
    for compressible in [true, false] {
        let want = entries(compressible);
        let (lz, lz_size) = table(&fs, 1, &want, true, false);
        let (raw, raw_size) = table(&fs, 2, &want, false, false);
        let (old, old_size) = table(&fs, 3, &want, false, true);
        check(&lz, &want, "compressed");
        check(&raw, &want, "raw");
        check(&old, &want, "format 1");
        // The codec byte: one per block.
        assert_eq!(raw_size, old_size + raw.block_count() as u64);
        if compressible {
            assert!(
                lz_size * 2 < raw_size,
                "JSON-like values: {lz_size} vs {raw_size}"
            );
        } else {
            assert_eq!(lz_size, raw_size, "random values are stored raw");
        }
    }
}

#[test]
fn a_compressed_block_with_a_bad_length_or_codec_is_malformed_not_allocated() {
    let entries = vec![b'x'; 4000];
    let mut body = Vec::new();
    format::encode_block(&entries, true, &mut body);
    assert_eq!(body.last(), Some(&1), "compressed");
    let mut plain = Vec::new();
    assert_eq!(
        format::block_entries(&body, 2, &mut plain),
        Some(&entries[..])
    );
    // A length past the bound is refused before anything is allocated.
    let mut huge = body.clone();
    huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut plain = Vec::new();
    assert_eq!(format::block_entries(&huge, 2, &mut plain), None);
    assert!(plain.capacity() < 1 << 20);
    // A length that does not match what decompresses.
    let mut short = body.clone();
    short[..4].copy_from_slice(&100u32.to_le_bytes());
    assert_eq!(format::block_entries(&short, 2, &mut Vec::new()), None);
    let mut codec = body;
    *codec.last_mut().unwrap() = 7;
    assert_eq!(format::block_entries(&codec, 2, &mut Vec::new()), None);
}

#[test]
fn a_bounded_iterator_returns_the_keys_below_its_bound_and_reads_no_further() {
    let fs = MemFs::new();
    let want = entries(false);
    let (t, _) = table(&fs, 3, &want, false, false);
    let (from, to) = (&want[1000].key, &want[1100].key);
    // The bytes of the blocks from the one holding `from` to the one
    // holding `to`, measured one block at a time.
    let mut needed = 0;
    for i in 0..t.block_count() {
        let before = fs.bytes_read();
        let keys: Vec<Vec<u8>> = t
            .read_block(i)
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        let size = fs.bytes_read() - before;
        let (first, last) = (keys.first().unwrap(), keys.last().unwrap());
        if last >= from && first <= to {
            needed += size;
        }
    }
    let read_by = |bound: Option<&[u8]>| {
        let before = fs.bytes_read();
        let got: Vec<Entry> = t
            .iter_range(from, bound)
            .take_while(|e| e.as_ref().map_or(true, |e| e.key < *to))
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(got == want[1000..1100], "the entries of [from, to)");
        fs.bytes_read() - before
    };
    assert_eq!(
        read_by(Some(to)),
        needed,
        "bounded: exactly the blocks up to `to`'s"
    );
    // Unbounded, the doubling reads (4, 8, 16, 32 blocks) go past it.
    assert!(read_by(None) > needed);
    // Drained, a bounded iterator stops after the block holding `to`.
    let n = t.iter_range(from, Some(to)).count();
    assert!(
        (100..104).contains(&n),
        "{n} entries up to the bound's block"
    );
    assert_eq!(t.iter_range(from, None).count(), 2000);
}

#[test]
fn key_before_is_the_first_key_of_a_block_about_that_many_entries_down() {
    let fs = MemFs::new();
    let want = entries(true);
    let (t, _) = table(&fs, 4, &want, true, false);
    let firsts: Vec<Vec<u8>> = (0..t.block_count())
        .map(|i| t.read_block(i).unwrap()[0].key.clone())
        .collect();
    for (hi, back) in [(2000, 10), (2000, 300), (3000, 1), (500, 300)] {
        let hi_key = want.get(hi).map(|e| e.key.clone());
        let k = t
            .key_before(hi_key.as_deref(), back)
            .unwrap()
            .expect("a key below");
        assert!(
            firsts.contains(&k),
            "{back} below {hi}: a block's first key"
        );
        let below = want
            .iter()
            .filter(|e| e.key >= k && hi_key.as_ref().is_none_or(|h| e.key < *h))
            .count();
        // Estimated from the table's entries per block: within a block or
        // two of `back`.
        let per_block = want.len() / t.block_count();
        assert!(
            below >= back && below <= back + 3 * per_block,
            "{below} entries for {back}"
        );
    }
    assert_eq!(t.key_before(Some(&want[5].key), 2000).unwrap(), None);
}
