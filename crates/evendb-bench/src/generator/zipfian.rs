//! YCSB's request generators, ported so that a run here draws the same
//! distribution as a YCSB run with the same parameters.
//!
//! * [`Zipfian`]: the algorithm of Gray et al., "Quickly generating
//!   billion-record synthetic databases" (SIGMOD'94), as YCSB implements it:
//!   item 0 is the most popular, zeta is extended incrementally when the item
//!   count grows (and, like YCSB, `eta` keeps using the construction-time
//!   item count).
//! * [`ScrambledZipfian`]: Zipfian over 10^10 items, then `fnvhash64 % n`, so
//!   popular items are scattered over the key space.
//! * [`SkewedLatest`]: `max - zipfian(max)`, skewed towards recent inserts.

use fastrand::Rng;

/// YCSB's default Zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// Number of items of the Zipfian behind YCSB's scrambled generator.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// zeta(10^10, 0.99), the constant YCSB ships to avoid summing 10^10 terms.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// Above this many terms, [`zeta`] switches from summation to the
/// Euler-Maclaurin expansion (relative error below 1e-12, see the tests), so
/// that a scrambled generator with a non-default theta starts instantly.
const ZETA_SUM_LIMIT: u64 = 1 << 26;

/// `sum_{i=st}^{n-1} 1 / (i+1)^theta + initial`: YCSB's incremental zeta.
pub fn zeta_incremental(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// `zeta(n, theta) = sum_{i=1}^{n} i^-theta`.
///
/// Summed exactly (as YCSB does) up to 2^26 terms; beyond that the first
/// 10^6 terms are summed and the tail comes from the Euler-Maclaurin formula
/// with three correction terms.
pub fn zeta(n: u64, theta: f64) -> f64 {
    if n <= ZETA_SUM_LIMIT {
        zeta_incremental(0, n, theta, 0.0)
    } else {
        zeta_expanded(n, theta)
    }
}

/// zeta(n, theta) from the first 10^6 terms plus the Euler-Maclaurin
/// expansion of the rest (for any `n`; exact summation when `n <= 10^6`).
pub fn zeta_expanded(n: u64, theta: f64) -> f64 {
    let m: u64 = 1_000_000;
    if n <= m {
        return zeta_incremental(0, n, theta, 0.0);
    }
    let head = zeta_incremental(0, m, theta, 0.0);
    // Tail sum_{i=m+1}^{n} f(i), f(x) = x^-theta.
    let f = |x: f64| x.powf(-theta);
    let integral = |x: f64| {
        if (theta - 1.0).abs() < 1e-15 {
            x.ln()
        } else {
            x.powf(1.0 - theta) / (1.0 - theta)
        }
    };
    // f'(x) = -theta x^(-theta-1); f'''(x) = -theta(theta+1)(theta+2) x^(-theta-3)
    let d1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let d3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let (a, b) = (m as f64, n as f64);
    let tail = integral(b) - integral(a) + (f(b) - f(a)) / 2.0 + (d1(b) - d1(a)) / 12.0
        - (d3(b) - d3(a)) / 720.0;
    head + tail
}

/// YCSB's `ZipfianGenerator`: values in `[base, base + items)`, `base` the
/// most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Zipfian over `[min, max]` with constant `theta`, zeta computed here.
    pub fn new(min: u64, max: u64, theta: f64) -> Self {
        Self::with_zetan(min, max, theta, zeta(max - min + 1, theta))
    }

    /// Zipfian over `[min, max]` with a precomputed `zetan` (YCSB's fourth
    /// constructor).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        assert!(max >= min, "empty Zipfian range");
        assert!(theta > 0.0 && theta < 1.0, "theta must be in (0, 1)");
        let items = max - min + 1;
        let zeta2theta = zeta_incremental(0, 2, theta, 0.0);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            count_for_zeta: items,
        }
    }

    /// Number of items given at construction.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// zeta(items, theta) as currently held.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Probability of the most popular value, `1 / zetan`.
    pub fn top_probability(&self) -> f64 {
        1.0 / self.zetan
    }

    /// Next value over the construction-time item count.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.next_with_count(self.items, rng)
    }

    /// Next value over `item_count` items; zeta grows incrementally when
    /// `item_count` grows (a smaller count keeps the larger zeta, as in YCSB
    /// without `allowitemcountdecrease`).
    pub fn next_with_count(&mut self, item_count: u64, rng: &mut Rng) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta_incremental(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = rng.f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

/// FNV-1a over the 8 little-endian bytes of `v`, then the absolute value of
/// the signed result (YCSB's `Utils.fnvhash64`).
pub fn fnvhash64(v: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut hash = OFFSET_BASIS;
    let mut val = v;
    for _ in 0..8 {
        hash ^= val & 0xff;
        hash = hash.wrapping_mul(PRIME);
        val >>= 8;
    }
    (hash as i64).unsigned_abs()
}

/// Which Zipfian sits behind the scramble.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum ZipfItems {
    /// YCSB (Java, go-ycsb): Zipfian over 10^10 items, hot key ≈ 1/26.47 = 3.78% at θ = 0.99.
    Ycsb,
    /// The C++ YCSB the paper used: Zipfian over the record count itself, so
    /// the hot key's share depends on the dataset size (4.87% for the paper's
    /// 64 GB dataset, Table 3).
    Dataset,
}

