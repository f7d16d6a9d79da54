//! The postings codec: one term's list of (document, per-field statistics).
//!
//! A list starts with a header, a postcard `Vec<u32>` of (field mask, entries with that
//! mask) pairs, ascending by mask, so a query reads a term's document frequency for any set
//! of fields without walking the list. Then the list itself, a flat stream of `u32`s
//! written with postcard (so every number is a varint): for each entry, ascending by document, `doc - previous_doc`, a field mask, then for each
//! field in the mask, in field order, the term frequency and that field's length in the
//! document. Carrying the field length beside the frequency lets a query score every
//! posting without a second lookup per document, which is what keeps search in place
//! (no per-process copy of document lengths) and fast.

use crate::fields::{self, FieldStats, FIELD_COUNT};
use crate::varint::{self, Reader};
use serde::{Deserialize, Serialize};

/// One document's entry in a term's postings list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posting {
    /// The document id.
    pub doc: u32,
    /// For every field: the term's frequency in it and the field's length (0, 0 when absent).
    pub stats: FieldStats,
}

/// Why a byte string is not a valid postings list.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// postcard could not read the stream.
    #[error("postings list is not valid postcard: {0}")]
    Postcard(#[from] postcard::Error),
    /// The stream ended inside an entry, or an entry is out of order.
    #[error("postings list is malformed at entry {0}")]
    Malformed(usize),
}

/// Encodes `postings`, which must be sorted by document and free of duplicates.
pub fn encode(postings: &[Posting]) -> Vec<u8> {
    let mut b = Builder::default();
    for p in postings {
        b.push(p.doc, &p.stats);
    }
    b.finish()
}

/// A postings list built one entry at a time, held encoded: a few bytes per entry instead
/// of a [`Posting`] (52 bytes), which is what bounds a full build's memory (millions of
/// entries at hub scale).
#[derive(Debug, Default)]
pub struct Builder {
    /// The entries' varints, without the header and the length prefix.
    body: Vec<u8>,
    /// How many varints `body` holds (postcard's length prefix counts them).
    values: u64,
    /// The last document pushed.
    last: Option<u32>,
    /// Every entry, once one came out of document order (never, from a sync's apply).
    unsorted: Option<Vec<Posting>>,
}

impl Builder {
    /// Appends one entry. Entries pushed out of order are sorted (and a document pushed
    /// twice kept once) by [`finish`](Builder::finish).
    pub fn push(&mut self, doc: u32, stats: &FieldStats) {
        if let Some(all) = &mut self.unsorted {
            all.push(Posting { doc, stats: *stats });
            return;
        }
        let delta = match self.last {
            None => doc,
            Some(last) if doc > last => doc - last,
            Some(_) => {
                let mut all = self.postings();
                all.push(Posting { doc, stats: *stats });
                self.unsorted = Some(all);
                return;
            }
        };
        self.last = Some(doc);
        varint::write(&mut self.body, u64::from(delta));
        varint::write(&mut self.body, u64::from(fields::mask(stats)));
        self.values += 2;
        for (tf, len) in stats.iter().filter(|(tf, _)| *tf > 0) {
            varint::write(&mut self.body, u64::from(*tf));
            varint::write(&mut self.body, u64::from(*len));
            self.values += 2;
        }
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.last.is_none()
    }

    /// The entries pushed, in document order.
    pub fn postings(&self) -> Vec<Posting> {
        if let Some(all) = &self.unsorted {
            let mut all = all.clone();
            all.sort_by_key(|p| p.doc);
            all.dedup_by_key(|p| p.doc);
            return all;
        }
        let mut out = Vec::new();
        let mut doc = 0u32;
        for_each_entry(&self.body, |delta, stats| {
            doc += delta;
            out.push(Posting { doc, stats: *stats });
        });
        out
    }

