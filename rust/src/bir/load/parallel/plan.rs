//! The structural pre-scan of the parallel loader: where the big
//! `functions[*].basic_blocks[*].instructions` arrays are (the compiler's
//! spelling: `functions[*].blocks[*].instructions`, contract §1.7), and the
//! byte range of each of their elements.
//!
//! One pass over the bytes that tracks only strings, escapes and nesting (no
//! value is decoded, nothing is allocated per value). It accepts a narrow,
//! plain shape and gives up (no plan: the serial loader reads the text)
//! on anything else: a key of the module, a function or a block that has an
//! escape or comes twice, `version` after `functions`, functions in both
//! spellings (or one with both blocks keys), a value that is not
//! of the shape the plan needs, nesting deeper than [`MAX_PLAN_DEPTH`],
//! malformed text. Giving up is always safe; a plan is only a hint that the
//! parallel loader verifies by parsing every element with the serial
//! grammar.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use crate::bir::load::json;
use crate::bir::schema::{key, Spelling};

/// Deepest nesting a plan accepts: well below serde_json's recursion limit
/// (128) and the loader's own (256), so neither can trigger in the serial
/// load of a text that has a plan, nor differ in a chunk parsed from the
/// middle of the text.
const MAX_PLAN_DEPTH: u32 = 96;

/// What the pre-scan found: the big arrays' spans (from `[` to `]`, both
/// included), in text order.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) arrays: Vec<Range<usize>>,
    /// The spelling of the functions' blocks key (the chunks were read in it).
    pub(super) spelling: Spelling,
}

/// Where the pre-scan hands over work as soon as it is found: `chunk(k,
/// elements)` gets the byte ranges of consecutive elements of big array
/// `k` (at most `chunk_size` of them, in order), so reading them overlaps
/// the rest of the scan. The wire `version` is known before the first chunk.
pub(super) trait Sink {
    fn version(&mut self, version: u32);
    /// The spelling of the functions' blocks key, known before the chunks
    /// of its first big array (a Loop's axis key depends on it).
    fn spelling(&mut self, spelling: Spelling);
    fn chunk(&mut self, array: usize, elements: Vec<Range<usize>>);
}

/// Scan `text` for instruction arrays of at least `min_elements` elements,
/// handing their elements to `sink` in chunks of `chunk_size`. None when
/// there is none or the text is not of the plain shape (chunks handed over
/// before that are to be dropped).
pub(super) fn plan(text: &[u8], min_elements: usize, chunk_size: usize, sink: &mut dyn Sink) -> Option<Plan> {
    let mut s = Scanner {
        b: text,
        i: 0,
        min_elements: min_elements.max(1),
        chunk_size: chunk_size.max(1),
        arrays: Vec::new(),
        spelling: None,
        sink,
    };
    s.module()?;
    s.ws();
    if s.i != text.len() || s.arrays.is_empty() {
        return None;
    }
    Some(Plan {
        arrays: s.arrays,
        spelling: s.spelling?,
    })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    min_elements: usize,
    chunk_size: usize,
    arrays: Vec<Range<usize>>,
    /// The functions' blocks key's spelling, once one was met.
    spelling: Option<Spelling>,
    sink: &'a mut dyn Sink,
}

/// Outcome of one step: None gives up the plan.
type Step<T> = Option<T>;

