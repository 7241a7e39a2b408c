//! The serde plumbing of the loader: a [`Kind`] is a value shape read with
//! the loader state at hand ([`Seed`] hands the state to serde, [`Visit`]
//! receives the value), plus the scalar kinds, arrays, object keys and the
//! shared-string table.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use smallvec::SmallVec;

use super::{Seg, State};
use crate::bir::Extra;

pub(super) type DeResult<T, E> = std::result::Result<T, E>;

/// A value shape read with the loader state at hand.
pub(super) trait Kind {
    type Out;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Self::Out, D::Error>;
}

/// Hands the state to serde for one value of kind `K`.
pub(super) struct Seed<'a, K>(&'a mut State, PhantomData<K>);

impl<'a, K> Seed<'a, K> {
    pub(super) fn new(st: &'a mut State) -> Self {
        Seed(st, PhantomData)
    }
}

impl<'de, K: Kind> DeserializeSeed<'de> for Seed<'_, K> {
    type Value = K::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> DeResult<K::Out, D::Error> {
        K::de(self.0, d)
    }
}

/// The visitor of kind `K`, carrying the state.
pub(super) struct Visit<'a, K>(pub(super) &'a mut State, PhantomData<K>);

pub(super) fn visit<K>(st: &mut State) -> Visit<'_, K> {
    Visit(st, PhantomData)
}

/// Read the value of the current key with `K`; an error passing through
/// gets the segment `key`.
#[inline]
pub(super) fn val<'de, K: Kind, A: MapAccess<'de>>(
    st: &mut State,
    map: &mut A,
    key: &'static str,
) -> DeResult<K::Out, A::Error> {
    let r = map.next_value_seed(Seed::<K>::new(st));
    if r.is_err() {
        st.unwind.push(Seg::Key(key));
    }
    r
}

/// An object key, borrowed from the input when it has no escapes.
pub(super) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Key<'de> {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    pub(super) fn into_cow(self) -> std::borrow::Cow<'de, str> {
        match self {
            Key::Borrowed(s) => std::borrow::Cow::Borrowed(s),
            Key::Owned(s) => std::borrow::Cow::Owned(s),
        }
    }
}

/// Reads an object key (or any string) without copying it.
pub(super) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> DeResult<Key<'de>, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> DeResult<Key<'de>, E> {
        Ok(Key::Borrowed(s))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> DeResult<Key<'de>, E> {
        Ok(Key::Owned(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> DeResult<Key<'de>, E> {
        Ok(Key::Owned(s))
    }
}

/// An instruction's unknown keys in order, as a map would keep them (a
/// repeated key keeps its place and takes the later value), without
/// building the map: most are found among the shared ones
/// (`shared.rs`'s `Extras::share_pairs`), and a map costs two allocations and a SipHash
/// per key.
#[derive(Default)]
pub(super) struct Rest(pub(super) Vec<(String, Value)>);

impl Rest {
    pub(super) fn insert(&mut self, k: String, v: Value) {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => self.0.push((k, v)),
        }
    }
}

// ------------------------------------------------------------ scalars

/// Declare a scalar kind: `name, output type, expecting text, deserialize
/// method, { visitor methods }`.
macro_rules! scalar_kind {
    ($name:ident, $out:ty, $what:literal, $method:ident, { $($body:tt)* }) => {
        pub(super) struct $name;
        impl Kind for $name {
            type Out = $out;
            #[inline]
            fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<$out, D::Error> {
                d.$method(visit::<$name>(st))
            }
        }
        impl<'de> Visitor<'de> for Visit<'_, $name> {
            type Value = $out;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str($what)
            }
            $($body)*
        }
    };
}

scalar_kind!(StrK, Arc<str>, "a string", deserialize_str, {
    fn visit_str<E: de::Error>(self, s: &str) -> DeResult<Arc<str>, E> {
        Ok(Arc::from(s))
    }
});

scalar_kind!(SharedStrK, Arc<str>, "a string", deserialize_str, {
    fn visit_str<E: de::Error>(self, s: &str) -> DeResult<Arc<str>, E> {
        Ok(self.0.strings.share_str(s))
    }
});

