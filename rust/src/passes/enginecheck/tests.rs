//! Hand-built single-core modules whose answer is known by construction
//! (contract §3.10), one test per promised behaviour; and the sweep and the
//! clocks against brute force on random graphs.

use serde_json::{json, Value};

use super::{enginecheck, EngineReport};
use crate::bir::{load_module_str, Module};
use crate::error::Error;

// ------------------------------------------------------------------ kit

/// A float32 set `name_set` with one location `name` of `parts × cols`.
fn loc_set(name: &str, ty: &str, addr: Option<i64>, base: i64, bank: i64, parts: i64, cols: i64) -> Value {
    let mut loc = json!({"name": name, "type": ty, "base": base});
    if let Some(a) = addr {
        loc["addr"] = json!(a);
    }
    if ty == "PSUM" {
        loc["bank"] = json!(bank);
    }
    json!({"name": format!("{name}_set"), "kind": "Internal", "dtype": "float32",
           "tensor_shape": [parts, cols], "locations": [loc]})
}

fn sb(name: &str, addr: i64, base: i64, parts: i64, cols: i64) -> Value {
    loc_set(name, "SB", Some(addr), base, 0, parts, cols)
}

fn psum(name: &str, addr: i64, bank: i64, parts: i64, cols: i64) -> Value {
    loc_set(name, "PSUM", Some(addr), 0, bank, parts, cols)
}

fn dram(name: &str, addr: i64, parts: i64, cols: i64) -> Value {
    loc_set(name, "DRAM", Some(addr), 0, 0, parts, cols)
}

/// A `physical_ap` over `parts × cols` of location `loc` from element `offset`.
fn ap(loc: &str, offset: i64, parts: i64, cols: i64, pitch: i64) -> Value {
    json!({"kind": "physical_ap", "ap": [[pitch, parts], [1, cols]], "offset": offset,
           "dtype": "float32", "memref": loc, "memsetref": format!("{loc}_set")})
}

/// The whole of a `parts × cols` location.
fn all(loc: &str, parts: i64, cols: i64) -> Value {
    ap(loc, 0, parts, cols, cols)
}

fn inst(name: &str, opcode: &str, engine: &str, ins: Vec<Value>, outs: Vec<Value>) -> Value {
    json!({"name": name, "opcode": opcode, "engine": engine, "ins": ins, "outs": outs})
}

fn with(mut i: Value, k: &str, v: Value) -> Value {
    i[k] = v;
    i
}

fn waits(i: Value, w: &[(&str, i64, i64)]) -> Value {
    let mut i = i;
    let list: Vec<Value> = w
        .iter()
        .map(|(f, id, v)| json!({"from": f, "id": id, "wait_value": v}))
        .collect();
    i["sync_info"]["on_wait"] = json!(list);
    i
}

fn updates(i: Value, u: &[(i64, i64)]) -> Value {
    let mut i = i;
    let list: Vec<Value> = u.iter().map(|(id, v)| json!({"id": id, "update_value": v})).collect();
    i["sync_info"]["on_update"] = json!(list);
    i
}

fn module_with(sets: Vec<Value>, blocks: Vec<Vec<Value>>, queues: Option<Value>) -> Module {
    let bs: Vec<Value> = blocks
        .into_iter()
        .enumerate()
        .map(|(k, insts)| json!({"name": format!("b{k}"), "instructions": insts}))
        .collect();
    let mut m = json!({"version": 2, "name": "core", "attributes": {"neuron_core_id": 0},
                       "functions": [{"name": "main", "allocations": sets, "basic_blocks": bs}]});
    if let Some(q) = queues {
        m["queues"] = q;
    }
    load_module_str(&m.to_string()).expect("test module loads")
}

fn module(sets: Vec<Value>, insts: Vec<Value>) -> Module {
    module_with(sets, vec![insts], None)
}

fn check(m: &Module) -> EngineReport {
    enginecheck(m).expect("enginecheck runs")
}

/// (a, b, kind) of every race.
fn races(r: &EngineReport) -> Vec<(String, String, &'static str)> {
    r.races.iter().map(|x| (x.a.label(), x.b.label(), x.kind)).collect()
}

fn statuses(r: &EngineReport) -> Vec<(String, &'static str)> {
    r.waits.iter().map(|w| (w.instruction.to_string(), w.status)).collect()
}