impl Scanner<'_> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Step<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string starting at the current `"`; its content's range and
    /// whether it has an escape.
    #[inline]
    fn string(&mut self) -> Step<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some((start..self.i - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                _ => self.i += 1,
            }
        }
    }

    /// A plain key (no escape) and its colon.
    fn key(&mut self) -> Step<Range<usize>> {
        let (k, escaped) = self.string()?;
        if escaped {
            return None;
        }
        self.eat(b':')?;
        Some(k)
    }

    /// Skip one value of any shape, at nesting `depth` (the value's own
    /// brackets count from `depth + 1`); its range.
    fn value(&mut self, depth: u32) -> Step<Range<usize>> {
        self.ws();
        let start = self.i;
        match *self.b.get(self.i)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => self.nested(depth)?,
            _ => {
                // A scalar: up to the next delimiter (serde checks it).
                while let Some(c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    if matches!(c, b'"' | b'{' | b'[' | b':') {
                        return None;
                    }
                    self.i += 1;
                }
                if self.i == start {
                    return None;
                }
            }
        }
        Some(start..self.i)
    }

    /// Skip an object or array starting here (see [`skip_nested`]).
    fn nested(&mut self, depth: u32) -> Step<()> {
        self.i = skip_nested(self.b, self.i, depth)?;
        Some(())
    }

    /// Visit the members of an object: `member(scanner, key)` reads each
    /// value. Keys `unique` names may come only once.
    fn object(&mut self, unique: &[&[u8]], mut member: impl FnMut(&mut Self, &[u8]) -> Step<()>) -> Step<()> {
        self.eat(b'{')?;
        let mut seen = 0u32;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let k = self.key()?;
            let b = self.b;
            let key = &b[k];
            if let Some(n) = unique.iter().position(|u| *u == key) {
                if seen & (1 << n) != 0 {
                    return None;
                }
                seen |= 1 << n;
            }
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Visit the elements of an array with `element`.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The module object (depth 1).
    fn module(&mut self) -> Step<()> {
        const VERSION: &[u8] = key!(module version).as_bytes();
        const FUNCTIONS: &[u8] = key!(module functions).as_bytes();
        let mut version = false;
        self.object(&[VERSION, FUNCTIONS], |s, key| {
            match key {
                VERSION => {
                    let r = s.value(1)?;
                    let v = serde_json::from_slice::<serde_json::Value>(&s.b[r]).ok()?;
                    match v.as_u64() {
                        Some(v @ (1 | 2)) => s.sink.version(v as u32),
                        _ => return None,
                    }
                    version = true;
                }
                // Expressions are read by the version: it must come first.
                FUNCTIONS if !version => return None,
                FUNCTIONS => s.array(|s| s.function())?,
                _ => {
                    s.value(1)?;
                }
            }
            Some(())
        })
    }

    /// A function object (depth 3): its blocks, in either spelling (the
    /// same for every function; a function with both keys gives up).
    fn function(&mut self) -> Step<()> {
        const OURS: &[u8] = key!(function basic_blocks).as_bytes();
        const THEIRS: &[u8] = key!(compiler function basic_blocks).as_bytes();
        let mut seen = false;
        self.object(&[OURS, THEIRS], |s, key| {
            let spelling = match key {
                OURS => Spelling::Lncsplit,
                THEIRS => Spelling::Compiler,
                _ => return s.value(3).map(|_| ()),
            };
            if seen {
                return None;
            }
            seen = true;
            match s.spelling {
                Some(known) if known != spelling => return None,
                Some(_) => {}
                None => {
                    s.spelling = Some(spelling);
                    s.sink.spelling(spelling);
                }
            }
            s.array(|s| s.block())
        })
    }

    /// A block object (depth 5).
    fn block(&mut self) -> Step<()> {
        self.object_with(key!(block instructions).as_bytes(), 5, |s| s.instructions())
    }

    /// An object at `depth` whose one member `wanted` is read by `read`;
    /// every other member is skipped.
    fn object_with(&mut self, wanted: &[u8], depth: u32, mut read: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        self.object(&[wanted], |s, key| {
            if key == wanted {
                read(s)
            } else {
                s.value(depth).map(|_| ())
            }
        })
    }

    /// A block's `instructions` (depth 6): planned when big enough.
    fn instructions(&mut self) -> Step<()> {
        if self.peek()? != b'[' {
            return None;
        }
        let open = self.i;
        let k = self.arrays.len();
        // Elements not handed over yet; how many were.
        let mut pending = Vec::new();
        let mut handed = 0;
        self.array(|s| {
            if s.peek()? != b'{' {
                return None;
            }
            pending.push(s.value(6)?);
            if handed + pending.len() >= s.min_elements && pending.len() >= s.chunk_size {
                handed += pending.len();
                s.sink.chunk(k, std::mem::take(&mut pending));
            }
            Some(())
        })?;
        if handed + pending.len() >= self.min_elements {
            for c in pending.chunks(self.chunk_size) {
                self.sink.chunk(k, c.to_vec());
            }
            self.arrays.push(open..self.i);
        }
        Some(())
    }
}

