//! The commit journal of `Sync` mode: one durable step per write, shared
//! by every writer, whatever chunks the writes touch.
//!
//! Without it a `Sync` write is durable when its chunk log is synced, so a
//! group of writes over many chunks costs one fsync per chunk, and a batch
//! one per chunk it touches. With it, a `Sync` write (a put, a delete, a
//! whole batch) appends one record to the current journal segment and
//! waits for an fsync of that segment, shared with every writer whose
//! record it covers (group commit); chunk logs are written as in
//! `Buffered` mode and synced every 200 ms by the checkpointer, which
//! then drops the segments their records are all in (keeping a few to
//! write over, below). Records wait in a
//! buffer until the thread that syncs next writes them all at once,
//! outside the journal's lock, directly to the device where the file
//! system allows (`O_DIRECT`, see `Storage::open_direct`): a group's
//! write then rewrites the one partial 512-byte block it starts in, where
//! a write through the page cache rewrites a partial 4 KiB page, more
//! than a small group's own bytes.
//!
//! A batch journals before it writes any log record, so a record of it in
//! a log means its journal record is durable: an open replays what the
//! journal holds (`replay`), and a batch is whole after any crash. A put
//! journals after its log append (its version, unique like a batch's so
//! that a replay in any order reads the same, is taken there; the append
//! reaches the log file at once, so a store whose disk filled up after
//! the put still holds it for a read-only open); a put not acknowledged
//! may or may not survive.
//!
//! Segments are `JOURNAL-NNNNNN`, records from offset 0:
//!
//! ```text
//! crc u32 | body_len u32 | body: version u64 | count u32 |
//!   per operation: key_len u32 | value_len u32 (u32::MAX: delete) | key | value
//! ```
//!
//! The crc (crc32c seeded with the store id, kind 5, the segment number)
//! covers `body_len` and the body. Reading a segment stops at the first
//! record that fails its check: a torn append was never acknowledged.
//!
//! Segments are reused. A segment no longer needed is renamed to a number
//! not used yet and kept as a spare (up to [`SPARES`]); the next rotation
//! writes over it from offset 0. Under its new number its old records
//! fail their checks (the seed differs), so it reads as empty until
//! written. Writing over blocks a file already has lets an fdatasync
//! flush the data alone: an append also changes the file's size and
//! blocks, which the file system must journal first.

use crate::codec::{self, checksum, Decoder, FileKind, PutLe, StoreId};
use crate::entry::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::error::{Error, Result};
use crate::group_commit::GroupCommit;
use crate::vfs::{Storage, StorageFile};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PREFIX: &str = "JOURNAL-";

/// A segment past this many bytes is sealed before the next record, so
/// an open reads at most about this much (plus one batch) at a time,
/// however busy the second before a crash was.
const SEGMENT_BYTES: u64 = 16 << 20;

/// Segments no longer needed that are kept to be written over (see the
/// module docs); more are deleted. Two: the checkpointer seals the open
/// segment every 200 ms and frees it in the same round once the logs are
/// synced (or a round later, if a batch in it was not applied yet), so
/// one spare is used per round and a second covers a writer's rotation
/// at 16 MiB in between.
const SPARES: usize = 2;

/// A segment's file name.
pub(crate) fn file_name(number: u64) -> String {
    format!("{PREFIX}{number:06}")
}

