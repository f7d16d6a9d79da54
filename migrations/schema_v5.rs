//! The postings layout of schemas 2 to 5, frozen: two postcard `Vec<u32>`s, the header's
//! (field mask, entries with that mask) pairs ascending by mask, then the flat entries
//! (`doc - previous_doc`, field mask, then (frequency, length) per field in the mask).
//! Schema 6 put a block directory between them (`crate::postings`); the steps up to
//! schema 5 write this layout, and the step to schema 6 reads it.

use crate::fields::{self, FieldStats, FIELD_COUNT};
use crate::postings::Posting;

/// `postings` (sorted by document, without duplicates) in the schema-5 layout.
pub fn encode(postings: &[Posting]) -> Vec<u8> {
    let mut counts = [0u32; 1 << FIELD_COUNT];
    let mut flat = Vec::with_capacity(postings.len() * 4);
    let mut previous = 0u32;
    for p in postings {
        let mask = fields::mask(&p.stats);
        counts[mask as usize] += 1;
        flat.extend([p.doc - previous, mask]);
        for &(tf, len) in p.stats.iter().filter(|(tf, _)| *tf > 0) {
            flat.extend([tf, len]);
        }
        previous = p.doc;
    }
    let header: Vec<u32> = (0u32..)
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .flat_map(|(m, n)| [m, n])
        .collect();
    let mut out = postcard::to_allocvec(&header).unwrap_or_default();
    out.extend(postcard::to_allocvec(&flat).unwrap_or_default());
    out
}

/// The postings of a list in the schema-5 layout; `None` if it is not one.
pub fn decode(bytes: &[u8]) -> Option<Vec<Posting>> {
    let (_header, rest): (Vec<u32>, &[u8]) = postcard::take_from_bytes(bytes).ok()?;
    let flat: Vec<u32> = postcard::from_bytes(rest).ok()?;
    let mut out = Vec::new();
    let (mut doc, mut i) = (0u32, 0usize);
    while i < flat.len() {
        let (delta, mask) = (*flat.get(i)?, *flat.get(i + 1)?);
        i += 2;
        doc = doc.checked_add(delta)?;
        let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
        for (f, slot) in stats.iter_mut().enumerate() {
            if mask & 1 << f != 0 {
                *slot = (*flat.get(i)?, *flat.get(i + 1)?);
                i += 2;
            }
        }
        out.push(Posting { doc, stats });
    }
    Some(out)
}
