//! The separable bilinear kernel of [`super::resample`]: each source row the output reads
//! is first weighed along x (two samples per output, 16-bit exact), kept while the next
//! output rows read it too, then two such rows are weighed along y per output row.
//!
//! The x pass is a gather, which compilers do not vectorise: on x86-64 machines with AVX2
//! it runs eight outputs at a time with byte shuffles (SSSE3's `pshufb`, which also
//! zero-extends to 16 bits), where the eight read within 16 bytes of the source; the y
//! pass is a plain loop the compiler vectorises. Every product is exact, so the result
//! is the same integers whichever pass comes first, with or without the shuffles:
//! `(256 − fy)·((256 − fx)·a + fx·b) + fy·((256 − fx)·c + fx·d)`, rounded once.

/// Bilinear taps along one axis: source indices, the weight of the second one (0..=256)
/// and the coverage of each output pixel (0..=256).
#[derive(Default)]
pub(super) struct Taps {
    pub(super) i0: Vec<usize>,
    pub(super) i1: Vec<usize>,
    pub(super) frac: Vec<u32>,
    pub(super) cov: Vec<u32>,
}

impl Taps {
    /// `count` outputs whose centres (in canvas luma pixels) are `centre(i)`; `to_src`
    /// maps a centre to the plane's sample coordinate (sample centres at integers).
    pub(super) fn new(count: usize, size: usize, centre: impl Fn(usize) -> f64, to_src: impl Fn(f64) -> f64) -> Taps {
        let mut t = Taps::default();
        let last = size.saturating_sub(1) as f64;
        for i in 0..count {
            let u = to_src(centre(i)).clamp(0.0, last);
            let base = u.floor();
            let mut frac = ((u - base) * 256.0).round() as u32;
            let mut i0 = base as usize;
            if frac >= 256 {
                frac = 0;
                i0 = (i0 + 1).min(size.saturating_sub(1));
            }
            t.i0.push(i0);
            t.i1.push((i0 + 1).min(size.saturating_sub(1)));
            t.frac.push(frac);
        }
        t
    }

    /// Coverage of output pixels [start + i, start + i + 1) by [lo, hi).
    pub(super) fn with_coverage(mut self, start: i64, lo: f64, hi: f64) -> Taps {
        self.cov = (0..self.i0.len())
            .map(|i| {
                let p = (start + i as i64) as f64;
                let inside = ((p + 1.0).min(hi) - p.max(lo)).clamp(0.0, 1.0);
                (inside * 256.0).round() as u32
            })
            .collect();
        self
    }

    pub(super) fn full(&self) -> bool {
        self.cov.iter().all(|c| *c == 256)
    }
}

/// Samples a plane `stride` wide (rows packed) at the taps into a packed `out`
/// (`xt.i0.len()` × `yt.i0.len()`). Rows the plane does not hold are left as they are.
pub(super) fn bilinear(src: &[u8], stride: usize, xt: &Taps, yt: &Taps, out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (and so SSSE3), checked just now.
        return unsafe { shuffled::bilinear(src, stride, xt, yt, out) };
    }
    sample_rows(src, stride, xt, yt, out, &mut |row, out| horizontal(row, xt, 0, out));
}

/// The two passes, with `weigh_row(row, out)` weighing one source row along x.
#[inline(always)]
fn sample_rows(
    src: &[u8],
    stride: usize,
    xt: &Taps,
    yt: &Taps,
    out: &mut [u8],
    weigh_row: &mut dyn FnMut(&[u8], &mut [u16]),
) {
    let w = xt.i0.len();
    if w == 0 || xt.i1.iter().any(|&i| i >= stride) {
        return;
    }
    // The last two source rows weighed along x, by row index.
    let mut kept = [(usize::MAX, vec![0u16; w]), (usize::MAX, vec![0u16; w])];
    for (j, row_out) in out.chunks_exact_mut(w).enumerate().take(yt.i0.len()) {
        let (r0, r1) = (yt.i0[j], yt.i1[j]);
        let (Some(_), Some(_)) = (src.get(r0 * stride..(r0 + 1) * stride), src.get(r1 * stride..(r1 + 1) * stride))
        else {
            continue;
        };
        for (needed, other) in [(r0, r1), (r1, r0)] {
            if kept.iter().all(|(r, _)| *r != needed) {
                let slot = usize::from(kept[0].0 == other);
                kept[slot].0 = needed;
                weigh_row(&src[needed * stride..], &mut kept[slot].1);
            }
        }
        let top = if kept[0].0 == r0 { &kept[0].1 } else { &kept[1].1 };
        let bottom = if kept[0].0 == r1 { &kept[0].1 } else { &kept[1].1 };
        vertical(top, bottom, yt.frac[j], row_out);
    }
}

/// Outputs `from..` of one row along x: `(256 − fx)·a + fx·b` (at most 255 · 256).
/// `row` starts at the row's first sample.
#[inline(always)]
fn horizontal(row: &[u8], xt: &Taps, from: usize, out: &mut [u16]) {
    for (((o, &x0), &x1), &fx) in out.iter_mut().zip(&xt.i0).zip(&xt.i1).zip(&xt.frac).skip(from) {
        *o = u16::from(row[x0]) * (256 - fx as u16) + u16::from(row[x1]) * fx as u16;
    }
}

