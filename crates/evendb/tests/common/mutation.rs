//! Mutations of a store's files for `tests/mutation.rs`: how each kind of
//! damage is drawn from a seed, applied to a copy of the store, and undone.

use std::collections::BTreeMap;
use std::path::Path;

/// A store's files, name to bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

pub const MANIFEST: &str = "MANIFEST";
pub const CHECKPOINT: &str = "CHECKPOINT";
/// Where the engine may move files it does not use instead of deleting them.
pub const LOST_FOUND: &str = "lost+found";

/// The stores mutations are made from: the store under test (A), another
/// store (B), and an older copy of A.
pub struct Sources {
    pub a: Files,
    pub b: Files,
    pub old: Files,
}

/// Every file of `dir` (not its folders), with its bytes.
pub fn read_files(dir: &Path) -> Files {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_type().expect("type").is_file())
        .map(|e| {
            let name = e.file_name().into_string().expect("utf-8 name");
            let bytes = std::fs::read(e.path()).expect("read");
            (name, bytes)
        })
        .collect()
}

/// Writes `files` into `dir`.
pub fn write_files(dir: &Path, files: &Files) {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
}

/// How many of `files` are of `class`.
pub fn count_class(files: &Files, class: Class) -> usize {
    files.keys().filter(|n| Class::of(n) == Some(class)).count()
}

/// The kinds of files a store has.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Class {
    Manifest,
    Checkpoint,
    Log,
    Table,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Manifest, Class::Checkpoint, Class::Log, Class::Table];

    pub fn of(name: &str) -> Option<Class> {
        match name {
            MANIFEST => Some(Class::Manifest),
            CHECKPOINT => Some(Class::Checkpoint),
            n if n.ends_with(".log") => Some(Class::Log),
            n if n.ends_with(".tbl") => Some(Class::Table),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Class::Manifest => "MANIFEST",
            Class::Checkpoint => "CHECKPOINT",
            Class::Log => "log",
            Class::Table => "table",
        }
    }
}

/// Every kind of mutation; mutation `i` is of kind `i % KINDS.len()`, so a
/// run covers all kinds evenly.
pub const KINDS: &[&str] = &[
    "bit-flip",
    "boundary-field",
    "truncate-to-zero",
    "truncate-random",
    "truncate-tail",
    "extend-zeros",
    "extend-random",
    "zero-range",
    "swap-ranges",
    "duplicate-range",
    "from-B",
    "from-older-same-name",
    "from-older-other",
    "older-manifest+checkpoint",
    "remove",
    "empty-checkpoint",
    "short-checkpoint",
    "add-older-file",
];

/// One mutation of A: the new contents of each file it touches (`None`:
/// removed).
pub struct Mutation {
    /// Its number in the run; with the seed, all it takes to replay it.
    pub index: usize,
    /// One of [`KINDS`].
    pub kind: &'static str,
    /// The kind of the file mutated.
    pub class: Class,
    /// The file mutated (for a report).
    pub file: String,
    /// Offsets, lengths and values, for a report.
    pub detail: String,
    pub writes: Vec<(String, Option<Vec<u8>>)>,
}

impl Mutation {
    /// One line to report it and replay it.
    pub fn describe(&self, seed: u64) -> String {
        format!(
            "seed {seed} mutation {} {} of {} ({}): replay with EVENDB_SEED={seed} \
             EVENDB_MUTATION={} cargo test -p evendb --test mutation -- --nocapture",
            self.index, self.kind, self.file, self.detail, self.index
        )
    }
}

