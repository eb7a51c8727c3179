//! Writes a sorted table, block by block.

use super::format::{self, Footer, FOOTER_LEN};
use crate::codec::{self, FileHeader, FileKind, PutLe, StoreId, FILE_HEADER_LEN};
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::vfs::{Storage, StorageFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A table being written is synced every this many bytes, so the page
/// cache (and a memory cgroup holding it) never holds more than this much
/// of it dirty (RocksDB's `bytes_per_sync` does the same).
pub(crate) const BYTES_PER_SYNC: u64 = 1 << 20;

pub(crate) struct TableWriter {
    path: PathBuf,
    file: Arc<dyn StorageFile>,
    seed: u32,
    block_size: usize,
    /// Compress blocks with LZ4 (see `format::encode_block`).
    compress: bool,
    block: Vec<u8>,
    /// A finished block's body, reused.
    stored: Vec<u8>,
    /// Bytes of the finished blocks before compression.
    logical: u64,
    block_last_key: Vec<u8>,
    offset: u64,
    /// Bytes written since the last sync (see [`BYTES_PER_SYNC`]).
    unsynced: u64,
    index: Vec<(Vec<u8>, u64, u32)>,
    footer: Footer,
    last: Option<(Vec<u8>, u64, u64)>,
}

impl TableWriter {
    pub fn file_name(number: u64) -> String {
        format!("{number:06}.tbl")
    }

    /// Creates table `number` of `dir` and writes its header (synced with
    /// the rest by [`TableWriter::finish`]). `generation` is the manifest
    /// generation durable now.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        store: StoreId,
        generation: u64,
        block_size: usize,
        compress: bool,
    ) -> Result<Self> {
        let path = dir.join(Self::file_name(number));
        let file = storage.create(&path).map_err(|e| Error::io(&path, e))?;
        let header = FileHeader {
            format_version: codec::FILE_FORMAT_VERSION,
            kind: FileKind::Table,
            store,
            number,
            generation,
        };
        file.write_at(0, &header.encode())
            .map_err(|e| Error::io(&path, e))?;
        Ok(TableWriter {
            path,
            file,
            seed: codec::seed(store, FileKind::Table, number),
            block_size: block_size.max(256),
            compress,
            block: Vec::new(),
            stored: Vec::new(),
            logical: 0,
            block_last_key: Vec::new(),
            offset: FILE_HEADER_LEN as u64,
            unsynced: 0,
            index: Vec::new(),
            footer: Footer {
                version: format::TABLE_FORMAT_VERSION,
                index_len: 0,
                index_offset: 0,
                entry_count: 0,
                max_counter: 0,
                max_version: 0,
                user_bytes: 0,
            },
            last: None,
        })
    }

    /// Writes format 1 (blocks without a codec byte, never compressed), as
    /// releases before compression did: for tests that such tables read.
    #[cfg(test)]
    pub fn format_1(mut self) -> Self {
        self.footer.version = 1;
        self
    }

    /// Adds the next entry; entries must come in (key asc, stamp desc) order.
    pub fn add(&mut self, e: &Entry) -> Result<()> {
        debug_assert!(self.last.as_ref().is_none_or(|(k, v, c)| {
            (k.as_slice(), std::cmp::Reverse((*v, *c)))
                < (e.key.as_slice(), std::cmp::Reverse(e.stamp()))
        }));
        self.last = Some((e.key.clone(), e.version, e.counter));
        format::encode_entry(&mut self.block, e);
        self.block_last_key.clear();
        self.block_last_key.extend_from_slice(&e.key);
        self.footer.entry_count += 1;
        self.footer.max_counter = self.footer.max_counter.max(e.counter);
        self.footer.max_version = self.footer.max_version.max(e.version);
        self.footer.user_bytes += e.user_bytes();
        if self.block.len() >= self.block_size {
            self.finish_block()?;
        }
        Ok(())
    }

    /// Bytes of data in the table so far, as blocks hold it before
    /// compression (what chunk sizes are measured in).
    pub fn bytes(&self) -> u64 {
        self.logical + self.block.len() as u64
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_at(self.offset, bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        self.offset += bytes.len() as u64;
        self.unsynced += bytes.len() as u64;
        if self.unsynced >= BYTES_PER_SYNC {
            // Paced writeback: a table written whole and synced at the end
            // leaves all of it dirty in the page cache until then.
            self.file.sync().map_err(|e| Error::io(&self.path, e))?;
            self.unsynced = 0;
        }
        Ok(())
    }

    fn finish_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let offset = self.offset;
        let mut stored = std::mem::take(&mut self.stored);
        if self.footer.version < 2 {
            stored.clear();
            stored.extend_from_slice(&self.block);
        } else {
            format::encode_block(&self.block, self.compress, &mut stored);
        }
        let crc = format::block_crc(self.seed, offset, &stored);
        stored.put_u32(crc);
        self.write(&stored)?;
        self.index.push((
            std::mem::take(&mut self.block_last_key),
            offset,
            stored.len() as u32,
        ));
        self.logical += self.block.len() as u64;
        self.block.clear();
        self.stored = stored;
        Ok(())
    }

    /// Writes the index and footer and syncs the file. Returns the file size.
    pub fn finish(mut self) -> Result<u64> {
        self.finish_block()?;
        let index_offset = self.offset;
        let mut index = Vec::new();
        index.put_u32(self.index.len() as u32);
        for (key, off, len) in &self.index {
            index.put_u32(key.len() as u32);
            index.extend_from_slice(key);
            index.put_u64(*off);
            index.put_u32(*len);
        }
        let crc = format::block_crc(self.seed, index_offset, &index);
        index.put_u32(crc);
        self.footer.index_offset = index_offset;
        self.footer.index_len = index.len() as u32;
        self.write(&index)?;
        let footer = self.footer.encode(self.seed);
        debug_assert_eq!(footer.len(), FOOTER_LEN);
        self.write(&footer)?;
        self.file.sync().map_err(|e| Error::io(&self.path, e))?;
        Ok(self.offset)
    }
}
