//! Workload mixes produce their stated proportions.

use evendb_bench::workload::{Op, Workload};
use fastrand::Rng;

/// 200k draws: a 50% share has a standard error of 0.11 points; we allow 0.6.
#[test]
fn every_workload_mix_produces_its_proportions() {
    let cases: [(Workload, &[(Op, f64)]); 10] = [
        (Workload::A, &[(Op::Get, 0.5), (Op::Update, 0.5)]),
        (Workload::B, &[(Op::Get, 0.95), (Op::Update, 0.05)]),
        (Workload::C, &[(Op::Get, 1.0)]),
        (Workload::D, &[(Op::Get, 0.95), (Op::Insert, 0.05)]),
        (Workload::E, &[(Op::Scan, 0.95), (Op::Insert, 0.05)]),
        (Workload::E10, &[(Op::Scan, 0.95), (Op::Insert, 0.05)]),
        (Workload::E1000, &[(Op::Scan, 0.95), (Op::Insert, 0.05)]),
        (Workload::F, &[(Op::Get, 0.5), (Op::Rmw, 0.5)]),
        (Workload::P, &[(Op::Put, 1.0)]),
        (Workload::Stream, &[(Op::Scan, 0.95), (Op::Insert, 0.05)]),
    ];
    let mut rng = Rng::with_seed(8);
    for (w, expected) in cases {
        let mix = w.mix();
        let n = 200_000;
        let mut counts = [0u64; 6];
        for _ in 0..n {
            counts[mix.choose(&mut rng).index()] += 1;
        }
        for op in Op::ALL {
            let want = expected
                .iter()
                .find(|(o, _)| *o == op)
                .map_or(0.0, |(_, p)| *p);
            let got = counts[op.index()] as f64 / n as f64;
            assert!(
                (got - want).abs() < 0.006,
                "{}: {} share {got:.4}, want {want}",
                w.name(),
                op.name()
            );
        }
    }
}

#[test]
fn scan_workloads_have_the_papers_lengths() {
    assert_eq!(Workload::E10.max_scan_length(), 10);
    assert_eq!(Workload::E100.max_scan_length(), 100);
    assert_eq!(Workload::E.max_scan_length(), 100);
    assert_eq!(Workload::E1000.max_scan_length(), 1000);
}
