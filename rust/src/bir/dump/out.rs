//! The byte sink of the writer: one growing buffer, integers through `itoa`,
//! strings copied as they are unless they need escaping, unknown-key values
//! through serde_json (so their bytes are exactly serde_json's).
//!
//! When the writer streams into a file, the buffer is handed to it in chunks
//! of about [`FLUSH_AT`] bytes between objects, so memory stays bounded.

use std::io::Write;

use serde_json::{Map, Value};

/// Buffered bytes handed to the sink (if any) at the next object boundary.
pub const FLUSH_AT: usize = 1 << 20;

/// In memory, a buffer with less room than this left at an object boundary
/// is sealed as a chunk (larger than any one instruction of a real module).
const SEAL_SLACK: usize = 64 << 10;

/// Buffers up to this size are made a quarter larger than the estimate
/// (see [`Out::memory_in`]).
const SLACK_UNDER: usize = 8 << 20;

/// The largest buffer that follows a sealed one.
const SEAL_NEXT: usize = 4 << 20;

/// Whether byte `b` must be escaped inside a JSON string (serde_json escapes
/// exactly `"`, `\` and the control characters below 0x20): the reference
/// the word scan is tested against.
#[cfg(test)]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Every byte of a word set to `b`.
const fn splat(b: u8) -> u64 {
    0x0101_0101_0101_0101 * b as u64
}

/// Whether any byte of the 8-byte word `w` must be escaped: the classic
/// "has a byte less than n" and "has a zero byte" word tricks, exact as a
/// yes/no answer (a byte ≥ 0x80 never sets its high bit in the result).
#[inline]
fn word_needs_escape(w: u64) -> bool {
    const HI: u64 = splat(0x80);
    let below = |x: u64, n: u8| x.wrapping_sub(splat(n)) & !x & HI;
    let ctrl = below(w, 0x20);
    let quote = below(w ^ splat(b'"'), 1);
    let backslash = below(w ^ splat(b'\\'), 1);
    (ctrl | quote | backslash) != 0
}

/// The first 8 bytes of `b` (callers pass at least 8).
#[inline]
fn word(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |w| u64::from_le_bytes(*w))
}

/// The first 4 bytes of `b` (callers pass at least 4).
#[inline]
fn half(b: &[u8]) -> u64 {
    b.first_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w) as u64)
}

/// Longest byte string [`Out::small`] and [`Out::name`] store without a
/// call to `memcpy`.
const SMALL: usize = 32;

/// `N` bytes of `b` from `at` (the caller keeps `at + N ≤ b.len()`), as one
/// load.
#[inline(always)]
fn load<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b.get(at..)
        .and_then(|r| r.first_chunk::<N>())
        .copied()
        .unwrap_or([0; N])
}

/// Store `b` (at most [`SMALL`] bytes) at `dst` with two overlapping
/// stores of the widest size that fits (16, 8 or 4 bytes: its first and
/// its last that many bytes), or byte by byte under 4 bytes: no call to
/// `memcpy` for a few bytes. Every byte of `dst..dst + b.len()` is written,
/// and nothing outside it.
///
/// # Safety
/// `dst` must be valid for writes of `b.len()` bytes, and `b.len() ≤ SMALL`.
#[inline(always)]
unsafe fn store_small(dst: *mut u8, b: &[u8]) {
    let n = b.len();
    // SAFETY: each store writes within `dst..dst + n` (the first one at 0,
    // the second one ending at n; both no wider than n), which the caller
    // gives as writable; the values are loaded from within `b`.
    unsafe {
        if n >= 16 {
            dst.cast::<[u8; 16]>().write_unaligned(load::<16>(b, 0));
            dst.add(n - 16)
                .cast::<[u8; 16]>()
                .write_unaligned(load::<16>(b, n - 16));
        } else if n >= 8 {
            dst.cast::<[u8; 8]>().write_unaligned(load::<8>(b, 0));
            dst.add(n - 8).cast::<[u8; 8]>().write_unaligned(load::<8>(b, n - 8));
        } else if n >= 4 {
            dst.cast::<[u8; 4]>().write_unaligned(load::<4>(b, 0));
            dst.add(n - 4).cast::<[u8; 4]>().write_unaligned(load::<4>(b, n - 4));
        } else if n > 0 {
            *dst = b[0];
            *dst.add(n / 2) = b[n / 2];
            *dst.add(n - 1) = b[n - 1];
        }
    }
}

