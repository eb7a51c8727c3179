//! Whole-file checks of log segments: the bounded-piece replay check that
//! open and `verify_integrity` share, the search for a valid record after
//! damage, and salvage for `repair`.

use super::blocks::{self, BlockMap, BLOCK_HEADER_LEN};
use super::format::{self, DurableMark, Header, RecordPtr, HEADER_LEN};
use crate::codec::{
    self, FileHeader, FileKind, StoreId, BLOCK_LOG_FORMAT_VERSION, FILE_HEADER_LEN,
};
use crate::entry::KIND_DELETE;
use crate::error::{Error, Result};
use crate::vfs::{Storage, StorageFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Checks the header and every record of segment `number` without
/// changing the file, as `LogSegment::open` would.
pub(crate) fn check_file(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
    store: StoreId,
    durable: Option<DurableMark>,
) -> Result<CheckedLog> {
    let (path, file) = open_file(storage, dir, number)?;
    check_records(&*file, &path, store, number, durable, |_, _| {})
}

/// The newest epoch of any whole record of segment `number` (0 for
/// none), reading the file in bounded pieces.
pub(crate) fn newest_epoch(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
    store: StoreId,
) -> Result<u64> {
    let (path, file) = open_file(storage, dir, number)?;
    let mut newest = 0;
    check_records(&*file, &path, store, number, None, |r, _| {
        newest = newest.max(crate::version::epoch_of(r.version));
    })?;
    Ok(newest)
}

/// Reads every record of segment `number` that passes its checksums,
/// for salvage: after damage, reading resumes at the next valid record.
/// Returns the damaged regions skipped as (offset, bytes, why). A file
/// larger than [`SALVAGE_LIMIT`] is refused.
pub(crate) fn salvage(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
    store: StoreId,
    visit: &mut dyn FnMut(crate::entry::Entry),
) -> Result<Vec<(u64, u64, String)>> {
    let (path, file) = open_file(storage, dir, number)?;
    let len = file.len().map_err(|e| Error::io(&path, e))?;
    if len > SALVAGE_LIMIT {
        return Err(Error::corruption(
            &path,
            0,
            format!("log of {len} bytes is larger than repair reads ({SALVAGE_LIMIT})"),
        ));
    }
    let mut data = vec![0u8; len as usize];
    file.read_at(0, &mut data)
        .map_err(|e| Error::io(&path, e))?;
    let mut damage = Vec::new();
    let header_ok = FileHeader::check(&data, store, FileKind::Log, number);
    if let Err(e) = &header_ok {
        damage.push((0, FILE_HEADER_LEN as u64, format!("file header: {e:?}")));
    }
    let seed = codec::seed(store, FileKind::Log, number);
    if header_ok.is_ok_and(|h| h.format_version == BLOCK_LOG_FORMAT_VERSION) {
        return Ok(salvage_blocks(&data, seed, visit, damage));
    }
    let mut pos = FILE_HEADER_LEN.min(data.len());
    while pos < data.len() {
        match decode_at(&data, pos, seed) {
            Some((h, key)) => {
                visit(entry_at(&data, pos, &h, key));
                pos += HEADER_LEN + h.body_len();
            }
            None => {
                if format::is_padding(data.get(pos..).unwrap_or_default(), len) {
                    break;
                }
                let next = (pos + 1..data.len())
                    .find(|&p| decode_at(&data, p, seed).is_some())
                    .unwrap_or(data.len());
                let why = if next == data.len() {
                    "damaged or torn end"
                } else {
                    "damaged records"
                };
                damage.push((pos as u64, (next - pos) as u64, why.to_string()));
                pos = next;
            }
        }
    }
    Ok(damage)
}

/// [`salvage`] of a log stored in blocks (`data`, the whole file): the
/// records of each valid block up to the first damaged one. Past that,
/// the next blocks' logical offsets (in their checksums) are not known,
/// so the rest is reported damaged.
fn salvage_blocks(
    data: &[u8],
    seed: u32,
    visit: &mut dyn FnMut(crate::entry::Entry),
    mut damage: Vec<(u64, u64, String)>,
) -> Vec<(u64, u64, String)> {
    let mut pos = FILE_HEADER_LEN.min(data.len());
    let mut logical = FILE_HEADER_LEN as u64;
    let mut raw = Vec::new();
    while pos < data.len() {
        raw.clear();
        let decoded = data
            .get(pos..pos + BLOCK_HEADER_LEN)
            .ok_or("a log block header cut short")
            .and_then(blocks::decode_head)
            .and_then(|h| {
                let frame = data
                    .get(pos..pos + h.frame_len())
                    .ok_or("a log block cut short")?;
                blocks::decode_block(frame, seed, logical, &mut raw)
            });
        let Ok(head) = decoded else {
            let why = format!(
                "damaged block ({}); the blocks after it cannot be placed",
                decoded.err().unwrap_or_default()
            );
            damage.push((pos as u64, (data.len() - pos) as u64, why));
            break;
        };
        let mut at = 0;
        while let Some((h, key)) = decode_at(&raw, at, seed) {
            visit(entry_at(&raw, at, &h, key));
            at += HEADER_LEN + h.body_len();
        }
        if at != raw.len() {
            damage.push((
                pos as u64,
                head.frame_len() as u64,
                "damaged records in a block".into(),
            ));
        }
        logical += raw.len() as u64;
        pos += head.frame_len();
    }
    damage
}

/// Opens log file `number` of `dir`; a missing file is [`Error::MissingFile`].
pub(super) fn open_file(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
) -> Result<(PathBuf, Arc<dyn StorageFile>)> {
    let path = dir.join(format::file_name(number));
    match storage.open(&path) {
        Ok(f) => Ok((path, f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::MissingFile(path)),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// What a check of a whole log found.
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckedLog {
    /// Whole records.
    pub records: u64,
    /// Where the last whole record ends (a logical offset in a log stored
    /// in blocks, which is also its file's end: it has no torn tail).
    pub end: u64,
    /// Bytes after it: a torn tail.
    pub torn: u64,
    /// Of a log stored in blocks, where they lie.
    pub blocks: Option<BlockMap>,
}

/// The largest log [`salvage`] reads (whole, into memory).
const SALVAGE_LIMIT: u64 = 1 << 30;

/// Bytes of log read at a time when a whole log is checked.
const CHECK_WINDOW: usize = 1 << 20;

/// Checks the header and the records of a log file, reading it in pieces
/// of [`CHECK_WINDOW`] (a record larger than that is read whole, once its
/// checked header bounds it), and calls `visit` with each record and key.
/// Errors: a bad header, damage before `durable` or a log shorter than it,
/// a record boundary missing at `durable` or a counter that differs there,
/// and damage followed by a valid record.
pub(super) fn check_records(
    file: &dyn StorageFile,
    path: &Path,
    store: StoreId,
    number: u64,
    durable: Option<DurableMark>,
    mut visit: impl FnMut(&RecordPtr, &[u8]),
) -> Result<CheckedLog> {
    let len = file.len().map_err(|e| Error::io(path, e))?;
    let corrupt = |at: u64, d: String| Error::corruption(path, at, d);
    let mut head = [0u8; FILE_HEADER_LEN];
    if len < FILE_HEADER_LEN as u64 {
        return Err(corrupt(
            0,
            format!("log of {len} bytes has no whole header"),
        ));
    }
    file.read_at(0, &mut head).map_err(|e| Error::io(path, e))?;
    let header =
        FileHeader::check(&head, store, FileKind::Log, number).map_err(|e| e.into_error(path))?;
    let seed = codec::seed(store, FileKind::Log, number);
    if header.format_version == BLOCK_LOG_FORMAT_VERSION {
        return check_blocks(file, path, len, seed, durable, visit);
    }
    if let Some(d) = durable {
        if len < d.len {
            return Err(corrupt(
                len,
                format!(
                    "log is {len} bytes but a checkpoint recorded {} bytes durable: {} bytes lost",
                    d.len,
                    d.len - len
                ),
            ));
        }
    }
    let mut out = CheckedLog {
        end: FILE_HEADER_LEN as u64,
        ..CheckedLog::default()
    };
    let mut at_durable = durable.is_none_or(|d| d.len == FILE_HEADER_LEN as u64 && d.counter == 0);
    // `buf` holds the file's bytes from `buf_at` on.
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_at = out.end;
    let refill = |buf: &mut Vec<u8>, at: u64| -> Result<()> {
        let want = usize::try_from((len - at).min(CHECK_WINDOW as u64)).unwrap_or(CHECK_WINDOW);
        buf.resize(want, 0);
        file.read_at(at, buf).map_err(|e| Error::io(path, e))
    };
    while out.end < len {
        let mut rel = usize::try_from(out.end - buf_at).unwrap_or(usize::MAX);
        if rel.saturating_add(HEADER_LEN) > buf.len() {
            buf_at = out.end;
            refill(&mut buf, buf_at)?;
            rel = 0;
        }
        let Some(h) = buf
            .get(rel..rel + HEADER_LEN)
            .and_then(|b| format::decode_header(b, seed))
        else {
            break;
        };
        let rec_len = HEADER_LEN + h.body_len();
        if out.end + rec_len as u64 > len {
            break;
        }
        if rel + rec_len > buf.len() && rec_len <= CHECK_WINDOW {
            buf_at = out.end;
            refill(&mut buf, buf_at)?;
            rel = 0;
        }
        let body: std::borrow::Cow<'_, [u8]> = match buf.get(rel + HEADER_LEN..rel + rec_len) {
            Some(b) => b.into(),
            None => {
                let mut b = vec![0u8; h.body_len()];
                file.read_at(out.end + HEADER_LEN as u64, &mut b)
                    .map_err(|e| Error::io(path, e))?;
                b.into()
            }
        };
        if !format::body_matches(&h, &body, seed) {
            break;
        }
        let r = RecordPtr {
            version: h.version,
            counter: h.counter,
            offset: out.end,
            key_len: h.key_len,
            value_len: h.value_len,
            tombstone: h.kind == KIND_DELETE,
        };
        visit(&r, body.get(..h.key_len as usize).unwrap_or_default());
        out.records += 1;
        out.end += rec_len as u64;
        if let Some(d) = durable {
            if out.end == d.len {
                if h.counter != d.counter {
                    return Err(corrupt(
                        r.offset,
                        format!(
                            "the record ending at the checkpointed length has counter {}, the checkpoint recorded {}",
                            h.counter, d.counter
                        ),
                    ));
                }
                at_durable = true;
            }
        }
    }
    if let Some(d) = durable {
        if out.end < d.len {
            return Err(corrupt(
                out.end,
                format!(
                    "damaged log record before the checkpointed durable length {}",
                    d.len
                ),
            ));
        }
        if !at_durable {
            return Err(corrupt(
                d.len,
                "no record ends at the checkpointed durable length".to_string(),
            ));
        }
    }
    out.torn = len - out.end;
    if out.torn > 0 && out.torn < format::LOG_PAGE {
        // Zero padding after the last record (see `format`) is no tear.
        let mut tail = vec![0u8; out.torn as usize];
        file.read_at(out.end, &mut tail)
            .map_err(|e| Error::io(path, e))?;
        if format::is_padding(&tail, len) {
            out.torn = 0;
        }
    }
    if out.torn > 0 {
        if let Some(at) = find_record_after(file, path, out.end + 1, len, seed)? {
            return Err(corrupt(
                out.end,
                format!("damaged log record followed by a valid record at offset {at}"),
            ));
        }
    }
    Ok(out)
}

/// [`check_records`] of a log stored in blocks (a sorted run), whose file
/// is `len` bytes: every block must be whole and valid up to the file's
/// end, and hold whole, valid records. A run is synced whole before any
/// manifest lists it, so it has no torn tail: any damage is corruption.
fn check_blocks(
    file: &dyn StorageFile,
    path: &Path,
    len: u64,
    seed: u32,
    durable: Option<DurableMark>,
    mut visit: impl FnMut(&RecordPtr, &[u8]),
) -> Result<CheckedLog> {
    let corrupt = |at: u64, d: &str| Error::corruption(path, at, d);
    let first = FILE_HEADER_LEN as u64;
    let mut map = BlockMap::new(first);
    let mut out = CheckedLog {
        end: first,
        ..CheckedLog::default()
    };
    let mut at_durable = durable.is_none_or(|d| d.len == first && d.counter == 0);
    // `buf` holds the file's bytes from `buf_at` on; `raw` one block's
    // records.
    let (mut buf, mut raw): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let mut buf_at = first;
    let mut pos = first;
    let read = |buf: &mut Vec<u8>, at: u64, want: usize| -> Result<()> {
        buf.resize(want, 0);
        file.read_at(at, buf).map_err(|e| Error::io(path, e))
    };
    while pos < len {
        if pos + BLOCK_HEADER_LEN as u64 > len {
            return Err(corrupt(pos, "a log block header cut short"));
        }
        let window = |at: u64| usize::try_from((len - at).min(CHECK_WINDOW as u64)).unwrap_or(0);
        let mut rel = (pos - buf_at) as usize;
        if rel + BLOCK_HEADER_LEN > buf.len() {
            buf_at = pos;
            read(&mut buf, pos, window(pos))?;
            rel = 0;
        }
        let head = buf
            .get(rel..rel + BLOCK_HEADER_LEN)
            .ok_or_else(|| corrupt(pos, "a log block header cut short"))
            .and_then(|h| blocks::decode_head(h).map_err(|d| corrupt(pos, d)))?;
        let frame_len = head.frame_len();
        if pos + frame_len as u64 > len {
            return Err(corrupt(pos, "a log block cut short"));
        }
        if rel + frame_len > buf.len() {
            buf_at = pos;
            read(&mut buf, pos, window(pos).max(frame_len))?;
            rel = 0;
        }
        let frame = buf.get(rel..rel + frame_len).unwrap_or_default();
        raw.clear();
        blocks::decode_block(frame, seed, out.end, &mut raw).map_err(|d| corrupt(pos, d))?;
        // The block's checksum covers its records' bodies.
        let (records, used) = decode_records_checking(&raw, out.end, seed, false);
        if used != raw.len() || records.is_empty() {
            return Err(corrupt(pos, "a log block holds a damaged record"));
        }
        for r in &records {
            let key_at = (r.offset - out.end) as usize + HEADER_LEN;
            visit(
                r,
                raw.get(key_at..key_at + r.key_len as usize)
                    .unwrap_or_default(),
            );
            if let Some(d) = durable {
                if r.offset + r.record_len() == d.len {
                    if r.counter != d.counter {
                        return Err(corrupt(
                            pos,
                            "the record ending at the checkpointed length has another counter",
                        ));
                    }
                    at_durable = true;
                }
            }
        }
        let logical_end = out.end + raw.len() as u64;
        map.push(out.end, pos, logical_end, pos + frame_len as u64);
        out.records += records.len() as u64;
        out.end = logical_end;
        pos += frame_len as u64;
    }
    if let Some(d) = durable {
        if out.end < d.len || !at_durable {
            return Err(corrupt(
                pos,
                "no record of the run ends at the checkpointed durable length",
            ));
        }
    }
    out.blocks = Some(map);
    Ok(out)
}

/// The offset of the first whole, valid record starting in `from..len`, if
/// any: read in pieces, candidates filtered by their fixed header fields
/// before any checksum is computed.
fn find_record_after(
    file: &dyn StorageFile,
    path: &Path,
    from: u64,
    len: u64,
    seed: u32,
) -> Result<Option<u64>> {
    let mut at = from;
    let mut window = Vec::new();
    while at + (HEADER_LEN as u64) <= len {
        let want = usize::try_from((len - at).min(CHECK_WINDOW as u64)).unwrap_or(CHECK_WINDOW);
        window.resize(want, 0);
        file.read_at(at, &mut window)
            .map_err(|e| Error::io(path, e))?;
        let last = window.len().saturating_sub(HEADER_LEN);
        for p in 0..=last {
            // Kind 1 or 2 and three zero bytes: most bytes fail here.
            if !matches!(window.get(p + 4), Some(1 | 2))
                || window.get(p + 5..p + 8) != Some(&[0, 0, 0])
            {
                continue;
            }
            let Some(h) = window
                .get(p..p + HEADER_LEN)
                .and_then(|b| format::decode_header(b, seed))
            else {
                continue;
            };
            let start = at + (p + HEADER_LEN) as u64;
            if start + h.body_len() as u64 > len {
                continue;
            }
            let mut body = vec![0u8; h.body_len()];
            file.read_at(start, &mut body)
                .map_err(|e| Error::io(path, e))?;
            if format::body_matches(&h, &body, seed) {
                return Ok(Some(at + p as u64));
            }
        }
        if window.len() < CHECK_WINDOW {
            break;
        }
        at += (last + 1) as u64;
    }
    Ok(None)
}

/// The entry of the checked record at `pos` of `data` (header `h`, key
/// `key`, as [`decode_at`] found them).
fn entry_at(data: &[u8], pos: usize, h: &Header, key: &[u8]) -> crate::entry::Entry {
    let value_at = pos + HEADER_LEN + key.len();
    let value = (h.kind != KIND_DELETE).then(|| {
        data.get(value_at..value_at + h.value_len as usize)
            .unwrap_or_default()
            .to_vec()
    });
    crate::entry::Entry {
        key: key.to_vec(),
        value,
        version: h.version,
        counter: h.counter,
    }
}

/// Decodes the record at `pos` if its header and body check out; returns the
/// header and the key.
pub(super) fn decode_at(data: &[u8], pos: usize, seed: u32) -> Option<(Header, &[u8])> {
    decode_checking(data, pos, seed, true)
}

/// [`decode_at`], checking the record's body only if `body` (bytes out of
/// checked log blocks need not be: the block's checksum covers them).
pub(super) fn decode_checking(
    data: &[u8],
    pos: usize,
    seed: u32,
    body: bool,
) -> Option<(Header, &[u8])> {
    let header = data.get(pos..pos.checked_add(HEADER_LEN)?)?;
    let h = format::decode_header(header, seed)?;
    let body_start = pos + HEADER_LEN;
    let bytes = data.get(body_start..body_start.checked_add(h.body_len())?)?;
    if body && !format::body_matches(&h, bytes, seed) {
        return None;
    }
    bytes.get(..h.key_len as usize).map(|k| (h, k))
}

/// Decodes whole, checked records (bodies checked only if `body`: see
/// [`decode_checking`]) from the start of `data` (which sits at
/// file offset `base`); returns them and where decoding stopped.
pub(super) fn decode_records_checking(
    data: &[u8],
    base: u64,
    seed: u32,
    body: bool,
) -> (Vec<RecordPtr>, usize) {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some((h, _)) = decode_checking(data, pos, seed, body) else {
            break;
        };
        records.push(RecordPtr {
            version: h.version,
            counter: h.counter,
            offset: base + pos as u64,
            key_len: h.key_len,
            value_len: h.value_len,
            tombstone: h.kind == KIND_DELETE,
        });
        pos += HEADER_LEN + h.body_len();
    }
    (records, pos)
}
