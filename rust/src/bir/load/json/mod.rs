//! The loader's fast JSON reader: a serde [`Deserializer`] over the text
//! (UTF-8 already validated) that the loader's readers run on first.
//!
//! serde_json stays the reference. This reader only has to (a) hand the
//! loader's visitors exactly what serde_json would for every text it
//! accepts, and (b) never accept a text serde_json rejects. It produces no
//! error of its own: any failure at all — a syntax error, a type mismatch,
//! one of lncsplit's checks, or a form it chooses not to read (a float
//! where an integer is asked for, `-0`, a lone surrogate, nesting at
//! serde_json's limit) — is [`Bail`], and the load runs again with
//! serde_json, which gives the error with its message, code and JSON path.
//!
//! What it does faster than serde_json's (sealed) `StrRead`:
//! - strings are scanned 16 bytes at a time (SSE2 on x86_64, a scalar loop
//!   elsewhere) and borrowed from the input when they hold no escape;
//! - integers are parsed straight into `u64`/`i64`;
//! - a raw value (serde_json's `RawValue` protocol, the loader's captured
//!   expressions and deferred values) is found by one validating skip over
//!   its bytes, without serde_json's per-byte raw buffering.
//!
//! serde_json's conventions it keeps (its `de.rs`, features
//! `arbitrary_precision` and `raw_value`): `deserialize_any` hands an
//! integer that fits to `visit_u64`/`visit_i64` and any other number to the
//! one-entry map `{"$serde_json::private::Number": "<text>"}` (exponent
//! written `e+`/`e-`); `deserialize_newtype_struct("$serde_json::private::RawValue")`
//! is the one-entry map `{"$serde_json::private::RawValue": <borrowed text>}`
//! (the value's text without the whitespace around it); escaped strings go
//! to `visit_str`, plain ones to `visit_borrowed_str`; a container
//! consumes the recursion budget of 128 per reader as serde_json's does
//! (the skip of a raw value counts too: stricter, so never more lenient).

use std::fmt;

use serde::de::{self, Visitor};

pub(super) use self::access::RawText;
use self::access::{Items, OneEntry, Text};
use self::scan::find_special;
/// The structural masks of 16 bytes (also the pre-scan's, `plan.rs`).
pub(in crate::bir::load) use crate::simd::masks;

mod access;
mod scan;
#[cfg(test)]
mod tests;

/// serde_json's private token of a raw value.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";
/// serde_json's private token of an arbitrary-precision number.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
/// The loader's own token: a raw value found by its brackets and strings
/// alone, handed over as borrowed text ([`RawText`]). Only the expression
/// reader asks for it: a text it finds in its cache equals one that was read
/// in full, and any other is read in full (see `expr.rs`, `ExprK`).
pub(super) const UNCHECKED_RAW: &str = "$lncsplit::private::UncheckedRaw";
/// The loader's token for an argument's `ap` (`[[step, num], …]`): this
/// reader hands the pairs of a plain one (at most [`AP_MAX_PAIRS`] pairs of
/// 64-bit integers) to `visit_bytes`, each pair as two little-endian `i64`;
/// anything else, and any other reader, goes to `visit_newtype_struct`
/// (the ordinary array read, with its checks).
pub(super) const AP_PAIRS: &str = "$lncsplit::private::ApPairs";
/// Most pairs an `ap` read by [`AP_PAIRS`] may have.
pub(super) const AP_MAX_PAIRS: usize = 8;
/// serde_json's recursion budget per reader (a container at depth 128 fails).
const RECURSION: u8 = 128;

/// The fast reader gave up: the load runs again with serde_json.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Bail;

impl fmt::Display for Bail {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the fast JSON reader gave up")
    }
}

impl std::error::Error for Bail {}

impl de::Error for Bail {
    #[cold]
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Bail
    }
}

type R<T> = Result<T, Bail>;

