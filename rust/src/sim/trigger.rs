//! `DMATrigger` (contract §3.8): it accesses what the descriptors of its
//! `dma_blocks` access — each `DMADescriptor*` reads its `ins` and writes its
//! `outs`, in queue order — and the simulator executes them as copies at the
//! trigger. The blocks are the module's `queues` (`bir::queues`), looked up
//! on the trigger's `queue` (on any queue when it names none, as the readers
//! of real dumps do).
//!
//! Each descriptor becomes one compiled copy [`Op`] with the trigger's writer
//! id, so the last writer of a byte a descriptor wrote is the trigger, and
//! replays, journals and the core-order check see the descriptors' spans
//! like any other instance's.
//!
//! Descriptor kinds: `DMADescriptor` and `DMADescriptorCopy` copy `ins[0]` to
//! `outs[0]` (DMACopy's rules: counts and element sizes must match, an
//! `accumulate` combines by value); `DMADescriptorReplicate` repeats the
//! source to fill the destination (DMACopy's `Replicate`).
//! `DMADescriptorTranspose` (`transpose_op`) and `DMADescriptorCCE` (an `op`
//! over `constants`) are not copies and their semantics are not public: 9401
//! naming them, rather than a copy that would be wrong. A trigger's own memory
//! `ins`/`outs` (empty in real dumps) have no meaning here: 9401.

use smallvec::SmallVec;

use super::exec::{cannot_run, check_accumulate, copy_in_mode, CoreView, Env, Op};
use crate::bir::instruction::Instruction;
use crate::bir::queues::{trigger_blocks, trigger_queue};
use crate::bir::Argument;
use crate::error::Result;
use crate::pelican::Bindings;