/// A sync-free marker instruction that makes a module "scheduled" (uses semaphores).
fn marker() -> Value {
    updates(inst("marker", "NoOp", "Pool", vec![], vec![]), &[(99, 1)])
}

// ------------------------------------------------------------------ order

#[test]
fn a_dma_read_by_an_engine_that_waits_for_its_completion_does_not_race() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            updates(
                with(
                    inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                    "queue",
                    json!("q"),
                ),
                &[(1, 16)],
            ),
            waits(
                inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
                &[("load", 1, 16)],
            ),
        ],
    );
    let r = check(&m);
    assert!(r.ok(), "{:?}", r);
}

#[test]
fn without_the_wait_the_read_races_the_dma_raw() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 512, 0, 64, 64)],
        vec![
            updates(
                inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                &[(1, 16)],
            ),
            inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
        ],
    );
    let r = check(&m);
    assert_eq!(races(&r), vec![("load".into(), "use".into(), "RAW")]);
    let race = &r.races[0];
    assert_eq!(race.location.space.as_ref(), "SB");
    assert_eq!(race.location.name.as_ref(), "x");
    assert_eq!(race.witness, (0, 512));
    assert!(
        race.fix.contains("\"from\": \"load\", \"id\": 1, \"wait_value\": 16"),
        "{}",
        race.fix
    );
    assert!(!r.ok());
}

#[test]
fn two_instructions_of_one_engine_are_in_program_order() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("w", "TensorTensor", "DVE", vec![], vec![all("x", 64, 64)]),
            inst(
                "r",
                "TensorTensor",
                "DVE",
                vec![all("x", 64, 64)],
                vec![all("x", 64, 64)],
            ),
        ],
    );
    assert!(check(&m).ok());
}

#[test]
fn a_dma_completes_after_the_next_instruction_of_its_engine_starts() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
            inst("use", "TensorCopy", "SP", vec![all("x", 64, 64)], vec![]),
        ],
    );
    assert_eq!(races(&check(&m)), vec![("load".into(), "use".into(), "RAW")]);
}

#[test]
fn an_all_instruction_orders_every_engine_but_not_a_dma_completion() {
    let compute = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("w", "Matmult", "PE", vec![], vec![all("x", 64, 64)]),
            inst("barrier", "AllEngineBarrier", "ALL", vec![], vec![]),
            inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
        ],
    );
    assert!(check(&compute).ok());
    let dma = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
            inst("barrier", "AllEngineBarrier", "ALL", vec![], vec![]),
            inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
        ],
    );
    assert_eq!(races(&check(&dma)), vec![("load".into(), "r".into(), "RAW")]);
}

#[test]
fn unassigned_instructions_are_ordered_only_by_semaphores_and_all() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("w", "Matmult", "PE", vec![], vec![all("x", 64, 64)]),
            inst("u", "TensorCopy", "Unassigned", vec![all("x", 64, 64)], vec![]),
            inst("barrier", "AllEngineBarrier", "ALL", vec![], vec![]),
            inst("u2", "TensorCopy", "Unassigned", vec![], vec![all("x", 64, 64)]),
        ],
    );
    assert_eq!(races(&check(&m)), vec![("w".into(), "u".into(), "RAW")]);
}

// ------------------------------------------------------------------ footprints

#[test]
fn disjoint_partitions_at_the_same_bytes_do_not_race() {
    let sets = |base_b: i64| vec![sb("top", 0, 0, 64, 64), sb("bottom", 0, base_b, 64, 64)];
    let insts = || {
        vec![
            marker(),
            inst("wt", "Matmult", "PE", vec![], vec![all("top", 64, 64)]),
            inst("wb", "TensorTensor", "DVE", vec![], vec![all("bottom", 64, 64)]),
        ]
    };
    assert!(check(&module(sets(64), insts())).ok());
    let overlap = check(&module(sets(32), insts()));
    assert_eq!(races(&overlap), vec![("wt".into(), "wb".into(), "WAW")]);
    assert_eq!(overlap.races[0].witness, (32, 0));
    assert_eq!(overlap.races[0].location.other.as_deref(), Some("bottom"));
}