    /// The list's bytes, as [`encode`] writes them.
    pub fn finish(self) -> Vec<u8> {
        if self.unsorted.is_some() {
            return encode(&self.postings());
        }
        let mut masks = [0u32; 1 << FIELD_COUNT];
        for_each_entry(&self.body, |_, stats| {
            masks[fields::mask(stats) as usize] += 1
        });
        let mut out = Vec::with_capacity(self.body.len() + 16);
        let pairs = masks.iter().filter(|&&n| n > 0).count();
        varint::write(&mut out, 2 * pairs as u64);
        for (m, &n) in masks.iter().enumerate().filter(|(_, &n)| n > 0) {
            varint::write(&mut out, m as u64);
            varint::write(&mut out, u64::from(n));
        }
        varint::write(&mut out, self.values);
        out.extend_from_slice(&self.body);
        out
    }
}

/// Walks the entries of a body this module wrote: (delta as written, statistics).
fn for_each_entry(body: &[u8], mut visit: impl FnMut(u32, &FieldStats)) {
    let mut r = Reader::new(body);
    while let (Some(delta), Some(mask)) = (r.next_u32(), r.next_u32()) {
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        for (f, slot) in stats.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *slot = (r.next_u32().unwrap_or(0), r.next_u32().unwrap_or(0));
            }
        }
        visit(delta, &stats);
    }
}

/// A list's header: how many entries carry each field mask, and where the entries start.
pub struct Header {
    /// (field mask, entries with exactly that mask), ascending by mask.
    pub masks: Vec<(u32, u32)>,
    /// The offset of the entries in the list's bytes.
    pub body: usize,
}

impl Header {
    /// Reads the header of a list written by [`encode`].
    pub fn read(bytes: &[u8]) -> Result<Header, CodecError> {
        let mut r = Reader::new(bytes);
        let n = r.next_u64().ok_or(CodecError::Malformed(0))?;
        if n % 2 != 0 || n > 2 << FIELD_COUNT {
            return Err(CodecError::Malformed(0));
        }
        let n = n as usize;
        let mut masks = Vec::with_capacity(n / 2);
        for _ in 0..n / 2 {
            let (Some(m), Some(c)) = (r.next_u32(), r.next_u32()) else {
                return Err(CodecError::Malformed(0));
            };
            masks.push((m, c));
        }
        Ok(Header {
            masks,
            body: r.pos(),
        })
    }

    /// The entries whose mask shares a bit with `fields`.
    pub fn count(&self, fields: u32) -> u32 {
        self.count_both(fields, fields)
    }

    /// The entries whose mask shares a bit with `a` and a bit with `b`.
    pub fn count_both(&self, a: u32, b: u32) -> u32 {
        self.masks
            .iter()
            .filter(|(m, _)| m & a != 0 && m & b != 0)
            .map(|(_, c)| c)
            .sum()
    }
}

/// Decodes a list written by [`encode`], calling `visit` for every entry in document order.
///
/// The callback form avoids materialising a `Vec<Posting>` on the query path.
pub fn decode_with(
    bytes: &[u8],
    mut visit: impl FnMut(u32, &FieldStats),
) -> Result<(), CodecError> {
    decode_masked(bytes, |doc, _, stats| visit(doc, stats))
}

/// Like [`decode_with`], also passing each entry's field mask (bit `f` set when the term
/// occurs in field `f`).
///
/// Reads the varints straight from the bytes, without materialising postcard's `Vec<u32>`:
/// this is the innermost loop of every query.
pub fn decode_masked(
    bytes: &[u8],
    mut visit: impl FnMut(u32, u32, &FieldStats),
) -> Result<(), CodecError> {
    let body = Header::read(bytes)?.body;
    let mut r = Reader::at(bytes, body);
    let count = r.next_u64().ok_or(CodecError::Malformed(0))? as usize;
    let mut read = 0usize;
    let mut doc = 0u32;
    let mut entry = 0usize;
    while read < count {
        let bad = CodecError::Malformed(entry);
        let delta = r.next_u32().ok_or(CodecError::Malformed(entry))?;
        if entry > 0 && delta == 0 {
            return Err(bad);
        }
        doc = doc.checked_add(delta).ok_or(CodecError::Malformed(entry))?;
        let mask = r.next_u32().ok_or(CodecError::Malformed(entry))?;
        if mask == 0 || mask >> FIELD_COUNT != 0 {
            return Err(bad);
        }
        read += 2;
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        // The fields in the mask, lowest first: field order, as written.
        let mut bits = mask;
        while bits != 0 {
            let f = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let (Some(tf), Some(len)) = (r.next_u32(), r.next_u32()) else {
                return Err(CodecError::Malformed(entry));
            };
            if tf == 0 {
                return Err(CodecError::Malformed(entry));
            }
            stats[f] = (tf, len);
            read += 2;
        }
        if read > count {
            return Err(CodecError::Malformed(entry));
        }
        visit(doc, mask, &stats);
        entry += 1;
    }
    if !r.is_done() {
        return Err(CodecError::Malformed(entry));
    }
    Ok(())
}

