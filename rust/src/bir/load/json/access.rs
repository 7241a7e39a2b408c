//! The serde side of the fast reader: sequence and map access, object
//! keys, serde_json's one-entry maps of private tokens, and the
//! `Deserializer` methods (each accepts what serde_json's accepts and
//! hands the visitor what serde_json's would, or gives up).

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Bail, Fast, AP_PAIRS, R, RAW_TOKEN, UNCHECKED_RAW};

/// Receives an [`UNCHECKED_RAW`] value's text (from a reader that does not
/// know the token: the checked raw value's).
pub(crate) struct RawText;

impl<'de> Visitor<'de> for RawText {
    type Value = &'de str;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a raw JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<&'de str, E> {
        Ok(s)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<&'de str, D::Error> {
        <&serde_json::value::RawValue as de::Deserialize>::deserialize(d).map(serde_json::value::RawValue::get)
    }
}

/// One text handed over by a one-entry map.
pub(super) enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

/// serde_json's one-entry maps of private tokens (raw values, numbers).
pub(super) struct OneEntry<'de> {
    pub(super) key: &'static str,
    pub(super) value: Option<Text<'de>>,
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

/// The items of an array ([`SeqAccess`]) or the entries of an object
/// ([`MapAccess`]) being read.
pub(super) struct Items<'a, 'de> {
    pub(super) de: &'a mut Fast<'de>,
    /// No item read yet (the next needs no comma before it).
    pub(super) first: bool,
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = Bail;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> R<Option<T::Value>> {
        if !self.de.next_item(b']', &mut self.first)? {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

impl<'de> MapAccess<'de> for Items<'_, 'de> {
    type Error = Bail;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        if !self.de.next_item(b'}', &mut self.first)? {
            return Ok(None);
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

/// Reads a reader leaves to serde_json (the loader never asks for them, or
/// they are rare enough to read the slow way).
macro_rules! bail {
    () => {
        bail!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
            deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
            deserialize_f32 deserialize_f64 deserialize_bool deserialize_bytes deserialize_byte_buf);
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

    fn deserialize_enum<V: Visitor<'de>>(self, _n: &'static str, _vs: &'static [&'static str], _v: V) -> R<V::Value> {
        Err(Bail)
    }

    bail!();

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

    // Floats are read by serde_json (the loader reads none typed), and so
    // are bytes and chars (it asks for none).
    bail!(deserialize_i128 deserialize_u128 deserialize_f32 deserialize_f64
        deserialize_char deserialize_bytes deserialize_byte_buf);

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
        if name == UNCHECKED_RAW {
            return self.raw_unchecked(visitor);
        }
        if name == AP_PAIRS {
            return self.ap_pairs(visitor);
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
