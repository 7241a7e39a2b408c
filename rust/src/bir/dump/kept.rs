//! The bytes of shared JSON values, written once per writer.
//!
//! The loader shares equal kept values between the objects of a module
//! (`bir/load/shared.rs`, and an instruction's unknown keys by content): a few
//! dozen `{"accumulation_flag":…,"perf_mode":…}` maps, dependency kinds and
//! `access_shape`s stand for thousands of uses. A shared value is one
//! allocation, so its address names it while the module is borrowed for
//! writing (nothing is freed or changed under a writer): the first use is
//! written and its bytes kept by address, every later one is a copy. A
//! direct-mapped table of recent addresses keeps the lookup a load and a
//! compare; an address that lost its slot is simply written again.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::out::Out;
use crate::bir::seen::SeenAddrs;

/// Slots of the table (a power of two).
const SLOTS: usize = 512;
/// Largest value (in bytes) kept.
const MAX_VALUE_BYTES: usize = 1024;
/// Largest total size of the kept bytes.
const MAX_BYTES: usize = 4 << 20;

/// One slot: the address written there and where its bytes are (`len` 0:
/// empty).
#[derive(Clone, Copy, Default)]
struct Slot {
    addr: usize,
    off: u32,
    len: u32,
}

pub struct Kept {
    slots: Vec<Slot>,
    bytes: Vec<u8>,
    /// Addresses of shared strings (dtypes, `memsetref`s, engines: a few
    /// distinct ones on every argument) already scanned and found to need
    /// no escaping.
    clean: SeenAddrs,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            slots: vec![Slot::default(); SLOTS],
            bytes: Vec::new(),
            clean: SeenAddrs::default(),
        }
    }
}

impl Kept {
    /// Write the value at `addr` with `write`, or copy its kept bytes.
    #[inline]
    fn write(&mut self, o: &mut Out, addr: usize, write: impl FnOnce(&mut Out)) {
        let slot = (addr >> 4 ^ addr >> 13) & (SLOTS - 1);
        let s = self.slots[slot];
        if s.addr == addr && s.len != 0 {
            let off = s.off as usize;
            o.raw(&self.bytes[off..off + s.len as usize]);
            return;
        }
        let start = o.buf.len();
        write(o);
        let n = o.buf.len() - start;
        if n == 0 || n > MAX_VALUE_BYTES || self.bytes.len() + n > MAX_BYTES {
            return;
        }
        let off = self.bytes.len() as u32;
        self.bytes.extend_from_slice(&o.buf[start..]);
        self.slots[slot] = Slot {
            addr,
            off,
            len: n as u32,
        };
    }

    /// An object's unknown keys, each as `,"key":value`.
    pub fn extras(&mut self, o: &mut Out, extra: &Option<Arc<Map<String, Value>>>) {
        if let Some(e) = extra {
            self.write(o, Arc::as_ptr(e) as usize, |o| {
                for (k, v) in e.iter() {
                    o.key(k);
                    o.value(v);
                }
            });
        }
    }

    /// A shared JSON value.
    pub fn value(&mut self, o: &mut Out, v: &Arc<Value>) {
        self.write(o, Arc::as_ptr(v) as usize, |o| o.value(v));
    }

    /// A shared string (one allocation the loader gives every use of the
    /// same dtype, `memsetref`, engine): scanned for escapes the first time
    /// its address is seen, written unscanned after (the scan was a tenth of
    /// the writer's instructions). The same bytes as [`Out::str`].
    #[inline]
    pub fn str(&mut self, o: &mut Out, s: &Arc<str>) {
        let addr = Arc::as_ptr(s) as *const u8 as usize;
        if self.clean.contains(addr) {
            o.name(s);
            return;
        }
        if super::out::has_escape(s.as_bytes()) {
            o.str(s);
        } else {
            self.clean.insert(addr);
            o.name(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bir::{dump_module, load_module};

    /// Shared unknown-key maps, dependency kinds and access shapes, more
    /// distinct ones than the table has slots (so slots are taken over) and
    /// each used many times, are written as the reference writer writes them.
    #[test]
    fn shared_values_are_written_as_the_reference_writer_does() {
        let mut insts = Vec::new();
        for i in 0..1500 {
            let k = i % 700;
            insts.push(format!(
                r#"{{"name":"i{i}","opcode":"NoOp","engine":"{}","ins":[{{"kind":"symbolic_ap","ap":[[1,2]],"dtype":"{}","memsetref":"t","addrs":[],"access_shape":[{k},{}]}},{{"kind":"physical_ap","ap":[[1,2]],"dtype":"{}","memsetref":"t"}}],"dependencies":[["i0",{{"w":{k}}}],["i1","Flow"]],"perf_mode":"m{k}","x":[{k},"\u0001"]}}"#,
                ["Act", "Pool\\u0009", "DVE"][k % 3],
                [r#"f\"32"#, "bf16", "int8"][k % 3],
                k % 3,
                ["bf16", r#"f\"32"#][k % 2],
            ));
        }
        let text = format!(
            r#"{{"version":2,"name":"m","arch":"gen3","functions":[{{"name":"main","allocations":[{{"name":"t","dtype":"float32","tensor_shape":[2],"locations":[]}}],"basic_blocks":[{{"name":"b","instructions":[{}]}}]}}]}}"#,
            insts.join(",")
        );
        let m = load_module(text.as_bytes()).unwrap();
        assert_eq!(
            dump_module(&m, 2).unwrap(),
            super::super::reference::dump_module(&m, 2).unwrap()
        );
    }
}
