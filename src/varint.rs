//! LEB128 varints as postcard writes them, read straight from stored bytes.
//!
//! The postings and forward-index codecs read their records in place, without
//! materialising postcard's `Vec<u32>`: on the query path that is the innermost loop.

/// Appends `value` as a LEB128 varint.
pub fn write(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A cursor over varint-coded bytes; every read returns `None` at the end of the bytes or
/// on a value that does not fit.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    /// A reader at offset `pos` of `bytes`.
    pub fn at(bytes: &'a [u8], pos: usize) -> Reader<'a> {
        Reader { bytes, pos }
    }

    /// The offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Whether every byte has been read.
    pub fn is_done(&self) -> bool {
        self.pos == self.bytes.len()
    }

    /// A varint of at most five bytes that fits a `u32`.
    #[inline]
    pub fn next_u32(&mut self) -> Option<u32> {
        // Most values (deltas, frequencies, short lengths) take one byte.
        if let Some(&b) = self.bytes.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Some(u32::from(b));
            }
        }
        let mut value = 0u64;
        for i in 0..5 {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(value).ok();
            }
        }
        None
    }

    /// A varint of at most ten bytes that fits a `u64` (postcard's `usize` lengths).
    pub fn next_u64(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(b & 0x7f).checked_shl(7 * i)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// One raw byte.
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// The next `n` raw bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_postcard() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut ours = Vec::new();
            write(&mut ours, u64::from(v));
            assert_eq!(ours, postcard::to_allocvec(&v).unwrap(), "{v}");
            let mut r = Reader::new(&ours);
            assert_eq!(r.next_u32(), Some(v));
            assert!(r.is_done());
        }
        // Too long for a u32, and a truncated varint.
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]).next_u32(),
            None
        );
        assert_eq!(Reader::new(&[0x80]).next_u32(), None);
        assert_eq!(Reader::new(&[0x80]).next_u64(), None);
    }
}
