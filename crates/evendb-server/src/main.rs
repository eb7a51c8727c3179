//! `evendb-server`: see the library's docs and `evendb-server --help`.

use clap::Parser;
use evendb_server::cluster::state_machine::DataStore;
use evendb_server::config::{self, Config};
use evendb_server::server::{self, ConnLimits};
use evendb_server::state::{Settings, Shared};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc reads its options from this C string before `main`: the
/// benchmark's (docs/design.md §9), two arenas and freed pages returned
/// within 5 ms by the threads that free them. `_RJEM_MALLOC_CONF` in the
/// environment overrides them.
#[cfg(feature = "jemalloc")]
#[allow(unsafe_code, non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
static malloc_conf: &u8 = &b"narenas:2,dirty_decay_ms:5,muzzy_decay_ms:0\0"[0];

/// glibc's malloc with two arenas and a fixed mmap threshold, as the
/// `evendb` tool runs it (docs/design.md §9), when built without jemalloc.
/// Called before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc")))]
fn tune_malloc() {
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets glibc's malloc parameters; no thread has
    // started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc"))))]
fn tune_malloc() {}

fn init_logging(cfg: &Config) {
    let mut b = env_logger::Builder::new();
    b.parse_filters(&cfg.log_level);
    if cfg.log_format == "json" {
        b.format(|f, r| {
            let line = serde_json::json!({
                "ts": f.timestamp_millis().to_string(),
                "level": r.level().as_str(),
                "target": r.target(),
                "msg": r.args().to_string(),
            });
            writeln!(f, "{line}")
        });
    }
    b.init();
}

fn main() -> ExitCode {
    tune_malloc();
    let args = match config::args_with_file(std::env::args().collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("evendb-server: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = Config::parse_from(args);
    init_logging(&cfg);
    match run(cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            eprintln!("evendb-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cfg: Config) -> Result<(), String> {
    let password = cfg.password()?;
    cfg.check(password.as_deref())?;
    let durability = if cfg.durability == "sync" {
        evendb::Durability::Sync
    } else {
        evendb::Durability::Buffered {
            sync_interval: Duration::from_millis(cfg.sync_interval_ms.max(1)),
        }
    };
    let mut options = evendb::Options::default()
        .memory_budget(cfg.memory_budget)
        .durability(durability)
        // glibc's `malloc_trim` has nothing to return under jemalloc.
        .trim_freed_memory(!cfg!(feature = "jemalloc"));
    if cfg.fault_sync_delay_ms > 0 {
        log::warn!(
            "fault injection: every fsync takes {} ms longer",
            cfg.fault_sync_delay_ms
        );
        options = options.storage(Arc::new(evendb_server::fault::SlowSync {
            inner: Arc::new(evendb::vfs::StdFs),
            delay: Duration::from_millis(cfg.fault_sync_delay_ms),
        }));
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cfg.io_threads {
        runtime.worker_threads(n.max(1));
    }
    let runtime = runtime
        .enable_all()
        .thread_name("evendb-server-io")
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let shared = runtime.block_on(async {
        let (data, cluster) = if cfg.cluster {
            let members = evendb_server::cluster::parse_members(
                cfg.cluster_members.as_deref().unwrap_or_default(),
            )?;
            let id = cfg.cluster_id.unwrap_or_default();
            let (c, data) = evendb_server::cluster::node::Cluster::start(
                id,
                members,
                &cfg.dir,
                options,
                evendb_server::cluster::node::NodeOptions {
                    snapshot_every: cfg.cluster_snapshot_every,
                    listen: cfg.cluster_listen.clone(),
                    source: cfg.cluster_source_ip,
                    password: password.clone(),
                    insecure_raft: cfg.cluster_insecure_raft,
                },
            )
            .await?;
            (data, Some(c))
        } else {
            let db = options
                .open(&cfg.dir)
                .map_err(|e| format!("cannot open the store at {}: {e}", cfg.dir.display()))?;
            (DataStore::fixed(db), None)
        };
        serve(&cfg, data, cluster, password).await
    })?;
    // Every connection is gone; their last commands may still be on the
    // blocking pool, holding the store.
    let mut shared = shared;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let shared = loop {
        match Arc::try_unwrap(shared) {
            Ok(s) => break Some(s),
            Err(s) if std::time::Instant::now() < deadline => {
                shared = s;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(s) => {
                log::warn!("commands still running at shutdown: flushing without closing");
                s.db()
                    .flush()
                    .map_err(|e| format!("flush at shutdown: {e}"))?;
                break None;
            }
        }
    };
    drop(runtime);
    if let Some(s) = shared {
        s.db()
            .flush()
            .map_err(|e| format!("flush at shutdown: {e}"))?;
        drop(s);
        log::info!("store closed");
    }
    Ok(())
}

async fn serve(
    cfg: &Config,
    data: Arc<DataStore>,
    cluster: Option<Arc<evendb_server::cluster::node::Cluster>>,
    password: Option<Vec<u8>>,
) -> Result<Arc<Shared>, String> {
    let listener = TcpListener::bind((cfg.bind, cfg.port))
        .await
        .map_err(|e| format!("cannot listen on {}:{}: {e}", cfg.bind, cfg.port))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let clustered = cluster.is_some();
    let shared = Arc::new(Shared::new(
        data,
        cluster,
        Settings {
            password,
            max_reply: usize::try_from(cfg.max_reply_bytes).unwrap_or(usize::MAX),
            port: addr.port(),
            max_clients: cfg.maxclients,
            durability: if cfg.durability == "sync" {
                "sync"
            } else {
                "buffered"
            },
        },
    ));
    let metrics = match cfg.metrics_bind {
        Some(m) => {
            let l = TcpListener::bind(m)
                .await
                .map_err(|e| format!("cannot listen for metrics on {m}: {e}"))?;
            let at = l.local_addr().map_err(|e| e.to_string())?;
            log::info!("metrics at http://{at}/metrics");
            println!("metrics at http://{at}/metrics");
            Some(tokio::spawn(evendb_server::metrics::serve(
                l,
                shared.clone(),
            )))
        }
        None => None,
    };
    log::info!("serving {} on {addr}", cfg.dir.display());
    // The line tests and scripts wait for (with --port 0, the port).
    println!("evendb-server listening on {addr}");
    let (stop_tx, _) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let signals = {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            let term = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = term => log::info!("SIGTERM: shutting down"),
                _ = tokio::signal::ctrl_c() => log::info!("SIGINT: shutting down"),
            }
            let _ = stop_tx.send(true);
        })
    };
    let limits = ConnLimits {
        // A cluster node's commands wait for the leader and a quorum.
        exec: match (cfg.exec.as_str(), cfg.durability.as_str()) {
            _ if clustered => server::Exec::Pool,
            ("inline", _) => server::Exec::Inline,
            ("pool", _) | ("auto", "sync") => server::Exec::Pool,
            _ => server::Exec::Inline,
        },
        max_clients: cfg.maxclients,
        idle: (cfg.timeout > 0).then(|| Duration::from_secs(cfg.timeout)),
        parser: evendb_server::resp::Limits::default(),
    };
    server::serve(
        listener,
        shared.clone(),
        limits,
        stop_tx,
        Duration::from_secs(cfg.shutdown_grace),
    )
    .await;
    signals.abort();
    if let Some(m) = metrics {
        m.abort();
        let _ = m.await;
    }
    Ok(shared)
}
