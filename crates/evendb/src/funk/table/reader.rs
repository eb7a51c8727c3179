//! Reads a sorted table: footer and index at open, data blocks on demand.

use super::format::{self, Footer, FOOTER_LEN, TABLE_FORMAT_VERSION};
use crate::cache::budget::{Kind, MemoryBudget};
use crate::codec::{self, Decoder, FileHeader, FileKind, StoreId, FILE_HEADER_LEN};
use crate::entry::{Entry, MAX_KEY_SIZE};
use crate::error::{Error, Result};
use crate::prefix::PrefixIndex;
use crate::vfs::{Storage, StorageFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The table's block index as held in memory: where each block ends and
/// its last key. Compact because it is charged to the memory budget and a
/// large store has many blocks (8 GiB of data: 2 million): 16 bytes a block
/// when the prefix index holds the last keys exactly (fixed-size keys),
/// else 20 bytes plus the key (a handle per block with its own key
/// allocation took about 80).
#[derive(Debug)]
struct BlockIndex {
    /// End offset of each block; block `i` starts where `i - 1` ends (the
    /// first right after the file header).
    ends: Box<[u64]>,
    /// The blocks' last keys, searched by integer prefix.
    last_keys: PrefixIndex,
    /// The last keys, concatenated, and where each ends; empty when
    /// `last_keys` holds them exactly.
    keys: Box<[u8]>,
    key_ends: Box<[u32]>,
}

impl BlockIndex {
    fn new(handles: Vec<(Vec<u8>, u64)>) -> Self {
        let last_keys = PrefixIndex::new(handles.iter().map(|(k, _)| k.as_slice()));
        let ends = handles.iter().map(|&(_, end)| end).collect();
        let (mut keys, mut key_ends) = (Vec::new(), Vec::new());
        if !last_keys.is_exact() {
            for (k, _) in &handles {
                keys.extend_from_slice(k);
                key_ends.push(keys.len() as u32);
            }
        }
        BlockIndex {
            ends,
            last_keys,
            keys: keys.into(),
            key_ends: key_ends.into(),
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn start(&self, i: usize) -> u64 {
        if i == 0 {
            FIRST_BLOCK
        } else {
            start_of(&self.ends, i)
        }
    }

    /// Is block `i`'s last key smaller than `key`?
    fn last_key_below(&self, i: usize, key: &[u8]) -> bool {
        match self.last_keys.cmp_exact(i, key) {
            Some(o) => o.is_lt(),
            None => {
                let (a, z) = (start_of(&self.key_ends, i), self.key_ends[i]);
                self.keys.get(a as usize..z as usize).unwrap_or_default() < key
            }
        }
    }

    /// The first block that may hold `key`.
    fn block_for(&self, key: &[u8]) -> usize {
        self.last_keys
            .lower_bound(key, |i| self.last_key_below(i, key))
    }

    fn heap_bytes(&self) -> u64 {
        (self.ends.len() * 8 + self.keys.len() + self.key_ends.len() * 4) as u64
            + self.last_keys.heap_bytes() as u64
    }
}

/// Where a table's first block starts: after its file header.
pub(crate) const FIRST_BLOCK: u64 = FILE_HEADER_LEN as u64;

/// Where item `i` starts in an array of end offsets: where `i - 1` ends.
fn start_of<T: Copy + Default>(ends: &[T], i: usize) -> T {
    i.checked_sub(1)
        .and_then(|p| ends.get(p).copied())
        .unwrap_or_default()
}

#[derive(Debug)]
pub(crate) struct TableReader {
    pub number: u64,
    pub path: PathBuf,
    pub footer: Footer,
    pub file_size: u64,
    seed: u32,
    file: Arc<dyn StorageFile>,
    blocks: BlockIndex,
    /// The budget the index is charged to, with the amount.
    charge: Option<(Arc<MemoryBudget>, u64)>,
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if let Some((budget, n)) = self.charge.take() {
            budget.release(Kind::Indexes, n);
        }
    }
}

impl TableReader {
    /// Opens table `number` of `dir`: checks its header (store, kind and
    /// number), footer and block index.
    pub fn open(storage: &dyn Storage, dir: &Path, number: u64, store: StoreId) -> Result<Self> {
        let path = dir.join(super::TableWriter::file_name(number));
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile(path))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let seed = codec::seed(store, FileKind::Table, number);
        let file_size = file.len().map_err(|e| Error::io(&path, e))?;
        let corrupt = |off: u64, d: &str| Error::corruption(&path, off, d);
        if file_size < (FILE_HEADER_LEN + FOOTER_LEN) as u64 {
            return Err(corrupt(0, "table shorter than its header and footer"));
        }
        let mut head = [0u8; FILE_HEADER_LEN];
        file.read_at(0, &mut head)
            .map_err(|e| Error::io(&path, e))?;
        FileHeader::check(&head, store, FileKind::Table, number)
            .map_err(|e| e.into_error(&path))?;
        let footer_at = file_size - FOOTER_LEN as u64;
        let mut fbuf = [0u8; FOOTER_LEN];
        file.read_at(footer_at, &mut fbuf)
            .map_err(|e| Error::io(&path, e))?;
        let footer = match Footer::decode(&fbuf, seed) {
            Ok(Ok(f)) => f,
            Ok(Err(found)) => {
                return Err(Error::UnsupportedVersion {
                    path,
                    found,
                    supported: TABLE_FORMAT_VERSION,
                })
            }
            Err(detail) => return Err(corrupt(footer_at, detail)),
        };
        // Bound the index by the file before allocating it.
        if footer.index_offset.checked_add(u64::from(footer.index_len)) != Some(footer_at) {
            return Err(corrupt(footer_at, "table index does not end at the footer"));
        }
        let mut ibuf = vec![0u8; footer.index_len as usize];
        file.read_at(footer.index_offset, &mut ibuf)
            .map_err(|e| Error::io(&path, e))?;
        let body = checked_body(&ibuf, seed, footer.index_offset)
            .ok_or_else(|| corrupt(footer.index_offset, "table index failed its checksum"))?;
        let blocks = decode_index(body, footer.index_offset)
            .map(BlockIndex::new)
            .ok_or_else(|| corrupt(footer.index_offset, "malformed table index"))?;
        Ok(TableReader {
            number,
            path,
            footer,
            file_size,
            seed,
            file,
            blocks,
            charge: None,
        })
    }

    /// Memory the block index takes.
    pub fn index_bytes(&self) -> u64 {
        self.blocks.heap_bytes()
    }

    /// Charges the block index to `budget` for as long as the reader lives.
    pub fn charged(mut self, budget: &Arc<MemoryBudget>) -> Self {
        let n = self.index_bytes();
        budget.add(Kind::Indexes, n);
        self.charge = Some((budget.clone(), n));
        self
    }

    /// Asks the file system to start reading the whole file, which a
    /// rebuild is about to merge (see `StorageFile::will_need`).
    pub fn prefetch(&self) {
        self.file.will_need(0, self.file_size);
    }

    /// Bytes of data the table holds before compression (its entries as
    /// blocks hold them): what chunk sizes are measured in.
    pub fn data_bytes(&self) -> u64 {
        if self.footer.version < 2 {
            return self.file_size;
        }
        self.footer
            .user_bytes
            .saturating_add(self.footer.entry_count.saturating_mul(25))
    }

    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Index of the first block that may hold `key`.
    fn block_for(&self, key: &[u8]) -> usize {
        self.blocks.block_for(key)
    }

    /// The checked body of block `i`, read into `buf` (`None` past the
    /// last block).
    fn checked_block<'b>(&self, i: usize, buf: &'b mut Vec<u8>) -> Result<Option<&'b [u8]>> {
        if self.read_window(i, 1, buf)? == 0 {
            return Ok(None);
        }
        let offset = self.blocks.start(i);
        checked_body(buf, self.seed, offset)
            .map(Some)
            .ok_or_else(|| Error::corruption(&self.path, offset, "table block failed its checksum"))
    }

    /// The raw bytes of blocks `first..first + count` (clamped to the
    /// table), read with one positional read (blocks are contiguous in the
    /// file) into `buf`; returns the blocks read. Checksums are checked
    /// when each block is walked.
    fn read_window(&self, first: usize, count: usize, buf: &mut Vec<u8>) -> Result<usize> {
        let last = (first + count).min(self.blocks.len());
        if first >= last {
            return Ok(0);
        }
        let (a, z) = (self.blocks.start(first), self.blocks.ends[last - 1]);
        // Every byte is overwritten by the read: only growth is zeroed.
        buf.resize((z - a) as usize, 0);
        self.file
            .read_at(a, buf)
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(last - first)
    }

    /// The first key of the block about `back` entries below `hi` (the
    /// table's end for `None`); `None` if the table has fewer blocks than
    /// that below it. Reads one block.
    pub fn key_before(&self, hi: Option<&[u8]>, back: usize) -> Result<Option<Vec<u8>>> {
        let n = self.blocks.len();
        if n == 0 {
            return Ok(None);
        }
        let at = hi.map_or(n, |k| self.block_for(k).min(n));
        let per_block = (self.footer.entry_count as usize / n).max(1);
        let Some(j) = at.checked_sub(back.div_ceil(per_block).max(1)) else {
            return Ok(None);
        };
        // Only the first entry is decoded (a reverse scan asks this once
        // a window).
        let (mut buf, mut plain) = (Vec::new(), Vec::new());
        let corrupt =
            || Error::corruption(&self.path, self.blocks.start(j), "malformed table block");
        let Some(body) = self.checked_block(j, &mut buf)? else {
            return Ok(None);
        };
        let body =
            format::block_entries(body, self.footer.version, &mut plain).ok_or_else(corrupt)?;
        let first = match format::entry_refs(body).next() {
            Some(e) => Some(e.ok_or_else(corrupt)?.key.to_vec()),
            None => None,
        };
        Ok(first)
    }

    pub fn read_block(&self, i: usize) -> Result<Vec<Entry>> {
        let (mut buf, mut plain) = (Vec::new(), Vec::new());
        let body = self.checked_block(i, &mut buf)?.unwrap_or_default();
        format::block_entries(body, self.footer.version, &mut plain)
            .and_then(format::decode_entries)
            .ok_or_else(|| {
                Error::corruption(&self.path, self.blocks.start(i), "malformed table block")
            })
    }

    /// The newest entry of `key` whose version `admits` accepts.
    pub fn get(&self, key: &[u8], admits: &dyn Fn(u64) -> bool) -> Result<Option<Entry>> {
        thread_local! {
            /// The block buffers of this thread's gets, as read and
            /// decompressed (no allocation and no zeroing per get).
            static BUF: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
                const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        BUF.with(|b| match b.try_borrow_mut() {
            Ok(mut bufs) => {
                let (buf, plain) = &mut *bufs;
                self.get_with(key, admits, buf, plain)
            }
            Err(_) => self.get_with(key, admits, &mut Vec::new(), &mut Vec::new()),
        })
    }

    fn get_with(
        &self,
        key: &[u8],
        admits: &dyn Fn(u64) -> bool,
        buf: &mut Vec<u8>,
        plain: &mut Vec<u8>,
    ) -> Result<Option<Entry>> {
        let mut i = self.block_for(key);
        while i < self.blocks.len() {
            let Some(body) = self.checked_block(i, buf)? else {
                break;
            };
            let offset = self.blocks.start(i);
            let body = format::block_entries(body, self.footer.version, plain)
                .ok_or_else(|| Error::corruption(&self.path, offset, "malformed table block"))?;
            for e in format::entry_refs(body) {
                let e = e.ok_or_else(|| {
                    Error::corruption(&self.path, offset, "malformed table block")
                })?;
                match e.key.cmp(key) {
                    std::cmp::Ordering::Less => continue,
                    std::cmp::Ordering::Greater => return Ok(None),
                    std::cmp::Ordering::Equal if admits(e.version) => {
                        return Ok(Some(e.to_entry()))
                    }
                    std::cmp::Ordering::Equal => {}
                }
            }
            // The key's versions may continue in the next block.
            i += 1;
        }
        Ok(None)
    }

    /// Entries from `from` on, for a reader that may stop soon (a scan)
    /// and takes no key at or above `to`: the first read is
    /// [`FIRST_WINDOW`] blocks, each next one twice as many, up to
    /// [`MAX_WINDOW`], and no read goes past the block that may hold `to`
    /// (a reverse scan reads in bounded windows; reads past their ends
    /// were an eighth of what newest-first stream queries read).
    pub fn iter_range(self: &Arc<Self>, from: &[u8], to: Option<&[u8]>) -> TableIter {
        let mut iter = TableIter::new(self, from, FIRST_WINDOW);
        if let Some(to) = to {
            // Keys below `to` lie in blocks up to the first whose last key
            // is at least `to`.
            iter.end_block = (self.block_for(to) + 1).min(self.block_count());
        }
        iter
    }

    /// Entries from `from` on, for a reader that takes them all (a munk
    /// load, a rebuild): every read is [`MAX_WINDOW`] blocks.
    pub fn bulk_from(self: &Arc<Self>, from: &[u8]) -> TableIter {
        TableIter::new(self, from, MAX_WINDOW)
    }
}

