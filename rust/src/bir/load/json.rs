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

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// serde_json's private token of a raw value.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";
/// serde_json's private token of an arbitrary-precision number.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
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
        self.remaining -= 1;
        if self.remaining == 0 {
            return Err(Bail);
        }
        Ok(())
    }

    #[inline]
    fn leave(&mut self) {
        self.remaining += 1;
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
            Some(b'[') => {
                self.enter()?;
                self.i += 1;
                if self.ws() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.skip()?;
                        match self.ws() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(Bail),
                        }
                    }
                }
                self.leave();
                Ok(())
            }
            Some(b'{') => {
                self.enter()?;
                self.i += 1;
                if self.ws() == Some(b'}') {
                    self.i += 1;
                } else {
                    loop {
                        if self.ws() != Some(b'"') {
                            return Err(Bail);
                        }
                        self.i += 1;
                        self.skip_str()?;
                        if self.ws() != Some(b':') {
                            return Err(Bail);
                        }
                        self.i += 1;
                        self.skip()?;
                        match self.ws() {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(Bail),
                        }
                    }
                }
                self.leave();
                Ok(())
            }
            _ => Err(Bail),
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
        self.enter()?;
        self.i += 1;
        let v = visitor.visit_seq(Seq { de: self, first: true })?;
        self.leave();
        match self.ws() {
            Some(b']') => {
                self.i += 1;
                Ok(v)
            }
            _ => Err(Bail),
        }
    }

    fn map<V: Visitor<'de>>(&mut self, visitor: V) -> R<V::Value> {
        self.enter()?;
        self.i += 1;
        let v = visitor.visit_map(Map { de: self, first: true })?;
        self.leave();
        match self.ws() {
            Some(b'}') => {
                self.i += 1;
                Ok(v)
            }
            _ => Err(Bail),
        }
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

/// Index of the first `"`, `\` or control character at or after `i` (the
/// length if none).
#[cfg(target_arch = "x86_64")]
#[inline]
fn find_special(b: &[u8], mut i: usize) -> usize {
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
fn find_special(b: &[u8], i: usize) -> usize {
    find_special_scalar(b, i)
}

#[inline]
fn find_special_scalar(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20))
        .map_or(b.len(), |k| i + k)
}

// ------------------------------------------------------------ serde

/// One text handed over by a one-entry map.
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

/// serde_json's one-entry maps of private tokens (raw values, numbers).
struct OneEntry<'de> {
    key: &'static str,
    value: Option<Text<'de>>,
}

impl<'de> MapAccess<'de> for OneEntry<'de> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        if self.value.is_none() {
            return Ok(None);
        }
        seed.deserialize(BorrowedStrDeserializer::<Bail>::new(self.key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        match self.value.take() {
            Some(Text::Borrowed(s)) => seed.deserialize(BorrowedStrDeserializer::<Bail>::new(s)),
            Some(Text::Owned(s)) => seed.deserialize(StringDeserializer::<Bail>::new(s)),
            None => Err(Bail),
        }
    }
}

struct Seq<'a, 'de> {
    de: &'a mut Fast<'de>,
    first: bool,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Bail;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> R<Option<T::Value>> {
        match self.de.ws() {
            Some(b']') => return Ok(None),
            Some(b',') if !self.first => {
                self.de.i += 1;
                if matches!(self.de.ws(), Some(b']') | None) {
                    return Err(Bail);
                }
            }
            Some(_) if self.first => self.first = false,
            _ => return Err(Bail),
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

struct Map<'a, 'de> {
    de: &'a mut Fast<'de>,
    first: bool,
}

impl<'de> MapAccess<'de> for Map<'_, 'de> {
    type Error = Bail;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        match self.de.ws() {
            Some(b'}') => return Ok(None),
            Some(b',') if !self.first => {
                self.de.i += 1;
                self.de.ws();
            }
            Some(_) if self.first => self.first = false,
            _ => return Err(Bail),
        }
        if self.de.peek() != Some(b'"') {
            return Err(Bail);
        }
        seed.deserialize(Key { de: &mut *self.de }).map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        if self.de.ws() != Some(b':') {
            return Err(Bail);
        }
        self.de.i += 1;
        seed.deserialize(&mut *self.de)
    }
}

/// Number reads a reader leaves to serde_json.
macro_rules! bail_numbers {
    () => {
        bail_numbers!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
            deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
            deserialize_f32 deserialize_f64);
    };
    ($($m:ident)*) => {
        $(
            fn $m<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
                Err(Bail)
            }
        )*
    };
}

/// Integer reads (serde_json's `deserialize_number`).
macro_rules! integers {
    ($($m:ident)*) => {
        $(
            #[inline]
            fn $m<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
                self.visit_integer(visitor)
            }
        )*
    };
}

/// An object key (its opening quote next), as serde_json's `MapKey`: read
/// as a string; keys read as numbers, booleans, bytes or enums are left to
/// serde_json.
struct Key<'a, 'de> {
    de: &'a mut Fast<'de>,
}

