//! Model checks of chunk replacement against a scan moving from chunk to
//! chunk, run on the production `lineage` code (see `crate::sync`):
//! `RUSTFLAGS="--cfg loom" cargo test -p evendb --release --lib loom_`.
//!
//! Chunks here are ranges holding a fixed set of keys (a snapshot's view
//! of them: a split or merge hands each key to the new chunk whose range
//! holds it, and a retired chunk keeps its own). A replacement is what
//! `maintenance::split` and `maintenance::merge` do: `retire` each old
//! chunk for the new ones, then `Index::replace`. A scan is what `Scan`
//! does: find the chunk holding the cursor, read it from the cursor to its
//! end key, move the cursor to that end key.
//!
//! The property: the scan returns every key exactly once, in order, and
//! every chunk it gets from `find` holds the cursor and, if it is already
//! seen retired, has its successors visible (so a lookup never stops at a
//! replaced chunk it could have moved past).

use super::lineage::{Index, Lineage, Ranged};
use crate::sync::{model, PREEMPTION_BOUND};
use loom::thread;
use std::sync::Arc;

#[derive(Debug)]
struct Node {
    min: Vec<u8>,
    end: Option<Vec<u8>>,
    keys: Vec<&'static [u8]>,
    lineage: Lineage<Node>,
}

impl Ranged for Node {
    fn min_key(&self) -> &[u8] {
        &self.min
    }

    fn end_key(&self) -> Option<&[u8]> {
        self.end.as_deref()
    }

    fn lineage(&self) -> &Lineage<Self> {
        &self.lineage
    }
}

/// Every key of the model, in order.
const KEYS: [&[u8]; 4] = [b"c", b"h", b"p", b"t"];

/// A chunk over `[min, end)` holding the model's keys in that range.
fn node(min: &str, end: Option<&str>) -> Arc<Node> {
    let (min, end) = (min.as_bytes().to_vec(), end.map(|e| e.as_bytes().to_vec()));
    let keys = KEYS
        .iter()
        .copied()
        .filter(|k| *k >= min.as_slice() && end.as_deref().is_none_or(|e| *k < e))
        .collect();
    Arc::new(Node {
        min,
        end,
        keys,
        lineage: Lineage::new(),
    })
}

/// What a split or merge does to the chunks, once it has built the new ones.
fn replace(index: &Index<Node>, old: &[Arc<Node>], new: &[Arc<Node>]) {
    for o in old {
        let covering = new
            .iter()
            .filter(|n| n.contains(&o.min) || o.contains(&n.min))
            .cloned()
            .collect();
        o.lineage().retire(covering);
    }
    index.replace(old, new);
}

/// A whole scan, the way `Scan` walks the chunks.
fn scan(index: &Index<Node>) -> Vec<&'static [u8]> {
    let mut out = Vec::new();
    let mut cursor: Vec<u8> = Vec::new();
    loop {
        let chunk = index.find(&cursor).expect("the index is never empty");
        assert!(
            chunk.contains(&cursor),
            "the chunk found for {cursor:?} does not hold it"
        );
        if chunk.lineage().is_retired() {
            let next = super::lineage::resolve(&chunk, &cursor);
            assert!(
                !Arc::ptr_eq(&next, &chunk),
                "a chunk seen retired has no visible successor for {cursor:?}"
            );
        }
        out.extend(chunk.keys.iter().filter(|k| **k >= cursor.as_slice()));
        match &chunk.end {
            Some(e) => cursor = e.clone(),
            None => return out,
        }
    }
}

/// After every replacement ended: the index is a partition of the key
/// space into live chunks, and each key resolves to a live chunk.
fn assert_settled(index: &Index<Node>) {
    let p = index.load();
    let first = p.chunks.first().expect("the index is never empty");
    assert!(
        first.min.is_empty(),
        "the index does not start at the empty key"
    );
    for pair in p.chunks.windows(2) {
        assert_eq!(pair[0].end.as_ref(), Some(&pair[1].min), "gap or overlap");
    }
    assert!(p.chunks.last().is_some_and(|c| c.end.is_none()));
    for c in &p.chunks {
        assert!(
            !c.lineage().is_retired(),
            "a retired chunk left in the index"
        );
    }
    for k in KEYS {
        let c = index.find(k).expect("the index is never empty");
        assert!(c.contains(k) && !c.lineage().is_retired());
    }
}

/// Runs a scan against `writer` (given the index and the chunks `a` =
/// `["", m)` and `b` = `[m, ..)`), checks both.
fn scan_against(
    name: &str,
    preemptions: Option<usize>,
    writer: fn(&Index<Node>, &Arc<Node>, &Arc<Node>),
) {
    model(name, preemptions, move || {
        let (a, b) = (node("", Some("m")), node("m", None));
        let index = Arc::new(Index::new(vec![a.clone(), b.clone()]));
        let w = {
            let index = index.clone();
            thread::spawn(move || writer(&index, &a, &b))
        };
        let seen = scan(&index);
        w.join().unwrap();
        assert_eq!(seen, KEYS, "the scan skipped or repeated keys");
        assert_settled(&index);
    });
}

#[test]
fn loom_scan_reads_each_key_once_while_its_first_chunk_splits() {
    scan_against("split of the first chunk vs a scan", None, |index, a, _| {
        replace(
            index,
            std::slice::from_ref(a),
            &[node("", Some("f")), node("f", Some("m"))],
        );
    });
}

#[test]
fn loom_scan_reads_each_key_once_while_the_next_chunk_splits() {
    scan_against("split of the next chunk vs a scan", None, |index, _, b| {
        replace(
            index,
            std::slice::from_ref(b),
            &[node("m", Some("r")), node("r", None)],
        );
    });
}

/// A scan holding a stale index hops two generations of successors.
#[test]
fn loom_scan_reads_each_key_once_while_a_chunk_splits_twice() {
    scan_against(
        "split, then split of a part, vs a scan",
        None,
        |index, a, _| {
            let (a1, a2) = (node("", Some("f")), node("f", Some("m")));
            replace(index, std::slice::from_ref(a), &[a1.clone(), a2]);
            replace(index, &[a1], &[node("", Some("d")), node("d", Some("f"))]);
        },
    );
}

#[test]
fn loom_scan_reads_each_key_once_while_its_chunks_merge() {
    scan_against("merge of both chunks vs a scan", None, |index, a, b| {
        replace(index, &[a.clone(), b.clone()], &[node("", None)]);
    });
}

/// Two splits at once contend for the index: neither may lose the other's
/// change, and a scan still reads each key once.
#[test]
fn loom_concurrent_splits_keep_the_index_a_partition() {
    model("two splits vs a scan", PREEMPTION_BOUND, || {
        let (a, b) = (node("", Some("m")), node("m", None));
        let index = Arc::new(Index::new(vec![a.clone(), b.clone()]));
        let writers = [
            (a, [node("", Some("f")), node("f", Some("m"))]),
            (b, [node("m", Some("r")), node("r", None)]),
        ]
        .map(|(old, new)| {
            let index = index.clone();
            thread::spawn(move || replace(&index, &[old], &new))
        });
        let seen = scan(&index);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(seen, KEYS, "the scan skipped or repeated keys");
        assert_settled(&index);
    });
}