#[test]
fn psum_banks_are_separate_memories() {
    let insts = || {
        vec![
            marker(),
            inst("mm", "Matmult", "PE", vec![], vec![all("p0", 64, 64)]),
            inst("act", "Activation", "Activation", vec![all("p1", 64, 64)], vec![]),
        ]
    };
    let other_bank = module(vec![psum("p0", 0, 0, 64, 64), psum("p1", 0, 1, 64, 64)], insts());
    assert!(check(&other_bank).ok());
    let same_bank = check(&module(
        vec![psum("p0", 0, 2, 64, 64), psum("p1", 0, 2, 64, 64)],
        insts(),
    ));
    assert_eq!(races(&same_bank), vec![("mm".into(), "act".into(), "RAW")]);
    assert_eq!(same_bank.races[0].location.bank, Some(2));
    assert_eq!(same_bank.races[0].location.space.as_ref(), "PSUM");
}

#[test]
fn dram_locations_conflict_by_byte_range_in_one_arena() {
    let insts = || {
        vec![
            marker(),
            inst("w", "DMACopy", "SP", vec![], vec![all("a", 4, 16)]),
            inst("r", "DMACopy", "Pool", vec![all("b", 4, 16)], vec![]),
        ]
    };
    // a is 256 bytes at 0; b starts right after, then overlaps its last 16 bytes.
    assert!(check(&module(vec![dram("a", 0, 4, 16), dram("b", 256, 4, 16)], insts())).ok());
    let r = check(&module(vec![dram("a", 0, 4, 16), dram("b", 240, 4, 16)], insts()));
    assert_eq!(races(&r), vec![("w".into(), "r".into(), "RAW")]);
    assert_eq!(r.races[0].witness, (0, 240));
    assert_eq!(r.races[0].location.space.as_ref(), "DRAM");
}

#[test]
fn two_locations_the_allocator_placed_over_the_same_bytes_race() {
    // t1 dies, t2 reuses its bytes at a shifted address; nothing orders the reuse.
    let m = module(
        vec![sb("t1", 0, 0, 128, 64), sb("t2", 128, 0, 128, 64)],
        vec![
            marker(),
            inst("use_t1", "TensorTensor", "DVE", vec![all("t1", 128, 64)], vec![]),
            inst("fill_t2", "Activation", "Activation", vec![], vec![all("t2", 128, 64)]),
        ],
    );
    let r = check(&m);
    assert_eq!(races(&r), vec![("use_t1".into(), "fill_t2".into(), "WAR")]);
    assert_eq!(r.races[0].location.name.as_ref(), "t1");
    assert_eq!(r.races[0].location.other.as_deref(), Some("t2"));
    assert_eq!(r.races[0].witness, (0, 128));
}

#[test]
fn strided_accesses_that_interleave_never_meet() {
    // Even columns and odd columns of one tile.
    let even = json!({"kind": "physical_ap", "ap": [[64, 64], [2, 32]], "offset": 0, "dtype": "float32", "memref": "x", "memsetref": "x_set"});
    let odd = json!({"kind": "physical_ap", "ap": [[64, 64], [2, 32]], "offset": 1, "dtype": "float32", "memref": "x", "memsetref": "x_set"});
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("e", "Matmult", "PE", vec![], vec![even]),
            inst("o", "TensorTensor", "DVE", vec![], vec![odd]),
        ],
    );
    assert!(check(&m).ok());
}

// ------------------------------------------------------------------ DMA queues

#[test]
fn completions_on_one_queue_keep_issue_order_and_two_queues_do_not() {
    let mk = |q2: &str| {
        module(
            vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64), sb("y", 256, 0, 64, 64)],
            vec![
                with(
                    inst("lx", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                    "queue",
                    json!("q"),
                ),
                updates(
                    with(
                        inst("ly", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("y", 64, 64)]),
                        "queue",
                        json!(q2),
                    ),
                    &[(1, 1)],
                ),
                waits(
                    inst("use", "Matmult", "PE", vec![all("x", 64, 64), all("y", 64, 64)], vec![]),
                    &[("ly", 1, 1)],
                ),
            ],
        )
    };
    assert!(check(&mk("q")).ok());
    assert_eq!(races(&check(&mk("r"))), vec![("lx".into(), "use".into(), "RAW")]);
}