// ------------------------------------------------------- skipping a value

/// Bytes looked at together: one bit of a `u64` mask each.
const BLOCK: usize = 64;

/// Skip the object or array starting at `b[i]` (nested in `depth` levels);
/// the index after its closing bracket. Strings, escapes and brackets are
/// tracked, nothing else is looked at (serde checks the rest). Most of the
/// text goes through 64-byte blocks turned into bit masks (simdjson's
/// first stage: SSE2 on x86_64, 8-byte words elsewhere); a block with a
/// backslash, and the tail, go byte by byte.
fn skip_nested(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    let mut st = Walk {
        level: 0,
        in_str: false,
        depth,
    };
    let mut p = i;
    while let Some(blk) = b.get(p..).and_then(|r| r.first_chunk::<BLOCK>()) {
        let m = masks(blk);
        if m.backslash != 0 {
            match st.bytes(b, p, p + BLOCK)? {
                Walked::Closed(end) => return Some(end),
                Walked::At(next) => p = next,
            }
            continue;
        }
        let inside = prefix_xor(m.quote) ^ if st.in_str { !0 } else { 0 };
        st.in_str = inside >> 63 == 1;
        let mut s = (m.open | m.close) & !inside;
        while s != 0 {
            let j = s.trailing_zeros();
            s &= s - 1;
            if m.open >> j & 1 == 1 {
                st.open()?;
            } else if st.close()? {
                return Some(p + j as usize + 1);
            }
        }
        p += BLOCK;
    }
    match st.bytes(b, p, b.len())? {
        Walked::Closed(end) => Some(end),
        Walked::At(_) => None,
    }
}

/// Where [`skip_nested`] is.
struct Walk {
    level: u32,
    in_str: bool,
    depth: u32,
}

enum Walked {
    /// The value closed; the index after it.
    Closed(usize),
    /// Went through the bytes (maybe one past their end, after an escape).
    At(usize),
}

impl Walk {
    #[inline]
    fn open(&mut self) -> Option<()> {
        self.level += 1;
        (self.depth + self.level <= MAX_PLAN_DEPTH).then_some(())
    }

    /// Whether the value closed.
    #[inline]
    fn close(&mut self) -> Option<bool> {
        self.level = self.level.checked_sub(1)?;
        Some(self.level == 0)
    }

    /// Byte by byte through `b[p..end]`.
    fn bytes(&mut self, b: &[u8], mut p: usize, end: usize) -> Option<Walked> {
        while p < end {
            let c = b[p];
            if self.in_str {
                match c {
                    b'"' => self.in_str = false,
                    b'\\' => p += 1,
                    _ => {}
                }
            } else {
                match c {
                    b'"' => self.in_str = true,
                    b'{' | b'[' => self.open()?,
                    b'}' | b']' if self.close()? => return Some(Walked::Closed(p + 1)),
                    _ => {}
                }
            }
            p += 1;
        }
        Some(Walked::At(p))
    }
}

/// The bytes of a block that are a quote, a backslash, an opening or a
/// closing bracket.
#[cfg_attr(test, derive(Debug, PartialEq, Eq))]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

