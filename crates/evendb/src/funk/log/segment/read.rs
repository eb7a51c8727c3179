//! Reading a segment's bytes (from the file, its blocks, or the write
//! buffer for readable appends not written yet) and whole images of its
//! records.

use super::*;

impl LogSegment {
    pub(super) fn read_bytes(&self, start: u64, end: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_bytes_into(start, end, &mut buf)?;
        Ok(buf)
    }

    /// Reads `[start, end)` into `buf` (its memory reused); `buf` is empty
    /// if the read fails.
    pub(super) fn read_bytes_into(&self, start: u64, end: u64, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        if let Some(b) = &self.blocks {
            let read = self.read_blocks_into(b, start, end, buf);
            if read.is_err() {
                buf.clear();
            }
            return read;
        }
        let n = usize::try_from(end.saturating_sub(start))
            .map_err(|_| Error::corruption(&self.path, start, "log range too large"))?;
        buf.resize(n, 0);
        // Bytes past the file's end are still in the write buffer (readable
        // appends): copy them under the append lock, which keeps the buffer
        // from being written out and cleared meanwhile; the bytes below
        // stay in the file as they are.
        let mut in_file = end;
        if end > self.written.load(Ordering::Acquire) {
            let a = self.append.lock();
            let file_end = a.len - a.buffer.len() as u64;
            if end > file_end {
                let from = start.max(file_end);
                let (lo, hi) = ((from - file_end) as usize, (end - file_end) as usize);
                let Some(bytes) = a.buffer.get(lo..hi) else {
                    buf.clear();
                    return Err(Error::corruption(&self.path, end, "log read past its end"));
                };
                buf[(from - start) as usize..].copy_from_slice(bytes);
                in_file = from;
            }
        }
        if in_file <= start {
            return Ok(());
        }
        let read = self
            .file
            .read_at(start, &mut buf[..(in_file - start) as usize]);
        if read.is_err() {
            buf.clear();
        }
        read.map_err(|e| Error::io(&self.path, e))
    }

    /// The whole, checked records at the start of `buf`, which
    /// [`read_bytes`](Self::read_bytes) read from offset `base`, and where
    /// they end. Bytes out of log blocks passed their block's checksum,
    /// which covers the records' bodies: only headers are checked again
    /// (reads of sorted runs used to checksum every value twice).
    pub(super) fn decode_read(&self, buf: &[u8], base: u64) -> (Vec<RecordPtr>, usize) {
        decode_records_checking(buf, base, self.seed, self.blocks.is_none())
    }

    /// The record at the start of `buf` (read as for
    /// [`decode_read`](Self::decode_read)): its header and key.
    pub(super) fn decode_first<'b>(
        &self,
        buf: &'b [u8],
    ) -> Option<(super::format::Header, &'b [u8])> {
        decode_checking(buf, 0, self.seed, self.blocks.is_none())
    }

    /// Every record below `upto` (clamped to the published length), read
    /// into memory and checked.
    pub fn image(&self, upto: u64) -> Result<SegmentImage> {
        self.image_range(FIRST_RECORD, upto)
    }

    /// The records between offsets `from` (a record boundary) and `upto`.
    pub fn image_range(&self, from: u64, upto: u64) -> Result<SegmentImage> {
        self.image_range_into(from, upto, Vec::new())
    }

    /// [`image_range`](Self::image_range), read into `buf` (its memory
    /// reused).
    pub fn image_range_into(&self, from: u64, upto: u64, mut buf: Vec<u8>) -> Result<SegmentImage> {
        let upto = upto.min(self.len());
        let from = from.max(FIRST_RECORD).min(upto);
        self.read_bytes_into(from, upto, &mut buf)?;
        let whole = buf.len();
        let (image, end) = self.decode_image(buf, from);
        if end != from + whole as u64 {
            return Err(Error::corruption(
                &self.path,
                end,
                "log record failed its checksum",
            ));
        }
        Ok(image)
    }

    /// The whole, checked records at the start of `buf` (read from offset
    /// `from`), as an image with offsets relative to its bytes, and the
    /// offset where they end.
    pub(super) fn decode_image(&self, mut buf: Vec<u8>, from: u64) -> (SegmentImage, u64) {
        let (mut records, pos) = self.decode_read(&buf, from);
        for r in &mut records {
            r.offset -= from;
        }
        buf.truncate(pos);
        let image = SegmentImage {
            bytes: Arc::new(buf),
            records,
        };
        (image, from + pos as u64)
    }
}