#[test]
fn a_dma_without_queue_is_a_queue_of_its_own() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64), sb("y", 256, 0, 64, 64)],
        vec![
            inst("lx", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
            updates(
                inst("ly", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("y", 64, 64)]),
                &[(1, 1)],
            ),
            waits(
                inst("use", "Matmult", "PE", vec![all("x", 64, 64), all("y", 64, 64)], vec![]),
                &[("ly", 1, 1)],
            ),
        ],
    );
    assert_eq!(races(&check(&m)), vec![("lx".into(), "use".into(), "RAW")]);
}

fn trigger_module(wait: bool) -> Module {
    let block = json!({"name": "wblk", "opcode": "DMABlock", "engine": "DMA",
        "sync_info": {"on_update": [{"id": 4, "update_value": 16}]},
        "blocks": [{"name": "wblk_b0", "instructions": [
            {"name": "wblk-d0", "opcode": "DMADescriptorCopy", "engine": "DMA",
             "ins": [ap("w0", 0, 32, 64, 64)], "outs": [ap("w", 0, 32, 64, 64)]},
            {"name": "wblk-d1", "opcode": "DMADescriptorCopy", "engine": "DMA",
             "ins": [ap("w0", 2048, 32, 64, 64)], "outs": [ap("w", 2048, 32, 64, 64)]}]}]});
    let queues = json!([{"name": "qPool", "blocks": [{"name": "qPool_b0", "instructions": [block]}]}]);
    let mut mm = inst("mm", "Matmult", "PE", vec![all("w", 64, 64)], vec![]);
    if wait {
        mm = waits(mm, &[("wblk", 4, 16)]);
    }
    module_with(
        vec![dram("w0", 0, 64, 64), sb("w", 0, 0, 64, 64)],
        vec![vec![
            with(
                with(
                    inst("trig", "DMATrigger", "Pool", vec![], vec![]),
                    "queue",
                    json!("qPool"),
                ),
                "dma_blocks",
                json!(["wblk"]),
            ),
            mm,
        ]],
        Some(queues),
    )
}

#[test]
fn a_dma_trigger_accesses_its_blocks_descriptors_until_the_block_completes() {
    assert!(check(&trigger_module(true)).ok());
    let r = check(&trigger_module(false));
    assert_eq!(races(&r), vec![("trig (DMABlock wblk)".into(), "mm".into(), "RAW")]);
    assert_eq!(r.races[0].a.dma_block.as_deref(), Some("wblk"));
    assert_eq!(r.races[0].a.queue.as_deref(), Some("qPool"));
    assert!(r.races[0].fix.contains("\"from\": \"wblk\""), "{}", r.races[0].fix);
}

#[test]
fn a_trigger_naming_no_block_is_a_json_error_at_its_path() {
    let m = module(
        vec![sb("w", 0, 0, 64, 64)],
        vec![
            marker(),
            with(
                inst("trig", "DMATrigger", "Pool", vec![], vec![]),
                "dma_blocks",
                json!(["nope"]),
            ),
        ],
    );
    match enginecheck(&m) {
        Err(Error::BirJson { path, .. }) => {
            assert_eq!(path, "$.functions[0].basic_blocks[0].instructions[1].dma_blocks[0]")
        }
        other => panic!("{other:?}"),
    }
}

// ------------------------------------------------------------------ semaphores

#[test]
fn a_reset_starts_the_count_from_zero() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            updates(inst("p1", "Matmult", "PE", vec![], vec![]), &[(3, 16)]),
            with(
                inst("reset", "GroupResetSemaphores", "ALL", vec![], vec![]),
                "sema_group",
                json!([3]),
            ),
            updates(inst("p2", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 16)]),
            waits(
                inst("ok", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
                &[("p2", 3, 16)],
            ),
            waits(inst("never", "TensorTensor", "DVE", vec![], vec![]), &[("p2", 3, 32)]),
        ],
    );
    let r = check(&m);
    assert!(r.races.is_empty(), "{:?}", r.races);
    assert_eq!(statuses(&r), vec![("never".into(), "deadlock")]);
}

#[test]
fn counts_accumulate_across_updates_of_one_stream() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![]), &[(3, 16)]),
            updates(inst("b", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 16)]),
            waits(
                inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
                &[("b", 3, 32)],
            ),
        ],
    );
    let r = check(&m);
    assert!(r.ok(), "{r:?}");
}