fn checked_body(buf: &[u8], seed: u32, offset: u64) -> Option<&[u8]> {
    let n = buf.len().checked_sub(4)?;
    let (body, tail) = buf.split_at(n);
    let stored = u32::from_le_bytes(tail.try_into().ok()?);
    (format::block_crc(seed, offset, body) == stored).then_some(body)
}

/// The index's (last key, end offset) per block, checked: blocks are
/// contiguous from offset 0 up to the index.
fn decode_index(body: &[u8], index_offset: u64) -> Option<Vec<(Vec<u8>, u64)>> {
    let mut d = Decoder::new(body);
    let count = d.u32()? as usize;
    // Each handle takes at least 16 bytes: bound the count before allocating.
    if count > d.remaining() / 16 {
        return None;
    }
    let mut blocks = Vec::with_capacity(count);
    let mut expected = FIRST_BLOCK;
    for _ in 0..count {
        let key_len = d.u32()? as usize;
        if key_len > MAX_KEY_SIZE {
            return None;
        }
        let last_key = d.bytes(key_len)?.to_vec();
        let offset = d.u64()?;
        let len = d.u32()?;
        if offset != expected || len < 4 {
            return None;
        }
        expected = offset.checked_add(u64::from(len))?;
        blocks.push((last_key, expected));
    }
    let fits = expected == index_offset && d.remaining() == 0 && d.position() == body.len();
    // Key ends are 32-bit: a table index holds far less than 4 GiB of keys.
    let key_bytes: usize = blocks.iter().map(|(k, _)| k.len()).sum();
    (fits && u32::try_from(key_bytes).is_ok()).then_some(blocks)
}

