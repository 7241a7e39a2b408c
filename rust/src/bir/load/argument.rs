//! Instruction arguments (contract §1.5): the four modelled kinds are typed,
//! the other four kept as JSON.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::expr::ExprK;
use super::json;
use super::seed::{inline_seq, val, visit, DeResult, KeySeed, Kind, Seed, SharedStrK, Src, ValueK, Visit, I64K};
use super::{Seg, State};
use crate::bir::argument::{Addrs, Ap, Argument, PhysicalAp, SymbolicAp};
use crate::bir::schema::key;
use crate::pelican::ExprId;

pub(super) struct ArgK;

impl Kind for ArgK {
    type Out = Argument;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Argument, D::Error> {
        d.deserialize_map(visit::<ArgK>(st))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    Symbolic,
    SymbolicPwap,
    Physical,
    Imm,
    Other,
}

impl ArgKind {
    fn from_name(s: &str) -> Option<ArgKind> {
        Some(match s {
            key!(arg_kind symbolic_ap) => ArgKind::Symbolic,
            key!(arg_kind symbolic_pwap) => ArgKind::SymbolicPwap,
            key!(arg_kind physical_ap) => ArgKind::Physical,
            key!(arg_kind imm_value) => ArgKind::Imm,
            key!(arg_kind register_ap)
            | key!(arg_kind symbolic_imm_value)
            | key!(arg_kind imm_array)
            | key!(arg_kind register_access) => ArgKind::Other,
            _ => return None,
        })
    }

    fn symbolic(self) -> bool {
        matches!(self, ArgKind::Symbolic | ArgKind::SymbolicPwap)
    }
}

#[derive(Default)]
struct ArgAcc {
    ap: Option<Ap>,
    dtype: Option<Arc<str>>,
    memsetref: Option<Arc<str>>,
    memref: Option<Arc<str>>,
    offset: Option<i64>,
    addrs: Addrs,
    tile_addrs: Option<ExprId>,
    block_addrs: Option<ExprId>,
    access_shape: Option<Value>,
    value: Option<Value>,
    rest: Map<String, Value>,
}

fn arg_key<'de, A: MapAccess<'de>>(
    st: &mut State,
    kind: ArgKind,
    acc: &mut ArgAcc,
    key: &str,
    mut src: Src<'_, '_, A>,
) -> DeResult<(), A::Error> {
    let sym = kind.symbolic();
    let phys = kind == ArgKind::Physical;
    match key {
        key!(arg ap) if sym || phys => acc.ap = Some(src.read::<ApK>(st, key!(arg ap))?),
        key!(arg dtype) if kind != ArgKind::Other => acc.dtype = Some(src.read::<SharedStrK>(st, key!(arg dtype))?),
        key!(arg memsetref) if sym || phys => acc.memsetref = Some(src.read::<SharedStrK>(st, key!(arg memsetref))?),
        key!(arg addrs) if sym => acc.addrs = src.read::<AddrsK>(st, key!(arg addrs))?,
        key!(arg tile_addrs) if sym => acc.tile_addrs = Some(src.read::<ExprK>(st, key!(arg tile_addrs))?),
        key!(arg block_addrs) if sym => acc.block_addrs = Some(src.read::<ExprK>(st, key!(arg block_addrs))?),
        key!(arg access_shape) if sym => acc.access_shape = Some(src.read::<ValueK>(st, key!(arg access_shape))?),
        key!(arg memref) if phys => acc.memref = Some(src.read::<SharedStrK>(st, key!(arg memref))?),
        key!(arg offset) if phys => acc.offset = Some(src.read::<I64K>(st, key!(arg offset))?),
        key!(arg value) if kind == ArgKind::Imm => acc.value = Some(src.read::<ValueK>(st, key!(arg value))?),
        _ => {
            let v = src.read_owned::<ValueK>(st, key)?;
            acc.rest.insert(key.to_string(), v);
        }
    }
    Ok(())
}

fn build<E: de::Error>(st: &mut State, kind: ArgKind, kind_s: Arc<str>, acc: ArgAcc) -> DeResult<Argument, E> {
    Ok(match kind {
        ArgKind::Symbolic | ArgKind::SymbolicPwap => {
            let Some(ap) = acc.ap else {
                return Err(st.bir(format!("a {kind_s} argument is missing required key \"ap\"")));
            };
            Argument::Symbolic(SymbolicAp {
                pwap: kind == ArgKind::SymbolicPwap,
                ap,
                dtype: acc.dtype,
                memsetref: acc.memsetref,
                addrs: acc.addrs,
                tile_addrs: acc.tile_addrs,
                block_addrs: acc.block_addrs,
                access_shape: acc.access_shape.map(|v| st.values.share(v)),
                extra: st.extras.share_map(acc.rest),
            })
        }
        ArgKind::Physical => {
            let Some(ap) = acc.ap else {
                return Err(st.bir("a physical_ap argument is missing required key \"ap\""));
            };
            Argument::Physical(PhysicalAp {
                ap,
                offset: acc.offset,
                dtype: acc.dtype,
                memref: acc.memref,
                memsetref: acc.memsetref,
                extra: st.extras.share_map(acc.rest),
            })
        }
        ArgKind::Imm => {
            let Some(value) = acc.value else {
                return Err(st.bir("an imm_value argument is missing required key \"value\""));
            };
            Argument::Imm {
                dtype: acc.dtype,
                value,
                extra: st.extras.share_map(acc.rest),
            }
        }
        ArgKind::Other => Argument::Other {
            kind: kind_s,
            fields: Arc::new(acc.rest),
        },
    })
}

impl<'de> Visitor<'de> for Visit<'_, ArgK> {
    type Value = Argument;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an argument object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Argument, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut kind_s: Option<Arc<str>> = None;
        let mut kind = ArgKind::Other;
        let mut acc = ArgAcc::default();
        let mut pending: Vec<(String, Box<RawValue>)> = Vec::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            if k.as_str() == key!(arg kind) && kind_s.is_none() {
                let s = val::<SharedStrK, _>(st, &mut map, key!(arg kind))?;
                kind = match ArgKind::from_name(&s) {
                    Some(k) => k,
                    None => return Err(st.bir_at(key!(arg kind), format!("Unsupported argument kind \"{s}\""))),
                };
                if kind == ArgKind::Other {
                    acc.rest.insert(key!(arg kind).into(), Value::String(s.to_string()));
                }
                kind_s = Some(s);
                for (key, raw) in std::mem::take(&mut pending) {
                    arg_key(st, kind, &mut acc, &key, Src::<A>::Raw(&raw))?;
                }
            } else if kind_s.is_some() {
                arg_key(st, kind, &mut acc, k.as_str(), Src::Map(&mut map))?;
            } else {
                match map.next_value::<Box<RawValue>>() {
                    Ok(raw) => pending.push((k.as_str().to_string(), raw)),
                    Err(e) => {
                        st.unwind.push(Seg::Owned(k.as_str().into()));
                        return Err(e);
                    }
                }
            }
        }
        let Some(kind_s) = kind_s else {
            return Err(st.bir("an argument is missing required key \"kind\""));
        };
        let out = build(st, kind, kind_s, acc)?;
        st.leave();
        Ok(out)
    }
}