/// Byte k of a word: 0x01 (a 1 in every byte; times `c`: `c` in every byte).
#[cfg(any(test, not(target_arch = "x86_64")))]
const ONES: u64 = 0x0101_0101_0101_0101;
#[cfg(any(test, not(target_arch = "x86_64")))]
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The bytes of the 8-byte word `w` equal to `c`, one bit each (SWAR: an
/// exact zero-byte test, then the high bits gathered by a multiply).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn eq8(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * u64::from(c));
    let hi = !(((x & LOW7) + LOW7) | x) & !LOW7;
    (hi >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

// The masks of a block: SSE2 on x86_64 (part of its baseline: every x86_64
// CPU has it), 8-byte words elsewhere.
#[cfg(target_arch = "x86_64")]
use self::masks_sse2 as masks;
#[cfg(not(target_arch = "x86_64"))]
use self::masks_words as masks;

/// [`masks`] with SSE2: 16 bytes compared at once (`pcmpeqb`), one bit a
/// byte gathered by `pmovmskb` — the fast reader's 16-byte masks
/// ([`json::masks`]), four to a block. Half the scan's time of
/// [`masks_words`].
#[cfg(target_arch = "x86_64")]
#[inline]
fn masks_sse2(blk: &[u8; BLOCK]) -> Masks {
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for at in (0..BLOCK).step_by(16) {
        let [quote, backslash, open, close] = json::masks(blk, at).map(u64::from);
        m.quote |= quote << at;
        m.backslash |= backslash << at;
        m.open |= open << at;
        m.close |= close << at;
    }
    m
}

/// [`masks`] in safe code, 8-byte words as the vectors (SWAR); the SSE2
/// version is checked against it.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn masks_words(blk: &[u8; BLOCK]) -> Masks {
    let (mut quote, mut backslash, mut open, mut close) = (0u64, 0u64, 0u64, 0u64);
    let mut rest: &[u8] = blk;
    let mut at = 0;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        rest = tail;
        let w = u64::from_le_bytes(*word);
        // `{` and `[` (`}` and `]`) differ in the 0x20 bit only.
        let w20 = w | (ONES * 0x20);
        quote |= eq8(w, b'"') << at;
        backslash |= eq8(w, b'\\') << at;
        open |= eq8(w20, b'{') << at;
        close |= eq8(w20, b'}') << at;
        at += 8;
    }
    Masks {
        quote,
        backslash,
        open,
        close,
    }
}

