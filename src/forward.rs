//! The forward-index codec: one document's distinct terms with their per-field frequencies.
//!
//! A sync needs a document's terms to take it out of the postings when its file changes or
//! goes, and their frequencies to put it back when a configuration change offers it again
//! without the file changing. Nothing else reads this record, so it is kept as small as
//! those two uses allow:
//!
//! - the field lengths are the document's own (`DocHead::lens`), the same for every term, so
//!   they are not repeated per term: [`decode`] takes them from the caller;
//! - terms are sorted, so each shares a prefix with the one before it (front coding);
//! - only the fields a term occurs in carry a frequency.
//!
//! The record: a varint count of terms, then per term the number of bytes it shares with the
//! previous term, the number of bytes that follow, those bytes, a field mask (bit `f` set
//! when the term occurs in field `f`) and, for each field in the mask in field order, the
//! term's frequency there. Varints are LEB128, as postcard writes them.

use crate::fields::{self, FieldStats, FIELD_COUNT};
use crate::store::records::TermEntry;
use crate::varint::{self, Reader};

/// Why a byte string is not a valid forward-index record.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The record ended early, or a value is out of range, at this term.
    #[error("forward index is malformed at term {0}")]
    Malformed(usize),
    /// A term's bytes are not UTF-8.
    #[error("forward index term {0} is not UTF-8")]
    NotUtf8(usize),
}

/// Encodes `terms`, which must be sorted by term and distinct. Field lengths are dropped:
/// they are the document's, given back to [`decode`].
pub fn encode(terms: &[TermEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(terms.len() * 8);
    varint::write(&mut out, terms.len() as u64);
    let mut prev: &[u8] = &[];
    for (term, stats) in terms {
        let bytes = term.as_bytes();
        debug_assert!(
            prev < bytes || prev.is_empty(),
            "terms must be sorted and distinct"
        );
        let shared = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        varint::write(&mut out, shared as u64);
        varint::write(&mut out, (bytes.len() - shared) as u64);
        out.extend_from_slice(&bytes[shared..]);
        // Six fields: the mask fits a byte.
        out.push(fields::mask(stats) as u8);
        for (tf, _) in stats.iter().filter(|(tf, _)| *tf > 0) {
            varint::write(&mut out, u64::from(*tf));
        }
        prev = bytes;
    }
    out
}

/// Decodes a record written by [`encode`] for a document whose field lengths are `lens`.
pub fn decode(bytes: &[u8], lens: &[u32; FIELD_COUNT]) -> Result<Vec<TermEntry>, CodecError> {
    let mut out: Vec<TermEntry> = Vec::new();
    visit(bytes, lens, |term, stats| {
        out.push((term.to_owned(), *stats))
    })?;
    Ok(out)
}

/// Calls `each` with every term of a record written by [`encode`], in order, and its
/// statistics for a document whose field lengths are `lens`; no allocation per term (a
/// full build visits every posting of the collection). On a malformed record, the terms
/// before the damage have been visited when the error comes back.
pub fn visit(
    bytes: &[u8],
    lens: &[u32; FIELD_COUNT],
    mut each: impl FnMut(&str, &FieldStats),
) -> Result<(), CodecError> {
    let mut r = Reader::new(bytes);
    let count = r.next_u64().ok_or(CodecError::Malformed(0))?;
    // Each term takes at least three bytes, so a count beyond that is garbage.
    if count > bytes.len() as u64 / 3 + 1 {
        return Err(CodecError::Malformed(0));
    }
    let mut term: Vec<u8> = Vec::new();
    for i in 0..count as usize {
        let bad = CodecError::Malformed(i);
        let shared = r.next_u64().ok_or(CodecError::Malformed(i))? as usize;
        let more = r.next_u64().ok_or(CodecError::Malformed(i))? as usize;
        if shared > term.len() || (i > 0 && more == 0) {
            return Err(bad);
        }
        term.truncate(shared);
        term.extend_from_slice(r.take(more).ok_or(CodecError::Malformed(i))?);
        let mask = r.byte().ok_or(CodecError::Malformed(i))?;
        if mask == 0 || mask >> FIELD_COUNT != 0 {
            return Err(bad);
        }
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        for (f, slot) in stats.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                let tf = r.next_u64().ok_or(CodecError::Malformed(i))?;
                let tf = u32::try_from(tf).map_err(|_| CodecError::Malformed(i))?;
                if tf == 0 {
                    return Err(CodecError::Malformed(i));
                }
                *slot = (tf, lens[f]);
            }
        }
        each(
            std::str::from_utf8(&term).map_err(|_| CodecError::NotUtf8(i))?,
            &stats,
        );
    }
    if !r.is_done() {
        return Err(CodecError::Malformed(count as usize));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(term: &str, tfs: [u32; FIELD_COUNT], lens: &[u32; FIELD_COUNT]) -> TermEntry {
        let mut stats = [(0, 0); FIELD_COUNT];
        for f in 0..FIELD_COUNT {
            if tfs[f] > 0 {
                stats[f] = (tfs[f], lens[f]);
            }
        }
        (term.to_owned(), stats)
    }

    #[test]
    fn round_trips_with_the_documents_lengths() {
        let lens = [2, 30, 0, 1, 900, 41];
        let terms = vec![
            entry("pdf", [1, 2, 0, 0, 7, 1], &lens),
            entry("pdfs", [0, 0, 0, 0, 1, 0], &lens),
            entry("変換", [0, 0, 0, 0, 300, 1], &lens),
            entry("変換器", [0, 1, 0, 0, 0, 0], &lens),
        ];
        let bytes = encode(&terms);
        assert_eq!(decode(&bytes, &lens).unwrap(), terms);
        assert!(decode(&encode(&[]), &lens).unwrap().is_empty());
    }

    #[test]
    fn is_far_smaller_than_the_postcard_record_it_replaces() {
        let lens = [3, 25, 10, 2, 400, 60];
        let terms: Vec<TermEntry> = (0..300)
            .map(|i| entry(&format!("term{i:04}"), [0, 0, 0, 0, 2, 1], &lens))
            .collect();
        let postcard = postcard::to_allocvec(&terms).unwrap();
        let ours = encode(&terms);
        // Shared prefixes, no lengths, no empty fields: under a third of the size.
        assert!(
            ours.len() * 3 < postcard.len(),
            "{} vs {}",
            ours.len(),
            postcard.len()
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let lens = [1; FIELD_COUNT];
        let good = encode(&[entry("a", [1, 0, 0, 0, 0, 0], &lens)]);
        assert!(decode(&good[..good.len() - 1], &lens).is_err());
        let mut longer = good.clone();
        longer.push(0);
        assert!(decode(&longer, &lens).is_err());
        // A shared prefix longer than the previous term, a zero mask, a huge count, bad UTF-8.
        assert!(decode(&[1, 3, 1, b'a', 1, 1], &lens).is_err());
        assert!(decode(&[1, 0, 1, b'a', 0], &lens).is_err());
        assert!(decode(&[0xff, 0xff, 0xff, 0xff, 0x0f], &lens).is_err());
        assert!(matches!(
            decode(&[1, 0, 1, 0xff, 1, 1], &lens),
            Err(CodecError::NotUtf8(0))
        ));
        for cut in 0..good.len() {
            let _ = decode(&good[..cut], &lens);
        }
    }
}