#[test]
fn an_early_wait_does_not_order_the_waiter_after_from() {
    // The wait's value is reached by a's update already: b is not waited for.
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![]), &[(3, 16)]),
            updates(inst("b", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 16)]),
            waits(
                inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
                &[("b", 3, 16)],
            ),
        ],
    );
    let r = check(&m);
    assert_eq!(statuses(&r), vec![("r".into(), "early")]);
    assert_eq!(races(&r), vec![("b".into(), "r".into(), "RAW")]);
}

#[test]
fn a_wait_no_update_reaches_is_a_deadlock_and_its_waiter_races_nothing() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 1)]),
            waits(
                inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
                &[("a", 3, 2)],
            ),
        ],
    );
    let r = check(&m);
    assert_eq!(statuses(&r), vec![("r".into(), "deadlock")]);
    assert!(r.races.is_empty());
    assert!(!r.ok());
}

#[test]
fn a_wait_whose_only_update_comes_after_the_waiter_is_a_deadlock() {
    // r waits for its own engine's later instruction.
    let m = module(
        vec![],
        vec![
            waits(inst("r", "TensorTensor", "PE", vec![], vec![]), &[("later", 3, 1)]),
            updates(inst("later", "Matmult", "PE", vec![], vec![]), &[(3, 1)]),
        ],
    );
    assert_eq!(statuses(&check(&m)), vec![("r".into(), "deadlock")]);
}

#[test]
fn two_waits_that_close_a_cycle_are_deadlocks_and_undecided() {
    let m = module(
        vec![],
        vec![
            waits(inst("x", "TensorTensor", "PE", vec![], vec![]), &[("y2", 2, 1)]),
            updates(inst("x2", "TensorTensor", "PE", vec![], vec![]), &[(1, 1)]),
            waits(inst("y", "TensorTensor", "DVE", vec![], vec![]), &[("x2", 1, 1)]),
            updates(inst("y2", "TensorTensor", "DVE", vec![], vec![]), &[(2, 1)]),
        ],
    );
    let r = check(&m);
    assert_eq!(statuses(&r), vec![("x".into(), "deadlock"), ("y".into(), "deadlock")]);
    assert!(
        r.undecided.iter().any(|u| u.reason.contains("cycle")),
        "{:?}",
        r.undecided
    );
}

#[test]
fn a_wait_from_a_later_instruction_of_another_engine_is_satisfied() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            waits(
                inst("r", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
                &[("w", 3, 1)],
            ),
            updates(inst("w", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 1)]),
        ],
    );
    let r = check(&m);
    assert!(r.ok(), "{r:?}");
}

#[test]
fn a_wait_naming_nothing_or_a_semaphore_never_updated_is_no_update() {
    let m = module(
        vec![],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![]), &[(3, 1)]),
            waits(
                inst("ghost", "TensorTensor", "DVE", vec![], vec![]),
                &[("nobody", 3, 1)],
            ),
            waits(inst("silent", "TensorTensor", "DVE", vec![], vec![]), &[("a", 7, 1)]),
        ],
    );
    let r = check(&m);
    assert_eq!(
        statuses(&r),
        vec![("ghost".into(), "no-update"), ("silent".into(), "no-update")]
    );
    assert!(!r.ok());
}

#[test]
fn a_semaphore_with_two_updating_streams_is_undecided() {
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![all("x", 64, 64)]), &[(3, 1)]),
            updates(inst("b", "TensorTensor", "DVE", vec![], vec![]), &[(3, 1)]),
            waits(
                inst("r", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
                &[("a", 3, 1)],
            ),
        ],
    );
    let r = check(&m);
    assert!(
        r.undecided.iter().any(|u| u.reason.contains("two streams")),
        "{:?}",
        r.undecided
    );
    // The wait is not credited: never silently ordered.
    assert_eq!(races(&r), vec![("a".into(), "r".into(), "RAW")]);
}