/// Bit j: the xor of bits 0..=j (inside a string: after an odd number of
/// quotes).
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<Vec<Range<usize>>>);

    impl Sink for Collect {
        fn version(&mut self, _: u32) {}
        fn spelling(&mut self, _: Spelling) {}
        fn chunk(&mut self, array: usize, elements: Vec<Range<usize>>) {
            assert!(elements.len() <= 2, "chunks of at most 2");
            self.0.resize_with(self.0.len().max(array + 1), Vec::new);
            self.0[array].extend(elements);
        }
    }

    fn spans(text: &str, min: usize) -> Option<Vec<Vec<&str>>> {
        let mut c = Collect::default();
        let p = plan(text.as_bytes(), min, 2, &mut c)?;
        assert_eq!(p.arrays.len(), c.0.len());
        Some(
            c.0.iter()
                .map(|a| a.iter().map(|r| &text[r.clone()]).collect())
                .collect(),
        )
    }

    #[test]
    fn finds_the_elements_of_instruction_arrays() {
        let t = r#"{"version": 2, "name": "m", "functions": [{"name": "f", "basic_blocks": [
            {"name": "b", "instructions": [{"a": "x]}\"{"}, {"b": [1, {"c": 2}]}]},
            {"instructions": [], "name": "c"}]}]}"#;
        let got = spans(t, 1).expect("a plan");
        assert_eq!(got, vec![vec![r#"{"a": "x]}\"{"}"#, r#"{"b": [1, {"c": 2}]}"#]]);
        assert!(spans(t, 3).is_none(), "no array is big enough");
    }

    #[test]
    fn skipping_a_value_tracks_strings_and_escapes_across_blocks() {
        for k in 0..200 {
            let pad = "x".repeat(k);
            for v in [
                format!(r#"{{"a":"{pad}\"}}]","b":[1,{{"c":"]{pad}"}}],"d":"{pad}\\"}}"#),
                format!(r#"[{pad:?},{{"q":"{{[{pad}"}},"\\\""]"#),
                format!(r#"{{"{pad}":{{}}}}"#),
            ] {
                let text = format!("{v} , tail");
                assert_eq!(skip_nested(text.as_bytes(), 0, 0), Some(v.len()), "{v}");
                assert_eq!(skip_nested(&v.as_bytes()[..v.len() - 1], 0, 0), None, "unclosed {v}");
            }
        }
    }

    /// A reproducible stream of bytes (xorshift).
    struct Bytes(u64);

    impl Bytes {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// A byte, mostly from `alphabet`, sometimes any byte.
        fn byte(&mut self, alphabet: &[u8]) -> u8 {
            let r = self.next();
            if r % 8 == 0 {
                (r >> 8) as u8
            } else {
                alphabet[(r >> 8) as usize % alphabet.len()]
            }
        }
    }

    const STRUCTURAL: &[u8] = b"\"\\{}[]x :,";

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_masks_equal_word_masks() {
        let mut r = Bytes(0x9E37_79B9_7F4A_7C15);
        let mut blk = [0u8; BLOCK];
        for n in 0..50_000 {
            // Dense and sparse blocks, every byte value.
            for (j, b) in blk.iter_mut().enumerate() {
                *b = match n % 3 {
                    0 => r.byte(STRUCTURAL),
                    1 => r.next() as u8,
                    _ => (n + j) as u8,
                };
            }
            assert_eq!(masks_sse2(&blk), masks_words(&blk), "{blk:?}");
        }
    }

    /// [`skip_nested`] byte by byte only: the reference for the block path.
    fn skip_bytewise(b: &[u8], i: usize, depth: u32) -> Option<usize> {
        let mut w = Walk {
            level: 0,
            in_str: false,
            depth,
        };
        match w.bytes(b, i, b.len())? {
            Walked::Closed(end) => Some(end),
            Walked::At(_) => None,
        }
    }

    #[test]
    fn skipping_a_value_by_blocks_equals_skipping_it_byte_by_byte() {
        let mut r = Bytes(0x2545_F491_4F6C_DD1D);
        // How many values closed past the first block, and how many never.
        let (mut long, mut unclosed) = (0, 0);
        for n in 0..20_000 {
            // Strings with backslash runs (odd and even) at every offset of
            // the 16- and 64-byte blocks, brackets in and out of strings.
            let len = 1 + (r.next() % 400) as usize;
            let mut t = vec![b'['];
            while t.len() < len {
                match r.next() % 6 {
                    0 => t.extend(std::iter::repeat_n(b'\\', (r.next() % 5) as usize)),
                    1 => t.extend_from_slice(b"\"x\\\"]\""),
                    2 => t.extend(std::iter::repeat_n(b'x', (r.next() % 70) as usize)),
                    _ => t.push(r.byte(STRUCTURAL)),
                }
            }
            let start = (n % 3) as usize;
            let mut text = vec![b' '; start];
            text.extend_from_slice(&t);
            for depth in [0, 90] {
                let got = skip_nested(&text, start, depth);
                assert_eq!(
                    got,
                    skip_bytewise(&text, start, depth),
                    "{:?}",
                    String::from_utf8_lossy(&text)
                );
                long += usize::from(got.is_some_and(|end| end > start + BLOCK));
                unclosed += usize::from(got.is_none());
            }
        }
        assert!(long > 2000 && unclosed > 2000, "{long} long, {unclosed} unclosed");
    }

    #[test]
    fn gives_up_on_shapes_it_does_not_plan() {
        let ok = r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}]}]}]}"#;
        assert!(spans(ok, 1).is_some());
        for bad in [
            // version after functions
            r#"{"functions": [{"basic_blocks": [{"instructions": [{}]}]}], "version": 2}"#,
            // no version
            r#"{"functions": [{"basic_blocks": [{"instructions": [{}]}]}]}"#,
            // a key twice
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}], "instructions": [{}]}]}]}"#,
            // an escaped key
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instruction\u0073": [{}]}]}]}"#,
            // an element that is not an object
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}, 1]}]}]}"#,
            // trailing text, unclosed text
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}]}]}]} x"#,
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}"#,
        ] {
            assert!(spans(bad, 1).is_none(), "{bad}");
        }
        let deep = format!(
            r#"{{"version": 2, "functions": [{{"basic_blocks": [{{"instructions": [{{"x": {}1{}}}]}}]}}]}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(spans(&deep, 1).is_none());
    }
}
