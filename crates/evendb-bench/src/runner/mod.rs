//! Phases of a benchmark inside one process: load, warm-up and measured run,
//! each driven by `threads` workers sharing one engine.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{anyhow, Result};
use fastrand::Rng;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::engines::{self, Engine, EngineConfig, EngineKind};
use crate::generator::{
    AppPopularity, Distribution, KeyChooser, KeySpace, Stream, ValueKind, Values, ZipfItems,
};
use crate::measure::{disk_usage, Usage};
use crate::results::{counter_deltas, Latency, RunResult};
use crate::workload::{Mix, Op, Workload};

mod writer;
use writer::{BatchWritten, Writer};

/// How long a phase lasts.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub enum Limit {
    /// A number of operations shared by all workers.
    Ops(u64),
    /// Wall-clock time.
    Seconds(f64),
}

/// The data set a child process builds before its runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatasetSpec {
    /// YCSB records, or stream events for the stream.
    pub records: u64,
    pub key_size: usize,
    pub value_size: usize,
    /// Build the analytics stream instead of YCSB records.
    pub stream: bool,
    /// App ids of the stream.
    pub stream_apps: u64,
    /// Minutes of stream time the loaded events span.
    pub stream_minutes: f64,
    /// What the values look like (`--value-kind`).
    #[serde(default)]
    pub value_kind: ValueKind,
}

/// One measured run of a workload.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSpec {
    pub workload: Workload,
    pub distribution: Distribution,
    pub theta: f64,
    pub zipf_items: ZipfItems,
    pub warmup: Limit,
    pub run: Limit,
    /// Longest scan, overriding the workload's.
    pub max_scan_length: Option<usize>,
}

impl RunSpec {
    /// This run measured for `seconds` after a warm-up of a quarter of that,
    /// as the suites run every workload: timed runs keep a suite's length
    /// predictable whatever the engine's speed.
    pub fn timed(mut self, seconds: f64) -> RunSpec {
        self.run = Limit::Seconds(seconds);
        self.warmup = Limit::Seconds(seconds / 4.0);
        self
    }
}

/// Everything one child process does for one engine.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub engine: EngineKind,
    pub config: EngineConfig,
    pub dir: PathBuf,
    pub threads: usize,
    pub seed: u64,
    pub dataset: DatasetSpec,
    pub runs: Vec<RunSpec>,
    pub memory_limit_bytes: Option<u64>,
    /// The cgroup to join first, if any.
    pub cgroup: Option<PathBuf>,
    pub cgroup_peak_file: Option<PathBuf>,
    /// Puts per atomic write batch (`--batch`); 1 writes one put at a time.
    #[serde(default = "one")]
    pub batch_size: usize,
    /// Scans read newest-first (`--reverse`): a YCSB scan of `n` records
    /// reads the `n` largest keys at or below its start key, in descending
    /// order; a stream query reads its app's latest events, newest first.
    #[serde(default)]
    pub reverse: bool,
}

fn one() -> usize {
    1
}

/// Shared state of a store under test.
struct Store {
    engine: Box<dyn Engine>,
    kind: EngineKind,
    space: KeySpace,
    key_size: usize,
    value_size: usize,
    value_kind: ValueKind,
    /// Records (or events) that exist.
    inserted: AtomicU64,
    /// Next record number to insert.
    next_insert: AtomicU64,
    /// Inserts that found the key space full and overwrote instead.
    insert_overflows: AtomicU64,
    stream: Option<StreamState>,
}

struct StreamState {
    stream: Stream,
    popularity: AppPopularity,
    window_us: u64,
}

/// What one operation did.
struct Outcome {
    op: Op,
    written: u64,
    found: bool,
    scanned: u64,
}

