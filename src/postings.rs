//! The postings codec: one term's list of (document, per-field statistics).
//!
//! A list is three parts, one after the other, every number in them a varint:
//!
//! 1. The header, a postcard `Vec<u32>`: (field mask, entries with that mask) pairs,
//!    ascending by mask, so a query reads a term's document frequency for any set of fields
//!    without walking the list.
//! 2. The block directory: its length in bytes, so that a reader who needs only the header
//!    and the entries steps over it at once, then its values; none for a list of at most
//!    [`BLOCK`] entries. Per block of
//!    [`BLOCK`] entries (the last may hold fewer): its last document (as a gap from the
//!    previous block's), its length in bytes, the fields that occur in it (a mask), then for
//!    each of those fields, in field order, its largest frequency and its smallest length
//!    in the block. A query reads the directory to jump over blocks without decoding them
//!    and to bound what any document of a block can score (`search::maxscore`).
//! 3. The entries, a postcard `Vec<u32>`, ascending by document: `doc - previous_doc`, a
//!    field mask, then for each
//!    field in the mask, in field order, the term frequency and that field's length in the
//!    document. Carrying the field length beside the frequency lets a query score every
//!    posting without a second lookup per document, which is what keeps search in place
//!    (no per-process copy of document lengths) and fast. A block's first entry is a gap
//!    from the previous block's last document, so the entries read the same with or
//!    without the directory.

use crate::fields::{self, FieldStats, FIELD_COUNT};
use crate::varint::{self, Reader};
use serde::{Deserialize, Serialize};

/// Entries per block of a list's directory; a list of at most this many has none.
pub const BLOCK: usize = 128;

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
    /// Boxed: a full build holds a builder for each of its ~185k terms at hub scale, and
    /// none of them ever has this list, so it costs them 8 bytes rather than 24.
    #[allow(clippy::box_collection)]
    unsorted: Option<Box<Vec<Posting>>>,
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
                self.unsorted = Some(Box::new(all));
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

    /// Appends every entry of `other`, as [`push`](Builder::push) would one by one.
    pub fn extend(&mut self, other: Builder) {
        other.for_each(|doc, stats| self.push(doc, stats));
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.last.is_none()
    }

    /// The entries pushed, in document order.
    pub fn postings(&self) -> Vec<Posting> {
        let mut out = Vec::new();
        self.for_each(|doc, stats| out.push(Posting { doc, stats: *stats }));
        out
    }

    /// Calls `f` with every entry pushed, in document order (a document pushed twice once).
    fn for_each(&self, mut f: impl FnMut(u32, &FieldStats)) {
        if let Some(all) = &self.unsorted {
            let mut all = Vec::clone(all);
            all.sort_by_key(|p| p.doc);
            all.dedup_by_key(|p| p.doc);
            for p in &all {
                f(p.doc, &p.stats);
            }
            return;
        }
        let mut doc = 0u32;
        for_each_entry(&self.body, |delta, stats, _| {
            doc += delta;
            f(doc, stats);
        });
    }

    /// The list's bytes, as [`encode`] writes them.
    pub fn finish(self) -> Vec<u8> {
        if self.unsorted.is_some() {
            return encode(&self.postings());
        }
        let mut masks = [0u32; 1 << FIELD_COUNT];
        for_each_entry(&self.body, |_, stats, _| {
            masks[fields::mask(stats) as usize] += 1
        });
        let directory = directory(&self.body);
        let mut out = Vec::with_capacity(self.body.len() + 4 * directory.len() + 16);
        let pairs = masks.iter().filter(|&&n| n > 0).count();
        varint::write(&mut out, 2 * pairs as u64);
        for (m, &n) in masks.iter().enumerate().filter(|(_, &n)| n > 0) {
            varint::write(&mut out, m as u64);
            varint::write(&mut out, u64::from(n));
        }
        let mut values = Vec::with_capacity(2 * directory.len());
        for &v in &directory {
            varint::write(&mut values, u64::from(v));
        }
        varint::write(&mut out, values.len() as u64);
        out.extend_from_slice(&values);
        varint::write(&mut out, self.values);
        out.extend_from_slice(&self.body);
        out
    }
}

