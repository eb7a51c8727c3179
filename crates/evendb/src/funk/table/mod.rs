//! The sorted table of a funk.

pub(crate) mod format;
mod reader;
mod writer;

pub(crate) use reader::{TableIter, TableReader};
pub(crate) use writer::{TableWriter, BYTES_PER_SYNC};

#[cfg(test)]
mod tests;
