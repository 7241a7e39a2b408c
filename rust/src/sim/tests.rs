//! Tests of the simulator core: the step walk equals the callback walk, the
//! semantics of contract §3.8 on hand-built modules, dynamic races, and the
//! errors 9401–9403 (symbolic ≡ split is `rust/tests/split_and_sim.rs`: it
//! needs a pass, and the simulator imports none).

use serde_json::{json, Value};

use super::{run, SimInput, SimResult};
use crate::analysis::walk::{walk_function, Instance, Limit, Mask, WalkCursor};
use crate::bir::{load_module_str, Module};
use crate::gen::{generate_module, GenOptions};

const LIMIT: Limit = Limit {
    max: 10_000_000,
    code: 9401,
    location: "test",
};

/// What both walks must agree on for one instance.
fn seen(i: &Instance<'_, '_>) -> (std::sync::Arc<str>, u32, u32, u32, Mask, usize) {
    (
        i.inst.name.clone(),
        i.pos,
        i.block,
        i.top,
        i.mask,
        i.bindings.by_id.len(),
    )
}

fn walk_both(m: &Module, shard: Option<i64>) {
    for f in &m.functions {
        let mut a = Vec::new();
        walk_function(&m.ctx, f, shard, LIMIT, &mut |i| {
            a.push(seen(i));
            Ok(())
        })
        .unwrap();
        let mut b = Vec::new();
        let mut cur = WalkCursor::new(f, shard, LIMIT);
        while let Some(i) = cur.next_instance(&m.ctx).unwrap() {
            b.push(seen(&i));
        }
        assert_eq!(a, b, "function {}", f.name);
    }
}

#[test]
fn the_step_walk_visits_what_the_callback_walk_visits() {
    for (seed, lnc) in [(1u64, 1i64), (2, 2), (3, 4), (4, 2), (5, 8)] {
        let m = generate_module(&GenOptions {
            seed,
            instructions: 400,
            lnc,
            ..Default::default()
        })
        .unwrap();
        for s in 0..lnc {
            walk_both(&m, Some(s));
        }
    }
}

#[test]
fn the_step_walk_counts_toward_the_same_limit() {
    let m = generate_module(&GenOptions {
        seed: 9,
        instructions: 300,
        ..Default::default()
    })
    .unwrap();
    let f = &m.functions[0];
    let small = Limit { max: 50, ..LIMIT };
    let mut cur = WalkCursor::new(f, Some(0), small);
    let mut n = 0;
    let err = loop {
        match cur.next_instance(&m.ctx) {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("the walk ended under the limit"),
            Err(e) => break e,
        }
    };
    assert!(err.to_string().contains("9401"), "{err}");
    assert!(n <= 50);
}

// ------------------------------------------------------------ builders

fn shard(ub: i64, coeff: i64, c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": [{"idx": {"kind": "ShardIDKind", "ub": ub}, "coeff": coeff}], "c": c})
}

fn k(c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": [], "c": c})
}

fn set(name: &str, kind: &str, dtype: &str, shape: &[i64], ty: &str) -> Value {
    json!({"name": name, "kind": kind, "dtype": dtype, "tensor_shape": shape,
           "locations": [{"name": format!("{name}_loc"), "type": ty}]})
}

fn ap(set: &str, dtype: &str, ap: Value, addrs: Vec<Value>) -> Value {
    json!({"kind": "symbolic_ap", "ap": ap, "dtype": dtype, "memsetref": set, "addrs": addrs})
}

fn inst(name: &str, opcode: &str, ins: Vec<Value>, outs: Vec<Value>) -> Value {
    json!({"name": name, "opcode": opcode, "ins": ins, "outs": outs})
}

fn module(name: &str, sets: Vec<Value>, insts: Vec<Value>) -> Module {
    let m = json!({"version": 2, "name": name, "arch": "gen3", "functions": [{
        "name": "main", "allocations": sets,
        "basic_blocks": [{"name": "b0", "instructions": insts}]}]});
    load_module_str(&m.to_string()).unwrap()
}

fn output<'r>(r: &'r SimResult, core: usize, set: &str) -> &'r [u8] {
    &r.outputs
        .iter()
        .find(|o| o.core == core && &*o.set == set)
        .unwrap()
        .bytes
}