/// YCSB's `ScrambledZipfianGenerator` over `[min, max]`.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: u64,
    item_count: u64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    /// The YCSB generator: Zipfian over 10^10 items (using the shipped
    /// constant at θ = 0.99), hashed onto `[min, max]`.
    pub fn new(min: u64, max: u64, theta: f64) -> Self {
        Self::with_items(min, max, theta, ZipfItems::Ycsb)
    }

    /// As [`ScrambledZipfian::new`], choosing the Zipfian's item count.
    pub fn with_items(min: u64, max: u64, theta: f64, items: ZipfItems) -> Self {
        let item_count = max - min + 1;
        let inner = match items {
            ZipfItems::Ycsb if theta == ZIPFIAN_CONSTANT => {
                Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, theta, SCRAMBLED_ZETAN)
            }
            ZipfItems::Ycsb => Zipfian::with_zetan(
                0,
                SCRAMBLED_ITEM_COUNT,
                theta,
                zeta(SCRAMBLED_ITEM_COUNT + 1, theta),
            ),
            ZipfItems::Dataset => Zipfian::new(0, item_count - 1, theta),
        };
        ScrambledZipfian {
            min,
            item_count,
            inner,
        }
    }

    /// As [`ScrambledZipfian::with_items`] with a precomputed zeta for the
    /// dataset-sized Zipfian (used by tests to model datasets of 10^8 keys).
    pub fn dataset_with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let item_count = max - min + 1;
        ScrambledZipfian {
            min,
            item_count,
            inner: Zipfian::with_zetan(0, item_count - 1, theta, zetan),
        }
    }

    /// The underlying Zipfian's most popular rank probability.
    pub fn top_probability(&self) -> f64 {
        self.inner.top_probability()
    }

    /// Next value in `[min, max]`.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let r = self.inner.next(rng);
        self.min + fnvhash64(r) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: `max - zipfian(max)` where `max` is the
/// newest inserted item.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// Generator for a store whose newest item is `last` (so `last + 1` items).
    pub fn new(last: u64, theta: f64) -> Self {
        SkewedLatest {
            zipf: Zipfian::new(0, last.max(1) - 1, theta),
        }
    }

    /// Next value in `[0, last]`, skewed towards `last`.
    pub fn next(&mut self, last: u64, rng: &mut Rng) -> u64 {
        let back = self.zipf.next_with_count(last.max(1), rng);
        last.saturating_sub(back)
    }
}
