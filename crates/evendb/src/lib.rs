//! # evendb
//!
//! A persistent, embedded, ordered key-value store for *spatially local*
//! workloads: composite keys such as `app_id | timestamp` or
//! `user | thread | message`, where a few hot key ranges carry most of the
//! load.
//!
//! The key space is split into large **chunks** of contiguous keys. Each
//! chunk has an on-disk **funk**: a sorted table plus an append-only log
//! that is the store's only log (there is no global write-ahead log). When a
//! chunk's log fills, the chunk is rebuilt: table and log merge into a new
//! table, and a chunk grown too large is split in two; small neighbors are
//! merged. See `docs/design.md` in the repository for the architecture and
//! the byte maps of every file.
//!
//! ```
//! use evendb::{Db, Durability, Options};
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Options::default()
//!     .durability(Durability::Sync) // every acknowledged put survives a crash
//!     .open(dir.path())?;
//! db.put("app1|2024-05-01T10:00|0001", "open")?;
//! db.put("app1|2024-05-01T10:01|0002", "click")?;
//! db.put("app2|2024-05-01T10:00|0001", "open")?;
//! let app1: Vec<_> = db.prefix("app1|").collect::<Result<_, _>>()?;
//! assert_eq!(app1.len(), 2);
//! db.delete("app2|2024-05-01T10:00|0001")?;
//! assert_eq!(db.get("app2|2024-05-01T10:00|0001")?, None);
//! # Ok::<(), evendb::Error>(())
//! ```
//!
//! Keys are at most [`MAX_KEY_SIZE`] bytes and values at most
//! [`MAX_VALUE_SIZE`]; the empty key and the empty value are valid (an empty
//! value is not a deletion).

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod batch;
mod cache;
mod chunk;
mod codec;
#[cfg(test)]
mod conformance;
mod db;
mod entry;
mod error;
mod failpoint;
mod funk;
mod group_commit;
mod integrity;
mod maintenance;
mod manifest;
mod munk;
mod options;
mod prefix;
mod recovery;
mod repair;
mod scan;
mod stats;
mod sync;
mod tombstones;
mod version;
pub mod vfs;

pub use admin::ChunkInfo;
pub use batch::{WriteBatch, MAX_BATCH_SIZE};
pub use db::Db;
pub use entry::{prefix_end, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use error::{Error, Result};
pub use integrity::IntegrityReport;
pub use options::{Compression, Durability, Options};
pub use repair::{repair, RepairReport};
pub use scan::{Scan, Snapshot};
pub use stats::Stats;