/// The projection of a list onto one field: the entries that have `field`, with only that
/// field's statistics, in the same codec. The seed ranking reads the seed field's
/// projection (the store's `seed` table), so it walks only the entries it scores.
#[derive(Debug)]
pub struct Projection {
    field: usize,
    list: Builder,
}

impl Projection {
    /// An empty projection onto `field`.
    fn new(field: fields::Field) -> Projection {
        Projection {
            field: field as usize,
            list: Builder::default(),
        }
    }

    /// Takes one entry of the list projected, in document order.
    fn push(&mut self, doc: u32, stats: &FieldStats) {
        let (tf, len) = stats[self.field];
        if tf > 0 {
            let mut only: FieldStats = [(0, 0); FIELD_COUNT];
            only[self.field] = (tf, len);
            self.list.push(doc, &only);
        }
    }

    /// The projection's bytes, as [`encode`] writes them; `None` when no entry has the field.
    fn finish(self) -> Option<Vec<u8>> {
        (!self.list.is_empty()).then(|| self.list.finish())
    }

    /// The projection of the list `builder` holds.
    pub fn of_builder(field: fields::Field, builder: &Builder) -> Option<Vec<u8>> {
        let mut p = Projection::new(field);
        builder.for_each(|doc, stats| p.push(doc, stats));
        p.finish()
    }

    /// The projection of `postings` (sorted by document, as [`encode`] takes them).
    pub fn of_postings(field: fields::Field, postings: &[Posting]) -> Option<Vec<u8>> {
        let mut p = Projection::new(field);
        for e in postings {
            p.push(e.doc, &e.stats);
        }
        p.finish()
    }

    /// The projection of the encoded list `bytes`.
    pub fn of_bytes(field: fields::Field, bytes: &[u8]) -> Result<Option<Vec<u8>>, CodecError> {
        let mut p = Projection::new(field);
        decode_with(bytes, |doc, stats| p.push(doc, stats))?;
        Ok(p.finish())
    }
}

/// The block directory of the entries in `body` (see the module), as the values to write:
/// empty when they fit one block.
fn directory(body: &[u8]) -> Vec<u32> {
    let mut blocks = Vec::new();
    let mut current = Block::EMPTY;
    let (mut entries, mut doc) = (0usize, 0u32);
    for_each_entry(body, |delta, stats, end| {
        doc += delta;
        entries += 1;
        current.add(doc, fields::mask(stats), stats);
        current.end = end;
        if entries % BLOCK == 0 {
            blocks.push(std::mem::replace(&mut current, Block::EMPTY));
        }
    });
    if entries <= BLOCK {
        return Vec::new();
    }
    if current.mask != 0 {
        blocks.push(current);
    }
    let mut out = Vec::with_capacity(blocks.len() * 7);
    let (mut last, mut start) = (0u32, 0usize);
    for b in &blocks {
        out.extend([b.last - last, (b.end - start) as u32, b.mask]);
        for (f, &(tf, len)) in b.bound.iter().enumerate() {
            if b.mask & 1 << f != 0 {
                out.extend([tf, len]);
            }
        }
        (last, start) = (b.last, b.end);
    }
    out
}

/// Walks the entries of a body this module wrote: (delta as written, statistics, the
/// offset in `body` just past the entry).
fn for_each_entry(body: &[u8], mut visit: impl FnMut(u32, &FieldStats, usize)) {
    let mut r = Reader::new(body);
    while let (Some(delta), Some(mask)) = (r.next_u32(), r.next_u32()) {
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        for (f, slot) in stats.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *slot = (r.next_u32().unwrap_or(0), r.next_u32().unwrap_or(0));
            }
        }
        visit(delta, &stats, r.pos());
    }
}

