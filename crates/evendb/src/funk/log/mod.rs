//! The append log of a funk: unsorted records of puts and deletes.

mod banded;
mod blocks;
pub(crate) mod buffers;
mod check;
pub(crate) mod format;
mod index;
mod segment;
mod span;

pub(crate) use banded::{BandedScan, ImageBytes, BANDED_SCAN_MEMORY};
pub(crate) use check::{check_file, newest_epoch, salvage};
pub(crate) use format::{DurableLengths, DurableMark, RecordPtr, SegmentImage};
pub(crate) use index::SegmentIndex;
pub(crate) use segment::{AppendMode, LogConfig, LogSegment, Replay, ValueWindow};
