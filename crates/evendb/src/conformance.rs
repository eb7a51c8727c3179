//! One conformance harness for every ordered source: the table reader, log
//! replay, a funk merging both, a munk (built from a funk, then taking puts),
//! and the whole `Db` (with and without munks). Each source is loaded
//! with the same writes (several versions per key, tombstones) and must
//! answer the same seeks and gets as a `BTreeMap` model.

use crate::cache::budget::MemoryBudget;
use crate::entry::Entry;
use crate::funk::log::{LogConfig, LogSegment};
use crate::funk::table::{TableReader, TableWriter};
use crate::funk::{FileSource, Funk, FunkFiles, OpenFiles, ReadView};
use crate::munk::{Munk, MunkEntry, Version};
use crate::recovery::RecoveryTable;
use crate::vfs::{MemFs, Storage};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys chosen to break ordered code: empty, 0x00, 0xFF runs, long shared
/// prefixes, and neighbors of each other.
fn adversarial_keys() -> Vec<Vec<u8>> {
    let mut keys = vec![
        vec![],
        vec![0x00],
        vec![0x00, 0x00],
        vec![0x00, 0xFF],
        vec![0x01],
        vec![0x7F],
        vec![0xFE, 0xFF],
        vec![0xFF],
        vec![0xFF; 2],
        vec![0xFF; 64],
    ];
    for i in 0..40u8 {
        let mut k = vec![b'p'; 200];
        k.push(i);
        keys.push(k);
        keys.push(format!("k{i:02}").into_bytes());
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Writes with several versions per key and some tombstones; returns them
/// in write order (versions increasing) and the model of the final state.
fn writes(seed: u64) -> (Vec<Entry>, Model) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let keys = adversarial_keys();
    let mut out = Vec::new();
    let mut model = Model::new();
    for version in 1..=(keys.len() * 3) as u64 {
        let key = keys[rng.usize(0..keys.len())].clone();
        let value = (rng.u8(0..6) != 0).then(|| vec![rng.u8(..); rng.usize(0..40)]);
        match &value {
            Some(v) => model.insert(key.clone(), v.clone()),
            None => model.remove(&key),
        };
        out.push(Entry {
            key,
            value,
            version,
            counter: version,
        });
    }
    (out, model)
}

/// Probe keys: every adversarial key plus a key just after each.
fn probes() -> Vec<Vec<u8>> {
    let mut p = adversarial_keys();
    let extra: Vec<Vec<u8>> = p.iter().map(|k| [k.as_slice(), &[0x00]].concat()).collect();
    p.extend(extra);
    p
}

/// Keeps the newest version of each key, drops tombstones: what a reader
/// at the latest version sees, from entries sorted by (key, stamp desc).
fn newest(sorted: impl IntoIterator<Item = Entry>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    for e in sorted {
        if last.as_ref() == Some(&e.key) {
            continue;
        }
        last = Some(e.key.clone());
        if let Some(v) = e.value {
            out.push((e.key, v));
        }
    }
    out
}

fn check(name: &str, model: &Model, seek: &dyn Fn(&[u8]) -> Pairs) {
    for p in probes() {
        let want: Vec<_> = model
            .range(p.clone()..)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(seek(&p), want, "{name}: seek to {p:?}");
    }
}

fn sorted(mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.sort_by(|a, b| a.key.cmp(&b.key).then(b.stamp().cmp(&a.stamp())));
    entries
}

const DIR: &str = "/c";

fn fs() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    fs
}

fn write_table(fs: &MemFs, number: u64, entries: &[Entry]) -> Arc<TableReader> {
    let mut w = TableWriter::create(fs, Path::new(DIR), number, STORE, 1, 256, true).unwrap();
    for e in entries {
        w.add(e).unwrap();
    }
    w.finish().unwrap();
    Arc::new(TableReader::open(fs, Path::new(DIR), number, STORE).unwrap())
}

