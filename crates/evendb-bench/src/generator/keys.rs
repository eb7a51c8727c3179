//! Record keys and the four key distributions of the paper's §5.3.
//!
//! Record `i` (0-based, in insertion order) gets the 32-bit integer
//! `i * stride`, `stride = floor(2^32 / capacity)`, where the capacity is the
//! loaded records plus room for the run's inserts, so the records spread
//! over the 32-bit space. The key is a 4-byte prefix followed by the integer
//! in zero-padded decimal: byte order equals numeric order.
//!
//! Zipf-composite splits the *loaded* records into 2^14 equal, contiguous
//! slices: the 14 most significant bits of the loaded key range (of the
//! integer itself when the store holds no room for inserts). Defining the
//! prefix over the loaded range keeps the distribution the same however much
//! insert headroom a run needs; records inserted later are appended after
//! the loaded range, as YCSB's ordered inserts are.

use fastrand::Rng;

use super::zipfian::{ScrambledZipfian, SkewedLatest, ZipfItems, Zipfian};

/// Bits of the key drawn Zipfian by Zipf-composite.
pub const COMPOSITE_PREFIX_BITS: u32 = 14;

/// How a request picks its record.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// YCSB's scrambled Zipfian: popular keys scattered over the key space.
    ZipfSimple,
    /// The key's 14 most significant bits Zipfian, the rest uniform.
    ZipfComposite,
    /// YCSB's skewed-latest: close to the newest insert is popular.
    Latest,
    /// Every record equally likely.
    Uniform,
}

impl Distribution {
    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::ZipfSimple => "zipf-simple",
            Distribution::ZipfComposite => "zipf-composite",
            Distribution::Latest => "latest",
            Distribution::Uniform => "uniform",
        }
    }
}

/// The mapping from record numbers to keys.
#[derive(Clone, Debug)]
pub struct KeySpace {
    prefix: [u8; 4],
    key_size: usize,
    capacity: u64,
    stride: u64,
}

impl KeySpace {
    /// Smallest key: 4 prefix bytes and the 10 decimal digits of a u32.
    pub const MIN_KEY_SIZE: usize = 14;

    /// A key space able to hold `capacity` records with keys of `key_size`
    /// bytes (at least 14; longer keys get more leading zeros).
    pub fn new(capacity: u64, key_size: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            key_size >= Self::MIN_KEY_SIZE,
            "key size must be at least {} bytes",
            Self::MIN_KEY_SIZE
        );
        anyhow::ensure!(capacity >= 1, "the key space needs at least one record");
        anyhow::ensure!(capacity <= 1 << 32, "at most 2^32 records fit 32-bit keys");
        Ok(KeySpace {
            prefix: *b"user",
            key_size,
            capacity,
            stride: (1u64 << 32) / capacity,
        })
    }

    /// Records the space can number.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes per key.
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    /// The 32-bit integer of record `index`.
    pub fn integer(&self, index: u64) -> u32 {
        (index.min(self.capacity - 1) * self.stride) as u32
    }

    /// Writes the key of record `index` into `out` (cleared first).
    pub fn key_into(&self, index: u64, out: &mut Vec<u8>) {
        use std::io::Write;
        out.clear();
        out.extend_from_slice(&self.prefix);
        let digits = self.key_size - self.prefix.len();
        write!(out, "{:0width$}", self.integer(index), width = digits)
            .expect("writing to a Vec cannot fail");
    }

    /// The key of record `index`.
    pub fn key(&self, index: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.key_size);
        self.key_into(index, &mut out);
        out
    }
}

/// Records of the 14-bit prefix `p` among `loaded` records: `[lo, hi)`.
pub fn composite_range(loaded: u64, p: u64) -> (u64, u64) {
    let slices = 1u128 << COMPOSITE_PREFIX_BITS;
    let bound = |q: u64| (q as u128 * loaded as u128).div_ceil(slices) as u64;
    (bound(p), bound(p + 1))
}

/// A bijection of the 14-bit prefix ranks, so that popular prefixes are
/// scattered over the key space instead of sitting side by side at its start
/// (like popular app ids are spread over the id space).
pub fn scatter_prefix(rank: u64) -> u64 {
    const MASK: u64 = (1 << COMPOSITE_PREFIX_BITS) - 1;
    let mut x = (rank ^ 0x1555) & MASK;
    x = x.wrapping_mul(5393) & MASK;
    x ^= x >> 7;
    x.wrapping_mul(2957) & MASK
}

/// Per-thread state that draws record numbers from a [`Distribution`].
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Scrambled Zipfian over the key space's capacity (YCSB sizes it to the
    /// records plus the expected inserts and redraws beyond the newest).
    Simple(ScrambledZipfian),
    /// Zipfian 14-bit prefix, uniform record within it.
    Composite { prefixes: Zipfian, loaded: u64 },
    /// Skewed towards the newest record.
    Latest(SkewedLatest),
    /// Uniform over existing records.
    Uniform,
}

impl KeyChooser {
    /// A chooser over `space` with Zipfian constant `theta`; `inserted` is
    /// the current number of records (the loaded range for Zipf-composite).
    pub fn new(
        dist: Distribution,
        space: &KeySpace,
        theta: f64,
        zipf_items: ZipfItems,
        inserted: u64,
    ) -> Self {
        match dist {
            Distribution::ZipfSimple => KeyChooser::Simple(ScrambledZipfian::with_items(
                0,
                space.capacity() - 1,
                theta,
                zipf_items,
            )),
            Distribution::ZipfComposite => KeyChooser::Composite {
                prefixes: Zipfian::new(0, (1 << COMPOSITE_PREFIX_BITS) - 1, theta),
                loaded: inserted,
            },
            Distribution::Latest => {
                KeyChooser::Latest(SkewedLatest::new(inserted.saturating_sub(1), theta))
            }
            Distribution::Uniform => KeyChooser::Uniform,
        }
    }

    /// Next record number below `inserted` (the count of existing records).
    pub fn next(&mut self, inserted: u64, rng: &mut Rng) -> u64 {
        debug_assert!(inserted > 0);
        match self {
            KeyChooser::Simple(z) => loop {
                let v = z.next(rng);
                if v < inserted {
                    return v;
                }
            },
            KeyChooser::Composite { prefixes, loaded } => {
                // Empty prefixes (fewer than 2^14 records) are redrawn; after
                // many misses (a tiny store) fall back to uniform so the loop ends.
                for _ in 0..10_000 {
                    let p = scatter_prefix(prefixes.next(rng));
                    let (lo, hi) = composite_range(*loaded, p);
                    let hi = hi.min(inserted);
                    if lo < hi {
                        return rng.u64(lo..hi);
                    }
                }
                rng.u64(0..inserted)
            }
            KeyChooser::Latest(l) => l.next(inserted - 1, rng),
            KeyChooser::Uniform => rng.u64(0..inserted),
        }
    }
}
