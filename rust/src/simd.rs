//! The two places lncsplit talks to the CPU directly (house §5.1): the
//! 16-byte structural masks of the fast JSON reader and the parallel
//! loader's pre-scan (SSE2 on x86_64, part of its baseline; a scalar loop
//! elsewhere, checked against it), and the prefetch hint of the pelican
//! interner. Each `unsafe` block carries its SAFETY note.

/// Ask the CPU to bring the cache line of `p` in. A hint only: it reads no
/// data into the program and never faults, whatever the address.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` takes any address (a hint, never a load or a
    // fault); SSE is part of the x86_64 baseline, so the target feature the
    // intrinsic is declared with is always present.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// For the 16 bytes at `i` (fewer at the end of `b`): bit k of each mask
/// set when byte `i + k` is `"`, `\\`, `{` or `[`, `}` or `]`.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn masks(b: &[u8], i: usize) -> [u32; 4] {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    let Some(part) = b.get(i..i + 16) else {
        return masks_scalar(b, i);
    };
    // SAFETY: SSE2 is enabled on every x86_64 target, so its intrinsics may
    // be called; the one load reads the 16 bytes of `part` (an unaligned
    // load: no alignment needed).
    unsafe {
        let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
        // `{` and `[` (`}` and `]`) differ in the 0x20 bit only.
        let v20 = _mm_or_si128(v, _mm_set1_epi8(0x20));
        let eq = |x: __m128i, c: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8))) as u32;
        [eq(v, b'"'), eq(v, b'\\'), eq(v20, b'{'), eq(v20, b'}')]
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(crate) fn masks(b: &[u8], i: usize) -> [u32; 4] {
    masks_scalar(b, i)
}

pub(crate) fn masks_scalar(b: &[u8], i: usize) -> [u32; 4] {
    let rest = b.get(i..).unwrap_or_default();
    let mut m = [0u32; 4];
    for (k, c) in rest.iter().take(16).enumerate() {
        let slot = match c {
            b'"' => 0,
            b'\\' => 1,
            b'{' | b'[' => 2,
            b'}' | b']' => 3,
            _ => continue,
        };
        m[slot] |= 1 << k;
    }
    m
}
