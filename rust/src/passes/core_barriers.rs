//! Core-barrier numbering (contract §3.6, renumberCoreBarriers).
//!
//! The concretized verifier (1187–1189) makes the i-th `CoreBarrier` of a
//! module the same barrier on every core, with ids dense from 0. The i-th
//! barrier is counted in *written order*: functions as the writer emits them
//! (`main` first, then the others in input order), blocks in order, Loop
//! bodies in place. Passes that insert barriers (lower_local_collectives,
//! extend_shared_lifetimes) renumber with [`renumber_core_barriers`]; the
//! linker walks each linked function's barriers with
//! [`for_each_core_barrier_in_blocks_mut`] to keep each barrier's per-core id
//! (`local_id`) before giving it a global one.

use crate::bir::{Block, Function, Instruction, Module, OpFields, Opcode};

/// The log line of every renumbering (neuronx-facts §6.3).
pub const RENUMBER_LOG: &str = "Renumbering core barriers.";

/// The op fields of a barrier over all `n` cores that a pass inserts (id 0
/// until the pass renumbers).
pub fn all_cores_op(n: usize) -> OpFields {
    OpFields::CoreBarrier {
        local_id: None,
        id: Some(0),
        cores: Some((0..n as i64).collect()),
        runtime_semaphore: None,
    }
}

/// Indices of `functions` in written order: the entry function (`main`,
/// else the first) first, then the others in their order (as `bir::dump`
/// writes them).
pub fn written_order(functions: &[Function]) -> Vec<usize> {
    crate::bir::module::entry_first(functions).collect()
}

fn visit_block_mut(b: &mut Block, f: &mut impl FnMut(&mut Instruction)) {
    for inst in &mut b.instructions {
        if inst.opcode == Opcode::CORE_BARRIER {
            f(inst);
        }
        if let OpFields::Loop { blocks, .. } = &mut inst.op {
            for nb in blocks {
                visit_block_mut(nb, f);
            }
        }
    }
}

/// Call `f` on every `CoreBarrier` of `blocks` in program order (loop bodies
/// in place).
pub fn for_each_core_barrier_in_blocks_mut(blocks: &mut [Block], f: &mut impl FnMut(&mut Instruction)) {
    for b in blocks {
        visit_block_mut(b, f);
    }
}

/// Call `f` on every `CoreBarrier` of `functions` in written order.
pub fn for_each_core_barrier_mut(functions: &mut [Function], mut f: impl FnMut(&mut Instruction)) {
    for i in written_order(functions) {
        for b in &mut functions[i].basic_blocks {
            visit_block_mut(b, &mut f);
        }
    }
}

/// Every `CoreBarrier` of `functions` in written order (read-only).
pub fn core_barriers(functions: &[Function]) -> Vec<&Instruction> {
    let mut out = Vec::new();
    for i in written_order(functions) {
        functions[i].walk(&mut |inst| {
            if inst.opcode == Opcode::CORE_BARRIER {
                out.push(inst);
            }
        });
    }
    out
}

/// Give the barriers of `functions` the ids `first, first+1, …` in written
/// order; returns the next free id. A barrier without `CoreBarrier` fields
/// (impossible after loading) is left alone.
pub fn renumber_barriers_from(functions: &mut [Function], first: i64) -> i64 {
    let mut next = first;
    for_each_core_barrier_mut(functions, |inst| {
        if let OpFields::CoreBarrier { id, .. } = &mut inst.op {
            *id = Some(next);
            next += 1;
        }
    });
    next
}

/// renumberCoreBarriers on one core module: ids dense from 0 in written
/// order. Returns the number of barriers. Run on every core of a kernel whose
/// barrier sequences match, it gives every core the same ids.
pub fn renumber_core_barriers(module: &mut Module) -> usize {
    renumber_barriers_from(&mut module.functions, 0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::load_module_str;

    fn barrier(name: &str, id: i64) -> String {
        format!(r#"{{"name": "{name}", "opcode": "CoreBarrier", "id": {id}, "cores": [0, 1]}}"#)
    }

    #[test]
    fn ids_are_dense_in_written_order_with_main_first_and_loop_bodies_in_place() {
        let src = format!(
            r#"{{"version": 2, "name": "m", "functions": [
              {{"name": "helper", "basic_blocks": [{{"name": "b", "instructions": [{}]}}]}},
              {{"name": "main", "basic_blocks": [{{"name": "b", "instructions": [
                {},
                {{"name": "l", "opcode": "Loop", "axis": {{"name": "i", "lo": 0, "ub": 2, "step": 1}},
                  "blocks": [{{"name": "body", "instructions": [{}]}}]}},
                {}]}}]}}]}}"#,
            barrier("h0", 7),
            barrier("m0", 3),
            barrier("m1", 3),
            barrier("m2", 0)
        );
        let mut m = load_module_str(&src).unwrap();
        assert_eq!(renumber_core_barriers(&mut m), 4);
        let got: Vec<(String, i64)> = core_barriers(&m.functions)
            .iter()
            .map(|i| match i.op {
                OpFields::CoreBarrier { id, .. } => (i.name.to_string(), id.unwrap()),
                _ => unreachable!(),
            })
            .collect();
        let want = [("m0", 0), ("m1", 1), ("m2", 2), ("h0", 3)];
        assert_eq!(got, want.map(|(n, i)| (n.to_string(), i)));
    }
}