/// Each core copies its half of an input row block to an output, through SB,
/// then an Activation (opaque) writes a second output.
fn halves(lnc: i64) -> Module {
    let rows = 4 * lnc;
    module(
        "halves_nc_symbolic",
        vec![
            set("x", "Input", "bfloat16", &[rows, 8], "DRAM"),
            set("t", "Internal", "bfloat16", &[4, 8], "SB"),
            set("y", "Output", "bfloat16", &[rows, 8], "DRAM"),
            set("z", "Output", "bfloat16", &[4, 8], "DRAM"),
        ],
        vec![
            inst(
                "load",
                "DMACopy",
                vec![ap(
                    "x",
                    "bfloat16",
                    json!([[8, 4], [1, 8]]),
                    vec![shard(lnc, 4, 0), k(0)],
                )],
                vec![ap("t", "bfloat16", json!([[8, 4], [1, 8]]), vec![k(0), k(0)])],
            ),
            inst(
                "store",
                "DMACopy",
                vec![ap("t", "bfloat16", json!([[8, 4], [1, 8]]), vec![k(0), k(0)])],
                vec![ap(
                    "y",
                    "bfloat16",
                    json!([[8, 4], [1, 8]]),
                    vec![shard(lnc, 4, 0), k(0)],
                )],
            ),
            inst(
                "act",
                "Activation",
                vec![ap("t", "bfloat16", json!([[8, 4], [1, 8]]), vec![k(0), k(0)])],
                vec![ap("z", "bfloat16", json!([[8, 4], [1, 8]]), vec![k(0), k(0)])],
            ),
        ],
    )
}

#[test]
fn the_opaque_function_ignores_the_instruction_name() {
    let m = halves(1);
    let renamed = {
        let mut j: Value = serde_json::from_slice(&crate::bir::dump_module(&m, 2).unwrap()).unwrap();
        j["functions"][0]["basic_blocks"][0]["instructions"][2]["name"] = json!("other_name");
        load_module_str(&j.to_string()).unwrap()
    };
    let a = run(&[&m], None, &[]).unwrap();
    let b = run(&[&renamed], None, &[]).unwrap();
    assert_eq!(output(&a, 0, "z"), output(&b, 0, "z"));
    assert!(output(&a, 0, "z").iter().any(|&b| b != 0));
}

fn shared_writers(barrier: bool) -> Module {
    let mut w = inst(
        "w",
        "Memset",
        vec![json!({"kind": "imm_value", "dtype": "uint32", "value": 9})],
        vec![ap("s", "uint32", json!([[4, 1], [1, 4]]), vec![k(0), k(0)])],
    );
    w["predicates"] = json!([{"expr": shard(2, 1, -1), "ge": false}]);
    let mut insts = vec![w];
    if barrier {
        insts.push(json!({"name": "cb", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]}));
    }
    insts.push(json!({
        "name": "acc", "opcode": "DMACopy", "accumulate": "add",
        "ins": [ap("s", "uint32", json!([[4, 1], [1, 4]]), vec![k(0), k(0)])],
        "outs": [ap("o", "uint32", json!([[4, 1], [1, 4]]), vec![k(0), k(0)])],
        "predicates": [{"expr": shard(2, 1, 0), "ge": false}]
    }));
    let mut s = set("s", "Internal", "uint32", &[1, 4], "DRAM");
    s["addr_space"] = json!("Shared");
    let mut o = set("o", "Output", "uint32", &[1, 4], "DRAM");
    o["addr_space"] = json!("Shared");
    let mut m = module("race_nc_symbolic", vec![s, o], insts);
    m.functions[0].shard_ids = vec![2];
    m
}

#[test]
fn an_unordered_shared_write_is_a_dynamic_race_and_a_barrier_orders_it() {
    // Core 0 reads s (accumulating into o) while core 1 writes it: no barrier.
    let racy = run(&[&shared_writers(false)], None, &[]).unwrap();
    assert_eq!(racy.races.len(), 1, "{:?}", racy.races);
    let r = &racy.races[0];
    assert_eq!((&*r.location.name, r.partition, r.byte, r.bytes), ("o_loc", 0, 0, 4));
    assert_eq!(r.forward.as_ref().map(|w| (w.core, &*w.instruction)), Some((0, "acc")));
    assert_eq!((r.interval, r.sync.as_deref()), (0, None));
    // The forward order continues: core 0 read s before core 1 wrote it.
    assert_eq!(output(&racy, 1, "o"), [0; 16].as_slice());
    let ordered = run(&[&shared_writers(true)], None, &[]).unwrap();
    assert!(ordered.races.is_empty(), "{:?}", ordered.races);
    assert_eq!(output(&ordered, 0, "o"), [9, 0, 0, 0].repeat(4).as_slice());
}

