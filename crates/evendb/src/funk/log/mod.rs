//! The append log of a funk: unsorted records of puts and deletes.

pub(crate) mod format;
mod index;
mod segment;

pub(crate) use index::SegmentIndex;
pub(crate) use segment::{
    DurableLengths, DurableMark, LogConfig, LogSegment, RecordPtr, Replay, SegmentImage,
};
