//! Memory location sets and memory locations.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::seed::{extra, keep, val, visit, BoolK, DeResult, KeySeed, Kind, SeqK, SharedStrK, ValueK, Visit, I64K};
use super::{compact, Seg, State};
use crate::bir::dtype::dtype_size;
use crate::bir::memory::{MemoryLocation, MemoryLocationSet, RemoteLocalTarget};
use crate::bir::schema::key;

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
                key!(set locations) => locations = val::<SeqK<LocK>, _>(st, &mut map, key!(set locations))?,
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a memory location set is missing required key \"name\""));
        };
        let Some(dtype) = dtype else {
            return Err(st.bir("a memory location set is missing required key \"dtype\""));
        };
        let Some(tensor_shape) = shape else {
            return Err(st.bir("a memory location set is missing required key \"tensor_shape\""));
        };
        if let Some(p) = pd {
            if p < 0 || (p as usize >= tensor_shape.len() && !tensor_shape.is_empty()) {
                return Err(st.bir_at(
                    key!(set partition_dim),
                    format!("partition_dim {p} is outside the tensor rank"),
                ));
            }
        }
        st.leave();
        Ok(MemoryLocationSet {
            name,
            kind,
            dtype,
            tensor_shape,
            partition_dim: pd,
            addr_space: space,
            locations,
            extra: extra(rest),
        })
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
                    if !matches!(&*t, "DRAM" | "SB" | "PSUM") {
                        return Err(st.bir_at(
                            key!(location type),
                            format!("Unknown memory type \"{t}\" (DRAM, SB or PSUM)"),
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