/// The fast reader over one text.
pub(super) struct Fast<'de> {
    text: &'de str,
    b: &'de [u8],
    i: usize,
    remaining: u8,
    /// Decoded text of the current escaped string.
    scratch: String,
}

/// An integer as serde_json's typed reads hand it over.
enum Int {
    U(u64),
    I(i64),
}

impl<'de> Fast<'de> {
    pub(super) fn new(text: &'de str) -> Self {
        Fast {
            text,
            b: text.as_bytes(),
            i: 0,
            remaining: RECURSION,
            scratch: String::new(),
        }
    }

    /// Only whitespace may follow the value (serde_json's `end`).
    pub(super) fn end(&mut self) -> R<()> {
        match self.ws() {
            None => Ok(()),
            Some(_) => Err(Bail),
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skip whitespace; the next byte.
    #[inline]
    fn ws(&mut self) -> Option<u8> {
        loop {
            match self.b.get(self.i) {
                Some(b' ' | b'\n' | b'\t' | b'\r') => self.i += 1,
                other => return other.copied(),
            }
        }
    }

    /// Step to the next item of an array or object closed by `close` (the
    /// reader is past its opening bracket): `Ok(false)` at the closing
    /// bracket (not consumed), `Ok(true)` before an item. A comma must
    /// separate items and no comma may trail, as serde_json requires.
    #[inline]
    pub(super) fn next_item(&mut self, close: u8, first: &mut bool) -> R<bool> {
        match self.ws() {
            Some(c) if c == close => Ok(false),
            Some(b',') if !*first => {
                self.i += 1;
                match self.ws() {
                    Some(c) if c != close => Ok(true),
                    _ => Err(Bail),
                }
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            _ => Err(Bail),
        }
    }

    /// Skip an array or object (the reader at its opening bracket), each
    /// item with `item`.
    fn skip_container(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.container(close, |de| {
            let mut first = true;
            while de.next_item(close, &mut first)? {
                item(de)?;
            }
            Ok(())
        })
    }

    #[inline]
    fn ident(&mut self, word: &[u8]) -> R<()> {
        match self.b.get(self.i..self.i + word.len()) {
            Some(w) if w == word => {
                self.i += word.len();
                Ok(())
            }
            _ => Err(Bail),
        }
    }

    #[inline]
    fn enter(&mut self) -> R<()> {
        // Checked: a visitor that went on after an error must not wrap it.
        self.remaining = self.remaining.checked_sub(1).ok_or(Bail)?;
        if self.remaining == 0 {
            return Err(Bail);
        }
        Ok(())
    }

    #[inline]
    fn leave(&mut self) {
        self.remaining = self.remaining.saturating_add(1);
    }

    #[inline]
    fn digit(&self) -> bool {
        matches!(self.peek(), Some(b'0'..=b'9'))
    }

    fn digits(&mut self) {
        while self.digit() {
            self.i += 1;
        }
    }

    // ------------------------------------------------------------ strings

    /// Read a string whose opening quote is consumed: borrowed when it has
    /// no escape, else `None` and the decoded text in `scratch`.
    #[inline]
    fn string(&mut self) -> R<Option<&'de str>> {
        let start = self.i;
        let j = find_special(self.b, start);
        match self.b.get(j) {
            Some(b'"') => {
                self.i = j + 1;
                self.text.get(start..j).map(Some).ok_or(Bail)
            }
            Some(b'\\') => {
                self.scratch.clear();
                self.scratch.push_str(self.text.get(start..j).ok_or(Bail)?);
                self.i = j;
                self.escaped()?;
                Ok(None)
            }
            // A control character or the end of the text.
            _ => Err(Bail),
        }
    }

    /// Decode from a backslash to the closing quote into `scratch`.
    #[cold]
    fn escaped(&mut self) -> R<()> {
        loop {
            // At a backslash.
            let c = *self.b.get(self.i + 1).ok_or(Bail)?;
            self.i += 2;
            let ch = match c {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\x08',
                b'f' => '\x0c',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode()?,
                _ => return Err(Bail),
            };
            self.scratch.push(ch);
            let start = self.i;
            let j = find_special(self.b, start);
            self.scratch.push_str(self.text.get(start..j).ok_or(Bail)?);
            self.i = j;
            match self.b.get(j) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {}
                _ => return Err(Bail),
            }
        }
    }

    /// The character of a `\u` escape (its `\u` consumed); a surrogate must
    /// be a high one followed by an escaped low one (serde_json rejects the
    /// rest when it decodes a string).
    fn unicode(&mut self) -> R<char> {
        let n = self.hex4()?;
        let code = match n {
            0xD800..=0xDBFF => {
                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                    return Err(Bail);
                }
                self.i += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(Bail);
                }
                0x10000 + ((u32::from(n) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(Bail),
            _ => u32::from(n),
        };
        char::from_u32(code).ok_or(Bail)
    }

    fn hex4(&mut self) -> R<u16> {
        let h = self.b.get(self.i..self.i + 4).ok_or(Bail)?;
        let mut n = 0u16;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(Bail),
            };
            n = n * 16 + u16::from(d);
        }
        self.i += 4;
        Ok(n)
    }