#[test]
fn a_reset_without_a_group_is_undecided() {
    let m = module(
        vec![],
        vec![
            updates(inst("a", "Matmult", "PE", vec![], vec![]), &[(3, 1)]),
            inst("reset", "GroupResetSemaphores", "ALL", vec![], vec![]),
            waits(inst("r", "TensorTensor", "DVE", vec![], vec![]), &[("a", 3, 1)]),
        ],
    );
    let r = check(&m);
    assert!(
        r.undecided.iter().any(|u| u.instruction.as_ref() == "reset"),
        "{:?}",
        r.undecided
    );
    assert!(!r.ok());
}

// ------------------------------------------------------------------ undecided

#[test]
fn a_register_address_on_sb_that_may_conflict_is_undecided_not_a_race() {
    let reg =
        json!({"kind": "register_ap", "memsetref": "x_set", "dtype": "float32", "ap": [[1, 1], [1, 4]], "regref": "r"});
    let m = module(
        vec![sb("x", 0, 0, 64, 64)],
        vec![
            marker(),
            inst("w", "Matmult", "PE", vec![], vec![all("x", 64, 64)]),
            inst("g", "TensorTensor", "DVE", vec![reg], vec![]),
        ],
    );
    let r = check(&m);
    assert!(r.races.is_empty());
    assert_eq!(r.undecided.len(), 1, "{:?}", r.undecided);
    assert!(r.undecided[0].reason.contains("register"), "{}", r.undecided[0].reason);
    assert!(!r.ok());
}

// ------------------------------------------------------------------ modules without sync_info

#[test]
fn a_module_without_sync_info_runs_every_instruction_in_order() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
            inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
        ],
    );
    let r = check(&m);
    assert!(r.ok() && r.races.is_empty() && r.unchecked == 0);
}

// ------------------------------------------------------------------ back-edges

#[test]
fn back_edges_count_unchecked_pairs_and_keep_the_report_ok() {
    let body = vec![
        updates(
            with(
                inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                "queue",
                json!("q"),
            ),
            &[(1, 1)],
        ),
        waits(
            inst("use", "Matmult", "PE", vec![all("x", 64, 64)], vec![]),
            &[("load", 1, 1)],
        ),
        with(
            inst("br", "CompareAndBranch", "PE", vec![], vec![]),
            "on_true",
            json!("b0"),
        ),
    ];
    let m = module_with(vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)], vec![body], None);
    let r = check(&m);
    assert!(r.ok(), "{r:?}");
    // load vs itself (WAW across iterations) and load vs use (WAR of the next load).
    assert_eq!(r.unchecked, 2);
}

// ------------------------------------------------------------------ errors and JSON

#[test]
fn malformed_sync_info_is_a_json_error_at_its_path() {
    let bad = [
        (json!(5), "$.functions[0].basic_blocks[0].instructions[0].sync_info"),
        (
            json!({"on_wait": {}}),
            "$.functions[0].basic_blocks[0].instructions[0].sync_info.on_wait",
        ),
        (
            json!({"on_wait": [{"from": "a", "id": -1, "wait_value": 1}]}),
            "$.functions[0].basic_blocks[0].instructions[0].sync_info.on_wait[0].id",
        ),
        (
            json!({"on_wait": [{"id": 1, "wait_value": 1}]}),
            "$.functions[0].basic_blocks[0].instructions[0].sync_info.on_wait[0]",
        ),
        (
            json!({"on_update": [{"id": 1, "update_value": "x"}]}),
            "$.functions[0].basic_blocks[0].instructions[0].sync_info.on_update[0].update_value",
        ),
    ];
    for (si, want) in bad {
        let m = module(
            vec![],
            vec![with(inst("a", "NoOp", "PE", vec![], vec![]), "sync_info", si.clone())],
        );
        match enginecheck(&m) {
            Err(Error::BirJson { path, .. }) => assert_eq!(path, want, "{si}"),
            other => panic!("{si}: {other:?}"),
        }
    }
}

#[test]
fn a_symbolic_module_is_9601_and_a_linked_module_is_9602() {
    let sym = load_module_str(
        &json!({"version": 2, "name": "k_nc_symbolic", "functions": [{"name": "main", "allocations": [], "basic_blocks": [
            {"name": "b", "instructions": [{"name": "i", "opcode": "NoOp",
                "predicates": [{"expr": {"kind": "ShardIDKind", "ub": 2}, "ge": true}]}]}]}]})
        .to_string(),
    )
    .expect("loads");
    assert!(matches!(enginecheck(&sym), Err(Error::Neuron { code: 9601, .. })));
    let linked = load_module_str(
        &json!({"version": 2, "name": "k/sgLnk", "attributes": {"lnc": 2}, "functions": [{"name": "main", "allocations": [], "basic_blocks": []}]})
            .to_string(),
    )
    .expect("loads");
    assert!(matches!(enginecheck(&linked), Err(Error::Neuron { code: 9602, .. })));
}

