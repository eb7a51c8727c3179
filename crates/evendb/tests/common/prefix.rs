//! The prefix checker of the crash tests: with the engine's versions as
//! the commit order, a recovered store must equal exactly the writes up to
//! some point, at or after what was acknowledged durable.

use evendb::Db;
use std::collections::BTreeMap;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One acknowledged write and the version it got.
#[derive(Debug, Clone)]
pub struct Write {
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
    pub version: u64,
}

pub fn apply(state: &mut Model, w: &Write) {
    match &w.value {
        Some(v) => state.insert(w.key.clone(), v.clone()),
        None => state.remove(&w.key),
    };
}

/// What ran since the last recovery, for checking the next one.
#[derive(Debug, Default)]
pub struct Pending {
    pub base: Model,
    pub writes: Vec<Write>,
    /// Writes acknowledged durable: before the last successful flush
    /// (`Buffered`), or every acknowledged write (`Sync`).
    pub durable: usize,
    /// The first write or batch that failed (in `Sync` mode it may have
    /// landed, whole).
    pub failed: Vec<Write>,
}

impl Pending {
    pub fn new(base: Model) -> Self {
        Pending {
            base,
            ..Pending::default()
        }
    }

    /// Writes `key` (`None`: deletes it) through `db` and records the
    /// write: acknowledged (durable at once in `Sync` mode), or, if it is
    /// the first to fail, as the failed write. Returns whether it was
    /// acknowledged.
    pub fn write(&mut self, db: &Db, key: Vec<u8>, value: Option<Vec<u8>>, sync: bool) -> bool {
        match db.write_stamped(&key, value.as_deref()) {
            Ok((version, _)) => {
                self.writes.push(Write {
                    key,
                    value,
                    version,
                });
                if sync {
                    self.durable = self.writes.len();
                }
                true
            }
            Err(_) => {
                if self.failed.is_empty() {
                    self.failed = vec![Write {
                        key,
                        value,
                        version: u64::MAX,
                    }];
                }
                false
            }
        }
    }

    /// Deletes `[lo, hi)` through `db` and records it as deletes, all of
    /// one version, of the keys the range holds at that point; or, if it
    /// is the first write to fail, as the failed writes. Returns whether it
    /// was acknowledged.
    pub fn delete_range(&mut self, db: &Db, lo: &[u8], hi: &[u8], sync: bool) -> bool {
        let mut state = self.base.clone();
        for w in &self.writes {
            apply(&mut state, w);
        }
        let result = db.delete_range_stamped(lo..hi);
        let version = *result.as_ref().unwrap_or(&u64::MAX);
        let deletes = state.range(lo.to_vec()..hi.to_vec()).map(|(k, _)| Write {
            key: k.clone(),
            value: None,
            version,
        });
        match result {
            Ok(_) => {
                self.writes.extend(deletes);
                if sync {
                    self.durable = self.writes.len();
                }
                true
            }
            Err(_) => {
                if self.failed.is_empty() {
                    self.failed = deletes.collect();
                }
                false
            }
        }
    }

    /// Writes `batch` through `db` and records its operations as writes
    /// of one version (so no cut falls inside it), or, if it is the first
    /// to fail, as the failed writes. Returns whether it was acknowledged.
    pub fn write_batch(&mut self, db: &Db, batch: &evendb::WriteBatch, sync: bool) -> bool {
        let result = db.write_stamped_batch(batch);
        let version = *result.as_ref().unwrap_or(&u64::MAX);
        let ops = batch.iter().map(|(k, v)| Write {
            key: k.to_vec(),
            value: v.map(<[u8]>::to_vec),
            version,
        });
        match result {
            Ok(_) => {
                self.writes.extend(ops);
                if sync {
                    self.durable = self.writes.len();
                }
                true
            }
            Err(_) => {
                if self.failed.is_empty() {
                    self.failed = ops.collect();
                }
                false
            }
        }
    }
}

/// Checks a recovered state; panics with `ctx` on a lost write or a state
/// that is no prefix. Returns true if it recovered past `durable` (a
/// checkpoint whose record landed although its call failed).
pub fn check(got: &Model, p: &Pending, sync: bool, ctx: &str) -> bool {
    let mut state = p.base.clone();
    if sync {
        for w in &p.writes {
            apply(&mut state, w);
        }
        let mut allowed = vec![state.clone()];
        if !p.failed.is_empty() {
            for f in &p.failed {
                apply(&mut state, f);
            }
            allowed.push(state);
        }
        assert!(
            allowed.iter().any(|a| a == got),
            "{ctx}: recovered state is not every acknowledged write (plus maybe the whole failed write or batch)"
        );
        return false;
    }
    // Buffered: a cut between two versions, at or after `durable`.
    for (i, w) in p.writes.iter().enumerate() {
        let boundary = i == 0 || p.writes[i - 1].version < w.version;
        if boundary && i >= p.durable && *got == state {
            return i > p.durable;
        }
        apply(&mut state, w);
    }
    if *got == state {
        return p.writes.len() > p.durable;
    }
    // Diagnose: was it a prefix below the checkpoint (lost), or no prefix?
    let mut state = p.base.clone();
    let mut below = None;
    for (i, w) in p.writes.iter().enumerate() {
        if *got == state {
            below = Some(i);
        }
        apply(&mut state, w);
    }
    match below {
        Some(i) => panic!(
            "{ctx}: lost acknowledged writes: recovered the first {i} of {} writes, {} were checkpointed",
            p.writes.len(),
            p.durable
        ),
        None => {
            let differ: Vec<_> = got
                .keys()
                .chain(state.keys())
                .filter(|k| got.get(*k) != state.get(*k))
                .take(3)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            panic!("{ctx}: recovered state is no prefix of the writes (e.g. keys {differ:?})")
        }
    }
}