scalar_kind!(I64K, i64, "a 64-bit integer", deserialize_i64, {
    fn visit_i64<E: de::Error>(self, x: i64) -> DeResult<i64, E> {
        Ok(x)
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> DeResult<i64, E> {
        i64::try_from(x).map_err(|_| self.0.bir(format!("integer {x} does not fit in 64 bits (signed)")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> DeResult<i64, E> {
        Err(self.0.bir(format!("expected a 64-bit integer, got {x}")))
    }
});

scalar_kind!(U64K, u64, "an unsigned integer", deserialize_u64, {
    fn visit_u64<E: de::Error>(self, x: u64) -> DeResult<u64, E> {
        Ok(x)
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> DeResult<u64, E> {
        u64::try_from(x).map_err(|_| self.0.bir(format!("expected an unsigned integer, got {x}")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> DeResult<u64, E> {
        Err(self.0.bir(format!("expected an unsigned integer, got {x}")))
    }
});

/// Kinds whose values serde reads on its own.
macro_rules! plain_kind {
    ($name:ident, $out:ty) => {
        pub(super) struct $name;
        impl Kind for $name {
            type Out = $out;
            #[inline]
            fn de<'de, D: Deserializer<'de>>(_st: &mut State, d: D) -> DeResult<$out, D::Error> {
                <$out as de::Deserialize>::deserialize(d)
            }
        }
    };
}

plain_kind!(StringK, String);
plain_kind!(BoolK, bool);
plain_kind!(ValueK, Value);
plain_kind!(RawK, Box<RawValue>);

/// An array of `K`; an error passing through gets the segment `[i]`.
pub(super) struct SeqK<K>(PhantomData<K>);

impl<K: Kind> Kind for SeqK<K> {
    type Out = Vec<K::Out>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Self::Out, D::Error> {
        d.deserialize_seq(visit::<SeqK<K>>(st))
    }
}

impl<'de, K: Kind> Visitor<'de> for Visit<'_, SeqK<K>> {
    type Value = Vec<K::Out>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> DeResult<Self::Value, A::Error> {
        // serde_json gives no length hint: short arrays (most of them) are
        // collected on the stack and moved into a vector of exactly their
        // length, so a loaded module carries no growth slack.
        inline_seq::<K, A, 4>(self.0, seq).map(exact_vec)
    }
}

/// Read an array of `K` straight into an inline vector (`addrs`, `ap`):
/// short arrays never touch the heap, and an error passing through gets the
/// segment `[i]`.
pub(super) fn inline_seq<'de, K: Kind, A: SeqAccess<'de>, const N: usize>(
    st: &mut State,
    mut seq: A,
) -> DeResult<SmallVec<[K::Out; N]>, A::Error>
where
    [K::Out; N]: smallvec::Array<Item = K::Out>,
{
    st.enter()?;
    let mut out = SmallVec::new();
    loop {
        match seq.next_element_seed(Seed::<K>::new(st)) {
            Ok(Some(x)) => out.push(x),
            Ok(None) => break,
            Err(e) => {
                st.unwind.push(Seg::Index(out.len()));
                return Err(e);
            }
        }
    }
    out.shrink_to_fit();
    st.leave();
    Ok(out)
}

/// The items as a vector with no spare capacity.
pub(super) fn exact_vec<T, const N: usize>(items: SmallVec<[T; N]>) -> Vec<T>
where
    [T; N]: smallvec::Array<Item = T>,
{
    if items.spilled() {
        let mut v = items.into_vec();
        v.shrink_to_fit();
        v
    } else {
        let mut v = Vec::with_capacity(items.len());
        v.extend(items);
        v
    }
}

pub(super) fn extra(m: Map<String, Value>) -> Extra {
    if m.is_empty() {
        None
    } else {
        Some(Arc::new(m))
    }
}

/// Read an unknown key's value verbatim into `rest`.
pub(super) fn keep<'de, A: MapAccess<'de>>(
    st: &mut State,
    map: &mut A,
    k: Key<'de>,
    rest: &mut Map<String, Value>,
) -> DeResult<(), A::Error> {
    match map.next_value::<Value>() {
        Ok(v) => {
            rest.insert(k.as_str().to_string(), v);
            Ok(())
        }
        Err(e) => {
            st.unwind.push(Seg::Owned(k.as_str().into()));
            Err(e)
        }
    }
}

/// Where a key's value comes from: the live map or a captured raw value.
pub(super) enum Src<'a, 'm, A> {
    Map(&'m mut A),
    Raw(&'a RawValue),
}

impl<'de, A: MapAccess<'de>> Src<'_, '_, A> {
    pub(super) fn read<K: Kind>(&mut self, st: &mut State, key: &'static str) -> DeResult<K::Out, A::Error> {
        let r = match self {
            Src::Map(m) => return val::<K, A>(st, m, key),
            Src::Raw(r) => st.reparse::<K, A::Error>(r),
        };
        if r.is_err() {
            st.unwind.push(Seg::Key(key));
        }
        r
    }

    pub(super) fn read_owned<K: Kind>(&mut self, st: &mut State, key: &str) -> DeResult<K::Out, A::Error> {
        let r = match self {
            Src::Map(m) => m.next_value_seed(Seed::<K>::new(st)),
            Src::Raw(r) => st.reparse::<K, A::Error>(r),
        };
        if r.is_err() {
            st.unwind.push(Seg::Owned(key.into()));
        }
        r
    }
}