/// Whether any byte of `s` must be escaped, 8 bytes at a time (names are
/// most of a module's JSON strings; a byte at a time this scan was the
/// writer's largest cost). A string of 8 bytes or more is read in words,
/// its last one overlapping the one before; one of 4–7 bytes as its first
/// and last 4 bytes in one word; a shorter one as its first, middle and
/// last bytes padded with `a`.
#[inline]
pub fn has_escape(s: &[u8]) -> bool {
    let n = s.len();
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            if word_needs_escape(word(&s[i..])) {
                return true;
            }
            i += 8;
        }
        return i < n && word_needs_escape(word(&s[n - 8..]));
    }
    if n >= 4 {
        return word_needs_escape(half(s) | half(&s[n - 4..]) << 32);
    }
    if n == 0 {
        return false;
    }
    word_needs_escape(u64::from_le_bytes([
        s[0],
        s[n / 2],
        s[n - 1],
        b'a',
        b'a',
        b'a',
        b'a',
        b'a',
    ]))
}

pub struct Out<'w> {
    pub buf: Vec<u8>,
    /// In memory: the bytes before `buf`, as written by [`Out::splice`]
    /// (pieces written elsewhere are kept as they are, not copied together).
    done: Vec<Vec<u8>>,
    sink: Option<&'w mut dyn Write>,
}