/// Blocks a scan's first read takes. Each read is a system call and, for
/// data not in the page cache, a device request; most short scans need
/// two blocks or more (they start inside one). YCSB E10 after A at 2x the
/// memory, two alternating runs each: 1 block 36.1-36.5K scans/s, 2 blocks
/// 39.1-41.1K, 4 blocks 39.4-44.0K, 8 blocks 27.1-30.8K (E100: 9.3-10.5K,
/// 10.5-12.0K, 12.0-12.8K, 12.4-13.3K).
const FIRST_WINDOW: usize = 4;

/// Most blocks a table iterator reads at once (256 KiB of 4 KiB blocks).
const MAX_WINDOW: usize = 64;

/// Entries of a table from a start key on, reading `window` blocks at a
/// time (the kernel is told not to read ahead; see `vfs::std_fs`). Blocks
/// are checked and entries decoded one at a time as the reader asks, so a
/// scan that stops early pays for neither the rest of the window nor the
/// copies of entries it never takes.
pub(crate) struct TableIter {
    table: Arc<TableReader>,
    next_block: usize,
    from: Vec<u8>,
    window: usize,
    /// The last window read, from the start of block `buf_first`.
    buf: Vec<u8>,
    buf_first: usize,
    /// Blocks of `buf` not opened yet: `opened..buf_end`.
    opened: usize,
    buf_end: usize,
    /// The open block: its body's end in `buf`, the next entry's position,
    /// and the block's file offset (for errors).
    body_end: usize,
    pos: usize,
    offset: u64,
    /// The open block's entries when it was stored compressed (then `pos`
    /// and `body_end` are in here).
    plain: Vec<u8>,
    in_plain: bool,
    /// Blocks from here on are not read (the table's end, or a bound).
    end_block: usize,
}