/// The segment number of a journal file name.
pub(crate) fn number_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?;
    (digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// One journaled write: its version and operations.
pub(crate) type Record = (u64, Vec<(Vec<u8>, Option<Vec<u8>>)>);

/// A segment's file, written directly when the storage allows it.
struct SegmentFile {
    file: Arc<dyn StorageFile>,
    /// `Some(alignment)`: `file` takes direct writes (see
    /// `Storage::open_direct`), aligned to it.
    direct: Option<usize>,
}

struct Segment {
    number: u64,
    file: SegmentFile,
    /// The logical end: written and buffered bytes.
    len: u64,
    /// Bytes handed to the file (by the thread syncing, see
    /// [`Journal::sync`]).
    written: u64,
    /// With direct writes: the bytes of the last block written in part,
    /// from its start. The next write starts with them (a block is written
    /// whole), so it rewrites one partial block, not a partial page.
    tail: Vec<u8>,
    /// Records appended but not yet written to the file: the thread that
    /// syncs next writes them all at once, outside the journal's lock.
    /// Bounded by the writers waiting for a sync: each waits for its
    /// record's.
    buffer: Vec<u8>,
    /// Records appended but not yet applied to their chunk logs.
    in_flight: usize,
}

/// A zeroed buffer of `len` bytes whose start (the returned index) is
/// aligned to `align` in memory, as direct writes need.
fn aligned(len: usize, align: usize) -> (Vec<u8>, usize) {
    let bytes = vec![0u8; len + align];
    let start = (align - bytes.as_ptr() as usize % align) % align;
    (bytes, start)
}

/// True if a direct write of one block of zeros at offset 0 works.
fn probe(file: &dyn StorageFile, align: usize) -> bool {
    let (bytes, start) = aligned(align, align);
    file.write_at(0, &bytes[start..start + align]).is_ok()
}

/// What a sync writes to one segment's file: `bytes` at `at`, `bytes`
/// starting at a block's start and padded to whole blocks for direct
/// writes (`start` is where the block-aligned copy begins).
struct Pending {
    number: u64,
    file: Arc<dyn StorageFile>,
    at: u64,
    bytes: Vec<u8>,
    start: usize,
    len: usize,
}

impl Segment {
    /// Takes the buffered records to be written by the caller, outside the
    /// journal's lock; `None` if there are none.
    fn take(&mut self) -> Option<Pending> {
        if self.buffer.is_empty() {
            return None;
        }
        let buffer = std::mem::take(&mut self.buffer);
        let at = self.written;
        self.written += buffer.len() as u64;
        let (at, bytes, start, len) = match self.file.direct {
            None => {
                let len = buffer.len();
                (at, buffer, 0, len)
            }
            Some(align) => {
                // The partial block already written, then the new bytes,
                // padded with zeros to whole blocks, in memory aligned to
                // `align`.
                let data_len = self.tail.len() + buffer.len();
                let len = data_len.div_ceil(align) * align;
                let (mut bytes, start) = aligned(len, align);
                bytes[start..start + self.tail.len()].copy_from_slice(&self.tail);
                bytes[start + self.tail.len()..start + data_len].copy_from_slice(&buffer);
                let at = at - self.tail.len() as u64;
                let last_block = data_len / align * align;
                self.tail = bytes[start + last_block..start + data_len].to_vec();
                (at, bytes, start, len)
            }
        };
        Some(Pending {
            number: self.number,
            file: self.file.file.clone(),
            at,
            bytes,
            start,
            len,
        })
    }
}

struct State {
    /// The open segment last; older ones wait for their logs' sync.
    segments: Vec<Segment>,
    next_number: u64,
    /// Files to open as the next segments, by ascending number: each is
    /// already named with its number, the name synced (see the module
    /// docs).
    spares: Vec<(u64, SegmentFile)>,
}

/// Where a journal record ended: what its writer waits to be durable.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    segment: u64,
    end: u64,
}

/// The journal of a running `Sync` store.
pub(crate) struct Journal {
    dir: PathBuf,
    store: StoreId,
    state: Mutex<State>,
    /// (segment, length) known durable: segments below it are whole, or
    /// were dropped once their writes were in synced chunk logs.
    synced: GroupCommit<(u64, u64)>,
    /// Bytes handed to segment files (blocks rewritten and padding
    /// included), for `Stats::journal_bytes_written`.
    bytes_written: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("dir", &self.dir).finish()
    }
}