#[test]
fn the_report_json_has_the_contract_keys() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 512, 0, 64, 64)],
        vec![
            updates(
                inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                &[(1, 16)],
            ),
            waits(
                inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
                &[("nobody", 1, 16)],
            ),
        ],
    );
    let v = check(&m).to_value();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["unchecked"], json!(0));
    let keys = |o: &Value| {
        let mut k: Vec<String> = o.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v), ["ok", "races", "unchecked", "undecided", "waits"]);
    let w = &v["waits"][0];
    assert_eq!(
        keys(w),
        ["from", "id", "instruction", "position", "status", "wait_value"]
    );
    assert_eq!(w["status"], json!("no-update"));
    assert!(v["undecided"].as_array().is_some_and(Vec::is_empty));
    // The wait names nothing but its semaphore still orders: no race.
    assert!(v["races"].as_array().is_some_and(Vec::is_empty), "{v}");
}

#[test]
fn a_race_in_the_json_has_exactly_the_contract_keys() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            updates(
                inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                &[(1, 16)],
            ),
            inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
        ],
    );
    let v = check(&m).to_value();
    let keys = |o: &Value| {
        let mut k: Vec<String> = o.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    let r = &v["races"][0];
    assert_eq!(keys(r), ["a", "b", "fix", "kind", "location", "witness"]);
    assert_eq!(keys(&r["a"]), ["engine", "instruction", "position"]);
    assert_eq!(keys(&r["b"]), ["engine", "instruction", "position"]);
    assert_eq!(keys(&r["location"]), ["name", "space"]);
    assert_eq!(keys(&r["witness"]), ["byte", "partition"]);
    assert_eq!(r["kind"], json!("RAW"));
    assert_eq!(r["a"], json!({"instruction": "load", "position": 0, "engine": "SP"}));
    assert_eq!(r["location"], json!({"space": "SB", "name": "x"}));
}

// ------------------------------------------------------------------ gen --scheduled

fn scheduled(seed: u64, instructions: usize, racy: bool) -> Module {
    let m = crate::gen::generate_module(&crate::gen::GenOptions {
        seed,
        instructions,
        racy,
        scheduled: true,
        ..Default::default()
    })
    .expect("generates");
    // Through the file format, as users get it.
    crate::bir::load_module(&crate::bir::dump_module(&m, 2).expect("dumps")).expect("loads back")
}

#[test]
fn scheduled_modules_are_race_free_and_every_wait_is_ok() {
    for seed in 0..6 {
        let m = scheduled(seed, 600, false);
        let r = check(&m);
        assert!(r.ok(), "seed {seed}: {:?}", r.races.first().map(|x| x.describe()));
        assert!(
            r.waits.is_empty() && r.undecided.is_empty(),
            "seed {seed}: {:?} {:?}",
            r.waits,
            r.undecided
        );
    }
}

#[test]
fn racy_scheduled_modules_race_and_are_the_same_module_with_waits_dropped() {
    let mut total = 0;
    for seed in 0..6 {
        let clean = scheduled(seed, 600, false);
        let racy = scheduled(seed, 600, true);
        let names = |m: &Module| {
            let mut v = Vec::new();
            m.functions[0].walk(&mut |i| v.push(i.name.clone()));
            v
        };
        assert_eq!(names(&clean), names(&racy), "seed {seed}");
        let r = check(&racy);
        assert!(r.waits.is_empty(), "dropping waits leaves every other wait ok");
        total += r.races.len();
    }
    assert!(total > 0, "dropped waits leave races");
}

#[test]
fn scheduled_generation_is_deterministic() {
    let a = crate::bir::dump_module(&scheduled(3, 400, true), 2).unwrap();
    let b = crate::bir::dump_module(&scheduled(3, 400, true), 2).unwrap();
    assert_eq!(a, b);
}

// ------------------------------------------------------------------ why

