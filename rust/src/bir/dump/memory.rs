//! The writer's memory location set and location shapes (§1.3).

use super::out::Out;
use super::{extras, ints, opt};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::schema::key;

pub(super) fn set(o: &mut Out, s: &MemoryLocationSet) {
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
    extras(o, &l.extra);
    o.byte(b'}');
}