/// An argument array (`ins`, `outs`, `indirection_ins`). Arguments are big
/// (up to 160 bytes): collected on the loader's scratch stack of arguments
/// (reused across instructions) and moved once into a vector of exactly
/// their number, where an inline array of four would be moved whole on
/// every return (`SeqK`'s way: ~10 % of a corpus load's instructions were
/// `memcpy`, most of it these moves).
pub(super) struct ArgsK;

impl Kind for ArgsK {
    type Out = Vec<Argument>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Vec<Argument>, D::Error> {
        d.deserialize_seq(visit::<ArgsK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, ArgsK> {
    type Value = Vec<Argument>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> DeResult<Vec<Argument>, A::Error> {
        let st = self.0;
        st.enter()?;
        let start = st.arg_scratch.len();
        loop {
            match seq.next_element_seed(Seed::<ArgK>::new(st)) {
                Ok(Some(x)) => st.arg_scratch.push(x),
                Ok(None) => break,
                Err(e) => {
                    let i = st.arg_scratch.len() - start;
                    st.arg_scratch.truncate(start);
                    st.unwind.push(Seg::Index(i));
                    return Err(e);
                }
            }
        }
        let mut out = Vec::with_capacity(st.arg_scratch.len() - start);
        out.extend(st.arg_scratch.drain(start..));
        st.leave();
        Ok(out)
    }
}

/// `addrs`: one expression per `ap` dim.
struct AddrsK;

impl Kind for AddrsK {
    type Out = Addrs;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Addrs, D::Error> {
        d.deserialize_seq(visit::<AddrsK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, AddrsK> {
    type Value = Addrs;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> DeResult<Addrs, A::Error> {
        inline_seq::<ExprK, A, 4>(self.0, seq)
    }
}

/// `[[step, num], …]`.
struct ApK;

impl Kind for ApK {
    type Out = Ap;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Ap, D::Error> {
        // The fast reader reads a plain `ap` straight into integers
        // (`json::AP_PAIRS`); serde_json, and the fast reader on any other
        // form, come back through `visit_newtype_struct` to the array read.
        d.deserialize_newtype_struct(json::AP_PAIRS, visit::<ApK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, ApK> {
    type Value = Ap;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of [step, num] pairs")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> DeResult<Ap, D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> DeResult<Ap, E> {
        // Pairs of little-endian i64 from the fast reader (`json::AP_PAIRS`).
        let st = self.0;
        let pairs = b.chunks_exact(16);
        if !pairs.remainder().is_empty() {
            return Err(E::custom("an ap's pairs must be 16 bytes each"));
        }
        st.enter()?;
        let int = |c: &[u8]| {
            c.try_into()
                .map(i64::from_le_bytes)
                .map_err(|_| E::custom("bad ap pair"))
        };
        let mut ap = Ap::new();
        for pair in pairs {
            ap.push([int(&pair[..8])?, int(&pair[8..])?]);
        }
        ap.shrink_to_fit();
        st.leave();
        Ok(ap)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> DeResult<Ap, A::Error> {
        inline_seq::<PairK, A, 3>(self.0, seq)
    }
}

/// One `[step, num]`.
struct PairK;

impl Kind for PairK {
    type Out = [i64; 2];
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<[i64; 2], D::Error> {
        d.deserialize_seq(visit::<PairK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, PairK> {
    type Value = [i64; 2];
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [step, num] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> DeResult<[i64; 2], A::Error> {
        let st = self.0;
        let mut got: Vec<i64> = Vec::new();
        let mut pair = [0i64; 2];
        let mut n = 0;
        loop {
            match seq.next_element_seed(Seed::<I64K>::new(st)) {
                Ok(Some(x)) => {
                    if n < 2 {
                        pair[n] = x;
                    } else {
                        got.push(x);
                    }
                    n += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    st.unwind.push(Seg::Index(n));
                    return Err(e);
                }
            }
        }
        if n == 2 {
            return Ok(pair);
        }
        let mut all: Vec<i64> = pair[..n.min(2)].to_vec();
        all.extend(got);
        Err(st.bir(format!("an ap entry must be [step, num] integers, got {all:?}")))
    }
}