fn seed(store: StoreId, number: u64) -> u32 {
    codec::seed(store, FileKind::Journal, number)
}

fn encode(store: StoreId, number: u64, version: u64, ops: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.put_u64(version);
    body.put_u32(ops.len() as u32);
    for (k, v) in ops {
        body.put_u32(k.len() as u32);
        body.put_u32(v.map_or(u32::MAX, |v| v.len() as u32));
        body.extend_from_slice(k);
        if let Some(v) = v {
            body.extend_from_slice(v);
        }
    }
    let mut out = Vec::with_capacity(body.len() + 8);
    out.put_u32(0);
    out.put_u32(body.len() as u32);
    out.extend_from_slice(&body);
    let crc = checksum(seed(store, number), &out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

fn decode_body(body: &[u8]) -> Option<Record> {
    let mut d = Decoder::new(body);
    let version = d.u64()?;
    let count = d.u32()? as usize;
    if count > body.len() / 8 {
        return None;
    }
    let mut ops = Vec::with_capacity(count);
    for _ in 0..count {
        let key_len = d.u32()? as usize;
        let value_len = d.u32()?;
        if key_len > MAX_KEY_SIZE {
            return None;
        }
        let key = d.bytes(key_len)?.to_vec();
        let value = match value_len {
            u32::MAX => None,
            n if n as usize > MAX_VALUE_SIZE => return None,
            n => Some(d.bytes(n as usize)?.to_vec()),
        };
        ops.push((key, value));
    }
    (d.remaining() == 0).then_some((version, ops))
}

impl Journal {
    /// A journal starting at segment `next_number` (segments below it were
    /// replayed and removed).
    pub fn new(dir: &Path, store: StoreId, next_number: u64) -> Self {
        Journal {
            dir: dir.to_path_buf(),
            store,
            state: Mutex::new(State {
                segments: Vec::new(),
                next_number,
                spares: Vec::new(),
            }),
            synced: GroupCommit::new((0, 0)),
            bytes_written: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Bytes written to the segment files since the open.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn io(&self, name: &str) -> impl Fn(std::io::Error) -> Error + '_ {
        let path = self.dir.join(name);
        move |e| Error::io(&path, e)
    }

    /// Opens the next segment: a spare if there is one, else a new file
    /// (its name synced before any record in it is acknowledged). The old
    /// segment's buffered records stay buffered: the next
    /// [`Journal::sync`] writes and syncs every segment not yet durable,
    /// oldest first, so the durable mark still implies every segment below
    /// it is whole.
    fn rotate(&self, st: &dyn Storage, state: &mut State) -> Result<()> {
        let open = state.segments.last().map(|s| s.number);
        // A spare numbered below the open segment (renamed while a
        // rotation created a file) waits for `remove` to delete it.
        let spare = state
            .spares
            .iter()
            .position(|(n, _)| open.is_none_or(|o| *n > o));
        let (number, file) = match spare {
            Some(i) => state.spares.remove(i),
            None => {
                let number = state.next_number;
                let name = file_name(number);
                let path = self.dir.join(&name);
                let plain = st.create(&path).map_err(self.io(&name))?;
                let file = match st.open_direct(&path).map_err(self.io(&name))? {
                    // One block of zeros, written as records will be: a
                    // file system may report an alignment and still
                    // refuse the writes.
                    Some((file, align)) if probe(file.as_ref(), align) => SegmentFile {
                        file,
                        direct: Some(align),
                    },
                    _ => SegmentFile {
                        file: plain,
                        direct: None,
                    },
                };
                st.sync_dir(&self.dir)
                    .map_err(|e| Error::io(&self.dir, e))?;
                state.next_number += 1;
                (number, file)
            }
        };
        state.segments.push(Segment {
            number,
            file,
            len: 0,
            written: 0,
            tail: Vec::new(),
            buffer: Vec::new(),
            in_flight: 0,
        });
        Ok(())
    }

    /// Appends one write's record (not yet durable: see [`Journal::sync`]).
    /// Until [`Journal::applied`] is called with the ticket, the segment
    /// is kept.
    pub fn append(
        &self,
        st: &dyn Storage,
        version: u64,
        ops: &[(&[u8], Option<&[u8]>)],
    ) -> Result<Ticket> {
        self.append_as(st, version, ops, true)
    }

    /// [`Journal::append`] of a write already in its chunk logs: there is
    /// nothing to wait for before the segment may go.
    pub fn append_applied(
        &self,
        st: &dyn Storage,
        version: u64,
        ops: &[(&[u8], Option<&[u8]>)],
    ) -> Result<Ticket> {
        self.append_as(st, version, ops, false)
    }

    fn append_as(
        &self,
        st: &dyn Storage,
        version: u64,
        ops: &[(&[u8], Option<&[u8]>)],
        in_flight: bool,
    ) -> Result<Ticket> {
        let mut state = self.state.lock();
        if state.segments.last().is_none_or(|s| s.len >= SEGMENT_BYTES) {
            self.rotate(st, &mut state)?;
        }
        let Some(seg) = state.segments.last_mut() else {
            return Err(Error::InvalidArgument("journal without a segment".into()));
        };
        let record = encode(self.store, seg.number, version, ops);
        seg.buffer.extend_from_slice(&record);
        seg.len += record.len() as u64;
        seg.in_flight += usize::from(in_flight);
        Ok(Ticket {
            segment: seg.number,
            end: seg.len,
        })
    }

    /// Makes the record of `ticket` durable, with one fsync for every
    /// record appended so far unless another writer's already covered it
    /// (group commit, see `group_commit`).
    pub fn sync(&self, ticket: Ticket) -> Result<bool> {
        let synced = self.synced.commit(
            (ticket.segment, ticket.end),
            || {
                // What is appended now (at least this record, or a later
                // segment's records, whose sync covers it): the buffered
                // records of every segment not yet durable, oldest first,
                // taken under the lock and written outside it (one thread
                // syncs at a time). Lock order: `state`, then `synced`.
                let (pending, covered) = {
                    let mut state = self.state.lock();
                    let Some(open) = state.segments.last() else {
                        return Ok((0, 0));
                    };
                    let covered = (open.number, open.len);
                    let durable = self.synced.mark().0;
                    let pending: Vec<Pending> = state
                        .segments
                        .iter_mut()
                        .filter(|s| s.number >= durable)
                        .filter_map(Segment::take)
                        .collect();
                    (pending, covered)
                };
                for p in pending {
                    self.bytes_written
                        .fetch_add(p.len as u64, std::sync::atomic::Ordering::Relaxed);
                    let io = self.io(&file_name(p.number));
                    p.file
                        .write_at(p.at, &p.bytes[p.start..p.start + p.len])
                        .and_then(|()| p.file.sync())
                        .map_err(io)?;
                }
                Ok(covered)
            },
            || {
                Error::io(
                    &self.dir,
                    std::io::Error::other("an earlier write or sync of the journal failed"),
                )
            },
        )?;
        Ok(synced.is_some())
    }

    /// The write of `ticket` is in its chunk logs.
    pub fn applied(&self, ticket: Ticket) {
        let mut state = self.state.lock();
        if let Some(seg) = state
            .segments
            .iter_mut()
            .find(|s| s.number == ticket.segment)
        {
            seg.in_flight = seg.in_flight.saturating_sub(1);
        }
    }

    /// Seals the open segment (if it holds anything) and returns the
    /// segments whose writes are all applied: once the chunk logs are
    /// synced, [`Journal::remove`] drops them.
    pub fn seal(&self, st: &dyn Storage) -> Result<Vec<u64>> {
        let mut state = self.state.lock();
        if state.segments.last().is_some_and(|s| s.len > 0) {
            self.rotate(st, &mut state)?;
        }
        let open = state.segments.last().map(|s| s.number);
        Ok(state
            .segments
            .iter()
            .filter(|s| Some(s.number) != open && s.in_flight == 0)
            .map(|s| s.number)
            .collect())
    }

    /// Drops sealed segments whose writes are in synced chunk logs: up to
    /// [`SPARES`] are renamed to numbers not used yet, to become spares
    /// once [`Journal::keep_spares`] has synced their names; the rest are
    /// deleted.
    pub fn remove(&self, st: &dyn Storage, numbers: &[u64]) -> Result<Renamed> {
        let (gone, kept) = {
            let mut state = self.state.lock();
            let open = state.segments.last().map(|s| s.number);
            // Spares left below the open segment cannot be used in order.
            let mut gone = Vec::new();
            state.spares.retain(|(n, _)| {
                let behind = open.is_some_and(|o| *n <= o);
                if behind {
                    gone.push(*n);
                }
                !behind
            });
            let mut kept = Vec::new();
            for &n in numbers {
                let Some(i) = state.segments.iter().position(|s| s.number == n) else {
                    gone.push(n);
                    continue;
                };
                let seg = state.segments.remove(i);
                if state.spares.len() + kept.len() < SPARES {
                    let to = state.next_number;
                    state.next_number += 1;
                    kept.push((n, to, seg.file));
                } else {
                    gone.push(n);
                }
            }
            (gone, kept)
        };
        for n in gone {
            let name = file_name(n);
            st.remove(&self.dir.join(&name)).map_err(self.io(&name))?;
        }
        let mut spares = Vec::with_capacity(kept.len());
        for (from, to, file) in kept {
            let name = file_name(from);
            st.rename(&self.dir.join(&name), &self.dir.join(file_name(to)))
                .map_err(self.io(&name))?;
            spares.push((to, file));
        }
        Ok(Renamed(spares))
    }

    /// Syncs the names [`Journal::remove`] gave and makes those files
    /// spares: a record written in one must not be acknowledged while a
    /// crash could bring back its old name.
    pub fn keep_spares(&self, st: &dyn Storage, renamed: Renamed) -> Result<()> {
        if renamed.0.is_empty() {
            return Ok(());
        }
        st.sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        self.state.lock().spares.extend(renamed.0);
        Ok(())
    }

    /// At a clean close, after the last [`Journal::remove`]: deletes the
    /// spares and empties the open segment if it holds no record, so no
    /// old records stay on disk (they would read as nothing, but hold
    /// space and bytes no check covers).
    pub fn close(&self, st: &dyn Storage) -> Result<()> {
        let mut state = self.state.lock();
        for (n, _) in std::mem::take(&mut state.spares) {
            let name = file_name(n);
            st.remove(&self.dir.join(&name)).map_err(self.io(&name))?;
        }
        if let Some(open) = state.segments.last().filter(|s| s.len == 0) {
            open.file
                .file
                .truncate(0)
                .map_err(self.io(&file_name(open.number)))?;
        }
        Ok(())
    }
}

/// Segments renamed to become spares (see [`Journal::remove`]).
pub(crate) struct Renamed(Vec<(u64, SegmentFile)>);

/// The journal segments in `dir`, by number.
pub(crate) fn segments(st: &dyn Storage, dir: &Path) -> Result<Vec<u64>> {
    let mut numbers: Vec<u64> = st
        .list(dir)
        .map_err(|e| Error::io(dir, e))?
        .iter()
        .filter_map(|n| number_of(n))
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// The records of segment `number`, in order, up to the first that fails
/// its check.
pub(crate) fn read(
    st: &dyn Storage,
    dir: &Path,
    store: StoreId,
    number: u64,
) -> Result<Vec<Record>> {
    let path = dir.join(file_name(number));
    let io = |e| Error::io(&path, e);
    let file = st.open_read(&path).map_err(io)?;
    let len = file.len().map_err(io)?;
    // Segments are sealed every 200 ms and at 16 MiB: read whole. One
    // past any segment a store writes (16 MiB and a 64 MiB batch) is not
    // allocated.
    if len > 256 << 20 {
        return Err(Error::corruption(
            &path,
            0,
            "journal segment larger than any written",
        ));
    }
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    file.read_at(0, &mut bytes).map_err(io)?;
    let seed = seed(store, number);
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(head) = bytes.get(at..at + 8) {
        let crc = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let body_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let Some(covered) = bytes.get(at + 4..at + 8 + body_len) else {
            break;
        };
        if checksum(seed, covered) != crc {
            break;
        }
        let Some(record) = decode_body(&covered[4..]) else {
            break;
        };
        out.push(record);
        at += 8 + body_len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemFs;

    #[test]
    fn records_round_trip_and_reading_stops_at_a_torn_one() {
        let fs = MemFs::new();
        // Written through the page cache: the torn record below lands
        // right after the last one (direct writes pad to whole blocks).
        fs.set_direct_writes(false);
        let dir = Path::new("/j");
        fs.create_dir_all(dir).unwrap();
        let store = StoreId(3);
        let j = Journal::new(dir, store, 1);
        let t1 = j
            .append(&fs, 10, &[(b"a", Some(b"1")), (b"b", None)])
            .unwrap();
        assert!(j.sync(t1).unwrap());
        let t2 = j.append(&fs, 11, &[(b"c", Some(b""))]).unwrap();
        assert!(j.sync(t2).unwrap());
        assert!(!j.sync(t1).unwrap(), "already covered");
        assert_eq!(segments(&fs, dir).unwrap(), vec![1]);
        let got = read(&fs, dir, store, 1).unwrap();
        assert_eq!(
            got,
            vec![
                (
                    10,
                    vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)]
                ),
                (11, vec![(b"c".to_vec(), Some(Vec::new()))]),
            ]
        );
        // A torn record after them: ignored.
        let f = fs.open(&dir.join(file_name(1))).unwrap();
        let len = f.len().unwrap();
        f.write_at(len, &[1, 2, 3, 4, 200, 0, 0, 0, 9]).unwrap();
        assert_eq!(read(&fs, dir, store, 1).unwrap().len(), 2);
        // Another store's segment reads as empty.
        assert!(read(&fs, dir, StoreId(4), 1).unwrap().is_empty());
        // Sealing keeps segments with writes not yet applied.
        assert!(j.seal(&fs).unwrap().is_empty());
        j.applied(t1);
        j.applied(t2);
        assert_eq!(j.seal(&fs).unwrap(), vec![1], "segment 2 is open and empty");
        let renamed = j.remove(&fs, &[1]).unwrap();
        j.keep_spares(&fs, renamed).unwrap();
        // Segment 1 is kept as a spare, renamed to 3: its records, seeded
        // with 1, do not read under its new number.
        assert_eq!(segments(&fs, dir).unwrap(), vec![2, 3]);
        assert!(read(&fs, dir, store, 3).unwrap().is_empty());
        assert_eq!(number_of("JOURNAL-000012"), Some(12));
        assert_eq!(number_of("JOURNAL-12"), None);
    }

    #[test]
    fn spares_are_written_over_in_order_and_only_new_records_read() {
        let fs = MemFs::new();
        let dir = Path::new("/j");
        fs.create_dir_all(dir).unwrap();
        let store = StoreId(7);
        let j = Journal::new(dir, store, 1);
        let big = vec![9u8; 3000];
        // Segment 1: three large records, applied, sealed, freed.
        for v in 0..3 {
            let t = j.append_applied(&fs, v, &[(b"k", Some(&big))]).unwrap();
            j.sync(t).unwrap();
        }
        let sealed = j.seal(&fs).unwrap();
        assert_eq!(sealed, vec![1]);
        let renamed = j.remove(&fs, &sealed).unwrap();
        j.keep_spares(&fs, renamed).unwrap();
        assert_eq!(segments(&fs, dir).unwrap(), vec![2, 3]);
        // Segment 2 (open) gets one record, not synced; sealing opens spare
        // 3, which is written from offset 0 over segment 1's old records.
        let t2 = j.append_applied(&fs, 10, &[(b"a", Some(b"x"))]).unwrap();
        assert_eq!(j.seal(&fs).unwrap(), vec![2]);
        let t = j.append_applied(&fs, 11, &[(b"b", Some(b"y"))]).unwrap();
        assert!(j.sync(t).unwrap());
        let file_len = fs.open(&dir.join(file_name(3))).unwrap().len().unwrap();
        assert!(file_len > 9000, "the spare kept its old blocks: {file_len}");
        assert_eq!(
            read(&fs, dir, store, 3).unwrap(),
            vec![(11, vec![(b"b".to_vec(), Some(b"y".to_vec()))])],
            "only the new record reads; the old ones after it fail their checks"
        );
        assert!(!j.sync(t2).unwrap(), "the sync of segment 3 covered 2");
        // A power loss keeps what was synced: the sync for segment 3's
        // record synced sealed segment 2 first.
        fs.crash(crate::vfs::CrashMode::DropUnsynced);
        assert_eq!(read(&fs, dir, store, 2).unwrap().len(), 1);
        assert_eq!(read(&fs, dir, store, 3).unwrap().len(), 1);
    }

    /// Appends records of many sizes, each synced on its own (so a direct
    /// write rewrites the block it ended in), and reads them back.
    fn write_and_read_back(st: &dyn Storage, dir: &Path) -> Vec<Record> {
        let store = StoreId(11);
        let j = Journal::new(dir, store, 1);
        let mut want = Vec::new();
        for (i, size) in [0usize, 1, 100, 511, 512, 513, 4000, 9000, 3]
            .into_iter()
            .enumerate()
        {
            let key = format!("k{i}").into_bytes();
            let value = vec![i as u8; size];
            let t = j
                .append_applied(st, i as u64, &[(&key, Some(&value))])
                .unwrap();
            assert!(j.sync(t).unwrap());
            want.push((i as u64, vec![(key, Some(value))]));
            assert_eq!(read(st, dir, store, 1).unwrap(), want, "after record {i}");
        }
        want
    }

    #[test]
    fn direct_writes_keep_every_synced_record_through_a_torn_crash() {
        for seed in 0..20 {
            let fs = MemFs::new();
            let dir = Path::new("/j");
            fs.create_dir_all(dir).unwrap();
            assert!(fs.open_direct(Path::new("/nope")).is_err());
            let want = write_and_read_back(&fs, dir);
            // Unsynced records after them, then a crash that tears writes.
            let j = Journal::new(dir, StoreId(11), 2);
            let _ = j.append_applied(&fs, 99, &[(b"x", Some(b"y"))]).unwrap();
            fs.crash(crate::vfs::CrashMode::Random { seed });
            assert_eq!(read(&fs, dir, StoreId(11), 1).unwrap(), want, "seed {seed}");
        }
    }

    #[test]
    fn journal_writes_on_the_real_file_system_direct_or_not() {
        let tmp = tempfile::tempdir().unwrap();
        let direct = crate::vfs::StdFs
            .open_direct(&{
                let p = tmp.path().join("probe");
                std::fs::write(&p, b"").unwrap();
                p
            })
            .unwrap()
            .is_some();
        eprintln!("direct writes here: {direct}");
        let want = write_and_read_back(&crate::vfs::StdFs, tmp.path());
        assert_eq!(want.len(), 9);
        // And through the page cache.
        let fs = MemFs::new();
        fs.set_direct_writes(false);
        fs.create_dir_all(Path::new("/j")).unwrap();
        assert_eq!(write_and_read_back(&fs, Path::new("/j")), want);
    }
}