/// A list's header: how many entries carry each field mask, where the block directory is,
/// and where the entries start.
pub struct Header {
    /// (field mask, entries with exactly that mask), ascending by mask.
    pub masks: Vec<(u32, u32)>,
    /// Where the block directory's values start and end in the list's bytes.
    directory: (usize, usize),
    /// The offset of the entries (their postcard length prefix) in the list's bytes.
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
        let len = r.next_u64().ok_or(CodecError::Malformed(0))?;
        let start = r.pos();
        let len = usize::try_from(len).map_err(|_| CodecError::Malformed(0))?;
        r.take(len).ok_or(CodecError::Malformed(0))?;
        let directory = (start, r.pos());
        Ok(Header {
            masks,
            directory,
            body: r.pos(),
        })
    }

    /// The list's blocks (see the module), in document order; a list without a directory
    /// is one block, found by walking its entries.
    pub fn blocks(&self, bytes: &[u8]) -> Result<Vec<Block>, CodecError> {
        let mut r = Reader::at(bytes, self.body);
        r.next_u64().ok_or(CodecError::Malformed(0))?;
        let entries = r.pos();
        let (at, stop) = self.directory;
        if at == stop {
            let mut whole = Block {
                end: bytes.len(),
                ..Block::EMPTY
            };
            decode_masked(bytes, |doc, mask, stats| whole.add(doc, mask, stats))?;
            return Ok(if whole.mask == 0 {
                Vec::new()
            } else {
                vec![whole]
            });
        }
        let mut r = Reader::at(&bytes[..stop], at);
        let mut blocks = Vec::with_capacity((stop - at) / 5);
        let (mut last, mut end) = (0u32, entries);
        while !r.is_done() {
            let (Some(gap), Some(len), Some(mask)) = (r.next_u32(), r.next_u32(), r.next_u32())
            else {
                return Err(CodecError::Malformed(blocks.len() * BLOCK));
            };
            if mask == 0 || mask >> FIELD_COUNT != 0 || (!blocks.is_empty() && gap == 0) {
                return Err(CodecError::Malformed(blocks.len() * BLOCK));
            }
            last = last.checked_add(gap).ok_or(CodecError::Malformed(0))?;
            end = end
                .checked_add(len as usize)
                .ok_or(CodecError::Malformed(0))?;
            let mut bound = Block::EMPTY.bound;
            let mut bits = mask;
            while bits != 0 {
                let f = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (Some(tf), Some(len)) = (r.next_u32(), r.next_u32()) else {
                    return Err(CodecError::Malformed(blocks.len() * BLOCK));
                };
                bound[f] = (tf, len);
            }
            blocks.push(Block {
                last,
                end,
                mask,
                bound,
            });
        }
        if end != bytes.len() {
            return Err(CodecError::Malformed(blocks.len() * BLOCK));
        }
        Ok(blocks)
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

/// One block of a list (see the module): where it ends, and what bounds its entries'
/// statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The block's last document.
    pub last: u32,
    /// The offset in the list's bytes just past the block's last entry.
    pub end: usize,
    /// The fields that occur in some entry of the block.
    pub mask: u32,
    /// Per field in `mask`: the largest frequency and the smallest length among the
    /// block's entries with that field. A score that grows with frequency and falls with
    /// length is at most its value on these.
    pub bound: FieldStats,
}

impl Block {
    /// A block of no entry, to widen.
    const EMPTY: Block = Block {
        last: 0,
        end: 0,
        mask: 0,
        bound: [(0, u32::MAX); FIELD_COUNT],
    };

    /// Widens the block to take in one more entry.
    fn add(&mut self, doc: u32, mask: u32, stats: &FieldStats) {
        self.last = doc;
        self.mask |= mask;
        for (f, &(tf, len)) in stats.iter().enumerate() {
            if mask & 1 << f != 0 {
                self.bound[f] = (self.bound[f].0.max(tf), self.bound[f].1.min(len));
            }
        }
    }