impl<'de> Deserializer<'de> for Key<'_, 'de> {
    type Error = Bail;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        self.de.visit_string(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> R<V::Value> {
        if name == RAW_TOKEN {
            return Err(Bail);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _n: &'static str, _vs: &'static [&'static str], _v: V) -> R<V::Value> {
        Err(Bail)
    }

    bail_numbers!();

    serde::forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

impl<'de> Deserializer<'de> for &mut Fast<'de> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'n') => {
                self.ident(b"null")?;
                visitor.visit_unit()
            }
            Some(b't') => {
                self.ident(b"true")?;
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                self.ident(b"false")?;
                visitor.visit_bool(false)
            }
            Some(b'-' | b'0'..=b'9') => self.any_number(visitor),
            Some(b'"') => self.visit_string(visitor),
            Some(b'[') => self.seq(visitor),
            Some(b'{') => self.map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b't') => {
                self.ident(b"true")?;
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                self.ident(b"false")?;
                visitor.visit_bool(false)
            }
            _ => Err(Bail),
        }
    }

    integers!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64);

    // Floats are read by serde_json (the loader reads none typed).
    bail_numbers!(deserialize_i128 deserialize_u128 deserialize_f32 deserialize_f64);

    fn deserialize_char<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'"') => self.visit_string(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'n') => {
                self.ident(b"null")?;
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'n') => {
                self.ident(b"null")?;
                visitor.visit_unit()
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> R<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> R<V::Value> {
        if name == RAW_TOKEN {
            return self.raw(visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'[') => self.seq(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> R<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _name: &'static str, _len: usize, visitor: V) -> R<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.ws() {
            Some(b'{') => self.map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> R<V::Value> {
        match self.ws() {
            Some(b'[') => self.seq(visitor),
            Some(b'{') => self.map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _n: &'static str, _vs: &'static [&'static str], _v: V) -> R<V::Value> {
        Err(Bail)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        self.skip()?;
        visitor.visit_unit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_special_matches_the_scalar_scan() {
        let text: Vec<u8> = (0u8..=255)
            .chain(b"abcdefghijklmnopqrstuvwxyz0123456789".iter().copied())
            .collect();
        for i in 0..text.len() {
            for end in i..text.len().min(i + 40) {
                let s = &text[i..end];
                assert_eq!(find_special(s, 0), find_special_scalar(s, 0));
            }
        }
    }

    #[test]
    fn number_text_writes_the_exponent_as_serde_json_does() {
        assert_eq!(number_text("1E5"), "1e+5");
        assert_eq!(number_text("-1.5e-3"), "-1.5e-3");
        assert_eq!(number_text("2.50"), "2.50");
        assert_eq!(number_text("1e+7"), "1e+7");
    }

    fn value(text: &str) -> R<serde_json::Value> {
        let mut de = Fast::new(text);
        let v = <serde_json::Value as de::Deserialize>::deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    }

    #[test]
    fn values_read_as_serde_json_reads_them() {
        let texts = [
            r#"{"a": [1, -2, 3.50, 1E5, -0, 18446744073709551615, 18446744073709551616, -9223372036854775808]}"#,
            r#"["\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t", "plain", "é", {"$serde_json::private::Number": "12"}]"#,
            r#"{"x": {"y": [true, false, null, {}, []]}, "x": 2}"#,
            "  -9223372036854775809 ",
            "0.0e0",
        ];
        for t in texts {
            let reference: serde_json::Value = serde_json::from_str(t).expect("valid");
            let fast = value(t).expect("accepted");
            assert_eq!(fast, reference, "{t}");
            assert_eq!(
                serde_json::to_string(&fast).ok(),
                serde_json::to_string(&reference).ok(),
                "{t}"
            );
        }
    }

    #[test]
    fn texts_serde_json_rejects_are_rejected() {
        let texts = [
            "[1,]",
            "{\"a\":1,}",
            "01",
            "-",
            "1.",
            "1e",
            "[1] x",
            "\"a\u{1}b\"",
            r#""\x""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\u12""#,
            "{1: 2}",
            "[1 2]",
            "nul",
            "",
            "\"open",
            &format!("{}{}", "[".repeat(128), "]".repeat(128)),
        ];
        for t in texts {
            assert!(value(t).is_err(), "{t:?} accepted");
        }
        let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
        assert_eq!(value(&deep).ok(), serde_json::from_str(&deep).ok());
    }

    #[test]
    fn raw_values_are_the_text_of_one_value() {
        let text = r#"[ {"a": [1, "x\"y"]} , 2 ]"#;
        let mut de = Fast::new(text);
        let raws = <Vec<&serde_json::value::RawValue> as de::Deserialize>::deserialize(&mut de).expect("raw");
        let reference: Vec<&serde_json::value::RawValue> = serde_json::from_str(text).expect("valid");
        let got: Vec<&str> = raws.iter().map(|r| r.get()).collect();
        let want: Vec<&str> = reference.iter().map(|r| r.get()).collect();
        assert_eq!(got, want);
        let boxed = <Box<serde_json::value::RawValue> as de::Deserialize>::deserialize(&mut Fast::new(" 3 "));
        assert_eq!(boxed.map(|b| b.get().to_string()), Ok("3".to_string()));
    }

    #[test]
    fn integers_go_where_serde_json_sends_them() {
        let read = |t: &str| <i64 as de::Deserialize>::deserialize(&mut Fast::new(t));
        assert_eq!(read("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(read("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(read("-0"), Err(Bail));
        assert_eq!(read("1.0"), Err(Bail));
        let u = |t: &str| <u64 as de::Deserialize>::deserialize(&mut Fast::new(t));
        assert_eq!(u("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(u("18446744073709551616"), Err(Bail));
    }
}
