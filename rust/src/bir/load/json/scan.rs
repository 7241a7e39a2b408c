//! The byte scans of the fast reader: 16 bytes at a time with SSE2 on
//! x86_64 (two small `unsafe` blocks with SAFETY notes), a scalar loop
//! elsewhere; the scalar versions are checked against them. The structural
//! masks of 16 bytes are `crate::simd::masks` (the pre-scan's too).

/// Index of the first `"`, `\` or control character at or after `i` (the
/// length if none).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn find_special(b: &[u8], mut i: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    while let Some(part) = b.get(i..i + 16) {
        // SAFETY: SSE2 is enabled on every x86_64 target, so its intrinsics
        // may be called; the one load reads the 16 bytes of `part` (an
        // unaligned load: no alignment needed).
        let mask = unsafe {
            let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // Unsigned v ≤ 0x1F: max(v, 0x1F) == 0x1F.
            let limit = _mm_set1_epi8(0x1F);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        };
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    find_special_scalar(b, i)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(super) fn find_special(b: &[u8], i: usize) -> usize {
    find_special_scalar(b, i)
}

#[inline]
pub(super) fn find_special_scalar(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20))
        .map_or(b.len(), |k| i + k)
}
