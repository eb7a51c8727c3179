//! Injected faults for testing a deployment: `--fault-sync-delay-ms`
//! makes every fsync of the node's stores take that much longer, as a
//! slow or overloaded disk would (the engine's storage trait lets the
//! server wrap its file system).

pub use evendb::vfs::SlowSync;
