//! Memory location sets and memory locations.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::seed::{extra, keep, val, visit, BoolK, DeResult, KeySeed, Kind, SeqK, SharedStrK, ValueK, Visit, I64K};
use super::{compact, Seg, State};
use crate::bir::dtype::dtype_size;
use crate::bir::memory::{Memory, MemoryLocation, MemoryLocationSet, RemoteLocalTarget, MEMORY_TYPES};
use crate::bir::schema::{key, Spelling};

pub(super) struct SetK;

impl Kind for SetK {
    type Out = MemoryLocationSet;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Self::Out, D::Error> {
        d.deserialize_map(visit::<SetK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, SetK> {
    type Value = MemoryLocationSet;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memory location set object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Self::Value, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut kind, mut dtype, mut shape, mut pd, mut space) = (None, None, None, None, None, None);
        let mut locations = Vec::new();
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(set name) => name = Some(val::<SharedStrK, _>(st, &mut map, key!(set name))?),
                key!(set kind) => kind = Some(val::<SharedStrK, _>(st, &mut map, key!(set kind))?),
                key!(set dtype) => {
                    let d = val::<SharedStrK, _>(st, &mut map, key!(set dtype))?;
                    if dtype_size(&d).is_none() {
                        return Err(st.bir_at(key!(set dtype), format!("Unknown dtype \"{d}\"")));
                    }
                    dtype = Some(d);
                }
                key!(set tensor_shape) => {
                    let s = val::<SeqK<I64K>, _>(st, &mut map, key!(set tensor_shape))?;
                    if let Some(i) = s.iter().position(|d| *d < 0) {
                        st.unwind.push(Seg::Index(i));
                        return Err(st.bir_at(key!(set tensor_shape), format!("tensor dimension {} must be ≥ 0", s[i])));
                    }
                    shape = Some(s);
                }
                key!(set partition_dim) => pd = Some(val::<I64K, _>(st, &mut map, key!(set partition_dim))?),
                key!(set addr_space) => {
                    let a = val::<SharedStrK, _>(st, &mut map, key!(set addr_space))?;
                    if !matches!(&*a, "Local" | "Shared" | "Debug") {
                        return Err(st.bir_at(
                            key!(set addr_space),
                            format!("Unknown addr_space \"{a}\" (Local, Shared or Debug)"),
                        ));
                    }
                    space = Some(a);
                }
                key!(set locations) => {
                    st.spell_set(Spelling::Lncsplit, key!(set locations))?;
                    locations = val::<SeqK<LocK>, _>(st, &mut map, key!(set locations))?
                }
                key!(compiler set locations) => {
                    st.spell_set(Spelling::Compiler, key!(compiler set locations))?;
                    locations = val::<SeqK<LocK>, _>(st, &mut map, key!(compiler set locations))?
                }
                key!(compiler set skind) => {
                    let v = val::<ValueK, _>(st, &mut map, key!(compiler set skind))?;
                    // The compiler's kind marker: implied by what the object is
                    // (written again in its spelling); any other value is kept.
                    if v.as_str() != Some(key!(compiler skind set)) {
                        rest.insert(k.as_str().to_string(), v);
                    }
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(dtype) = dtype else {
            return Err(st.bir("a memory location set is missing required key \"dtype\""));
        };
        let name = match name {
            Some(n) => n,
            None => {
                st.lenient(key!(set name), "a memory location set")?;
                st.no_name.clone()
            }
        };
        let given_shape = shape.is_some();
        let tensor_shape = match shape {
            Some(s) => s,
            None => shape_from_dims(st, &dtype, pd, &locations)?,
        };
        if let Some(p) = pd {
            if p < 0 || (p as usize >= tensor_shape.len() && !tensor_shape.is_empty()) {
                return Err(st.bir_at(
                    key!(set partition_dim),
                    format!("partition_dim {p} is outside the tensor rank"),
                ));
            }
        }
        let mut set = MemoryLocationSet {
            name,
            kind,
            dtype,
            tensor_shape,
            partition_dim: pd,
            addr_space: space,
            locations,
            extra: extra(rest),
        };
        // Known here: the set's own locations key decided (no locations,
        // nothing to drop).
        let keep_first = !given_shape || st.spelling() == Spelling::Lncsplit;
        implied_dims_dropped(&mut set, keep_first);
        st.set_index += 1;
        st.leave();
        Ok(set)
    }
}

/// The `tensor_shape` of a set that has none (the compiler's spelling may
/// leave it out, contract §1.7): its first location's `dims` read as
/// `[partitions, bytes per partition ÷ element size]`.
fn shape_from_dims<E: serde::de::Error>(
    st: &mut State,
    dtype: &std::sync::Arc<str>,
    pd: Option<i64>,
    locations: &[MemoryLocation],
) -> DeResult<Vec<i64>, E> {
    let probe = MemoryLocationSet {
        name: st.no_name.clone(),
        kind: None,
        dtype: dtype.clone(),
        tensor_shape: Vec::new(),
        partition_dim: pd,
        addr_space: None,
        locations: Vec::new(),
        extra: None,
    };
    let dims = locations.first().and_then(|l| l.dims.as_deref());
    match dims.and_then(|d| probe.shape_from_dims(d)) {
        Some(s) => {
            st.lenient(key!(set tensor_shape), "a memory location set")?;
            Ok(s)
        }
        None if dims.is_some() => Err(st.bir(format!(
            "a memory location set is missing required key \"tensor_shape\", and its first location's \"dims\" {:?} \
             is not [partitions, bytes per partition] of whole {dtype} elements",
            dims.unwrap_or_default(),
        ))),
        None => Err(st.bir("a memory location set is missing required key \"tensor_shape\"")),
    }
}

/// A location's `dims` equal to what its set's shape implies are not kept
/// (the compiler's spelling writes them again from the shape, lncsplit's
/// leaves them out) — except the first location's when they carry meaning:
/// in lncsplit's spelling (so that the compiler's spelling can leave out a
/// shape they give) and in a compiler-spelled set that had no
/// `tensor_shape` (its shape came from them). With the writers' rules
/// (`dump/memory.rs`) one load makes either spelling byte-stable, and
/// converting between the spellings and back gives the same bytes.
fn implied_dims_dropped(set: &mut MemoryLocationSet, keep_first: bool) {
    let Some(implied) = set.implied_dims() else {
        return;
    };
    let skip = usize::from(keep_first);
    for l in set.locations.iter_mut().skip(skip) {
        if l.dims.as_deref() == Some(&implied[..]) {
            l.dims = None;
        }
    }
}

pub(super) struct LocK;

impl Kind for LocK {
    type Out = MemoryLocation;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Self::Out, D::Error> {
        d.deserialize_map(visit::<LocK>(st))
    }
}

/// `"remote_local_target"`: exactly `{"name": str, "core": int ≥ 0}`.
fn remote_local_target<E: serde::de::Error>(st: &mut State, t: Value) -> DeResult<RemoteLocalTarget, E> {
    let name = t.get(key!(remote name)).and_then(Value::as_str);
    let core = t.get(key!(remote core)).and_then(Value::as_i64);
    match (name, core) {
        (Some(n), Some(c)) if c >= 0 && t.as_object().is_some_and(|o| o.len() == 2) => Ok(RemoteLocalTarget {
            name: st.strings.share_str(n),
            core: c,
        }),
        _ => Err(st.bir_at(
            "remote_local_target",
            format!(
                "\"remote_local_target\" must be {{\"name\": string, \"core\": int ≥ 0}}, got {}",
                compact(&t)
            ),
        )),
    }
}

/// A `dims` value as sizes: a non-empty array of integers ≥ 0.
fn sizes(v: &Value) -> Option<Vec<i64>> {
    let a = v.as_array().filter(|a| !a.is_empty())?;
    a.iter().map(|x| x.as_i64().filter(|n| *n >= 0)).collect()
}

impl<'de> Visitor<'de> for Visit<'_, LocK> {
    type Value = MemoryLocation;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memory location object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Self::Value, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut loc = MemoryLocation::unplaced("", "");
        let (mut has_name, mut has_type) = (false, false);
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(location name) => {
                    loc.name = val::<SharedStrK, _>(st, &mut map, key!(location name))?;
                    has_name = true;
                }
                key!(location type) => {
                    let t = val::<SharedStrK, _>(st, &mut map, key!(location type))?;
                    if Memory::of(&t).is_none() {
                        return Err(st.bir_at(
                            key!(location type),
                            format!("Unknown memory type \"{t}\" ({MEMORY_TYPES})"),
                        ));
                    }
                    loc.mem_type = t;
                    has_type = true;
                }
                key!(location addr) => loc.addr = Some(val::<I64K, _>(st, &mut map, key!(location addr))?),
                key!(location bank) => loc.bank = Some(val::<I64K, _>(st, &mut map, key!(location bank))?),
                key!(location base) => loc.base = Some(val::<I64K, _>(st, &mut map, key!(location base))?),
                key!(location allocated) => {
                    loc.allocated = Some(val::<BoolK, _>(st, &mut map, key!(location allocated))?)
                }
                key!(location is_shared_post_dram_alloc) => {
                    loc.is_shared_post_dram_alloc =
                        Some(val::<BoolK, _>(st, &mut map, key!(location is_shared_post_dram_alloc))?)
                }
                key!(location written_by_another_core) => {
                    loc.written_by_another_core =
                        Some(val::<BoolK, _>(st, &mut map, key!(location written_by_another_core))?)
                }
                key!(location remote_local_target) => {
                    let t = val::<ValueK, _>(st, &mut map, key!(location remote_local_target))?;
                    loc.remote_local_target = Some(remote_local_target(st, t)?);
                }
                key!(location dims) => {
                    // Kept as read, never an error (contract §1.7): a value
                    // that is not a list of sizes stays an unknown key.
                    let v = val::<ValueK, _>(st, &mut map, key!(location dims))?;
                    match sizes(&v) {
                        Some(d) => loc.dims = Some(d),
                        None => {
                            rest.insert(k.as_str().to_string(), v);
                        }
                    }
                }
                key!(compiler location skind) => {
                    let v = val::<ValueK, _>(st, &mut map, key!(compiler location skind))?;
                    if v.as_str() != Some(key!(compiler skind location)) {
                        rest.insert(k.as_str().to_string(), v);
                    }
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        if !has_name {
            return Err(st.bir("a memory location is missing required key \"name\""));
        }
        if !has_type {
            return Err(st.bir("a memory location is missing required key \"type\""));
        }
        loc.extra = extra(rest);
        st.leave();
        Ok(loc)
    }
}