/// Runs a whole job in this process and returns one result per phase.
pub fn run_job(job: &Job) -> Result<Vec<RunResult>> {
    let record = job
        .dataset
        .key_size
        .max(crate::generator::stream::STREAM_KEY_SIZE)
        + job.dataset.value_size;
    anyhow::ensure!(
        job.batch_size.max(1).saturating_mul(record) <= evendb::MAX_BATCH_SIZE,
        "--batch {}: a batch of {} records of {record} bytes exceeds evendb's largest batch ({})",
        job.batch_size,
        job.batch_size,
        crate::format::bytes(evendb::MAX_BATCH_SIZE as u64)
    );
    std::fs::create_dir_all(&job.dir)?;
    let engine = engines::open(job.engine, &job.dir, &job.config)?;
    let ds = &job.dataset;
    // Room for inserts: YCSB grows the key space by the expected inserts; we
    // fix it at load time so loaded keys keep their integers. Timed runs are
    // budgeted at 1M operations per second; inserts beyond the room
    // overwrite the newest record and are counted (`bench_insert_overflows`).
    let expected_inserts: f64 = job
        .runs
        .iter()
        .map(|r| {
            let ops = match r.run {
                Limit::Ops(n) => n as f64,
                Limit::Seconds(s) => s * 1_000_000.0,
            };
            r.workload.insert_share() * ops
        })
        .sum();
    let capacity =
        (ds.records + (expected_inserts as u64).max(ds.records / 16) + 10_000).min(1 << 32);
    let stream = if ds.stream {
        let span_ns = (ds.stream_minutes * 60e9) as u64;
        let stream = Stream {
            spacing_ns: (span_ns / ds.records.max(1)).max(1),
            ..Stream::default()
        };
        Some(StreamState {
            stream,
            popularity: AppPopularity::new(ds.stream_apps)?,
            window_us: 60_000_000,
        })
    } else {
        None
    };
    let store = Store {
        engine,
        kind: job.engine,
        space: KeySpace::new(capacity, ds.key_size)?,
        key_size: if ds.stream {
            crate::generator::stream::STREAM_KEY_SIZE
        } else {
            ds.key_size
        },
        value_size: ds.value_size,
        value_kind: ds.value_kind,
        inserted: AtomicU64::new(0),
        next_insert: AtomicU64::new(0),
        insert_overflows: AtomicU64::new(0),
        stream,
    };
    let mut results = Vec::new();
    let at_start = engine_stats(&store);
    let mut load = load(&store, job)?;
    finish_result(&store, job, &at_start, &mut load);
    results.push(load);
    for (i, spec) in job.runs.iter().enumerate() {
        let seed = job.seed.wrapping_add(1000 * (i as u64 + 1));
        if spec.warmup != Limit::Ops(0) && spec.warmup != Limit::Seconds(0.0) {
            let warm_mix = if spec.workload.mix().scan > 0.0 {
                Mix {
                    get: 0.0,
                    update: 0.0,
                    insert: 0.0,
                    scan: 1.0,
                    rmw: 0.0,
                    put: 0.0,
                }
            } else {
                Mix {
                    get: 1.0,
                    update: 0.0,
                    insert: 0.0,
                    scan: 0.0,
                    rmw: 0.0,
                    put: 0.0,
                }
            };
            run_mix(
                &store,
                job,
                spec,
                warm_mix,
                spec.warmup,
                seed ^ 0x5eed,
                "warm-up",
            )?;
        }
        // The phase's counters count from here: the warm-up is not measured.
        let at_start = engine_stats(&store);
        let mut r = run_mix(
            &store,
            job,
            spec,
            spec.workload.mix(),
            spec.run,
            seed,
            "run",
        )?;
        finish_result(&store, job, &at_start, &mut r);
        results.push(r);
    }
    Ok(results)
}

/// The engine's figures now, with the harness's own counter of inserts that
/// overwrote for want of room.
fn engine_stats(store: &Store) -> BTreeMap<String, u64> {
    let mut stats: BTreeMap<String, u64> = store.engine.stats().into_iter().collect();
    let overflows = store.insert_overflows.load(Ordering::Relaxed);
    if overflows > 0 {
        stats.insert("bench_insert_overflows".to_string(), overflows);
    }
    stats
}

/// Fills the figures that need the phase to be over: flush, disk usage,
/// space amplification, engine stats and their growth since `at_start`
/// (the engine's figures when the measured part of the phase began).
fn finish_result(store: &Store, job: &Job, at_start: &BTreeMap<String, u64>, r: &mut RunResult) {
    // The flush's writes belong to the phase even though its time does not.
    let before = Usage::now();
    if let Err(e) = store.engine.flush() {
        eprintln!("warning: flush after {} failed: {e:#}", r.workload);
    }
    r.bytes_written += Usage::now().since(&before).write_bytes;
    r.write_amplification =
        (r.user_bytes_written > 0).then(|| r.bytes_written as f64 / r.user_bytes_written as f64);
    r.disk_bytes = disk_usage(&job.dir);
    let live = store.inserted.load(Ordering::Relaxed);
    r.live_bytes = live * (store.key_size + store.value_size) as u64;
    r.space_amplification = (r.live_bytes > 0).then(|| r.disk_bytes as f64 / r.live_bytes as f64);
    r.engine_stats = engine_stats(store);
    r.engine_stats_delta = counter_deltas(at_start, &r.engine_stats);
    r.memory_limit_bytes = job.memory_limit_bytes;
    r.cgroup_peak_bytes = job
        .cgroup_peak_file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| s.trim().parse().ok());
}