/// Decodes a whole list into postings.
pub fn decode(bytes: &[u8]) -> Result<Vec<Posting>, CodecError> {
    let mut out = Vec::new();
    decode_with(bytes, |doc, stats| out.push(Posting { doc, stats: *stats }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Field;

    fn posting(doc: u32, name: (u32, u32), seed: (u32, u32)) -> Posting {
        let mut stats = [(0, 0); FIELD_COUNT];
        stats[Field::Name as usize] = name;
        stats[Field::Seed as usize] = seed;
        Posting { doc, stats }
    }

    #[test]
    fn round_trips() {
        let list = vec![
            posting(3, (1, 2), (1, 9)),
            posting(4, (0, 0), (2, 40)),
            posting(1_000_000, (7, 7), (7, 300)),
        ];
        assert_eq!(decode(&encode(&list)).unwrap(), list);
        assert!(decode(&encode(&[])).unwrap().is_empty());
    }

    #[test]
    fn the_builder_sorts_entries_pushed_out_of_order() {
        let list = vec![
            posting(3, (1, 2), (1, 9)),
            posting(4, (0, 0), (2, 40)),
            posting(90, (7, 7), (7, 300)),
        ];
        let mut b = Builder::default();
        for p in [&list[1], &list[2], &list[0], &list[2]] {
            b.push(p.doc, &p.stats);
        }
        assert_eq!(b.postings(), list);
        assert_eq!(b.finish(), encode(&list));
        let mut ascending = Builder::default();
        assert!(ascending.is_empty());
        for p in &list {
            ascending.push(p.doc, &p.stats);
        }
        assert_eq!(ascending.postings(), list);
        assert_eq!(decode(&ascending.finish()).unwrap(), list);
    }

    #[test]
    fn small_gaps_take_few_bytes() {
        let list: Vec<Posting> = (0..100).map(|d| posting(d, (1, 3), (1, 20))).collect();
        // A three-byte header, a two-byte length prefix, then per entry: delta, mask, two
        // (tf, len) pairs, one byte each.
        assert!(encode(&list).len() <= 3 + 2 + 100 * 6);
    }

    #[test]
    fn the_fast_reader_agrees_with_postcard() {
        let list = vec![
            posting(0, (1, 2), (1, 9)),
            posting(300, (0, 0), (200, 70_000)),
            posting(u32::MAX, (1, 1), (1, 1)),
        ];
        let bytes = encode(&list);
        let header = Header::read(&bytes).unwrap();
        assert_eq!(header.count(1 << Field::Seed as u32), 3);
        assert_eq!(header.count(1 << Field::Name as u32), 2);
        let flat: Vec<u32> = postcard::from_bytes(&bytes[header.body..]).unwrap();
        assert_eq!(flat.len(), 2 + 4 + 2 + 2 + 2 + 4);
        assert_eq!(decode(&bytes).unwrap(), list);
        // Trailing bytes and a truncated list are errors.
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let with_header = |flat: Vec<u32>| {
            let mut b = vec![0u8];
            b.extend(postcard::to_allocvec(&flat).unwrap());
            b
        };
        assert!(decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&with_header(vec![5u32, 0])).is_err());
        assert!(decode(&with_header(vec![5u32, 1, 2])).is_err());
        assert!(decode(&with_header(vec![5u32, 1, 2, 3, 0, 1, 1, 1])).is_err());
        assert!(Header::read(&[3, 1, 1, 1]).is_err());
    }
}
