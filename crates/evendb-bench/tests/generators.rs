//! The request generators reproduce YCSB's and the paper's distributions.

use std::collections::HashMap;

use evendb_bench::generator::keys::{composite_range, scatter_prefix, COMPOSITE_PREFIX_BITS};
use evendb_bench::generator::zipfian::{
    zeta, zeta_expanded, zeta_incremental, SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETAN,
};
use evendb_bench::generator::{
    AppPopularity, Distribution, KeyChooser, KeySpace, ScrambledZipfian, SkewedLatest, ZipfItems,
    Zipfian,
};
use fastrand::Rng;

/// Records of the paper's 64 GB data set of 800-byte values (80M), the size
/// Figure 10 and Table 3 refer to. (Counting the 14-byte keys too gives 78.6M
/// records, whose θ = 0.95 share, 3.310%, no longer rounds to the table's.)
const PAPER_64GB_RECORDS: u64 = 64_000_000_000 / 800;

fn top_frequency(samples: impl Iterator<Item = u64>) -> (u64, f64) {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut n = 0u64;
    for s in samples {
        *counts.entry(s).or_default() += 1;
        n += 1;
    }
    let (k, c) = counts.into_iter().max_by_key(|&(_, c)| c).expect("samples");
    (k, c as f64 / n as f64)
}

#[test]
fn euler_maclaurin_zeta_matches_summation_and_ycsb_constant() {
    for theta in [0.8, 0.99] {
        let n = 3_000_000;
        let summed = zeta_incremental(0, n, theta, 0.0);
        let expanded = zeta_expanded(n, theta);
        assert!(
            (summed - expanded).abs() / summed < 1e-11,
            "θ={theta}: {summed} vs {expanded}"
        );
    }
    let z = zeta(SCRAMBLED_ITEM_COUNT, 0.99);
    assert!(
        (z - SCRAMBLED_ZETAN).abs() < 1e-9 * SCRAMBLED_ZETAN,
        "zeta(10^10, 0.99) = {z}"
    );
}

/// Table 3, Zipf-simple row: the hot key's share is 1/zeta(n, θ) for the C++
/// YCSB the paper used (Zipfian over the n records, then FNV scramble). The
/// table prints two decimals, so each value must round to it: we allow 0.006
/// percentage points (0.005 of rounding plus float slack).
#[test]
fn zipf_simple_hot_key_matches_table_3_for_every_theta() {
    let table = [
        (0.99, 4.87),
        (0.95, 3.30),
        (0.90, 1.91),
        (0.85, 1.04),
        (0.80, 0.54),
    ];
    for (theta, percent) in table {
        let g = ScrambledZipfian::dataset_with_zetan(
            0,
            PAPER_64GB_RECORDS - 1,
            theta,
            zeta(PAPER_64GB_RECORDS, theta),
        );
        let got = 100.0 * g.top_probability();
        assert!(
            (got - percent).abs() < 0.006,
            "θ={theta}: hot key {got:.4}% vs Table 3's {percent}%"
        );
    }
}

/// The sampled hot key agrees with the analytic share: 400k draws put the
/// standard error of a 4.87% frequency at 0.034 points; we allow 0.15 (4.4σ).
#[test]
fn zipf_simple_sampled_hot_key_frequency_is_4_87_percent() {
    let n = PAPER_64GB_RECORDS;
    let mut g = ScrambledZipfian::dataset_with_zetan(0, n - 1, 0.99, zeta(n, 0.99));
    let mut rng = Rng::with_seed(7);
    let (_, f) = top_frequency((0..400_000).map(|_| g.next(&mut rng)));
    assert!(
        (100.0 * f - 4.87).abs() < 0.15,
        "sampled hot key {:.3}%",
        100.0 * f
    );
}

/// YCSB's own (Java) generator draws from 10^10 items whatever the data set
/// size, so its hot key is 1/26.469 = 3.78%.
#[test]
fn ycsb_scrambled_zipfian_hot_key_is_one_over_zetan() {
    let mut g = ScrambledZipfian::new(0, 999_999, 0.99);
    assert!((g.top_probability() - 1.0 / SCRAMBLED_ZETAN).abs() < 1e-15);
    let mut rng = Rng::with_seed(11);
    let (_, f) = top_frequency((0..400_000).map(|_| g.next(&mut rng)));
    assert!(
        (100.0 * f - 3.778).abs() < 0.15,
        "sampled hot key {:.3}%",
        100.0 * f
    );
}