const STORE: crate::codec::StoreId = crate::codec::StoreId(0xc0);

fn log_config() -> LogConfig {
    LogConfig {
        store: STORE,
        durable: Arc::default(),
        read_only: false,
        write_back: false,
        // Small parts, so a log spans many filters.
        part_bytes: 512,
        budget: Arc::new(MemoryBudget::new(1 << 30)),
    }
}

/// Appends `entries` to a new segment; counters come from the segment
/// (increasing in write order, as in the engine).
fn write_log(fs: &MemFs, number: u64, entries: &[Entry]) {
    let log = LogSegment::create(fs, Path::new(DIR), number, 1, &log_config()).unwrap();
    let counter = AtomicU64::new(entries.first().map_or(0, |e| e.counter));
    for e in entries {
        log.append(&e.key, e.value.as_deref(), e.version, &counter, false)
            .unwrap();
    }
    log.sync_all().unwrap();
}

fn open_funk(fs: &MemFs, files: &FunkFiles) -> Funk {
    let (config, registry) = (log_config(), OpenFiles::default());
    let src = FileSource {
        storage: fs,
        dir: Path::new(DIR),
        log_config: &config,
        open_files: &registry,
        budget: &config.budget,
    };
    Funk::open(&src, files).unwrap().0
}

fn funk_seek(funk: &Funk, from: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let recovery = RecoveryTable::default();
    for g in funk
        .key_groups(from, None, None, &recovery, u64::MAX)
        .unwrap()
    {
        let (key, versions) = g.unwrap();
        if let Some(v) = versions.into_iter().next().and_then(|e| e.value) {
            out.push((key, v));
        }
    }
    out
}

fn munk_seek(munk: &Munk, from: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = munk.seek(from);
    while let Some((cell, next)) = munk.at(i) {
        let value = cell.read_from(u64::MAX, 0).flatten();
        if let Some(v) = value {
            out.push((cell.key.to_vec(), v));
        }
        i = next;
    }
    out
}

#[test]
fn table_reader_conforms() {
    for seed in 0..20 {
        let (w, model) = writes(seed);
        let fs = fs();
        let table = write_table(&fs, 1, &sorted(w));
        check("table", &model, &|from| {
            newest(table.iter_range(from, None).map(Result::unwrap))
        });
        for p in probes() {
            let got = table.get(&p, &|_| true).unwrap().and_then(|e| e.value);
            assert_eq!(got.as_ref(), model.get(&p), "table get {p:?}");
        }
    }
}

#[test]
fn log_replay_conforms() {
    for seed in 0..20 {
        let (w, model) = writes(seed);
        let fs = fs();
        write_log(&fs, 1, &w);
        let replay = LogSegment::open(&fs, Path::new(DIR), 1, &log_config()).unwrap();
        let image = replay.segment.image(u64::MAX).unwrap();
        let entries: Vec<Entry> = image
            .records
            .iter()
            .map(|r| Entry {
                key: image.key(r).to_vec(),
                value: image.value(r).map(<[u8]>::to_vec),
                version: r.version,
                counter: r.counter,
            })
            .collect();
        let entries = sorted(entries);
        check("log replay", &model, &|from| {
            newest(entries.iter().filter(|e| e.key.as_slice() >= from).cloned())
        });
    }
}

#[test]
fn funk_of_table_and_log_conforms() {
    for seed in 0..20 {
        let (w, model) = writes(seed);
        let (older, newer) = w.split_at(w.len() / 2);
        let fs = fs();
        write_table(&fs, 1, &sorted(older.to_vec()));
        write_log(&fs, 2, newer);
        let funk = open_funk(
            &fs,
            &FunkFiles {
                table: Some(1),
                logs: vec![2],
            },
        );
        check("funk", &model, &|from| funk_seek(&funk, from));
        let recovery = RecoveryTable::default();
        let view = ReadView {
            max_version: u64::MAX,
            recovery: &recovery,
            floor: 0,
        };
        for p in probes() {
            let got = funk
                .get(&p, view, &mut Default::default())
                .unwrap()
                .0
                .and_then(|e| e.value);
            assert_eq!(got.as_ref(), model.get(&p), "funk get {p:?}");
        }
    }
}

