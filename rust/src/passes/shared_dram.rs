//! The shared-DRAM passes' common case in Rust (pipeline orders 82 and 83;
//! `lncsplit.memory.shared_dram` is the one definition and holds every
//! error). Per split module, on the N cores in core order:
//!
//! - [`allocate`] (82, `coloring_allocator_dram_shared`): core 0 places each
//!   shared DRAM tensor in the Shared region (bump allocation from 0, starts
//!   aligned to 64, past the tensors it already placed); every other core
//!   points each of its shared DRAM tensors at core 0's of the same name.
//! - [`sync`] (83, `sync_shared_allocations`): every shared location with a
//!   remote target copies the target's `addr`, `bank` and `base`.
//!
//! Each first plans, without changing anything, and answers None when the
//! Python pass would do something the plan does not model (an error, a
//! number past 64 bits, a target the same pass changes); the pipeline then
//! runs the Python pass, which decides and reports. Otherwise it applies the
//! plan and returns the log records the Python pass would have written, in
//! its order. `tests/memory` checks both paths give the same modules and logs.

use std::sync::Arc;

use crate::bir::{MemoryLocation, MemoryLocationSet, Module, RemoteLocalTarget};

/// First byte of the shared region; alignment of each shared tensor's start.
pub const REGION_BASE: i128 = 0;
pub const REGION_ALIGN: i128 = 64;

/// One log record of the Python passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Log {
    /// DEBUG `Allocated shared tensor <name> on core 0 at address <addr> (<bytes> bytes)`.
    Allocated { name: Arc<str>, addr: i64, bytes: i128 },
    /// INFO `Skipping shared tensor allocations on core <core>, …` (once per core).
    Skipping { core: i64 },
    /// INFO `Assigned memloc <name> to address <addr> based on its remote local target <target>`.
    Assigned {
        name: Arc<str>,
        addr: i64,
        target: Arc<str>,
    },
}

/// `is_shared_dram`: a DRAM location whose set is Shared or that is flagged.
fn is_shared_dram(s: &MemoryLocationSet, l: &MemoryLocation) -> bool {
    &*l.mem_type == "DRAM" && (s.is_shared() || l.is_shared_post_dram_alloc == Some(true))
}

/// `tensor_bytes(s) or 0`.
fn tensor_bytes(s: &MemoryLocationSet) -> i128 {
    s.bytes_per_partition()
        .map_or(0, |bpp| s.partitions().max(0) as i128 * bpp as i128)
}

/// Python's `-(-x // a) * a`.
fn align(x: i128, a: i128) -> i128 {
    -((-x).div_euclid(a)) * a
}

/// Where a location is: (function, set, location) indices.
type At = (usize, usize, usize);

fn shared_locations(m: &Module) -> Vec<At> {
    let mut out = Vec::new();
    for (fi, f) in m.functions.iter().enumerate() {
        for (si, s) in f.allocations.iter().enumerate() {
            for (li, l) in s.locations.iter().enumerate() {
                if is_shared_dram(s, l) {
                    out.push((fi, si, li));
                }
            }
        }
    }
    out
}

fn loc(m: &Module, (fi, si, li): At) -> (&MemoryLocationSet, &MemoryLocation) {
    let s = &m.functions[fi].allocations[si];
    (s, &s.locations[li])
}

fn loc_mut(m: &mut Module, (fi, si, li): At) -> &mut MemoryLocation {
    &mut m.functions[fi].allocations[si].locations[li]
}