/// One output row from two rows weighed along x, rounded once.
#[inline(always)]
fn vertical(top: &[u16], bottom: &[u16], fy: u32, out: &mut [u8]) {
    for ((o, t), b) in out.iter_mut().zip(top).zip(bottom) {
        *o = ((u32::from(*t) * (256 - fy) + u32::from(*b) * fy + 32768) >> 16) as u8;
    }
}

#[cfg(target_arch = "x86_64")]
mod shuffled {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi16, _mm_loadu_si128, _mm_mullo_epi16, _mm_shuffle_epi8, _mm_storeu_si128,
    };

    use super::{horizontal, sample_rows, Taps};

    /// Eight outputs of the x pass: where their samples start in the row, the shuffles that
    /// pick the first and second sample of each into 16-bit lanes, and their weights.
    struct Block {
        start: usize,
        first: [u8; 16],
        second: [u8; 16],
        w0: [u16; 8],
        w1: [u16; 8],
    }

    /// The blocks of `xt` while the eight outputs of each read within 16 bytes; the
    /// outputs after the last block are weighed one by one.
    fn blocks(xt: &Taps) -> Vec<Block> {
        let mut blocks = Vec::new();
        for k in 0..xt.i0.len() / 8 {
            let (i0, i1) = (&xt.i0[8 * k..8 * k + 8], &xt.i1[8 * k..8 * k + 8]);
            let start = i0[0];
            if i0.iter().chain(i1).any(|&i| i < start || i - start > 15) {
                break;
            }
            let mut block = Block { start, first: [0x80; 16], second: [0x80; 16], w0: [0; 8], w1: [0; 8] };
            for lane in 0..8 {
                block.first[2 * lane] = (i0[lane] - start) as u8;
                block.second[2 * lane] = (i1[lane] - start) as u8;
                let fx = xt.frac[8 * k + lane] as u16;
                (block.w0[lane], block.w1[lane]) = (256 - fx, fx);
            }
            blocks.push(block);
        }
        blocks
    }

    /// [`super::bilinear`] with the x pass in shuffles.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bilinear(src: &[u8], stride: usize, xt: &Taps, yt: &Taps, out: &mut [u8]) {
        let blocks = blocks(xt);
        sample_rows(src, stride, xt, yt, out, &mut |row, out| {
            let mut done = 0;
            for (block, out) in blocks.iter().zip(out.chunks_exact_mut(8)) {
                // The 16 bytes read lie within `row` (else this block and the rest go
                // one by one).
                if block.start + 16 > row.len() {
                    break;
                }
                // SAFETY: unaligned 16-byte loads and stores within `row`, the block's
                // arrays and `out`'s eight lanes; the CPU has SSSE3 (this function's
                // AVX2).
                unsafe {
                    let bytes = _mm_loadu_si128(row.as_ptr().add(block.start).cast::<__m128i>());
                    let a = _mm_shuffle_epi8(bytes, _mm_loadu_si128(block.first.as_ptr().cast()));
                    let b = _mm_shuffle_epi8(bytes, _mm_loadu_si128(block.second.as_ptr().cast()));
                    let wa = _mm_mullo_epi16(a, _mm_loadu_si128(block.w0.as_ptr().cast()));
                    let wb = _mm_mullo_epi16(b, _mm_loadu_si128(block.w1.as_ptr().cast()));
                    _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_add_epi16(wa, wb));
                }
                done += 8;
            }
            horizontal(row, xt, done, out);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain formula at every output of a plane of varied samples.
    fn check(sw: usize, sh: usize, xt: &Taps, yt: &Taps) {
        let src: Vec<u8> = (0..sw * sh).map(|k| ((k * 7919) % 251) as u8).collect();
        let (w, h) = (xt.i0.len(), yt.i0.len());
        let mut out = vec![0; w * h];
        bilinear(&src, sw, xt, yt, &mut out);
        for j in 0..h {
            for i in 0..w {
                let at = |x: usize, y: usize| u32::from(src[y * sw + x]);
                let (fx, fy) = (xt.frac[i], yt.frac[j]);
                let row = |y| at(xt.i0[i], y) * (256 - fx) + at(xt.i1[i], y) * fx;
                let want = (row(yt.i0[j]) * (256 - fy) + row(yt.i1[j]) * fy + 32768) >> 16;
                assert_eq!(u32::from(out[j * w + i]), want, "sample ({i}, {j}) of {sw}×{sh} → {w}×{h}");
            }
        }
    }

    #[test]
    fn the_two_passes_give_the_samples_of_the_plain_bilinear_formula() {
        // A window shrunk in x and grown in y at odd offsets.
        check(
            37,
            23,
            &Taps::new(29, 37, |i| i as f64 * 1.27 + 0.4, |c| c),
            &Taps::new(31, 23, |j| j as f64 * 0.71 + 0.2, |c| c),
        );
        // Wide rows, as the shuffles take them: grown, shrunk up to the 16-byte span of
        // eight outputs, and shrunk past it (one by one), each up to the plane's last byte.
        for step in [0.37, 1.0, 1.25, 1.85, 2.4] {
            let sw = (203.0 * step) as usize + 2;
            check(
                sw,
                9,
                &Taps::new(203, sw, |i| i as f64 * step + 0.3, |c| c),
                &Taps::new(7, 9, |j| j as f64 * 1.2, |c| c),
            );
        }
    }
}