impl TableIter {
    fn new(table: &Arc<TableReader>, from: &[u8], window: usize) -> Self {
        TableIter {
            table: table.clone(),
            next_block: table.block_for(from),
            from: from.to_vec(),
            window,
            buf: Vec::new(),
            buf_first: 0,
            opened: 0,
            buf_end: 0,
            body_end: 0,
            pos: 0,
            offset: 0,
            plain: Vec::new(),
            in_plain: false,
            end_block: table.block_count(),
        }
    }

    fn corrupt(&self, what: &str) -> Error {
        Error::corruption(&self.table.path, self.offset, what.to_string())
    }

    /// Opens the next block of the window, reading the next window first
    /// if needed; false at the end of the table.
    fn open_next_block(&mut self) -> Result<bool> {
        if self.opened == self.buf_end {
            if self.next_block >= self.end_block {
                return Ok(false);
            }
            let count = self.window.min(self.end_block - self.next_block);
            let n = self
                .table
                .read_window(self.next_block, count, &mut self.buf)?;
            if n == 0 {
                self.next_block = usize::MAX;
                return Ok(false);
            }
            self.buf_first = self.next_block;
            self.opened = self.next_block;
            self.buf_end = self.next_block + n;
            self.next_block += n;
            self.window = (self.window * 2).min(MAX_WINDOW);
        }
        let blocks = &self.table.blocks;
        let (start, end) = (blocks.start(self.opened), blocks.ends[self.opened]);
        let at = (start - blocks.start(self.buf_first)) as usize;
        let raw = self
            .buf
            .get(at..at + (end - start) as usize)
            .unwrap_or_default();
        self.offset = start;
        let body = checked_body(raw, self.table.seed, start)
            .ok_or_else(|| self.corrupt("table block failed its checksum"))?;
        self.opened += 1;
        match body.last() {
            // Stored as it is: decode in place (format 2 ends with the
            // codec byte; format 1 has none).
            Some(&0) if self.table.footer.version >= 2 => {
                self.in_plain = false;
                self.pos = at;
                self.body_end = at + body.len() - 1;
            }
            _ if self.table.footer.version < 2 => {
                self.in_plain = false;
                self.pos = at;
                self.body_end = at + body.len();
            }
            _ => {
                let n = format::block_entries(body, self.table.footer.version, &mut self.plain)
                    .map(<[u8]>::len)
                    .ok_or_else(|| self.corrupt("malformed table block"))?;
                self.in_plain = true;
                self.pos = 0;
                self.body_end = n;
            }
        }
        Ok(true)
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            while self.pos < self.body_end {
                let bytes = if self.in_plain {
                    &self.plain
                } else {
                    &self.buf
                };
                let mut d = Decoder::new(&bytes[self.pos..self.body_end]);
                let Some(e) = format::decode_one(&mut d) else {
                    return Err(self.corrupt("malformed table block"));
                };
                self.pos += d.position();
                if e.key >= self.from.as_slice() {
                    // Keys ascend: every later entry passes too.
                    self.from.clear();
                    return Ok(Some(e.to_entry()));
                }
            }
            if !self.open_next_block()? {
                return Ok(None);
            }
        }
    }
}

impl Iterator for TableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        match self.next_entry() {
            Ok(e) => e.map(Ok),
            Err(e) => {
                // Stop after the error.
                self.next_block = usize::MAX;
                self.opened = 0;
                self.buf_end = 0;
                self.pos = 0;
                self.body_end = 0;
                Some(Err(e))
            }
        }
    }
}