/// The random source of mutation `index` of a run, independent of the
/// others.
pub fn mutation_rng(seed: u64, index: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A random file of `files` of one of `classes` (chosen uniformly, so MANIFEST
/// and CHECKPOINT get as many mutations as all logs), passing `keep`.
pub fn pick(
    rng: &mut fastrand::Rng,
    files: &Files,
    classes: &[Class],
    keep: impl Fn(&str, &[u8]) -> bool,
) -> Option<String> {
    let mut classes = classes.to_vec();
    rng.shuffle(&mut classes);
    classes.into_iter().find_map(|c| {
        let names: Vec<&String> = files
            .iter()
            .filter(|(n, b)| Class::of(n) == Some(c) && keep(n, b))
            .map(|(n, _)| n)
            .collect();
        (!names.is_empty()).then(|| names[rng.usize(..names.len())].clone())
    })
}

/// An offset in a file of `class` of `len > 0` bytes, biased to where its
/// fields are: CHECKPOINT slots, MANIFEST header, table footer, log tail.
pub fn offset(rng: &mut fastrand::Rng, class: Class, len: usize) -> usize {
    let near = |rng: &mut fastrand::Rng, lo: usize, n: usize| (lo + rng.usize(..n)).min(len - 1);
    match (class, rng.u8(..10)) {
        (Class::Checkpoint, 0..=3) => near(rng, 0, 44),
        (Class::Checkpoint, 4..=7) => near(rng, 4096, 44),
        (Class::Manifest, 0..=2) => near(rng, 0, 16),
        (Class::Table, 0..=2) => near(rng, len.saturating_sub(64), 64),
        (Class::Log, 0..=1) => near(rng, len.saturating_sub(48), 48),
        (Class::Log, 2) => near(rng, 0, 36),
        _ => rng.usize(..len),
    }
}

/// A value at an edge of a `width`-byte field (4 or 8), little-endian.
pub fn boundary_value(rng: &mut fastrand::Rng, width: usize) -> Vec<u8> {
    if width == 4 {
        const V: [u32; 9] = [
            0,
            1,
            0x7f,
            0x80,
            0xff,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fffe,
            u32::MAX,
        ];
        V[rng.usize(..V.len())].to_le_bytes().to_vec()
    } else {
        const V: [u64; 8] = [
            0,
            1,
            u32::MAX as u64,
            1 << 32,
            i64::MAX as u64,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        V[rng.usize(..V.len())].to_le_bytes().to_vec()
    }
}

/// Mutation `index` of the run with `seed`, made from the files of `bases`.
pub fn generate(bases: &Sources, seed: u64, index: usize) -> Mutation {
    let mut rng = mutation_rng(seed, index);
    let kind = KINDS[index % KINDS.len()];
    let a = &bases.a;
    let non_empty = |_: &str, b: &[u8]| !b.is_empty();
    let any = |_: &str, _: &[u8]| true;
    let mut m = Mutation {
        index,
        kind,
        class: Class::Manifest,
        file: String::new(),
        detail: String::new(),
        writes: Vec::new(),
    };
    let target = |m: &mut Mutation, name: String| -> Vec<u8> {
        m.class = Class::of(&name).expect("engine file");
        m.file = name.clone();
        a[&name].clone()
    };
    match kind {
        "bit-flip" | "boundary-field" | "truncate-to-zero" | "truncate-random"
        | "truncate-tail" | "zero-range" | "swap-ranges" | "duplicate-range" => {
            let min = if kind == "swap-ranges" { 2 } else { 1 };
            let name = pick(&mut rng, a, &Class::ALL, |_, b| b.len() >= min).expect("file");
            let mut bytes = target(&mut m, name);
            let len = bytes.len();
            let class = m.class;
            match kind {
                "bit-flip" => {
                    let mut at = Vec::new();
                    for _ in 0..rng.usize(1..=3) {
                        let (o, bit) = (offset(&mut rng, class, len), rng.u8(..8));
                        bytes[o] ^= 1 << bit;
                        at.push(format!("{o}.{bit}"));
                    }
                    m.detail = format!("bits at {} of {len} bytes", at.join(", "));
                }
                "boundary-field" => {
                    let width = if rng.bool() { 4 } else { 8 };
                    let o = offset(&mut rng, class, len) / 4 * 4;
                    let v = boundary_value(&mut rng, width);
                    let n = width.min(len - o);
                    bytes[o..o + n].copy_from_slice(&v[..n]);
                    m.detail = format!("u{} {:02x?} at offset {o} of {len}", width * 8, v);
                }
                "truncate-to-zero" => {
                    bytes.clear();
                    m.detail = format!("to 0 of {len} bytes");
                }
                "truncate-random" => {
                    let to = rng.usize(..len);
                    bytes.truncate(to);
                    m.detail = format!("to {to} of {len} bytes");
                }
                "truncate-tail" => {
                    let cut = rng.usize(1..=len.min(48));
                    bytes.truncate(len - cut);
                    m.detail = format!("last {cut} of {len} bytes cut (at offset {})", len - cut);
                }
                "zero-range" => {
                    let o = offset(&mut rng, class, len);
                    let most = if rng.bool() { 16 } else { 512 };
                    let n = rng.usize(1..=(len - o).min(most));
                    bytes[o..o + n].fill(0);
                    m.detail = format!("{n} bytes zeroed at offset {o} of {len}");
                }
                "swap-ranges" => {
                    let n = rng.usize(1..=(len / 2).min(256));
                    let x = rng.usize(..=len - 2 * n);
                    let y = rng.usize(x + n..=len - n);
                    let first = bytes[x..x + n].to_vec();
                    bytes.copy_within(y..y + n, x);
                    bytes[y..y + n].copy_from_slice(&first);
                    m.detail = format!("{n} bytes at offsets {x} and {y} of {len} swapped");
                }
                _ => {
                    let o = offset(&mut rng, class, len);
                    let n = rng.usize(1..=(len - o).min(256));
                    let range = bytes[o..o + n].to_vec();
                    if rng.bool() {
                        bytes.splice(o + n..o + n, range);
                        m.detail =
                            format!("{n} bytes at offset {o} of {len} repeated after themselves");
                    } else {
                        let to = rng.usize(..=len - n);
                        bytes[to..to + n].copy_from_slice(&range);
                        m.detail =
                            format!("{n} bytes at offset {o} of {len} copied over offset {to}");
                    }
                }
            }
            m.writes.push((m.file.clone(), Some(bytes)));
        }
        "extend-zeros" | "extend-random" => {
            let name = pick(&mut rng, a, &Class::ALL, any).expect("file");
            let mut bytes = target(&mut m, name);
            let len = bytes.len();
            let n = match rng.u8(..4) {
                0 => rng.usize(1..8),
                1 => [36, 40, 44, 64, 4096][rng.usize(..5)],
                _ => rng.usize(1..=len.max(64)),
            };
            if kind == "extend-zeros" {
                bytes.resize(len + n, 0);
            } else {
                bytes.extend((0..n).map(|_| rng.u8(..)));
            }
            m.detail = format!("{n} bytes appended to {len}");
            m.writes.push((m.file.clone(), Some(bytes)));
        }
        "from-B" => {
            let name = pick(&mut rng, a, &Class::ALL, any).expect("file");
            target(&mut m, name);
            // Half the time B's file of the same name, whose checksums are
            // seeded with the same file number.
            let from = if bases.b.contains_key(&m.file) && rng.bool() {
                m.file.clone()
            } else {
                pick(&mut rng, &bases.b, &[m.class], any).expect("B has that kind")
            };
            m.detail = format!("replaced by B's {from}");
            m.writes
                .push((m.file.clone(), Some(bases.b[&from].clone())));
        }
        "from-older-same-name" => {
            let differs = |n: &str, b: &[u8]| bases.old.get(n).is_some_and(|o| o != b);
            let name = pick(&mut rng, a, &Class::ALL, differs).expect("a file changed since");
            target(&mut m, name);
            m.detail = "replaced by its older version".into();
            m.writes
                .push((m.file.clone(), Some(bases.old[&m.file].clone())));
        }
        "from-older-other" => {
            let name = pick(&mut rng, a, &[Class::Log, Class::Table], non_empty).expect("file");
            target(&mut m, name);
            let file = m.file.clone();
            let from = pick(&mut rng, &bases.old, &[m.class], |n, _| n != file)
                .expect("older copy has another");
            m.detail = format!("replaced by the older copy's {from}");
            m.writes
                .push((m.file.clone(), Some(bases.old[&from].clone())));
        }
        "older-manifest+checkpoint" => {
            target(&mut m, MANIFEST.into());
            m.file = "MANIFEST+CHECKPOINT".into();
            m.detail = "both replaced by the older copy's".into();
            for n in [MANIFEST, CHECKPOINT] {
                m.writes.push((n.into(), Some(bases.old[n].clone())));
            }
        }
        "remove" => {
            let name = pick(&mut rng, a, &Class::ALL, any).expect("file");
            target(&mut m, name);
            m.detail = "removed".into();
            m.writes.push((m.file.clone(), None));
        }
        "empty-checkpoint" => {
            target(&mut m, CHECKPOINT.into());
            m.detail = "0 bytes".into();
            m.writes.push((m.file.clone(), Some(Vec::new())));
        }
        "short-checkpoint" => {
            let bytes = target(&mut m, CHECKPOINT.into());
            const CUTS: [usize; 12] = [1, 8, 16, 40, 43, 44, 45, 100, 4095, 4096, 4100, 4139];
            let to = if rng.bool() {
                CUTS[rng.usize(..CUTS.len())]
            } else {
                rng.usize(1..bytes.len())
            }
            .min(bytes.len() - 1);
            m.detail = format!("cut to {to} of {} bytes", bytes.len());
            m.writes.push((m.file.clone(), Some(bytes[..to].to_vec())));
        }
        "add-older-file" => {
            let name = pick(&mut rng, &bases.old, &[Class::Table, Class::Log], |n, _| {
                !a.contains_key(n)
            })
            .expect("a file of the older copy that A no longer has");
            m.class = Class::of(&name).expect("engine file");
            m.file = name.clone();
            m.detail = "the older copy's file added back (unlisted)".into();
            m.writes
                .push((name.clone(), Some(bases.old[&name].clone())));
        }
        other => unreachable!("{other}"),
    }
    m
}

/// Applies `m` to the copy of A in `dir`.
pub fn apply(dir: &Path, m: &Mutation) {
    for (name, contents) in &m.writes {
        let path = dir.join(name);
        match contents {
            Some(b) => std::fs::write(&path, b).expect("write mutated file"),
            None => std::fs::remove_file(&path).expect("remove file"),
        }
    }
}

/// Undoes `m` in `dir` after an open of the mutated store, touching nothing
/// else the open changed: files in `lost+found/` go back (unless the store
/// has a file of that name again), a MANIFEST or CHECKPOINT the open
/// rewrote is kept, every other mutated file gets its pristine bytes back,
/// and files the mutation added are removed.
pub fn undo(dir: &Path, m: &Mutation, pristine: &Files) -> Vec<String> {
    let mut notes = Vec::new();
    let lost = dir.join(LOST_FOUND);
    if lost.is_dir() {
        let mut stack = vec![lost.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("list lost+found") {
                let e = e.expect("entry");
                if e.file_type().expect("type").is_dir() {
                    stack.push(e.path());
                    continue;
                }
                let back = dir.join(e.file_name());
                if back.exists() {
                    notes.push(format!("{} left in lost+found", e.path().display()));
                } else {
                    std::fs::rename(e.path(), &back).expect("move back from lost+found");
                    notes.push(format!("{} moved back", e.file_name().to_string_lossy()));
                }
            }
        }
    }
    for (name, mutated) in &m.writes {
        let path = dir.join(name);
        let now = std::fs::read(&path).ok();
        if name == MANIFEST || name == CHECKPOINT {
            let rewritten = now.is_some() && now.as_ref() != mutated.as_ref();
            if rewritten {
                notes.push(format!("{name} rewritten by the open, kept"));
                continue;
            }
        }
        match pristine.get(name) {
            Some(b) => std::fs::write(&path, b).expect("restore file"),
            None if now.is_some() => std::fs::remove_file(&path).expect("remove added file"),
            None => {}
        }
    }
    notes
}