/// The copies a `DMATrigger` instance runs, in queue order.
pub fn compile<'m>(
    view: &CoreView<'m>,
    env: &Env<'_, 'm>,
    inst: &Instruction,
    bindings: &Bindings,
    writer: u32,
) -> Result<SmallVec<[Op; 2]>> {
    let fname = &*view.index.function.name;
    let err = |why: String| cannot_run(view.core, fname, inst, why);
    if inst.arguments().any(|a| a.memsetref().is_some()) {
        return Err(err(
            "a DMATrigger accesses memory through the descriptors of its dma_blocks only (docs/sim.md), not its own ins/outs".into(),
        ));
    }
    let queue = trigger_queue(inst)?;
    let names = trigger_blocks(inst)?.unwrap_or_default();
    let mut ops = SmallVec::new();
    if names.is_empty() {
        return Ok(ops);
    }
    let Some(queues) = view.queues.as_deref() else {
        return Err(err(format!(
            "it starts DMABlock {}, but the module has no queues",
            names[0]
        )));
    };
    for name in &names {
        let Some(block) = queues.block_on(queue, name) else {
            let on = queue.map_or(String::new(), |q| format!(" on queue {q}"));
            return Err(err(format!("no DMABlock {name}{on} in the module's queues")));
        };
        for d in &block.descriptors {
            let derr = |why: String| err(format!("descriptor {} of DMABlock {name}: {why}", d.name));
            let mode = match &*d.opcode {
                "DMADescriptor" | "DMADescriptorCopy" => "Copy",
                "DMADescriptorReplicate" => "Replicate",
                "DMADescriptorTranspose" | "DMADescriptorCCE" => {
                    return Err(derr(format!(
                        "{} is not a copy and its semantics are not modelled",
                        d.opcode
                    )));
                }
                other => return Err(derr(format!("{other} is not a DMADescriptor"))),
            };
            // Only physical addresses are read into a descriptor
            // (`bir::queues`); another kind would be a whole-location guess.
            let other = d.ins.iter().chain(&d.outs).find_map(|a| match a {
                Argument::Other { kind, fields } if a.memsetref().is_some() || fields.contains_key("memref") => {
                    Some(kind)
                }
                _ => None,
            });
            if let Some(kind) = other {
                return Err(derr(format!(
                    "its {kind} argument is not simulated (a descriptor addresses memory by physical_ap)"
                )));
            }
            let Some(d) = d.instruction() else {
                return Err(derr(format!("{} is not an instruction type", d.opcode)));
            };
            let (reads, writes) = view.arguments(env, &d, bindings, false)?;
            let acc = crate::analysis::accumulate_op(&d).map_err(|e| derr(e.to_string()))?;
            check_accumulate(env.mem, acc, &writes).map_err(derr)?;
            let kind = copy_in_mode(mode, &reads, &writes).map_err(derr)?;
            ops.push(Op {
                core: view.core,
                kind,
                acc,
                reads,
                writes,
                writer,
            });
        }
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::bir::load_module_str;
    use crate::sim::{run, SimInput, SimResult};

    /// `ap` over rows `[row, row+rows)` of a [4, 8] uint32 set, physically.
    fn phys(set: &str, row: i64, rows: i64) -> Value {
        json!({"kind": "physical_ap", "ap": [[8, rows], [1, 8]], "offset": row * 8,
               "dtype": "uint32", "memref": format!("{set}_loc"), "memsetref": set})
    }

    fn desc(name: &str, opcode: &str, src: Value, dst: Value) -> Value {
        json!({"name": name, "opcode": opcode, "engine": "DMA", "ins": [src], "outs": [dst]})
    }

    fn block(name: &str, trigger: &str, descs: Vec<Value>) -> Value {
        json!({"name": name, "opcode": "DMABlock", "engine": "DMA", "dma_trigger": trigger,
               "ins": [], "outs": [],
               "sync_info": {"on_update": [{"id": 4, "update_value": 16}]},
               "blocks": [{"name": format!("{name}_Block0"), "instructions": descs}]})
    }

    /// x (Input) → y (Output) through one `DMATrigger` on queue `q`.
    fn module(blocks: Vec<Value>, trigger: Value) -> Result<crate::bir::Module, crate::error::Error> {
        let queues = json!([{"name": "qOther", "blocks": []},
                            {"name": "q", "blocks": [{"name": "q_Block0", "instructions": blocks}]}]);
        module_with(queues, vec![trigger], "uint32")
    }

    /// x (Input) → y (Output), both [4, 8] of `dtype`, by `body` and the
    /// module's `queues` as given.
    fn module_with(queues: Value, body: Vec<Value>, dtype: &str) -> Result<crate::bir::Module, crate::error::Error> {
        let set = |name: &str, kind: &str| {
            json!({"name": name, "kind": kind, "dtype": dtype, "tensor_shape": [4, 8],
                   "locations": [{"name": format!("{name}_loc"), "type": "SB", "base": 0}]})
        };
        let m = json!({"version": 2, "name": "trig", "arch": "gen3",
            "functions": [{"name": "main", "allocations": [set("x", "Input"), set("y", "Output")],
                           "basic_blocks": [{"name": "b0", "instructions": body}]}],
            "queues": queues});
        load_module_str(&m.to_string())
    }

    fn trigger(blocks: &[&str]) -> Value {
        json!({"name": "go", "opcode": "DMATrigger", "engine": "Pool", "queue": "q",
               "dge_type": "SWDGE", "dma_blocks": blocks, "ins": [], "outs": []})
    }

    fn x() -> Vec<u8> {
        (0..32u32).flat_map(|v| (1000 + v).to_le_bytes()).collect()
    }

    fn sim(m: &crate::bir::Module) -> crate::error::Result<SimResult> {
        let input = SimInput {
            core: 0,
            function: "main".into(),
            set: "x".into(),
            bytes: x(),
        };
        run(&[m], None, &[input])
    }

    fn y(r: &SimResult) -> Vec<u32> {
        let o = r.outputs.iter().find(|o| &*o.set == "y").unwrap();
        o.bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn a_trigger_runs_its_blocks_descriptors_as_copies_in_queue_order() {
        // block a: rows 0–1 and 2–3 by two descriptors; block b: rows 3 ← 0
        // afterwards (queue order: b's copy lands last)
        let a = block(
            "a",
            "go",
            vec![
                desc("a0", "DMADescriptorCopy", phys("x", 0, 2), phys("y", 0, 2)),
                desc("a1", "DMADescriptorCopy", phys("x", 2, 2), phys("y", 2, 2)),
            ],
        );
        let b = block(
            "b",
            "go",
            vec![desc("b0", "DMADescriptor", phys("x", 0, 1), phys("y", 3, 1))],
        );
        let m = module(vec![a, b], trigger(&["a", "b"])).unwrap();
        let r = sim(&m).unwrap();
        let mut want: Vec<u32> = (1000..1032).collect();
        want.copy_within(0..8, 24);
        assert_eq!(y(&r), want);
        // not the opaque function: nothing listed, and the trigger is the writer
        assert!(r.opaque.is_empty(), "{:?}", r.opaque);
        let o = r.outputs.iter().find(|o| &*o.set == "y").unwrap();
        assert!(o
            .writers
            .iter()
            .all(|&w| w > 0 && &*r.writers[w as usize - 1].instruction == "go"));
    }

    #[test]
    fn the_blocks_run_in_dma_blocks_order() {
        // the same two blocks as above, started in the other order: b's
        // row-3 copy now lands first and a's rows 2–3 overwrite it
        let a = block(
            "a",
            "go",
            vec![desc("a0", "DMADescriptorCopy", phys("x", 0, 4), phys("y", 0, 4))],
        );
        let b = block(
            "b",
            "go",
            vec![desc("b0", "DMADescriptor", phys("x", 0, 1), phys("y", 3, 1))],
        );
        let ab = y(&sim(&module(vec![a.clone(), b.clone()], trigger(&["a", "b"])).unwrap()).unwrap());
        let ba = y(&sim(&module(vec![a, b], trigger(&["b", "a"])).unwrap()).unwrap());
        let x: Vec<u32> = (1000..1032).collect();
        assert_eq!(ba, x, "a last: y is x");
        assert_eq!(&ab[24..], &x[..8], "b last: row 3 is x's row 0");
    }

    #[test]
    fn the_descriptors_of_a_block_run_in_their_order() {
        // two descriptors write row 0: the later one (in the block's order) wins
        let overlapping = |first: i64, second: i64| {
            let d = vec![
                desc("d0", "DMADescriptorCopy", phys("x", first, 1), phys("y", 0, 1)),
                desc("d1", "DMADescriptorCopy", phys("x", second, 1), phys("y", 0, 1)),
            ];
            let r = sim(&module(vec![block("a", "go", d)], trigger(&["a"])).unwrap()).unwrap();
            y(&r)[..8].to_vec()
        };
        assert_eq!(overlapping(1, 2), (1016..1024).collect::<Vec<u32>>());
        assert_eq!(overlapping(2, 1), (1008..1016).collect::<Vec<u32>>());
    }

    /// Two queues that both hold a DMABlock `a`: on qA it copies row 1 to
    /// every row, on qB row 2.
    fn two_queues() -> Value {
        let a = |row: i64| {
            block(
                "a",
                "go",
                vec![desc("r", "DMADescriptorReplicate", phys("x", row, 1), phys("y", 0, 4))],
            )
        };
        json!([{"name": "qA", "blocks": [{"name": "qA_Block0", "instructions": [a(1)]}]},
               {"name": "qB", "blocks": [{"name": "qB_Block0", "instructions": [a(2)]}]}])
    }

    #[test]
    fn a_block_is_looked_up_on_the_triggers_queue() {
        let on = |queue: Option<&str>| {
            let mut t = trigger(&["a"]);
            match queue {
                Some(q) => t["queue"] = json!(q),
                None => {
                    t.as_object_mut().unwrap().remove("queue");
                }
            }
            let r = sim(&module_with(two_queues(), vec![t], "uint32").unwrap()).unwrap();
            y(&r)[..8].to_vec()
        };
        let row = |r: u32| (1000 + 8 * r..1008 + 8 * r).collect::<Vec<u32>>();
        assert_eq!(on(Some("qA")), row(1));
        assert_eq!(on(Some("qB")), row(2));
        // no queue named: the first block of that name in queue order
        assert_eq!(on(None), row(1));
    }

    #[test]
    fn a_float_accumulate_descriptor_adds_values() {
        // y = x, then a descriptor with `accumulate: "add"` adds x again:
        // float32 values doubled (bit patterns added would not be)
        let mut acc = desc("acc", "DMADescriptorCopy", phys("x", 0, 4), phys("y", 0, 4));
        acc["accumulate"] = json!("add");
        let mut plain = desc("first", "DMADescriptorCopy", phys("x", 0, 4), phys("y", 0, 4));
        for d in [&mut acc, &mut plain] {
            for arg in ["ins", "outs"] {
                d[arg][0]["dtype"] = json!("float32");
            }
        }
        let queues = json!([{"name": "q", "blocks": [{"name": "q_Block0",
                             "instructions": [block("a", "go", vec![plain, acc])]}]}]);
        let m = module_with(queues, vec![trigger(&["a"])], "float32").unwrap();
        let xs: Vec<f32> = (0..32).map(|v| v as f32 * 0.25 - 3.0).collect();
        let input = SimInput {
            core: 0,
            function: "main".into(),
            set: "x".into(),
            bytes: xs.iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        let r = run(&[&m], None, &[input]).unwrap();
        let got: Vec<f32> = y(&r).into_iter().map(f32::from_bits).collect();
        assert_eq!(got, xs.iter().map(|v| v * 2.0).collect::<Vec<f32>>());
    }

    #[test]
    fn a_replicate_descriptor_repeats_its_source() {
        let b = block(
            "r",
            "go",
            vec![desc("r0", "DMADescriptorReplicate", phys("x", 1, 1), phys("y", 0, 4))],
        );
        let r = sim(&module(vec![b], trigger(&["r"])).unwrap()).unwrap();
        let row: Vec<u32> = (1008..1016).collect();
        assert_eq!(y(&r), row.repeat(4));
    }

    #[test]
    fn a_trigger_without_blocks_does_nothing() {
        let r = sim(&module(vec![], trigger(&[])).unwrap()).unwrap();
        assert!(y(&r).iter().all(|&v| v == 0));
    }

    fn refusal(blocks: Vec<Value>, t: Value) -> String {
        match sim(&module(blocks, t).unwrap()) {
            Ok(_) => panic!("ran"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn what_a_trigger_cannot_run_is_9401_naming_it() {
        let copy = || vec![desc("a0", "DMADescriptorCopy", phys("x", 0, 4), phys("y", 0, 4))];
        let e = refusal(vec![block("a", "go", copy())], trigger(&["nope"]));
        assert!(e.contains("9401") && e.contains("no DMABlock nope on queue q"), "{e}");
        let mut other_queue = trigger(&["a"]);
        other_queue["queue"] = json!("qOther");
        let e = refusal(vec![block("a", "go", copy())], other_queue);
        assert!(e.contains("no DMABlock a on queue qOther"), "{e}");
        let t = vec![desc("t0", "DMADescriptorTranspose", phys("x", 0, 4), phys("y", 0, 4))];
        let e = refusal(vec![block("a", "go", t)], trigger(&["a"]));
        assert!(e.contains("9401") && e.contains("descriptor t0 of DMABlock a"), "{e}");
        let short = vec![desc("s0", "DMADescriptorCopy", phys("x", 0, 1), phys("y", 0, 4))];
        let e = refusal(vec![block("a", "go", short)], trigger(&["a"]));
        assert!(e.contains("counts differ"), "{e}");
        let mut own = trigger(&["a"]);
        own["outs"] = json!([phys("y", 0, 4)]);
        let e = refusal(vec![block("a", "go", copy())], own);
        assert!(e.contains("through the descriptors"), "{e}");
    }

    #[test]
    fn a_malformed_queue_is_a_bir_json_error_at_its_path() {
        let mut bad = desc("a0", "DMADescriptorCopy", phys("x", 0, 4), phys("y", 0, 4));
        bad["ins"][0]["ap"] = json!("rows");
        let m = module(vec![block("a", "go", vec![bad])], trigger(&["a"])).unwrap();
        let e = sim(&m).unwrap_err().to_string();
        assert!(
            e.contains("$.queues[1].blocks[0].instructions[0].blocks[0].instructions[0].ins[0]"),
            "{e}"
        );
    }
}