#[test]
fn munk_loaded_from_a_funk_then_written_conforms() {
    for seed in 0..20 {
        let (w, model) = writes(seed);
        // The first half on disk (table and log), loaded into a munk; the
        // second half put into the munk, as puts would.
        let (disk, puts) = w.split_at(w.len() / 2);
        let (older, newer) = disk.split_at(disk.len() / 2);
        let fs = fs();
        write_table(&fs, 1, &sorted(older.to_vec()));
        write_log(&fs, 2, newer);
        let funk = open_funk(
            &fs,
            &FunkFiles {
                table: Some(1),
                logs: vec![2],
            },
        );
        let recovery = RecoveryTable::default();
        let mut entries = Vec::new();
        for g in funk
            .key_groups(&[], None, None, &recovery, u64::MAX)
            .unwrap()
        {
            let (key, versions) = g.unwrap();
            entries.extend(MunkEntry::from_versions(&key, versions, 0));
        }
        let budget = Arc::new(MemoryBudget::new(1 << 30));
        let munk = Munk::build(
            entries,
            puts.len(),
            &budget,
            crate::munk::Charge::Inherit(0),
        );
        for e in puts {
            let len = e.value.as_ref().map_or(0, Vec::len);
            let res = match munk.reserve(&e.key, len, 0) {
                Ok(r) => r,
                Err(refusal) => panic!("munk refused a put: {refusal:?}"),
            };
            let node = Version::new(e.value.as_deref(), e.version, e.counter);
            munk.insert(res, &e.key, node, 0);
        }
        check("munk", &model, &|from| munk_seek(&munk, from));
        for p in probes() {
            let got = munk.read(&p, u64::MAX);
            assert_eq!(got.as_ref(), model.get(&p), "munk get {p:?}");
        }
    }
}

#[test]
fn whole_db_conforms_across_chunk_boundaries() {
    for seed in 0..10 {
        // With no memory for munks (all reads from disk), and with room for
        // every chunk's munk.
        for budget in [0, 64 << 20] {
            whole_db(seed, budget);
        }
    }
}

fn whole_db(seed: u64, budget: u64) {
    {
        let (w, model) = writes(seed);
        let fs = fs();
        let db = crate::Options::default()
            .storage(Arc::new(fs.clone()))
            .max_chunk_size(4096)
            .max_log_size(1024)
            .block_size(256)
            .maintenance_threads(0)
            .memory_budget(budget)
            .open("/db")
            .unwrap();
        for e in &w {
            match &e.value {
                Some(v) => db.put(&e.key, v).unwrap(),
                None => db.delete(&e.key).unwrap(),
            }
        }
        db.compact().unwrap();
        assert!(db.stats().chunks > 1, "keys must span several chunks");
        // Chunk boundary keys are among the probes too.
        let bounds: Vec<Vec<u8>> = db
            .inner
            .index
            .load()
            .chunks
            .iter()
            .map(|c| c.min_key.clone())
            .collect();
        check("db", &model, &|from| {
            db.scan(from..).map(Result::unwrap).collect()
        });
        for b in bounds {
            let want: Vec<_> = model
                .range(b.clone()..)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(
                db.scan(b.clone()..).map(Result::unwrap).collect::<Vec<_>>(),
                want
            );
        }
        for p in probes() {
            assert_eq!(db.get(&p).unwrap().as_ref(), model.get(&p), "db get {p:?}");
        }
        let s = db.stats();
        if budget > 0 {
            assert!(s.munks > 0 && s.gets_munk > 0, "munks must serve: {s:?}");
        } else {
            assert_eq!(s.munks, 0);
        }
    }
}
