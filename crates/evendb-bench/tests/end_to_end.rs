//! A tiny run of the real binary against evendb writes a complete JSON report.

use std::process::Command;

use serde_json::Value;

fn run(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let csv = dir.path().join("timeline.csv");
    let plots = dir.path().join("plots");
    let output = Command::new(env!("CARGO_BIN_EXE_evendb-bench"))
        .args(args)
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--plots")
        .arg(&plots)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "evendb-bench failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("ops/s") && stdout.contains("p99.9"),
        "table missing: {stdout}"
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.starts_with("engine,workload,distribution,records,second,ops\n")
            && csv.lines().count() > 1
    );
    let svgs = std::fs::read_dir(&plots).unwrap().count();
    assert!(svgs >= 2, "only {svgs} plots");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

const REQUIRED: [&str; 17] = [
    "engine",
    "workload",
    "distribution",
    "records",
    "operations",
    "threads",
    "value_size",
    "throughput_ops_per_sec",
    "latency_us",
    "write_amplification",
    "space_amplification",
    "bytes_written",
    "bytes_read",
    "cpu_seconds",
    "peak_rss_bytes",
    "timeline",
    "engine_stats",
];

#[test]
fn tiny_ycsb_run_on_evendb_reports_every_required_field() {
    let report = run(&[
        "--engine",
        "evendb",
        "--workload",
        "A,E10",
        "--records",
        "2000",
        "--operations",
        "3000",
        "--threads",
        "2",
        "--value-size",
        "100",
    ]);
    let results = report["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["load", "A", "E10"]);
    for r in results {
        for field in REQUIRED {
            assert!(r.get(field).is_some(), "{} lacks {field}", r["workload"]);
        }
        assert_eq!(r["engine"], "evendb");
        assert!(r["throughput_ops_per_sec"].as_f64().unwrap() > 0.0);
        assert!(r["cpu_seconds"].as_f64().unwrap() > 0.0);
        assert!(r["peak_rss_bytes"].as_u64().unwrap() > 0);
        assert!(r["space_amplification"].as_f64().unwrap() > 0.0);
    }
    let load = &results[0];
    assert_eq!(load["operations"], 2000);
    assert_eq!(load["latency_us"]["put"]["count"], 2000);
    let a = &results[1];
    assert_eq!(a["operations"], 3000);
    assert_eq!(a["records"], 2000);
    let lat = &a["latency_us"];
    for op in ["get", "update"] {
        let l = &lat[op];
        for p in ["p50", "p95", "p99", "p999", "max"] {
            assert!(l[p].as_f64().unwrap() > 0.0, "{op} {p}");
        }
        assert!(l["p50"].as_f64() <= l["p99"].as_f64() && l["p99"].as_f64() <= l["max"].as_f64());
    }
    let gets = lat["get"]["count"].as_u64().unwrap();
    assert!((1200..1800).contains(&gets), "A ran {gets} gets of 3000");
    // Per-phase counters start after the warm-up's 300 gets.
    let delta = &a["engine_stats_delta"];
    assert_eq!(delta["gets"], gets, "A's gets counted without the warm-up");
    assert!(a["engine_stats"]["gets"].as_u64().unwrap() >= gets + 300);
    assert!(
        delta.get("memory_used").is_none(),
        "gauges are not differenced"
    );
    assert!(a["write_amplification"].as_f64().is_some());
    assert_eq!(a["not_found"], 0, "every key read in A was loaded");
    let e10 = &results[2];
    assert!(e10["latency_us"]["scan"]["count"].as_u64().unwrap() > 2500);
    assert!(e10["scanned_records"].as_u64().unwrap() > 2500);
    assert_eq!(
        e10["engine_stats_delta"]["scans"],
        e10["latency_us"]["scan"]["count"]
    );
    assert_eq!(e10["engine_stats_delta"]["gets"], 0);
    assert!(report["provenance"]["cpus"].as_u64().unwrap() >= 1);
}

#[test]
fn tiny_stream_run_on_evendb_ingests_in_time_order_and_scans() {
    let report = run(&[
        "--engine",
        "evendb",
        "--workload",
        "stream",
        "--records",
        "3000",
        "--operations",
        "500",
        "--stream-apps",
        "2000",
        "--value-size",
        "100",
    ]);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0]["workload"], "stream-ingest");
    assert_eq!(results[0]["operations"], 3000);
    let q = &results[1];
    assert_eq!(q["workload"], "stream");
    assert!(
        q["scanned_records"].as_u64().unwrap() > 0,
        "stream scans found nothing"
    );
    assert!(q["latency_us"]["scan"]["count"].as_u64().unwrap() > 400);
}