impl<'w> Out<'w> {
    /// Write into memory only; `cap` is the expected size.
    pub fn memory(cap: usize) -> Out<'static> {
        Out {
            buf: Vec::with_capacity(cap),
            done: Vec::new(),
            sink: None,
        }
    }

    /// Write into memory, starting in `buf` (emptied; its capacity, grown
    /// to `cap` if short, is reused: a buffer kept from an earlier output
    /// has its pages faulted in already).
    pub fn memory_in(mut buf: Vec<u8>, cap: usize) -> Out<'static> {
        buf.clear();
        if buf.capacity() < cap {
            // A new buffer (not a grown copy: it is empty). Up to
            // [`SLACK_UNDER`], a quarter more than asked, so a kept buffer
            // also fits the next module of about the same size.
            let slack = if cap <= SLACK_UNDER { cap / 4 } else { 0 };
            buf = Vec::with_capacity(cap + slack);
        }
        Out {
            buf,
            done: Vec::new(),
            sink: None,
        }
    }

    /// Write into `sink`, in chunks.
    pub fn streaming(sink: &'w mut dyn Write) -> Out<'w> {
        Out {
            buf: Vec::with_capacity(FLUSH_AT + (FLUSH_AT >> 2)),
            done: Vec::new(),
            sink: Some(sink),
        }
    }

    /// Between two objects: a sink gets the buffered bytes once there are
    /// enough of them; in memory, a buffer about to fill up is kept as a
    /// chunk and writing goes on in a new one, so the estimate being short
    /// never costs a `realloc` that copies (and page-faults) everything
    /// written so far.
    #[inline]
    pub fn boundary(&mut self) -> std::io::Result<()> {
        if self.sink.is_some() {
            if self.buf.len() >= FLUSH_AT {
                self.flush()?;
            }
        } else if self.buf.capacity() - self.buf.len() < SEAL_SLACK {
            self.seal();
        }
        Ok(())
    }

    #[cold]
    fn seal(&mut self) {
        // As big as the sealed one, within [2 × slack, SEAL_NEXT]: a small
        // piece (one block as JSON) does not reserve megabytes.
        let next = Vec::with_capacity(self.buf.capacity().clamp(2 * SEAL_SLACK, SEAL_NEXT));
        let full = std::mem::replace(&mut self.buf, next);
        if !full.is_empty() {
            self.done.push(full);
        }
    }

    /// Hand every buffered byte to the sink (no-op in memory).
    pub fn flush(&mut self) -> std::io::Result<()> {
        if let Some(s) = self.sink.as_mut() {
            s.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Append pieces written elsewhere (the parallel writer's parts) after
    /// the bytes so far. In memory they are kept as chunks of their own; a
    /// sink gets them at once.
    pub fn splice(&mut self, parts: Vec<Vec<u8>>) -> std::io::Result<()> {
        if let Some(s) = self.sink.as_mut() {
            s.write_all(&self.buf)?;
            self.buf.clear();
            for p in &parts {
                s.write_all(p)?;
            }
            return Ok(());
        }
        let spliced: usize = parts.iter().map(Vec::len).sum();
        // What is left of the first estimate is the estimate of the rest.
        let rest = self.buf.capacity().saturating_sub(self.buf.len() + spliced);
        let head = std::mem::replace(&mut self.buf, Vec::with_capacity(rest.max(1 << 16)));
        self.done.push(head);
        self.done.extend(parts);
        Ok(())
    }

    /// Everything written in memory, as the chunks it was written in
    /// (their concatenation is the output).
    pub fn into_chunks(mut self) -> Vec<Vec<u8>> {
        let last = std::mem::take(&mut self.buf);
        self.done.push(last);
        self.done.retain(|c| !c.is_empty());
        self.done
    }

    /// Everything written in memory, as one buffer.
    pub fn into_bytes(mut self) -> Vec<u8> {
        if self.done.is_empty() {
            return std::mem::take(&mut self.buf);
        }
        self.into_chunks().concat()
    }

    #[inline]
    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// Append `b`, usually a few bytes (an integer's digits, a short
    /// name): up to [`SMALL`] bytes are stored as two overlapping words
    /// into reserved space ([`store_small`]), where `extend_from_slice`
    /// called `memcpy` for every few bytes (those calls were a tenth of the
    /// writer's instructions).
    #[inline(always)]
    pub fn small(&mut self, b: &[u8]) {
        let n = b.len();
        if n > SMALL {
            self.buf.extend_from_slice(b);
            return;
        }
        self.buf.reserve(SMALL);
        let len = self.buf.len();
        // SAFETY: `SMALL` bytes of capacity follow `len` (reserved above)
        // and n ≤ SMALL, so `store_small` may write `len..len + n`, and it
        // initializes every one of those bytes before `set_len`.
        unsafe {
            store_small(self.buf.as_mut_ptr().add(len), b);
            self.buf.set_len(len + n);
        }
    }

    #[inline]
    pub fn int(&mut self, v: i64) {
        let mut b = itoa::Buffer::new();
        self.small(b.format(v).as_bytes());
    }

    #[inline]
    pub fn uint(&mut self, v: u64) {
        let mut b = itoa::Buffer::new();
        self.small(b.format(v).as_bytes());
    }

    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.raw(if v { b"true" } else { b"false" });
    }

    /// A JSON string. Names, dtypes and the like never need escaping, so
    /// the common case is one scan and one copy.
    #[inline]
    pub fn str(&mut self, s: &str) {
        if has_escape(s.as_bytes()) {
            self.escaped(s);
        } else {
            self.name(s);
        }
    }

    /// A JSON string known to need no escaping (a name from one of the
    /// model's fixed vocabularies: opcodes, argument kinds, arches; or a
    /// string already scanned, [`Out::str`], `Kept::str`).
    #[inline]
    pub fn name(&mut self, s: &str) {
        debug_assert!(!has_escape(s.as_bytes()));
        let b = s.as_bytes();
        let n = b.len();
        if n > SMALL {
            self.buf.reserve(n + 2);
            self.buf.push(b'"');
            self.buf.extend_from_slice(b);
            self.buf.push(b'"');
            return;
        }
        self.buf.reserve(SMALL + 2);
        let len = self.buf.len();
        // SAFETY: `SMALL + 2` bytes of capacity follow `len` (reserved
        // above) and n ≤ SMALL: the quote at `len`, the `n` bytes after it
        // (`store_small` initializes each of them) and the quote at
        // `len + n + 1` all lie in `len..len + n + 2`, and together write
        // every byte of it before `set_len`.
        unsafe {
            let dst = self.buf.as_mut_ptr().add(len);
            *dst = b'"';
            store_small(dst.add(1), b);
            *dst.add(n + 1) = b'"';
            self.buf.set_len(len + n + 2);
        }
    }

    #[cold]
    fn escaped(&mut self, s: &str) {
        // serde_json's own escaping, so bytes match it exactly.
        let _ = serde_json::to_writer(&mut self.buf, s);
    }

    /// `,"key":` (or `"key":` for the first key) then a value follows.
    #[inline]
    pub fn key(&mut self, k: &str) {
        self.buf.push(b',');
        self.str(k);
        self.buf.push(b':');
    }

    /// A JSON object.
    pub fn value_map(&mut self, m: &Map<String, Value>) {
        self.byte(b'{');
        for (i, (k, x)) in m.iter().enumerate() {
            if i > 0 {
                self.byte(b',');
            }
            self.str(k);
            self.byte(b':');
            self.value(x);
        }
        self.byte(b'}');
    }

    /// Any JSON value (unknown keys and the small fields kept as JSON).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.str(s),
            Value::Bool(b) => self.bool(*b),
            Value::Null => self.raw(b"null"),
            Value::Array(a) => {
                self.byte(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        self.byte(b',');
                    }
                    self.value(x);
                }
                self.byte(b']');
            }
            Value::Object(m) => self.value_map(m),
            Value::Number(n) => {
                // Writing a number into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut self.buf, n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scan answers as the byte-at-a-time one, for every
    /// byte value at every position of strings of 0–24 bytes.
    #[test]
    fn word_scan_finds_every_escapable_byte_anywhere() {
        for len in 0..=24usize {
            for pos in 0..len.max(1) {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    if pos < len {
                        s[pos] = b;
                    }
                    assert_eq!(
                        has_escape(&s),
                        s.iter().any(|&c| needs_escape(c)),
                        "len {len} pos {pos} byte {b:#x}"
                    );
                }
            }
        }
    }

    /// Neighbouring bytes do not hide or fake an escapable one (borrows of
    /// the subtraction across bytes: 0x00/0x01/0x20/0x21/0x22/0x5c/0x80/0xff).
    #[test]
    fn word_scan_is_exact_next_to_edge_bytes() {
        let edges = [
            0x00u8, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xc3, 0xff,
        ];
        for &x in &edges {
            for &y in &edges {
                for len in [8usize, 9, 15, 16, 17] {
                    for pos in 0..len - 1 {
                        let mut s = vec![b'z'; len];
                        s[pos] = x;
                        s[pos + 1] = y;
                        assert_eq!(
                            has_escape(&s),
                            s.iter().any(|&c| needs_escape(c)),
                            "{x:#x} {y:#x} at {pos}/{len}"
                        );
                    }
                }
            }
        }
    }

    /// `Out::name` skips the scan: every name it is given (opcodes, arches)
    /// needs none.
    #[test]
    fn fixed_vocabularies_need_no_escaping() {
        for n in crate::bir::opcode::OPCODE_NAMES {
            assert!(!has_escape(n.as_bytes()), "{n}");
        }
        use crate::bir::Arch;
        for a in [Arch::Inferentia, Arch::Sunda, Arch::Gen3, Arch::CoreV4] {
            assert!(!has_escape(a.name().as_bytes()), "{}", a.name());
        }
    }

    /// `Out::small` appends exactly its bytes, at every length around its
    /// word sizes and after any number of bytes already written.
    #[test]
    fn small_copies_are_exact() {
        let src: Vec<u8> = (0..40u8).map(|i| b'a' + i).collect();
        for pre in 0..20 {
            for n in 0..=src.len() {
                let mut o = Out::memory(0);
                o.raw(&src[..pre]);
                o.small(&src[..n]);
                o.byte(b'!');
                let mut want = src[..pre].to_vec();
                want.extend_from_slice(&src[..n]);
                want.push(b'!');
                assert_eq!(o.into_bytes(), want, "pre {pre} n {n}");
            }
        }
        let mut o = Out::memory(4);
        for v in [0i64, -1, 9, 10, -99, 12345, i64::MIN, i64::MAX] {
            o.int(v);
            o.byte(b',');
        }
        o.uint(u64::MAX);
        let want = "0,-1,9,10,-99,12345,-9223372036854775808,9223372036854775807,18446744073709551615";
        assert_eq!(String::from_utf8(o.into_bytes()).unwrap(), want);
        let text: String = (0..40u8).map(|i| (b'0' + i) as char).collect();
        for n in 0..=text.len() {
            let mut o = Out::memory(0);
            o.byte(b'[');
            o.name(&text[..n]);
            o.str(&text[..n]);
            assert_eq!(
                o.into_bytes(),
                format!("[\"{0}\"\"{0}\"", &text[..n]).into_bytes(),
                "n {n}"
            );
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_does() {
        for s in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "tab\there",
            "\u{1}",
            "é and ü",
            "0123456789abcdef\n",
        ] {
            let mut o = Out::memory(8);
            o.str(s);
            assert_eq!(o.into_bytes(), serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }
}