#[test]
fn why_gives_the_chain_of_orderings_or_where_it_breaks() {
    let m = module(
        vec![dram("in", 0, 64, 64), sb("x", 0, 0, 64, 64)],
        vec![
            updates(
                with(
                    inst("load", "DMACopy", "SP", vec![all("in", 64, 64)], vec![all("x", 64, 64)]),
                    "queue",
                    json!("q"),
                ),
                &[(1, 16)],
            ),
            waits(
                inst("use", "Activation", "Activation", vec![all("x", 64, 64)], vec![]),
                &[("load", 1, 16)],
            ),
            inst("other", "TensorTensor", "DVE", vec![all("x", 64, 64)], vec![]),
        ],
    );
    let w = super::why::why(&m, "load", "use").unwrap();
    assert_eq!(w["order"], json!("a-before-b"));
    let text = w["text"].as_str().unwrap();
    assert!(text.contains("waits for semaphore 1 ≥ 16"), "{text}");
    let back = super::why::why(&m, "use", "load").unwrap();
    assert_eq!(back["order"], json!("b-before-a"));
    let broken = super::why::why(&m, "load", "@2").unwrap();
    assert_eq!(broken["order"], json!("unordered"));
    assert!(
        broken["fix"].as_str().unwrap().contains("\"from\": \"load\""),
        "{broken}"
    );
    assert_eq!(
        super::why::why(&m, "load", "ghost").unwrap(),
        json!({"not_found": "ghost"})
    );
}

// ------------------------------------------------------------------ the compiler's spelling

/// The shipped `lower_sync`-shaped dump (compiler spelling: `blocks`,
/// `memorylocations`, `dims`, no module name, `barrier` twice), with `edit`
/// applied to its instructions by name.
fn compiler_dump(edit: &dyn Fn(&str, &mut Value)) -> Module {
    let mut v: Value = serde_json::from_str(include_str!(
        "../../../../python/lncsplit/examples/compiler/scheduled/nc00/sg00/bir_debug.sg0000.after-lower_sync.before-lower_act.json"
    ))
    .expect("the example is JSON");
    for b in v["functions"][0]["blocks"].as_array_mut().expect("blocks") {
        for i in b["instructions"].as_array_mut().expect("instructions") {
            let name = i["name"].as_str().unwrap_or("").to_string();
            edit(&name, i);
        }
    }
    crate::bir::module_from_value(v).expect("the compiler's spelling loads")
}

#[test]
fn a_compiler_spelled_lower_sync_dump_with_repeated_names_is_clean() {
    let r = check(&compiler_dump(&|_, _| {}));
    assert!(r.ok(), "{:?} {:?} {:?}", r.races, r.waits, r.undecided);
    assert_eq!(r.unchecked, 0);
}

#[test]
fn in_the_compiler_dump_a_matmul_not_waiting_for_its_weight_block_races_it() {
    let m = compiler_dump(&|name, i| {
        if name == "mm" {
            i["sync_info"]["on_wait"] = json!([{"from": "load_x", "id": 3, "wait_value": 16}]);
        }
    });
    let r = check(&m);
    assert_eq!(
        races(&r),
        vec![("load_w (DMABlock load_w_block)".to_string(), "mm".to_string(), "RAW")]
    );
    let race = &r.races[0];
    // w_sb: SB addr 256, its own dims [128, 256].
    assert_eq!(race.witness, (0, 256));
    assert_eq!(&*race.location.name, "w_sb");
    assert!(
        race.fix
            .contains("\"from\": \"load_w_block\", \"id\": 4, \"wait_value\": 16"),
        "{}",
        race.fix
    );
}

#[test]
fn in_the_compiler_dump_repeated_names_are_told_apart_by_position() {
    // The second "barrier" (Block2) is at position 10; the first at 6.
    let m = compiler_dump(&|_, _| {});
    let w = super::why::why(&m, "@6", "@10").expect("why runs");
    assert_eq!(w["order"], json!("a-before-b"), "{w}");
    assert_eq!(w["a"]["instruction"], json!("barrier"));
    assert_eq!(w["b"]["instruction"], json!("barrier"));
    assert_eq!(
        (w["a"]["position"].clone(), w["b"]["position"].clone()),
        (json!(6), json!(10))
    );
}