fn collective(kind: &str, n: i64, in_cols: i64, out_cols: i64) -> Module {
    let mut cc = inst(
        "cc",
        "CollectiveCompute",
        vec![ap("x", "uint16", json!([[in_cols, 1], [1, in_cols]]), vec![k(0), k(0)])],
        vec![ap(
            "y",
            "uint16",
            json!([[out_cols, 1], [1, out_cols]]),
            vec![k(0), k(0)],
        )],
    );
    let group: Vec<i64> = (0..n).collect();
    cc["cc_channel"] = json!({"kind": kind, "replica_groups": [group], "op": "add"});
    cc["recv_from_rank"] = json!({"kind": "ModuloKind", "numer": shard(n, 1, 1), "denom": n});
    let mut m = module(
        "cc_nc_symbolic",
        vec![
            set("x", "Input", "uint16", &[1, in_cols], "DRAM"),
            set("y", "Output", "uint16", &[1, out_cols], "DRAM"),
        ],
        vec![cc],
    );
    m.functions[0].shard_ids = vec![n];
    m
}

fn per_core_inputs(n: usize, cols: usize) -> Vec<SimInput> {
    (0..n)
        .map(|c| SimInput {
            core: c,
            function: "main".into(),
            set: "x".into(),
            bytes: (0..cols).flat_map(|i| ((c * 100 + i) as u16).to_le_bytes()).collect(),
        })
        .collect()
}

fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

#[test]
fn collectives_have_their_reference_meaning() {
    let n = 4usize;
    let inputs = per_core_inputs(n, 8);
    let ar = run(&[&collective("AllReduce", 4, 8, 8)], None, &inputs).unwrap();
    let want: Vec<u16> = (0..8).map(|i| (600 + 4 * i) as u16).collect();
    for c in 0..n {
        assert_eq!(u16s(output(&ar, c, "y")), want);
    }
    let rs = run(&[&collective("ReduceScatter", 4, 8, 2)], None, &inputs).unwrap();
    for c in 0..n {
        assert_eq!(u16s(output(&rs, c, "y")), want[2 * c..2 * c + 2]);
    }
    let ag = run(&[&collective("AllGather", 4, 8, 32)], None, &inputs).unwrap();
    let all: Vec<u16> = (0..n).flat_map(|c| (0..8).map(move |i| (c * 100 + i) as u16)).collect();
    assert_eq!(u16s(output(&ag, 3, "y")), all);
    let p = run(&[&collective("Permute", 4, 8, 8)], None, &inputs).unwrap();
    for c in 0..n {
        let from = (c + 1) % n;
        assert_eq!(
            u16s(output(&p, c, "y")),
            (0..8).map(|i| (from * 100 + i) as u16).collect::<Vec<_>>()
        );
    }
    let bad = run(&[&collective("AllGather", 4, 8, 8)], None, &inputs).unwrap_err();
    assert!(
        bad.to_string().contains("9401") && bad.to_string().contains("cc"),
        "{bad}"
    );
}

/// One instruction `name` (`opcode`) reading the uint8 Input `x` `[1, 8]`
/// through `src` (its ap and addrs) and writing all of the Output `y` `[1, 8]`.
fn x_to_y(name: &str, opcode: &str, src: (Value, [i64; 2])) -> Module {
    let (src_ap, [a0, a1]) = src;
    module(
        &format!("{name}_nc_symbolic"),
        vec![
            set("x", "Input", "uint8", &[1, 8], "DRAM"),
            set("y", "Output", "uint8", &[1, 8], "DRAM"),
        ],
        vec![inst(
            name,
            opcode,
            vec![ap("x", "uint8", src_ap, vec![k(a0), k(a1)])],
            vec![ap("y", "uint8", json!([[8, 1], [1, 8]]), vec![k(0), k(0)])],
        )],
    )
}