fn load(store: &Store, job: &Job) -> Result<RunResult> {
    let ds = &job.dataset;
    let records = ds.records;
    let label = if ds.stream {
        "load (time order)"
    } else {
        "load (key order)"
    };
    let next = AtomicU64::new(0);
    let result = measure(store, job, Limit::Ops(records), label, |t| {
        let mut rng = Rng::with_seed(job.seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut key = Vec::with_capacity(32);
        let mut values = Values::new(store.value_kind, &mut rng);
        let mut popularity = store.stream.as_ref().map(|s| s.popularity.clone());
        let next = &next;
        move |writer: &mut Writer| {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let value = values.next(store.value_size, &mut rng);
            match (&store.stream, popularity.as_mut()) {
                (Some(s), Some(pop)) => {
                    let app = pop.next_app(&mut rng);
                    key.clear();
                    key.extend_from_slice(&s.stream.key(app, i));
                }
                _ => store.space.key_into(i, &mut key),
            }
            writer.put(Op::Put, &key, value, Some(i))?;
            Ok(Outcome {
                op: Op::Put,
                written: (key.len() + value.len()) as u64,
                found: true,
                scanned: 0,
            })
        }
    })?;
    store.next_insert.store(records, Ordering::Relaxed);
    store.inserted.store(records, Ordering::Relaxed);
    let mut r = result;
    r.workload = if ds.stream { "stream-ingest" } else { "load" }.to_string();
    r.distribution = if ds.stream {
        "apps-heavy-tail"
    } else {
        "sequential"
    }
    .to_string();
    r.records = 0;
    Ok(r)
}

fn run_mix(
    store: &Store,
    job: &Job,
    spec: &RunSpec,
    mix: Mix,
    limit: Limit,
    seed: u64,
    label: &str,
) -> Result<RunResult> {
    let records_at_start = store.inserted.load(Ordering::Relaxed);
    let max_scan = spec
        .max_scan_length
        .unwrap_or(spec.workload.max_scan_length())
        .max(1);
    let expected_ops = match limit {
        Limit::Ops(n) => n,
        Limit::Seconds(s) => (s * 200_000.0) as u64,
    };
    // YCSB sizes the request chooser to the records plus twice the expected inserts.
    let chooser_items = (records_at_start + (2.0 * mix.insert * expected_ops as f64) as u64)
        .min(store.space.capacity());
    let label = if store.stream.is_some() {
        format!("{label} {}", spec.workload.name())
    } else {
        format!(
            "{label} {} {}",
            spec.workload.name(),
            spec.distribution.name()
        )
    };
    let mut r = measure(store, job, limit, &label, |t| {
        let mut rng = Rng::with_seed(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let space_for_chooser = KeySpace::new(chooser_items.max(1), store.space.key_size()).ok();
        let mut chooser = match (&store.stream, spec.distribution) {
            (Some(_), _) => None,
            // Prefixes slice the loaded records, whatever was inserted since.
            (None, Distribution::ZipfComposite) => Some(KeyChooser::new(
                spec.distribution,
                &store.space,
                spec.theta,
                spec.zipf_items,
                job.dataset.records,
            )),
            (None, dist) => space_for_chooser
                .as_ref()
                .map(|s| KeyChooser::new(dist, s, spec.theta, spec.zipf_items, records_at_start)),
        };
        let mut popularity = store.stream.as_ref().map(|s| s.popularity.clone());
        let mut key = Vec::with_capacity(32);
        let mut values = Values::new(store.value_kind, &mut rng);
        move |writer: &mut Writer| {
            let op = mix.choose(&mut rng);
            let inserted = store.inserted.load(Ordering::Relaxed).max(1);
            if let (Some(s), Some(pop)) = (&store.stream, popularity.as_mut()) {
                let scan = StreamScan {
                    max: max_scan,
                    reverse: job.reverse,
                };
                return stream_op(store, s, pop, op, scan, &mut rng, &mut values, writer);
            }
            let chooser = chooser.as_mut().expect("YCSB runs have a chooser");
            match op {
                Op::Get => {
                    store
                        .space
                        .key_into(chooser.next(inserted, &mut rng), &mut key);
                    let found = store.engine.get(&key)?.is_some();
                    Ok(Outcome {
                        op,
                        written: 0,
                        found,
                        scanned: 0,
                    })
                }
                Op::Update | Op::Put => {
                    store
                        .space
                        .key_into(chooser.next(inserted, &mut rng), &mut key);
                    let value = values.next(store.value_size, &mut rng);
                    writer.put(op, &key, value, None)?;
                    Ok(Outcome {
                        op,
                        written: (key.len() + value.len()) as u64,
                        found: true,
                        scanned: 0,
                    })
                }
                Op::Insert => {
                    let mut i = store.next_insert.fetch_add(1, Ordering::Relaxed);
                    if i >= store.space.capacity() {
                        store.insert_overflows.fetch_add(1, Ordering::Relaxed);
                        i = store.space.capacity() - 1;
                    }
                    store.space.key_into(i, &mut key);
                    let value = values.next(store.value_size, &mut rng);
                    writer.put(op, &key, value, Some(i))?;
                    Ok(Outcome {
                        op,
                        written: (key.len() + value.len()) as u64,
                        found: true,
                        scanned: 0,
                    })
                }
                Op::Scan => {
                    store
                        .space
                        .key_into(chooser.next(inserted, &mut rng), &mut key);
                    let len = rng.usize(1..=max_scan);
                    let s = if job.reverse {
                        store.engine.scan_rev(&key, None, len)?
                    } else {
                        store.engine.scan(&key, None, len)?
                    };
                    Ok(Outcome {
                        op,
                        written: 0,
                        found: s.records > 0,
                        scanned: s.records as u64,
                    })
                }
                Op::Rmw => {
                    store
                        .space
                        .key_into(chooser.next(inserted, &mut rng), &mut key);
                    let old = store.engine.get(&key)?;
                    let mut value = values.next(store.value_size, &mut rng).to_vec();
                    if let Some(old) = &old {
                        // "Modify": keep the old value's second half, as a field update would.
                        let n = old.len().min(value.len());
                        value[n / 2..n].copy_from_slice(&old[n / 2..n]);
                    }
                    writer.put(op, &key, &value, None)?;
                    Ok(Outcome {
                        op,
                        written: (key.len() + value.len()) as u64,
                        found: old.is_some(),
                        scanned: 0,
                    })
                }
            }
        }
    })?;
    r.workload = spec.workload.name().to_string();
    r.distribution = if store.stream.is_some() {
        "apps-heavy-tail".to_string()
    } else {
        spec.distribution.name().to_string()
    };
    r.theta = spec.theta;
    r.records = records_at_start;
    Ok(r)
}

/// How the stream's queries scan.
#[derive(Clone, Copy)]
struct StreamScan {
    /// Most events a query reads.
    max: usize,
    /// Read the app's latest events newest-first instead of its last
    /// minute of events in time order.
    reverse: bool,
}

#[allow(clippy::too_many_arguments)]
fn stream_op(
    store: &Store,
    s: &StreamState,
    pop: &mut AppPopularity,
    op: Op,
    scan: StreamScan,
    rng: &mut Rng,
    values: &mut Values,
    writer: &mut Writer,
) -> Result<Outcome> {
    let app = pop.next_app(rng);
    match op {
        // "The latest events of one app", as a user would read them:
        // `prefix(app).rev().take(n)`.
        Op::Scan if scan.reverse => {
            let summary = store
                .engine
                .prefix_rev(&Stream::app_prefix(app), scan.max)?;
            Ok(Outcome {
                op,
                written: 0,
                found: summary.records > 0,
                scanned: summary.records as u64,
            })
        }
        Op::Scan => {
            let now_seq = store.next_insert.load(Ordering::Relaxed);
            let from = s.stream.timestamp(now_seq).saturating_sub(s.window_us);
            let (start, end) = Stream::recent_range(app, from);
            let summary = store.engine.scan(&start, Some(&end), scan.max)?;
            Ok(Outcome {
                op,
                written: 0,
                found: summary.records > 0,
                scanned: summary.records as u64,
            })
        }
        _ => {
            let i = store.next_insert.fetch_add(1, Ordering::Relaxed);
            let key = s.stream.key(app, i);
            let value = values.next(store.value_size, rng);
            writer.put(Op::Insert, &key, value, Some(i))?;
            Ok(Outcome {
                op: Op::Insert,
                written: (key.len() + value.len()) as u64,
                found: true,
                scanned: 0,
            })
        }
    }
}

/// Per-thread measurements.
struct ThreadStats {
    hist: Vec<Histogram<u64>>,
    timeline: Vec<u64>,
    written: u64,
    failures: u64,
    not_found: u64,
    scanned: u64,
    ops: u64,
    first_error: Option<String>,
}

impl ThreadStats {
    fn new() -> ThreadStats {
        ThreadStats {
            hist: Op::ALL.iter().map(|_| new_hist()).collect(),
            timeline: Vec::new(),
            written: 0,
            failures: 0,
            not_found: 0,
            scanned: 0,
            ops: 0,
            first_error: None,
        }
    }

    /// Counts `ops` operations completed in second `sec` of the phase.
    fn completed(&mut self, ops: u64, sec: usize) {
        if self.timeline.len() <= sec {
            self.timeline.resize(sec + 1, 0);
        }
        self.timeline[sec] += ops;
        self.ops += ops;
    }

    /// A batch written in second `sec`: its operations, its bytes, and one
    /// latency sample of `ns` (the time spent on the batch's operations).
    fn batch_written(&mut self, batch: BatchWritten, ns: u64, sec: usize) {
        self.completed(batch.ops, sec);
        self.hist[batch.op.index()].saturating_record(ns.max(1));
        self.written += batch.bytes;
    }

    /// Counts `ops` failed operations; true once the worker should stop.
    fn failed(&mut self, ops: u64, e: &anyhow::Error) -> bool {
        self.failures += ops;
        if self.first_error.is_none() {
            self.first_error = Some(format!("{e:#}"));
        }
        self.failures >= 100
    }
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

/// A progress bar on a terminal, nothing otherwise.
fn progress(limit: Limit, label: &str) -> ProgressBar {
    let (len, template) = match limit {
        Limit::Ops(n) => (
            n,
            "{msg:30} [{bar:30}] {human_pos}/{human_len} ops  {elapsed} eta {eta}".to_string(),
        ),
        Limit::Seconds(s) => (
            (s * 10.0) as u64,
            format!("{{msg:30}} [{{bar:30}}] {{elapsed}} of {s:.0}s"),
        ),
    };
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    if let Ok(style) = ProgressStyle::with_template(&template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(label.to_string());
    pb
}

/// Runs `threads` workers until `limit`, each calling the closure built by
/// `make(thread)` once per operation with the worker's [`Writer`], and
/// gathers the figures. With write batches, a batch's operations count when
/// the batch is written, and its latency sample is the time the worker
/// spent on them: the calls that made them (key, value, a read-modify-
/// write's get) and the batch's write.
fn measure<'a, M, F>(
    store: &'a Store,
    job: &Job,
    limit: Limit,
    label: &str,
    make: M,
) -> Result<RunResult>
where
    M: Fn(usize) -> F + Sync,
    F: FnMut(&mut Writer<'a>) -> Result<Outcome> + Send + 'a,
{
    let threads = job.threads.max(1);
    let claimed = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let pb = progress(limit, label);
    let before = Usage::now();
    let start = Instant::now();
    let per_thread: Vec<ThreadStats> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut next_op = make(t);
                let (claimed, stop, pb) = (&claimed, &stop, &pb);
                scope.spawn(move || {
                    let mut st = ThreadStats::new();
                    let mut writer = Writer::new(&*store.engine, &store.inserted, job.batch_size);
                    let mut pending_progress = 0u64;
                    let mut last_tick = 0u64;
                    loop {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        match limit {
                            Limit::Ops(n) => {
                                if claimed.fetch_add(1, Ordering::Relaxed) >= n {
                                    break;
                                }
                            }
                            Limit::Seconds(s) => {
                                if start.elapsed().as_secs_f64() >= s {
                                    break;
                                }
                            }
                        }
                        let t0 = Instant::now();
                        let outcome = next_op(&mut writer);
                        let t1 = Instant::now();
                        let ns = (t1 - t0).as_nanos().max(1) as u64;
                        let sec = (t1 - start).as_secs() as usize;
                        match outcome {
                            // A write gathered into the pending batch: it
                            // counts once the batch is written.
                            Ok(o) if writer.batched() && o.op.writes() => {
                                writer.pending_ns += ns;
                                if !o.found && o.op == Op::Rmw {
                                    st.not_found += 1;
                                }
                                if let Some((batch, ns)) = writer.take_written() {
                                    st.batch_written(batch, ns, sec);
                                }
                            }
                            Ok(o) => {
                                st.completed(1, sec);
                                st.hist[o.op.index()].saturating_record(ns);
                                st.written += o.written;
                                st.scanned += o.scanned;
                                if !o.found && matches!(o.op, Op::Get | Op::Rmw) {
                                    st.not_found += 1;
                                }
                            }
                            Err(e) => {
                                // A failed batch fails all of its writes.
                                let ops = writer.take_written().map_or(1, |(b, _)| b.ops);
                                st.completed(ops, sec);
                                if st.failed(ops, &e) {
                                    stop.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                        pending_progress += 1;
                        if pending_progress >= 256 {
                            match limit {
                                Limit::Ops(_) => pb.inc(pending_progress),
                                Limit::Seconds(_) => {
                                    let tick = (start.elapsed().as_secs_f64() * 10.0) as u64;
                                    if t == 0 && tick > last_tick {
                                        pb.set_position(tick);
                                        last_tick = tick;
                                    }
                                }
                            }
                            pending_progress = 0;
                        }
                    }
                    // The last, partial batch.
                    let t0 = Instant::now();
                    let outcome = writer.flush();
                    let t1 = Instant::now();
                    writer.pending_ns += (t1 - t0).as_nanos() as u64;
                    let sec = (t1 - start).as_secs() as usize;
                    if let Some((batch, ns)) = writer.take_written() {
                        match outcome {
                            Ok(()) => st.batch_written(batch, ns, sec),
                            Err(e) => {
                                st.completed(batch.ops, sec);
                                st.failed(batch.ops, &e);
                            }
                        }
                    }
                    st
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a worker thread panicked")))
            .collect::<Result<Vec<_>>>()
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let after = Usage::now();
    pb.finish_and_clear();

    let mut hist: Vec<Histogram<u64>> = Op::ALL.iter().map(|_| new_hist()).collect();
    let mut r = RunResult {
        engine: store.kind.name().to_string(),
        engine_config: store.engine.describe(),
        engine_settings: store.engine.settings(),
        sync: job.config.sync,
        memory_budget_bytes: job.config.budget(),
        threads,
        batch_size: job.batch_size.max(1),
        reverse: job.reverse,
        key_size: store.key_size,
        value_size: store.value_size,
        value_kind: store.value_kind,
        duration_secs: elapsed,
        ..RunResult::default()
    };
    let mut first_error = None;
    for st in &per_thread {
        for (h, th) in hist.iter_mut().zip(&st.hist) {
            h.add(th).expect("histograms share bounds");
        }
        if r.timeline.len() < st.timeline.len() {
            r.timeline.resize(st.timeline.len(), 0);
        }
        for (a, b) in r.timeline.iter_mut().zip(&st.timeline) {
            *a += b;
        }
        r.operations += st.ops;
        r.user_bytes_written += st.written;
        r.failures += st.failures;
        r.not_found += st.not_found;
        r.scanned_records += st.scanned;
        if first_error.is_none() {
            first_error = st.first_error.clone();
        }
    }
    if r.failures > 0 && r.failures == r.operations {
        return Err(anyhow!(
            "every operation failed; first error: {}",
            first_error.unwrap_or_default()
        ));
    }
    if let Some(e) = first_error {
        eprintln!(
            "warning: {} of {} operations failed; first error: {e}",
            r.failures, r.operations
        );
    }
    r.latency_us = Op::ALL
        .iter()
        .zip(&hist)
        .filter(|(_, h)| !h.is_empty())
        .map(|(op, h)| (op.name().to_string(), Latency::from_histogram_ns(h)))
        .collect::<BTreeMap<_, _>>();
    r.throughput_ops_per_sec = if elapsed > 0.0 {
        r.operations as f64 / elapsed
    } else {
        0.0
    };
    r.throughput_mb_per_sec = if elapsed > 0.0 {
        r.user_bytes_written as f64 / elapsed / 1e6
    } else {
        0.0
    };
    let used = after.since(&before);
    r.bytes_written = used.write_bytes;
    r.bytes_read = used.read_bytes;
    r.write_amplification =
        (r.user_bytes_written > 0).then(|| used.write_bytes as f64 / r.user_bytes_written as f64);
    r.cpu_seconds = used.cpu_seconds;
    r.peak_rss_bytes = used.peak_rss_bytes;
    Ok(r)
}