    /// Skip a string whose opening quote is consumed, checking it as
    /// serde_json's `ignore_str` does (no control character, known escapes,
    /// four hex digits after `\u`).
    fn skip_str(&mut self) -> R<()> {
        loop {
            let j = find_special(self.b, self.i);
            match self.b.get(j) {
                Some(b'"') => {
                    self.i = j + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i = j + 2;
                    match self.b.get(j + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                        Some(b'u') => {
                            self.hex4()?;
                        }
                        _ => return Err(Bail),
                    }
                }
                _ => return Err(Bail),
            }
        }
    }

    // ------------------------------------------------------------ numbers

    /// Scan a number at `-` or a digit by JSON's grammar; true if it is an
    /// integer (no fraction, no exponent).
    fn scan_number(&mut self) -> R<bool> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                // There can be only one leading '0'.
                if self.digit() {
                    return Err(Bail);
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Bail),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !self.digit() {
                return Err(Bail);
            }
            self.digits();
            integer = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !self.digit() {
                return Err(Bail);
            }
            self.digits();
            integer = false;
        }
        Ok(integer)
    }

    /// An integer for a typed read (serde_json's `deserialize_number`): a
    /// non-negative one to `visit_u64`, a negative one to `visit_i64`;
    /// floats, `-0` and integers past 64 bits (which serde_json hands over
    /// as floats) are left to serde_json.
    #[inline]
    fn integer(&mut self) -> R<Int> {
        let neg = self.peek() == Some(b'-');
        if neg {
            self.i += 1;
        }
        let mut v: u64 = 0;
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
                    v = v
                        .checked_mul(10)
                        .and_then(|v| v.checked_add(u64::from(c - b'0')))
                        .ok_or(Bail)?;
                    self.i += 1;
                }
            }
            _ => return Err(Bail),
        }
        if matches!(self.peek(), Some(b'0'..=b'9' | b'.' | b'e' | b'E')) {
            return Err(Bail);
        }
        if !neg {
            return Ok(Int::U(v));
        }
        if v == 0 || v > 1 << 63 {
            return Err(Bail);
        }
        // v ≤ 2^63: the wrapping negation is exact (2^63 gives i64::MIN).
        Ok(Int::I((v as i64).wrapping_neg()))
    }

    #[inline]
    fn visit_integer<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'-' | b'0'..=b'9') => match self.integer()? {
                Int::U(v) => visitor.visit_u64(v),
                Int::I(v) => visitor.visit_i64(v),
            },
            _ => Err(Bail),
        }
    }

    /// A number in `deserialize_any` (serde_json's `parse_any_number` with
    /// `arbitrary_precision`).
    fn any_number<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        let start = self.i;
        let integer = self.scan_number()?;
        let s = self.text.get(start..self.i).ok_or(Bail)?;
        if integer {
            if let Some(digits) = s.strip_prefix('-') {
                if digits != "0" {
                    if let Ok(v) = s.parse::<i64>() {
                        return visitor.visit_i64(v);
                    }
                }
            } else if let Ok(v) = s.parse::<u64>() {
                return visitor.visit_u64(v);
            }
        }
        visitor.visit_map(OneEntry {
            key: NUMBER_TOKEN,
            value: Some(Text::Owned(number_text(s))),
        })
    }

    // ------------------------------------------------------------ values

    /// Skip one value, checking it as serde_json's `ignore_value` does.
    fn skip(&mut self) -> R<()> {
        match self.ws() {
            Some(b'n') => self.ident(b"null"),
            Some(b't') => self.ident(b"true"),
            Some(b'f') => self.ident(b"false"),
            Some(b'-' | b'0'..=b'9') => self.scan_number().map(|_| ()),
            Some(b'"') => {
                self.i += 1;
                self.skip_str()
            }
            Some(b'[') => self.skip_container(b']', Self::skip),
            Some(b'{') => self.skip_container(b'}', |de| {
                if de.ws() != Some(b'"') {
                    return Err(Bail);
                }
                de.i += 1;
                de.skip_str()?;
                if de.ws() != Some(b':') {
                    return Err(Bail);
                }
                de.i += 1;
                de.skip()
            }),
            _ => Err(Bail),
        }
    }

    /// Skip an object or array by its structure alone: brackets counted
    /// outside strings, strings ended by an unescaped quote. Anything else
    /// is left for the full read of the text (or a cache hit on equal text,
    /// which was read in full) to check.
    fn skip_unchecked(&mut self) -> R<()> {
        let b = self.b;
        let mut depth = 0usize;
        let mut in_str = false;
        // Bytes before this index are escaped by a backslash.
        let mut escaped_until = 0usize;
        let mut at = self.i;
        while at < b.len() {
            let [quote, backslash, open, close] = masks(b, at);
            if backslash == 0 && escaped_until <= at {
                // No escape: the in-string bytes are the prefix xor of the
                // quotes (from an opening quote to its closing one).
                let mut x = quote;
                x ^= x << 1;
                x ^= x << 2;
                x ^= x << 4;
                x ^= x << 8;
                if in_str {
                    x = !x;
                }
                in_str = x & 0x8000 != 0;
                let mut brackets = (open | close) & !x & 0xFFFF;
                while brackets != 0 {
                    let k = brackets.trailing_zeros();
                    brackets &= brackets - 1;
                    if open & (1 << k) != 0 {
                        depth += 1;
                    } else {
                        depth = depth.checked_sub(1).ok_or(Bail)?;
                        if depth == 0 {
                            self.i = at + k as usize + 1;
                            return Ok(());
                        }
                    }
                }
                at += 16;
                continue;
            }
            // A block with an escape: byte by structural byte.
            let mut m = quote | backslash | open | close;
            while m != 0 {
                let k = m.trailing_zeros();
                m &= m - 1;
                let pos = at + k as usize;
                if pos < escaped_until {
                    continue;
                }
                let bit = 1 << k;
                if in_str {
                    if quote & bit != 0 {
                        in_str = false;
                    } else if backslash & bit != 0 {
                        escaped_until = pos + 2;
                    }
                } else if quote & bit != 0 {
                    in_str = true;
                } else if open & bit != 0 {
                    depth += 1;
                } else if close & bit != 0 {
                    depth = depth.checked_sub(1).ok_or(Bail)?;
                    if depth == 0 {
                        self.i = pos + 1;
                        return Ok(());
                    }
                } else {
                    // A backslash outside a string.
                    return Err(Bail);
                }
            }
            at += 16;
        }
        Err(Bail)
    }

    /// The text of an object or array found by [`Self::skip_unchecked`];
    /// any other value is checked as a raw value is.
    fn raw_unchecked<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        let start = self.i;
        match self.ws() {
            Some(b'{' | b'[') => self.skip_unchecked()?,
            _ => self.skip()?,
        }
        let raw = self.text.get(start..self.i).ok_or(Bail)?;
        visitor.visit_borrowed_str(raw.trim_start_matches([' ', '\n', '\t', '\r']))
    }

    /// An `ap` read straight into integer pairs ([`AP_PAIRS`]); any other
    /// form is read again from its start by the ordinary array read.
    fn ap_pairs<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        let start = self.i;
        let mut buf = [0u8; 16 * AP_MAX_PAIRS];
        match self.ap_plain(&mut buf) {
            Some(n) => visitor.visit_bytes(&buf[..16 * n]),
            None => {
                self.i = start;
                visitor.visit_newtype_struct(self)
            }
        }
    }

    /// The pairs of a plain `ap` into `buf` (how many), or None (the
    /// position is then anywhere: the caller rewinds).
    fn ap_plain(&mut self, buf: &mut [u8; 16 * AP_MAX_PAIRS]) -> Option<usize> {
        // The ordinary read enters two containers: where that would reach
        // the recursion limit, it decides.
        if self.remaining < 3 || self.ws() != Some(b'[') {
            return None;
        }
        self.i += 1;
        if self.ws() == Some(b']') {
            self.i += 1;
            return Some(0);
        }
        let mut n = 0;
        loop {
            if n == AP_MAX_PAIRS || self.ws() != Some(b'[') {
                return None;
            }
            self.i += 1;
            let step = self.ap_int()?;
            if self.ws() != Some(b',') {
                return None;
            }
            self.i += 1;
            let num = self.ap_int()?;
            if self.ws() != Some(b']') {
                return None;
            }
            self.i += 1;
            buf[16 * n..16 * n + 8].copy_from_slice(&step.to_le_bytes());
            buf[16 * n + 8..16 * n + 16].copy_from_slice(&num.to_le_bytes());
            n += 1;
            match self.ws() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Some(n);
                }
                _ => return None,
            }
        }
    }

    /// A 64-bit signed integer as the typed read gives it, or None.
    fn ap_int(&mut self) -> Option<i64> {
        match self.ws() {
            Some(b'-' | b'0'..=b'9') => match self.integer().ok()? {
                Int::U(v) => i64::try_from(v).ok(),
                Int::I(v) => Some(v),
            },
            _ => None,
        }
    }

    /// A raw value: the text of one checked value.
    fn raw<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        self.ws();
        let start = self.i;
        self.skip()?;
        let raw = self.text.get(start..self.i).ok_or(Bail)?;
        visitor.visit_map(OneEntry {
            key: RAW_TOKEN,
            value: Some(Text::Borrowed(raw)),
        })
    }

    fn seq<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        self.container(b']', |de| visitor.visit_seq(Items { de, first: true }))
    }

    fn map<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        self.container(b'}', |de| visitor.visit_map(Items { de, first: true }))
    }

    /// Read an array or object closed by `close` (the reader at its opening
    /// bracket) with `read`, which stops before the closing bracket.
    fn container<T>(&mut self, close: u8, read: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        self.enter()?;
        self.i += 1;
        let v = read(self)?;
        self.leave();
        if self.ws() != Some(close) {
            return Err(Bail);
        }
        self.i += 1;
        Ok(v)
    }

    /// A string value (its opening quote next) to the visitor.
    #[inline]
    fn visit_string<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        self.i += 1;
        match self.string()? {
            Some(s) => visitor.visit_borrowed_str(s),
            None => visitor.visit_str(&self.scratch),
        }
    }
}

/// serde_json's text of a number that is not a 64-bit integer: as written,
/// but the exponent as `e`, its sign always written.
fn number_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 1);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == 'e' || c == 'E' {
            out.push('e');
            if !matches!(chars.peek(), Some('+' | '-')) {
                out.push('+');
            }
        } else {
            out.push(c);
        }
    }
    out
}
