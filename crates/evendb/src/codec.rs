//! Byte-level helpers shared by every on-disk format: little-endian
//! encoding, a bounds-checked decoder, and checksums seeded with the identity
//! of the file that holds them.

/// Kinds of files, mixed into checksum seeds so that a block copied into the
/// wrong file fails its check. Values are on disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FileKind {
    Manifest = 1,
    Table = 2,
    Log = 3,
    Checkpoint = 4,
}

/// The checksum seed of one file: crc32c over a tag, the kind and the number.
pub(crate) fn seed(kind: FileKind, file_number: u64) -> u32 {
    let mut tag = [0u8; 15];
    tag[..6].copy_from_slice(b"evendb");
    tag[6] = kind as u8;
    tag[7..].copy_from_slice(&file_number.to_le_bytes());
    crc32c::crc32c(&tag)
}

/// crc32c of `data`, continuing from `seed`.
pub(crate) fn checksum(seed: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(seed, data)
}

/// Appends little-endian integers and byte strings to a buffer.
pub(crate) trait PutLe {
    fn put_u8(&mut self, v: u8);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
}

impl PutLe for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
}

/// A cursor over bytes read from disk. Every read is bounds-checked and
/// returns `None` past the end, so decoders never panic on bad input.
#[derive(Debug, Clone)]
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.bytes(1).and_then(|b| b.first().copied())
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_by_kind_and_number() {
        assert_ne!(seed(FileKind::Table, 1), seed(FileKind::Log, 1));
        assert_ne!(seed(FileKind::Table, 1), seed(FileKind::Table, 2));
    }

    #[test]
    fn decoder_returns_none_past_the_end() {
        let mut d = Decoder::new(&[1, 2, 3]);
        assert_eq!(d.u8(), Some(1));
        assert_eq!(d.u32(), None);
        assert_eq!(d.bytes(2), Some(&[2u8, 3][..]));
        assert_eq!(d.u8(), None);
    }
}
