//! The postings codec: one term's list of (document, per-field statistics).
//!
//! A list is a flat stream of `u32`s written with postcard (so every number is a varint):
//! for each entry, ascending by document, `doc - previous_doc`, a field mask, then for each
//! field in the mask, in field order, the term frequency and that field's length in the
//! document. Carrying the field length beside the frequency lets a query score every
//! posting without a second lookup per document, which is what keeps search in place
//! (no per-process copy of document lengths) and fast.

use crate::fields::{Field, FieldStats, FIELD_COUNT};
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
    let mut flat: Vec<u32> = Vec::with_capacity(postings.len() * 4);
    let mut prev = 0u32;
    for (i, p) in postings.iter().enumerate() {
        debug_assert!(
            i == 0 || p.doc > prev,
            "postings must be strictly ascending"
        );
        flat.push(if i == 0 { p.doc } else { p.doc - prev });
        prev = p.doc;
        let mask_at = flat.len();
        flat.push(0);
        let mut mask = 0u32;
        for f in Field::ALL {
            let (tf, len) = p.stats[f as usize];
            if tf > 0 {
                mask |= 1 << f as u32;
                flat.push(tf);
                flat.push(len);
            }
        }
        flat[mask_at] = mask;
    }
    postcard::to_allocvec(&flat).expect("serializing a Vec<u32> cannot fail")
}

/// Decodes a list written by [`encode`], calling `visit` for every entry in document order.
///
/// The callback form avoids materialising a `Vec<Posting>` on the query path.
pub fn decode_with(
    bytes: &[u8],
    mut visit: impl FnMut(u32, &FieldStats),
) -> Result<(), CodecError> {
    let flat: Vec<u32> = postcard::from_bytes(bytes)?;
    let mut i = 0usize;
    let mut doc = 0u32;
    let mut entry = 0usize;
    while i < flat.len() {
        let delta = flat[i];
        if entry > 0 && delta == 0 {
            return Err(CodecError::Malformed(entry));
        }
        doc = doc.checked_add(delta).ok_or(CodecError::Malformed(entry))?;
        let mask = *flat.get(i + 1).ok_or(CodecError::Malformed(entry))?;
        if mask == 0 || mask >> FIELD_COUNT != 0 {
            return Err(CodecError::Malformed(entry));
        }
        i += 2;
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        for f in Field::ALL {
            if mask & (1 << f as u32) != 0 {
                let (Some(&tf), Some(&len)) = (flat.get(i), flat.get(i + 1)) else {
                    return Err(CodecError::Malformed(entry));
                };
                if tf == 0 {
                    return Err(CodecError::Malformed(entry));
                }
                stats[f as usize] = (tf, len);
                i += 2;
            }
        }
        visit(doc, &stats);
        entry += 1;
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
    fn small_gaps_take_few_bytes() {
        let list: Vec<Posting> = (0..100).map(|d| posting(d, (1, 3), (1, 20))).collect();
        // A two-byte length prefix, then per entry: delta, mask, two (tf, len) pairs, one byte each.
        assert!(encode(&list).len() <= 2 + 100 * 6);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&postcard::to_allocvec(&vec![5u32, 0]).unwrap()).is_err());
        assert!(decode(&postcard::to_allocvec(&vec![5u32, 1, 2]).unwrap()).is_err());
        assert!(decode(&postcard::to_allocvec(&vec![5u32, 1, 2, 3, 0, 1, 1, 1]).unwrap()).is_err());
    }
}
