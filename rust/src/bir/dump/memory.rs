//! The writer's memory location set and location shapes (§1.3), in either
//! spelling (§1.7).
//!
//! The compiler's spelling adds `Skind` to sets and locations and `dims` to
//! locations that lack it (the shape's `[partitions, bytes per partition]`),
//! leaves out a set name that is empty and a `tensor_shape` that its first
//! location's `dims` gives (what the loader derives when it is absent), and
//! calls the locations `memorylocations`. lncsplit's writes `dims` only where
//! the file's differed from the shape's. Together with the loader's rules
//! (`load/memory.rs`) converting and converting back gives the same bytes.

use super::out::Out;
use super::{extras, ints, opt};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::schema::{key, Spelling};

pub(super) fn set(o: &mut Out, s: &MemoryLocationSet, spelling: Spelling) {
    if spelling == Spelling::Compiler {
        return compiler_set(o, s);
    }
    o.raw(concat!("{\"", key!(set name), "\":").as_bytes());
    o.str(&s.name);
    opt!(o, (set kind), &s.kind, str);
    o.raw(concat!(",\"", key!(set dtype), "\":").as_bytes());
    o.str(&s.dtype);
    o.raw(concat!(",\"", key!(set tensor_shape), "\":").as_bytes());
    ints(o, &s.tensor_shape);
    opt!(o, (set partition_dim), s.partition_dim, int);
    opt!(o, (set addr_space), &s.addr_space, str);
    o.raw(concat!(",\"", key!(set locations), "\":[").as_bytes());
    for (i, l) in s.locations.iter().enumerate() {
        if i > 0 {
            o.byte(b',');
        }
        location(o, l);
    }
    o.byte(b']');
    extras(o, &s.extra);
    o.byte(b'}');
}

fn location(o: &mut Out, l: &MemoryLocation) {
    o.raw(concat!("{\"", key!(location name), "\":").as_bytes());
    o.str(&l.name);
    o.raw(concat!(",\"", key!(location type), "\":").as_bytes());
    o.str(&l.mem_type);
    opt!(o, (location addr), l.addr, int);
    placement_rest(o, l);
    if let Some(d) = &l.dims {
        o.raw(concat!(",\"", key!(location dims), "\":").as_bytes());
        ints(o, d);
    }
    extras(o, &l.extra);
    o.byte(b'}');
}

/// A location's keys after `addr` (and the compiler's `dims`), the same in
/// both spellings.
fn placement_rest(o: &mut Out, l: &MemoryLocation) {
    opt!(o, (location bank), l.bank, int);
    opt!(o, (location base), l.base, int);
    opt!(o, (location allocated), l.allocated, bool);
    opt!(o, (location is_shared_post_dram_alloc), l.is_shared_post_dram_alloc, bool);
    opt!(o, (location written_by_another_core), l.written_by_another_core, bool);
    if let Some(t) = &l.remote_local_target {
        o.raw(
            concat!(
                ",\"",
                key!(location remote_local_target),
                "\":{\"",
                key!(remote name),
                "\":"
            )
            .as_bytes(),
        );
        o.str(&t.name);
        o.raw(concat!(",\"", key!(remote core), "\":").as_bytes());
        o.int(t.core);
        o.byte(b'}');
    }
}

/// Whether an object's unknown keys hold `key` (a `Skind` or `dims` kept
/// as written: the compiler's spelling then adds none of its own).
fn has_extra(extra: &crate::bir::Extra, key: &str) -> bool {
    extra.as_ref().is_some_and(|x| x.contains_key(key))
}

/// Separates the keys of an object whose first key may be left out.
struct Keys(bool);

impl Keys {
    fn key(&mut self, o: &mut Out, key: &str) {
        if std::mem::replace(&mut self.0, false) {
            o.byte(b'"');
        } else {
            o.raw(b",\"");
        }
        o.raw(key.as_bytes());
        o.raw(b"\":");
    }
}

fn compiler_set(o: &mut Out, s: &MemoryLocationSet) {
    o.byte(b'{');
    let mut k = Keys(true);
    if !has_extra(&s.extra, key!(compiler set skind)) {
        k.key(o, key!(compiler set skind));
        o.str(key!(compiler skind set));
    }
    if !s.name.is_empty() {
        k.key(o, key!(set name));
        o.str(&s.name);
    }
    if let Some(kind) = &s.kind {
        k.key(o, key!(set kind));
        o.str(kind);
    }
    k.key(o, key!(set dtype));
    o.str(&s.dtype);
    let derived = s
        .locations
        .first()
        .and_then(|l| l.dims.as_deref())
        .and_then(|d| s.shape_from_dims(d));
    if derived.as_deref() != Some(&s.tensor_shape[..]) {
        k.key(o, key!(set tensor_shape));
        ints(o, &s.tensor_shape);
    }
    if let Some(pd) = s.partition_dim {
        k.key(o, key!(set partition_dim));
        o.int(pd);
    }
    if let Some(a) = &s.addr_space {
        k.key(o, key!(set addr_space));
        o.str(a);
    }
    k.key(o, key!(compiler set locations));
    o.byte(b'[');
    let implied = s.implied_dims();
    for (i, l) in s.locations.iter().enumerate() {
        if i > 0 {
            o.byte(b',');
        }
        compiler_location(o, l, implied);
    }
    o.byte(b']');
    extras(o, &s.extra);
    o.byte(b'}');
}

fn compiler_location(o: &mut Out, l: &MemoryLocation, implied: Option<[i64; 2]>) {
    o.byte(b'{');
    if !has_extra(&l.extra, key!(compiler location skind)) {
        o.raw(concat!("\"", key!(compiler location skind), "\":").as_bytes());
        o.str(key!(compiler skind location));
        o.byte(b',');
    }
    o.raw(concat!("\"", key!(location name), "\":").as_bytes());
    o.str(&l.name);
    o.raw(concat!(",\"", key!(location type), "\":").as_bytes());
    o.str(&l.mem_type);
    opt!(o, (location addr), l.addr, int);
    let dims = l.dims.as_deref().or(implied.as_ref().map(|d| &d[..]));
    if let Some(d) = dims.filter(|_| !has_extra(&l.extra, key!(location dims))) {
        o.raw(concat!(",\"", key!(location dims), "\":").as_bytes());
        ints(o, d);
    }
    placement_rest(o, l);
    extras(o, &l.extra);
    o.byte(b'}');
}