/// Order 82 on `cores`: `(core, module)` in increasing core order, one
/// module per core. None: run the Python pass.
pub fn allocate(cores: &mut [(i64, &mut Module)]) -> Option<Vec<Log>> {
    let mut logs = Vec::new();
    // The owner's plan: (location, address) for each unplaced shared tensor.
    let mut placed: Vec<(At, i64)> = Vec::new();
    let mut flagged: Vec<At> = Vec::new();
    if let Some((_, owner)) = cores.iter().find(|(c, _)| *c == 0) {
        let mut top = REGION_BASE;
        let mut pending = Vec::new();
        for at in shared_locations(owner) {
            let (s, l) = loc(owner, at);
            match (l.allocated, l.addr) {
                (Some(true), Some(addr)) => {
                    top = top.max(addr as i128 + tensor_bytes(s).max(1));
                    flagged.push(at);
                }
                _ => pending.push(at),
            }
        }
        top = align(top, REGION_ALIGN);
        for at in pending {
            let (s, l) = loc(owner, at);
            let bytes = tensor_bytes(s);
            let addr = i64::try_from(top).ok()?;
            logs.push(Log::Allocated {
                name: l.name.clone(),
                addr,
                bytes,
            });
            placed.push((at, addr));
            top = align(top + bytes.max(1), REGION_ALIGN);
        }
    }
    for (core, m) in cores.iter_mut() {
        if *core == 0 {
            for &at in &flagged {
                loc_mut(m, at).is_shared_post_dram_alloc = Some(true);
            }
            for &(at, addr) in &placed {
                let l = loc_mut(m, at);
                l.addr = Some(addr);
                l.allocated = Some(true);
                l.is_shared_post_dram_alloc = Some(true);
            }
            continue;
        }
        let shared = shared_locations(m);
        if !shared.is_empty() {
            logs.push(Log::Skipping { core: *core });
        }
        for at in shared {
            let l = loc_mut(m, at);
            l.is_shared_post_dram_alloc = Some(true);
            l.remote_local_target = Some(RemoteLocalTarget {
                name: l.name.clone(),
                core: 0,
            });
        }
    }
    Some(logs)
}

/// The location `name` of function `fname` on `m` (first function, then
/// first location of that name, as `_TargetIndex` finds them).
fn target<'m>(m: &'m Module, fname: &str, name: &str) -> Option<&'m MemoryLocation> {
    let f = m.functions.iter().find(|f| &*f.name == fname)?;
    f.allocations
        .iter()
        .flat_map(|s| &s.locations)
        .find(|l| &*l.name == name)
}

/// Order 83 on `cores` (as for [`allocate`]). None: run the Python pass.
pub fn sync(cores: &mut [(i64, &mut Module)]) -> Option<Vec<Log>> {
    // (core position, location, copied addr/bank/base), in the pass's order.
    let mut plan: Vec<(usize, At, [Option<i64>; 3])> = Vec::new();
    let mut logs = Vec::new();
    for (p, (core, m)) in cores.iter().enumerate() {
        for (fi, f) in m.functions.iter().enumerate() {
            for (si, s) in f.allocations.iter().enumerate() {
                for (li, l) in s.locations.iter().enumerate() {
                    if l.is_shared_post_dram_alloc != Some(true) {
                        continue;
                    }
                    let Some(rlt) = &l.remote_local_target else {
                        if *core == 0 || (l.allocated == Some(true) && l.addr.is_some()) {
                            continue;
                        }
                        return None; // no target and no allocation: the pass's error
                    };
                    let (_, tm) = cores.iter().find(|(c, _)| *c == rlt.core)?;
                    let t = target(tm, &f.name, &rlt.name)?;
                    // An unplaced target is the pass's error; one this pass
                    // changes would be read after its change: both left to it.
                    let addr = t.addr.filter(|_| t.allocated == Some(true))?;
                    if t.is_shared_post_dram_alloc == Some(true) && t.remote_local_target.is_some() {
                        return None;
                    }
                    logs.push(Log::Assigned {
                        name: l.name.clone(),
                        addr,
                        target: rlt.name.clone(),
                    });
                    plan.push((p, (fi, si, li), [Some(addr), t.bank, t.base]));
                }
            }
        }
    }
    for (p, at, [addr, bank, base]) in plan {
        let l = loc_mut(cores[p].1, at);
        l.addr = addr;
        l.bank = bank;
        l.base = base;
        l.allocated = Some(true);
    }
    Some(logs)
}