/// A `physical_ap` reads from its offset counted in elements (contract §3.6
/// since 2026-12-02): offset 8 of an int32 set is partition 1, bytes 32….
#[test]
fn a_physical_access_starts_at_its_offset_in_elements() {
    let src = json!({"kind": "physical_ap", "ap": [[8, 1], [1, 4]], "offset": 8,
                     "dtype": "int32", "memref": "x_loc", "memsetref": "x"});
    let m = module(
        "phys_nc_symbolic",
        vec![
            set("x", "Input", "int32", &[2, 8], "DRAM"),
            set("y", "Output", "int32", &[1, 4], "DRAM"),
        ],
        vec![inst(
            "copy",
            "DMACopy",
            vec![src],
            vec![ap("y", "int32", json!([[4, 1], [1, 4]]), vec![k(0), k(0)])],
        )],
    );
    let x: Vec<u8> = (0..64).collect();
    let inputs = [SimInput {
        core: 0,
        function: "main".into(),
        set: "x".into(),
        bytes: x.clone(),
    }];
    let r = run(&[&m], Some(1), &inputs).unwrap();
    assert_eq!(output(&r, 0, "y"), &x[32..48]);
}

#[test]
fn a_copy_of_unequal_counts_is_9401_naming_it() {
    let m = x_to_y("short", "DMACopy", (json!([[8, 1], [1, 4]]), [0, 0]));
    let e = run(&[&m], Some(1), &[]).unwrap_err().to_string();
    assert!(
        e.contains("9401") && e.contains("short") && e.contains("DMACopy"),
        "{e}"
    );
}

#[test]
fn an_access_out_of_bounds_is_9401_naming_instruction_and_set() {
    let m = x_to_y("far", "DMACopy", (json!([[8, 1], [1, 8]]), [0, 4]));
    let e = run(&[&m], Some(1), &[]).unwrap_err().to_string();
    assert!(e.contains("9401") && e.contains("far") && e.contains("set x"), "{e}");
}

#[test]
fn cores_at_different_sync_points_are_9402() {
    let m = module(
        "sync_nc_symbolic",
        vec![],
        vec![json!({"name": "cb", "opcode": "CoreBarrier", "id": 0,
                    "predicates": [{"expr": shard(2, 1, 0), "ge": false}]})],
    );
    let e = run(&[&m], Some(2), &[]).unwrap_err().to_string();
    assert!(e.contains("9402"), "{e}");
}

#[test]
fn inputs_for_unknown_or_non_input_sets_are_9403() {
    let m = halves(1);
    for (set, bytes) in [("nothing", 64), ("y", 64), ("x", 3)] {
        let e = run(
            &[&m],
            None,
            &[SimInput {
                core: 0,
                function: "main".into(),
                set: set.into(),
                bytes: vec![0; bytes],
            }],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("9403") && e.contains(set), "{e}");
    }
}

#[test]
fn memset_writes_its_immediate_in_its_dtype() {
    let m = module(
        "ms_nc_symbolic",
        vec![set("y", "Output", "bfloat16", &[1, 2], "DRAM")],
        vec![inst(
            "ms",
            "Memset",
            vec![json!({"kind": "imm_value", "dtype": "bfloat16", "value": 1.0})],
            vec![ap("y", "bfloat16", json!([[2, 1], [1, 2]]), vec![k(0), k(0)])],
        )],
    );
    let r = run(&[&m], Some(1), &[]).unwrap();
    assert_eq!(output(&r, 0, "y"), [0x80, 0x3f, 0x80, 0x3f]);
}

#[test]
fn resource_limits_are_errors_not_crashes() {
    // 2^60 repeats of one element: refused before any byte moves.
    let m = x_to_y("rep", "Activation", (json!([[0, 1i64 << 30], [0, 1i64 << 30]]), [0, 0]));
    let e = run(&[&m], Some(1), &[]).unwrap_err().to_string();
    assert!(e.contains("9401") && e.contains("rep"), "{e}");
    let e = run(&[&m], Some(1 << 40), &[]).unwrap_err().to_string();
    assert!(e.contains("9401"), "{e}");
}