#[test]
fn batched_run_counts_single_writes_and_one_latency_sample_per_batch() {
    let report = run(&[
        "--engine",
        "evendb",
        "--workload",
        "P,A,F",
        "--records",
        "2000",
        "--operations",
        "3000",
        "--threads",
        "2",
        "--value-size",
        "100",
        "--batch",
        "10",
    ]);
    let results = report["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["load", "P", "A", "F"]);
    for r in results {
        assert_eq!(r["batch_size"], 10, "{}", r["workload"]);
        assert_eq!(r["failures"], 0, "{}", r["workload"]);
    }
    // Each of the 2 workers writes full batches of 10 and one last partial
    // batch at most.
    let batches = |writes: u64| (writes.div_ceil(10))..=(writes / 10 + 2);
    let load = &results[0];
    assert_eq!(load["operations"], 2000);
    assert_eq!(load["user_bytes_written"], 2000 * 114);
    let puts = load["latency_us"]["put"]["count"].as_u64().unwrap();
    assert!(batches(2000).contains(&puts), "load: {puts} batches");
    let p = &results[1];
    assert_eq!(p["operations"], 3000);
    assert_eq!(p["user_bytes_written"], 3000 * 114);
    let puts = p["latency_us"]["put"]["count"].as_u64().unwrap();
    assert!(batches(3000).contains(&puts), "P: {puts} batches");
    assert_eq!(
        p["engine_stats_delta"]["batches"], puts,
        "each batch is one evendb write batch"
    );
    for (r, write) in [(&results[2], "update"), (&results[3], "rmw")] {
        assert_eq!(r["operations"], 3000);
        let lat = &r["latency_us"];
        let gets = lat["get"]["count"].as_u64().unwrap();
        let writes = 3000 - gets;
        assert!((1200..1800).contains(&writes), "{write}: {writes} of 3000");
        let n = lat[write]["count"].as_u64().unwrap();
        assert!(
            batches(writes).contains(&n),
            "{write}: {n} batches of {writes}"
        );
        assert_eq!(r["user_bytes_written"], writes * 114);
        assert_eq!(r["not_found"], 0, "every key read was loaded");
    }
}

/// Scans per phase and records they read, per scan.
fn scans(r: &Value) -> (u64, f64) {
    let n = r["latency_us"]["scan"]["count"].as_u64().unwrap();
    (n, r["scanned_records"].as_u64().unwrap() as f64 / n as f64)
}

#[test]
fn reverse_scans_of_workload_e_read_down_from_their_start_key() {
    // Latest-simple starts most scans at the newest records: a forward
    // scan from there finds few records above its start, a reverse scan
    // finds its whole length (1 to 100, 50.5 on average) below it.
    let e = |extra: &[&str]| {
        let mut args = vec![
            "--engine",
            "evendb",
            "--workload",
            "E100",
            "--distribution",
            "latest",
            "--records",
            "2000",
            "--operations",
            "3000",
            "--value-size",
            "100",
        ];
        args.extend_from_slice(extra);
        let report = run(&args);
        report["results"].as_array().unwrap()[1].clone()
    };
    let reverse = e(&["--reverse"]);
    assert_eq!(reverse["reverse"], true);
    assert_eq!(reverse["failures"], 0);
    let (n, per_scan) = scans(&reverse);
    assert!(n > 2700, "{n} scans of 3000 operations");
    assert!(
        (47.0..54.0).contains(&per_scan),
        "a reverse scan of 1-100 records read {per_scan:.1} on average"
    );
    assert_eq!(reverse["engine_stats_delta"]["scans"], n);
    let forward = e(&[]);
    assert_eq!(forward["reverse"], false);
    let (_, forward_per_scan) = scans(&forward);
    assert!(
        forward_per_scan < 40.0,
        "forward scans from the newest records read {forward_per_scan:.1} on average"
    );
}

#[test]
fn stream_queries_read_each_apps_latest_events_unless_asked_for_the_last_minute() {
    let stream = |extra: &[&str]| {
        let mut args = vec![
            "--engine",
            "evendb",
            "--workload",
            "stream",
            "--records",
            "3000",
            "--operations",
            "500",
            "--stream-apps",
            "2000",
            "--value-size",
            "100",
        ];
        args.extend_from_slice(extra);
        let report = run(&args);
        report["results"].as_array().unwrap()[1].clone()
    };
    let reverse = stream(&[]);
    let forward = stream(&["--stream-query", "minute"]);
    assert_eq!(
        (&reverse["reverse"], &forward["reverse"]),
        (&true.into(), &false.into())
    );
    let ((n, per_query), (_, forward_per_query)) = (scans(&reverse), scans(&forward));
    assert!(n > 400, "{n} queries");
    // The forward query reads the last of the stream's 10 minutes; the
    // reverse one an app's latest 1000 events, whenever they came.
    assert!(
        per_query > 4.0 * forward_per_query && per_query <= 1000.0,
        "reverse {per_query:.1}, forward {forward_per_query:.1} events per query"
    );
}
