//! Sorted runs (a munk-less chunk's unsorted logs written again in key
//! order) are stored in blocks, LZ4-compressed as tables are: with
//! compressible values they take a fraction of the records they hold on
//! disk, and read back the same through gets, scans both ways, a reopen
//! and `verify_integrity`; damage in a compressed block is reported, not
//! served.

mod common;

use evendb::vfs::{MemFs, Storage};
use evendb::{Compression, Db, Options};
use std::collections::BTreeMap;

fn options(fs: &MemFs, compression: Compression) -> Options {
    common::run_sized(fs).compression(compression)
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

/// A JSON document of about 300 bytes: compressible, as text values are.
fn value(i: u64, round: u64) -> Vec<u8> {
    format!(
        "{{\"id\":{i},\"round\":{round},\"name\":\"user{i:010}\",\"email\":\"user{i}@example.com\",\
         \"city\":\"Springfield\",\"country\":\"Freedonia\",\"tags\":[\"alpha\",\"beta\",\"gamma\"],\
         \"bio\":\"lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\",\
         \"active\":true,\"score\":{}}}",
        (i * 7919 + round) % 1000
    )
    .into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A load, then rounds of random updates and deletes: the munk-less
/// chunks' unsorted logs are sorted into runs.
fn load_and_update(db: &Db, rng: &mut fastrand::Rng) -> Model {
    let mut model = Model::new();
    let n = 20_000;
    for i in 0..n {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    for round in 1..=3 {
        common::random_writes(db, &mut model, rng, (n, 8_000), 20, |i| {
            (key(i), value(i, round))
        });
    }
    model
}

fn check(db: &Db, model: &Model, rng: &mut fastrand::Rng, when: &str) {
    let all = common::all(db);
    assert!(
        all.len() == model.len()
            && all
                .iter()
                .zip(model)
                .all(|(a, b)| a.0 == *b.0 && a.1 == *b.1),
        "{when}: forward scan"
    );
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan::<&[u8], _>(..)
        .rev()
        .collect::<Result<_, _>>()
        .expect("reverse scan");
    back.reverse();
    assert!(back == all, "{when}: reverse scan");
    for _ in 0..2_000 {
        let k = key(rng.u64(0..20_000));
        assert_eq!(db.get(&k).expect("get").as_ref(), model.get(&k), "{when}");
    }
    let report = db.verify_integrity().expect("verify");
    assert!(report.problems.is_empty(), "{when}: {:?}", report.problems);
}

/// Bytes of the store's `.log` files.
fn log_file_bytes(fs: &MemFs) -> u64 {
    common::engine_files(fs, &common::dir())
        .iter()
        .filter(|n| n.ends_with(".log"))
        .map(|n| {
            fs.open(&common::dir().join(n))
                .and_then(|f| f.len())
                .expect("len")
        })
        .sum()
}

#[test]
fn compressed_runs_take_a_fraction_of_their_records_and_read_back() {
    let seed = common::seed("compressed_runs_take_a_fraction_of_their_records_and_read_back");
    let mut logs = Vec::new();
    for compression in [Compression::Lz4, Compression::None] {
        let mut rng = fastrand::Rng::with_seed(seed);
        let fs = MemFs::new();
        let db = options(&fs, compression).open(common::dir()).expect("open");
        let model = load_and_update(&db, &mut rng);
        let s = db.stats();
        assert!(s.log_runs > 0, "no run was written: {s:?}");
        if compression == Compression::Lz4 {
            assert!(
                s.run_bytes_written * 2 < s.run_record_bytes,
                "{} bytes of runs stored for {} bytes of records",
                s.run_bytes_written,
                s.run_record_bytes
            );
        } else {
            assert_eq!(
                s.run_bytes_written, s.run_record_bytes,
                "runs stored as they are"
            );
        }
        check(&db, &model, &mut rng, "after the updates");
        db.flush().expect("flush");
        logs.push(log_file_bytes(&fs));
        drop(db);
        let db = options(&fs, compression)
            .open(common::dir())
            .expect("reopen");
        check(&db, &model, &mut rng, "after a reopen");
        // A store's runs are read whatever the option says now.
        drop(db);
        let other = if compression == Compression::Lz4 {
            Compression::None
        } else {
            Compression::Lz4
        };
        let db = options(&fs, other).open(common::dir()).expect("reopen");
        check(
            &db,
            &model,
            &mut rng,
            "after a reopen with the other setting",
        );
        db.compact().expect("compact");
        check(&db, &model, &mut rng, "after compaction");
    }
    assert!(
        logs[0] < logs[1],
        "logs of {} bytes compressed, {} not",
        logs[0],
        logs[1]
    );
}

/// The first byte of every block body of format 4 logs: where to damage
/// a compressed run.
fn run_files(fs: &MemFs) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for name in common::engine_files(fs, &common::dir()) {
        let f = fs.open(&common::dir().join(&name)).expect("open");
        let mut head = [0u8; 12];
        f.read_at(0, &mut head).expect("read");
        if name.ends_with(".log") && head[8..12] == 4u32.to_le_bytes() {
            out.push((name, f.len().expect("len")));
        }
    }
    out
}

#[test]
fn damage_in_a_compressed_run_is_reported_not_served() {
    let seed = common::seed("damage_in_a_compressed_run_is_reported_not_served");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let db = options(&fs, Compression::Lz4)
        .open(common::dir())
        .expect("open");
    let model = load_and_update(&db, &mut rng);
    db.flush().expect("flush");
    drop(db);
    let runs = run_files(&fs);
    assert!(!runs.is_empty(), "no run in blocks");
    let (name, len) = &runs[rng.usize(..runs.len())];
    let f = fs.open(&common::dir().join(name)).expect("open");
    let at = 48 + rng.u64(..len - 48);
    let mut b = [0u8; 1];
    f.read_at(at, &mut b).expect("read");
    f.write_at(at, &[b[0] ^ 0x04]).expect("write");
    // Open replays the run (or refuses the store); either way no read
    // returns another value than the one put, and verify names the file.
    let Ok(db) = options(&fs, Compression::Lz4).open(common::dir()) else {
        return;
    };
    let report = db.verify_integrity().expect("verify");
    assert!(
        report.problems.iter().any(|p| p.contains(name.as_str())),
        "{name} damaged at {at}: {:?}",
        report.problems
    );
    for (k, v) in model.iter().step_by(7) {
        if let Ok(got) = db.get(k) {
            assert_eq!(got.as_ref(), Some(v));
        }
    }
}

/// A munk-less chunk's unsorted log is scanned through a sorted index
/// built from the whole log. When the budget cannot keep the indexes of
/// every chunk scanned, each next scan reads the log whole again; the scan
/// that finds it so asks for the log to be sorted into a run (or the chunk
/// rebuilt), after which no index is needed.
#[test]
fn a_log_read_whole_again_for_its_index_is_sorted_into_a_run() {
    let seed = common::seed("a_log_read_whole_again_for_its_index_is_sorted_into_a_run");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let small = |fs: &MemFs| {
        options(fs, Compression::Lz4)
            .max_chunk_size(64 << 10)
            .max_log_size(32 << 10)
            .memory_budget(256 << 10)
    };
    let db = small(&fs).open(common::dir()).expect("open");
    let n = 20_000;
    let mut model = BTreeMap::new();
    for i in 0..n {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    // One key in five updated, in random order: every chunk gets an
    // unsorted log well below its limit, so no write rebuilds it.
    let mut updated: Vec<u64> = (0..n).step_by(5).collect();
    rng.shuffle(&mut updated);
    for &i in &updated {
        db.put(key(i), value(i, 1)).expect("put");
        model.insert(key(i), value(i, 1));
    }
    let rebuilt = |s: &evendb::Stats| s.log_runs + s.rebalances + s.splits;
    let before = db.stats();
    let mut passes = Vec::new();
    for pass in 0..3 {
        let all = common::all(&db);
        assert!(
            all.len() == model.len()
                && all
                    .iter()
                    .zip(&model)
                    .all(|((k, v), (mk, mv))| k == mk && v == mv),
            "pass {pass}: scan of everything differs"
        );
        passes.push(rebuilt(&db.stats()) - rebuilt(&before));
    }
    assert!(
        before.scan_chunks_funk == 0 && db.stats().scan_chunks_funk > 100,
        "the scans must read munk-less chunks: {:?}",
        db.stats()
    );
    // The first pass builds each index once; the indexes of about a
    // hundred chunks do not fit a 256 KiB budget, so the next pass builds
    // them again and has the logs sorted.
    assert!(
        passes[1] > passes[0] + 10,
        "scans reading logs whole again asked for no runs: {passes:?} ({:?})",
        db.stats()
    );
    let s = db.stats();
    for _ in 0..300 {
        let i = rng.u64(0..n);
        assert_eq!(db.get(key(i)).expect("get").as_ref(), model.get(&key(i)));
    }
    db.flush().expect("flush");
    drop(db);
    let db = small(&fs).open(common::dir()).expect("reopen");
    let all = common::all(&db);
    assert!(
        all.iter()
            .zip(&model)
            .all(|((k, v), (mk, mv))| k == mk && v == mv)
            && all.len() == model.len(),
        "after a reopen: scan of everything differs ({s:?})"
    );
}