#[test]
fn scrambling_spreads_popular_keys_over_the_key_space() {
    let n = 1_000_000u64;
    let mut rng = Rng::with_seed(3);
    let mut scrambled = ScrambledZipfian::new(0, n - 1, 0.99);
    let mut plain = Zipfian::new(0, n - 1, 0.99);
    let top = |samples: Vec<u64>| -> Vec<u64> {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for s in samples {
            *counts.entry(s).or_default() += 1;
        }
        let mut v: Vec<(u64, u64)> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter().take(100).map(|(k, _)| k).collect()
    };
    let buckets = |keys: &[u64]| {
        keys.iter()
            .map(|k| k * 64 / n)
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    let hot_scrambled = top((0..300_000).map(|_| scrambled.next(&mut rng)).collect());
    let hot_plain = top((0..300_000).map(|_| plain.next(&mut rng)).collect());
    // 100 random keys cover ~50 of 64 buckets; unscrambled they all sit in bucket 0.
    assert!(
        buckets(&hot_scrambled) >= 35,
        "scrambled hot keys in {} buckets",
        buckets(&hot_scrambled)
    );
    assert_eq!(buckets(&hot_plain), 1);
}

/// Table 3, Zipf-composite: the hot key's share is P(hot 14-bit prefix) /
/// records per prefix. P(hot prefix) = 1/zeta(2^14, θ) = 9.29% at θ = 0.99;
/// the table's 0.013% is reached with ~715 records per prefix (11.7M
/// records). The table's composite row does not follow one data set size
/// under this definition (see the crate README), so we check the definition
/// itself at that size. At 300k draws the hot prefix's sampled share has a
/// standard error of 0.053 points: we allow 0.3 (5.6σ), which bounds the
/// mean key share to within 0.0005 points of the analytic value.
#[test]
fn zipf_composite_hot_key_share_is_hot_prefix_share_over_prefix_size() {
    let records = 715 << COMPOSITE_PREFIX_BITS;
    let space = KeySpace::new(records, 14).unwrap();
    let mut chooser = KeyChooser::new(
        Distribution::ZipfComposite,
        &space,
        0.99,
        ZipfItems::Ycsb,
        records,
    );
    let prefix_p = 1.0 / zeta(1 << COMPOSITE_PREFIX_BITS, 0.99);
    assert!(
        (100.0 * prefix_p - 9.29).abs() < 0.01,
        "hot prefix {:.3}%",
        100.0 * prefix_p
    );
    let hot = scatter_prefix(0);
    let (lo, hi) = composite_range(records, hot);
    assert_eq!(hi - lo, 715);
    let analytic = 100.0 * prefix_p / (hi - lo) as f64;
    assert!((analytic - 0.013).abs() < 0.001, "hot key {analytic:.4}%");

    let mut rng = Rng::with_seed(5);
    let draws = 300_000;
    let in_hot = (0..draws)
        .map(|_| chooser.next(records, &mut rng))
        .filter(|i| (lo..hi).contains(i))
        .count();
    let share = 100.0 * in_hot as f64 / draws as f64;
    assert!(
        (share - 100.0 * prefix_p).abs() < 0.3,
        "hot prefix sampled {share:.3}%"
    );
    let mean_key = share / (hi - lo) as f64;
    assert!(
        (mean_key - 0.013).abs() < 0.001,
        "mean hot-prefix key {mean_key:.4}%"
    );
}

#[test]
fn composite_prefixes_are_contiguous_in_key_order() {
    // Room for inserts must not move the prefixes of the loaded records.
    let space = KeySpace::new(1_500_000, 14).unwrap();
    let (lo, hi) = composite_range(1_000_000, scatter_prefix(0));
    let prefix = |i: u64| i * (1 << COMPOSITE_PREFIX_BITS) / 1_000_000;
    assert!(
        (lo..hi).all(|i| prefix(i) == prefix(lo))
            && prefix(lo - 1) != prefix(lo)
            && prefix(hi) != prefix(lo)
    );
    assert!(hi > lo + 1);
    let keys: Vec<Vec<u8>> = (lo..hi).map(|i| space.key(i)).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "keys of one prefix are in byte order"
    );
    // No record outside the range sorts between its first and last key.
    assert!(space.key(lo - 1) < keys[0] && space.key(hi) > keys[keys.len() - 1]);
    assert_eq!(keys[0].len(), 14);
    assert!(keys[0].starts_with(b"user"));
}