    /// Statistics that bound every entry of `blocks` at once.
    pub fn merged(blocks: &[Block]) -> Block {
        let mut all = Block::EMPTY;
        for b in blocks {
            all.add(b.last, b.mask, &b.bound);
            all.end = b.end;
        }
        all
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
/// this is the innermost loop of every query, so it is always inlined into its caller
/// (`search::plan::TermList::visit`).
#[inline(always)]
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

/// A walk over a list's entries, one at a time, that can jump over whole blocks without
/// decoding them ([`Cursor::seek`]) and tell what bounds the entries of the block a document
/// would be in ([`Cursor::block_for`]). It checks what it reads as [`decode_masked`] does,
/// and that each block ends where the directory says.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    blocks: Vec<Block>,
    /// The offset of the next entry to decode.
    pos: usize,
    /// The block of the next entry to decode.
    block: usize,
    /// The block [`Cursor::block_for`] found last: targets only grow, so it only moves on.
    ahead: usize,
    /// The entry the cursor is on, when `on`.
    doc: u32,
    mask: u32,
    stats: FieldStats,
    on: bool,
    /// Whether an entry was decoded since the start or the last jump (whose document is
    /// then the previous block's last).
    after_first: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor on the first entry of `bytes`, a list written by [`encode`] (or no bytes:
    /// no entry).
    pub fn new(bytes: &'a [u8]) -> Result<Cursor<'a>, CodecError> {
        // No bytes, no list: a cursor that starts past its end.
        let (blocks, pos) = match bytes.is_empty() {
            true => (Vec::new(), 0),
            false => {
                let header = Header::read(bytes)?;
                let mut r = Reader::at(bytes, header.body);
                r.next_u64().ok_or(CodecError::Malformed(0))?;
                (header.blocks(bytes)?, r.pos())
            }
        };
        let mut cursor = Cursor {
            bytes,
            blocks,
            pos,
            block: 0,
            ahead: 0,
            doc: 0,
            mask: 0,
            stats: [(0, 0); FIELD_COUNT],
            on: false,
            after_first: false,
        };
        cursor.advance()?;
        Ok(cursor)
    }

    /// The list's blocks (one for a list without a directory).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The document of the entry the cursor is on; `None` past the last.
    #[inline]
    pub fn doc(&self) -> Option<u32> {
        self.on.then_some(self.doc)
    }

    /// The field mask and statistics of the entry the cursor is on.
    #[inline]
    pub fn entry(&self) -> (u32, &FieldStats) {
        (self.mask, &self.stats)
    }

    /// Moves to the next entry.
    #[inline]
    pub fn advance(&mut self) -> Result<(), CodecError> {
        let at = self.block * BLOCK;
        if self.pos >= self.bytes.len() {
            self.on = false;
            return match self.block == self.blocks.len() {
                true => Ok(()),
                false => Err(CodecError::Malformed(at)),
            };
        }
        let block = self
            .blocks
            .get(self.block)
            .ok_or(CodecError::Malformed(at))?;
        let mut r = Reader::at(self.bytes, self.pos);
        let (Some(delta), Some(mask)) = (r.next_u32(), r.next_u32()) else {
            return Err(CodecError::Malformed(at));
        };
        // Only the list's first entry may be document 0 itself.
        let first = !self.after_first && self.block == 0;
        if (!first && delta == 0) || mask == 0 || mask >> FIELD_COUNT != 0 {
            return Err(CodecError::Malformed(at));
        }
        let base = match self.after_first {
            true => self.doc,
            false => self.block_start(),
        };
        let doc = base.checked_add(delta).ok_or(CodecError::Malformed(at))?;
        // Decoded in place: an error ends the walk, so a half-written entry is never read.
        self.stats = [(0, 0); FIELD_COUNT];
        let mut bits = mask;
        while bits != 0 {
            let f = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let (Some(tf @ 1..), Some(len)) = (r.next_u32(), r.next_u32()) else {
                return Err(CodecError::Malformed(at));
            };
            self.stats[f] = (tf, len);
        }
        self.pos = r.pos();
        // An entry ends its block exactly when it is the block's last document.
        if self.pos >= block.end || doc >= block.last {
            if self.pos != block.end || doc != block.last {
                return Err(CodecError::Malformed(at));
            }
            self.block += 1;
        }
        (self.doc, self.mask, self.on, self.after_first) = (doc, mask, true, true);
        Ok(())
    }

    /// The document entries of the next block are gaps from: the previous block's last.
    fn block_start(&self) -> u32 {
        match self.block {
            0 => 0,
            b => self.blocks[b - 1].last,
        }
    }

    /// Moves to the first entry at or after document `target`, jumping over every block
    /// that ends before it; no move when the cursor is there already.
    pub fn seek(&mut self, target: u32) -> Result<(), CodecError> {
        if !self.on || self.doc >= target {
            return Ok(());
        }
        while self.blocks.get(self.block).is_some_and(|b| b.last < target) {
            self.pos = self.blocks[self.block].end;
            self.block += 1;
            self.after_first = false;
        }
        while self.on && self.doc < target {
            self.advance()?;
        }
        Ok(())
    }

    /// The block that document `target` would be in, were it in the list, with its index
    /// in [`Cursor::blocks`]: the first that ends at or after it, from the cursor's on
    /// (`None` past the last). Targets asked must not decrease.
    pub fn block_for(&mut self, target: u32) -> Option<(usize, &Block)> {
        self.ahead = self
            .ahead
            .max(self.block.saturating_sub(usize::from(self.on)));
        while self.blocks.get(self.ahead).is_some_and(|b| b.last < target) {
            self.ahead += 1;
        }
        self.blocks.get(self.ahead).map(|b| (self.ahead, b))
    }
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
    fn a_builder_extended_by_another_holds_both_in_document_order() {
        let stats = |tf: u32| {
            let mut s = [(0, 0); FIELD_COUNT];
            s[1] = (tf, 10 + tf);
            s
        };
        let mut whole = Builder::default();
        let mut first = Builder::default();
        let mut second = Builder::default();
        for doc in [2u32, 9, 40] {
            first.push(doc, &stats(doc));
        }
        for doc in [5u32, 41, 300] {
            second.push(doc, &stats(doc));
        }
        for doc in [2u32, 5, 9, 40, 41, 300] {
            whole.push(doc, &stats(doc));
        }
        first.extend(second);
        assert_eq!(first.postings(), whole.postings());
        assert_eq!(first.finish(), whole.finish());
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
        // A three-byte header, no directory (one block: one byte), a two-byte length
        // prefix, then per entry: delta, mask, two (tf, len) pairs, one byte each.
        assert!(encode(&list).len() <= 3 + 1 + 2 + 100 * 6);
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
        // An empty header and an empty directory, then `flat`.
        let with_header = |flat: Vec<u32>| {
            let mut b = vec![0u8, 0];
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

    /// A list of `n` entries with gaps and statistics of many sizes, from `seed`.
    fn varied(n: u32, seed: u64) -> Vec<Posting> {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % m
        };
        let mut doc = next(3) as u32;
        (0..n)
            .map(|_| {
                let mut stats = [(0, 0); FIELD_COUNT];
                let mask = 1 + next((1 << FIELD_COUNT) - 1) as usize;
                for (f, slot) in stats.iter_mut().enumerate() {
                    if mask & 1 << f != 0 {
                        *slot = (1 + next(4) as u32, 5 + next(400) as u32);
                    }
                }
                let p = Posting { doc, stats };
                let far = next(4) == 0;
                doc += 1 + next(if far { 2_000 } else { 5 }) as u32;
                p
            })
            .collect()
    }

    #[test]
    fn the_directory_bounds_every_entry_of_its_block() {
        for n in [0, 1, 127, 128, 129, 256, 300, 1_000] {
            let list = varied(n, u64::from(n));
            let bytes = encode(&list);
            let blocks = Header::read(&bytes).unwrap().blocks(&bytes).unwrap();
            assert_eq!(blocks.len(), list.len().div_ceil(BLOCK), "{n}");
            for (b, chunk) in blocks.iter().zip(list.chunks(BLOCK)) {
                assert_eq!(b.last, chunk.last().unwrap().doc);
                for p in chunk {
                    for (f, &(tf, len)) in p.stats.iter().enumerate() {
                        if tf > 0 {
                            assert!(b.mask & 1 << f != 0);
                            assert!(tf <= b.bound[f].0 && len >= b.bound[f].1);
                        }
                    }
                }
            }
            assert_eq!(
                blocks.last().map_or(0, |b| b.end),
                if n == 0 { 0 } else { bytes.len() }
            );
        }
    }

    #[test]
    fn a_cursor_walks_and_seeks_as_a_decode_does() {
        for n in [0, 1, 128, 129, 700] {
            let list = varied(n, 7 + u64::from(n));
            let bytes = encode(&list);
            // Walked one entry at a time: the decoded list.
            let mut c = Cursor::new(&bytes).unwrap();
            let mut walked = Vec::new();
            while let Some(doc) = c.doc() {
                walked.push(Posting {
                    doc,
                    stats: *c.entry().1,
                });
                c.advance().unwrap();
            }
            assert_eq!(walked, list, "{n}");
            // Seeking ever further, by small and large steps: the first entry at or after
            // each target, and a block that would hold it.
            for step in [1u32, 3, 50, 900, 20_000] {
                let mut c = Cursor::new(&bytes).unwrap();
                let mut target = 0u32;
                let end = list.last().map_or(0, |p| p.doc) + 2;
                while target < end {
                    let want = list.iter().find(|p| p.doc >= target);
                    let behind = c.doc().is_some_and(|d| d < target);
                    if behind {
                        let block = c.block_for(target).map(|(_, b)| b.clone());
                        assert_eq!(block.is_some(), want.is_some(), "{n} {step} {target}");
                        if let (Some(b), Some(p)) = (block, want) {
                            assert!(b.last >= p.doc);
                        }
                    }
                    c.seek(target).unwrap();
                    assert_eq!(c.doc(), want.map(|p| p.doc), "{n} {step} {target}");
                    if let Some(p) = want {
                        assert_eq!(c.entry().1, &p.stats);
                    }
                    target += step;
                }
            }
        }
    }

    #[test]
    fn a_damaged_directory_is_an_error_not_a_wrong_walk() {
        let list = varied(300, 3);
        let bytes = encode(&list);
        let walk = |bytes: &[u8]| -> Result<usize, CodecError> {
            let mut c = Cursor::new(bytes)?;
            let mut n = 0;
            while c.doc().is_some() {
                n += 1;
                c.advance()?;
            }
            Ok(n)
        };
        assert_eq!(walk(&bytes).unwrap(), 300);
        let header = Header::read(&bytes).unwrap();
        // Every byte of the directory changed in turn: an error, or a walk of every entry
        // (a changed bound), never a panic or a shorter walk.
        for i in header.directory.0..header.body {
            for delta in [1u8, 0x40] {
                let mut bad = bytes.clone();
                bad[i] = bad[i].wrapping_add(delta);
                if let Ok(n) = walk(&bad) {
                    assert_eq!(n, 300, "byte {i}");
                }
            }
        }
        assert!(walk(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn the_projection_keeps_the_entries_with_the_field_and_only_its_statistics() {
        let seed = Field::Seed as usize;
        let list: Vec<Posting> = (0..600u32)
            .map(|d| {
                let mut stats = [(0, 0); FIELD_COUNT];
                stats[d as usize % FIELD_COUNT] = (1 + d % 3, 10 + d % 7);
                stats[(d as usize + 1) % FIELD_COUNT] = (2, 20);
                Posting {
                    doc: 3 * d + 1,
                    stats,
                }
            })
            .collect();
        let want: Vec<Posting> = list
            .iter()
            .filter(|p| p.stats[seed].0 > 0)
            .map(|p| {
                let mut stats = [(0, 0); FIELD_COUNT];
                stats[seed] = p.stats[seed];
                Posting { doc: p.doc, stats }
            })
            .collect();
        assert!(want.len() > BLOCK, "the projection has a directory");
        let bytes = encode(&list);
        let projected = Projection::of_bytes(Field::Seed, &bytes).unwrap().unwrap();
        assert_eq!(decode(&projected).unwrap(), want);
        assert_eq!(projected, encode(&want));
        assert_eq!(
            Projection::of_postings(Field::Seed, &list),
            Some(projected.clone())
        );
        let mut builder = Builder::default();
        for p in &list {
            builder.push(p.doc, &p.stats);
        }
        assert_eq!(
            Projection::of_builder(Field::Seed, &builder),
            Some(projected)
        );
        // Out of order, as a builder can be given entries: the same projection.
        let mut unsorted = Builder::default();
        for p in list.iter().rev() {
            unsorted.push(p.doc, &p.stats);
        }
        assert_eq!(
            Projection::of_builder(Field::Seed, &unsorted),
            Projection::of_postings(Field::Seed, &list)
        );
        // No entry with the field: no row.
        let name_only: Vec<Posting> = list
            .iter()
            .filter(|p| p.stats[seed].0 == 0)
            .cloned()
            .collect();
        let bytes = encode(&name_only);
        assert_eq!(Projection::of_bytes(Field::Seed, &bytes).unwrap(), None);
        assert!(Projection::of_bytes(Field::Seed, &bytes[..bytes.len() - 1]).is_err());
    }
}
