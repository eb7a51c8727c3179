//! evendb-server: one evendb store served over the Redis protocol (RESP2,
//! and RESP3 through `HELLO 3`), so that every Redis client and tool can
//! use it. The binary is `evendb-server`; this library holds its parts,
//! for the binary and the tests.
//!
//! - [`resp`]: reading requests and writing replies;
//! - [`commands`]: what each command does with the store;
//! - [`server`]: connections, pipelining, back-pressure, shutdown;
//! - [`metrics`]: the Prometheus endpoint;
//! - [`config`]: flags and the config file;
//! - [`cluster`]: replication through Raft (`--cluster`).

#![deny(unsafe_code)]

pub mod cluster;
pub mod commands;
pub mod config;
pub mod fault;
pub mod metrics;
pub mod resp;
pub mod server;
pub mod state;