#[test]
fn record_keys_sort_like_their_numbers() {
    let space = KeySpace::new(5_000_000, 14).unwrap();
    let mut rng = Rng::with_seed(9);
    for _ in 0..10_000 {
        let (a, b) = (rng.u64(0..5_000_000), rng.u64(0..5_000_000));
        assert_eq!(a.cmp(&b), space.key(a).cmp(&space.key(b)), "{a} vs {b}");
    }
}

#[test]
fn scatter_prefix_is_a_permutation() {
    let mut seen = vec![false; 1 << COMPOSITE_PREFIX_BITS];
    for r in 0..1u64 << COMPOSITE_PREFIX_BITS {
        let p = scatter_prefix(r) as usize;
        assert!(!seen[p], "prefix {p} hit twice");
        seen[p] = true;
    }
}

#[test]
fn incremental_zeta_equals_zeta_from_scratch() {
    let mut z = Zipfian::new(0, 999, 0.99);
    let mut rng = Rng::with_seed(1);
    for _ in 0..10 {
        assert!(z.next_with_count(2000, &mut rng) < 2000);
    }
    assert!((z.zetan() - zeta(2000, 0.99)).abs() < 1e-12);
}

#[test]
fn skewed_latest_favours_the_newest_record() {
    let mut g = SkewedLatest::new(99_999, 0.99);
    let mut rng = Rng::with_seed(2);
    let samples: Vec<u64> = (0..100_000).map(|_| g.next(99_999, &mut rng)).collect();
    assert!(samples.iter().all(|&s| s <= 99_999));
    let (top, f) = top_frequency(samples.iter().copied());
    assert_eq!(top, 99_999);
    assert!(f > 0.05, "newest record drawn {:.2}%", 100.0 * f);
    let recent = samples.iter().filter(|&&s| s >= 99_000).count() as f64 / samples.len() as f64;
    assert!(
        recent > 0.5,
        "last 1% of records drawn {:.1}%",
        100.0 * recent
    );
}

/// The trace's shape: 0.1% of apps ≈ 70% of events, 1% ≈ 94%. One million
/// events put the standard error of those shares under 0.05 points; we allow
/// 1 point.
#[test]
fn analytics_stream_has_the_production_traces_heavy_tail() {
    let mut pop = AppPopularity::new(60_000).unwrap();
    let mut rng = Rng::with_seed(4);
    let mut counts = vec![0u64; 60_000];
    let events = 1_000_000;
    for _ in 0..events {
        counts[pop.next_app(&mut rng) as usize] += 1;
    }
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let share = |apps: usize| 100.0 * counts[..apps].iter().sum::<u64>() as f64 / events as f64;
    assert!(
        (share(60) - 70.0).abs() < 1.0,
        "top 0.1% of apps: {:.2}%",
        share(60)
    );
    assert!(
        (share(600) - 94.0).abs() < 1.0,
        "top 1% of apps: {:.2}%",
        share(600)
    );
    let active = counts.iter().filter(|&&c| c > 0).count();
    assert!(active > 20_000, "only {active} apps produced events");
}

#[test]
fn stream_keys_sort_by_app_then_time_then_seq() {
    use evendb_bench::generator::Stream;
    let s = Stream::default();
    assert!(s.key(1, 5) < s.key(1, 6));
    assert!(s.key(1, 1_000_000) < s.key(2, 0));
    assert!(Stream::key_at(7, 100, 9) < Stream::key_at(7, 101, 0));
    let (start, end) = Stream::recent_range(7, 100);
    assert!(
        start.as_slice() < end.as_slice()
            && Stream::key_at(7, u64::MAX, u32::MAX).as_slice() < end.as_slice()
    );
}
