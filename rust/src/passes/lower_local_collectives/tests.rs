//! Tests of lower_local_collectives on hand-built kernels: every lowering is
//! checked for the concretized verifier, for races involving a created
//! instruction (exact footprints, disjoint bands) and for meaning (the final
//! memory of the collective's reference semantics equals the lowering's).

use serde_json::{json, Value};

use super::*;
use crate::analysis::AccOp;
use crate::bir::{dump_module, Opcode};
use crate::passes::tail_testkit::*;

fn opts() -> LowerOptions {
    LowerOptions::default()
}

fn code(e: crate::Error) -> u32 {
    match e {
        crate::Error::Neuron { code, .. } => code,
        other => panic!("not a NeuronAssertion: {other}"),
    }
}

/// Lower `cores`, then check the verifier, races and meaning against the
/// reference semantics (`recv[c]` for SendRecv, empty for AllReduce).
fn lower_checked(cores: Vec<Module>, recv: &[usize], op: AccOp, o: &LowerOptions) -> Vec<Module> {
    let reference = simulate(&cores, recv, op);
    let before: Vec<Vec<String>> = cores.iter().map(names).collect();
    let mut lowered = cores;
    lower_local_collectives(&mut lowered, o).unwrap();
    let refs: Vec<&Module> = lowered.iter().collect();
    lnc_verifier::verify_concretized(&refs, refs.len()).unwrap();
    for ((a, ia), (b, ib)) in races(&lowered) {
        let created = |c: usize, i: &str| !before[c].iter().any(|x| x == i) || lowered_name(i);
        assert!(
            !created(a, &ia) && !created(b, &ib),
            "race {ia} (core {a}) / {ib} (core {b})"
        );
    }
    same_memory(&reference, &simulate(&lowered, recv, op)).unwrap();
    lowered
}

/// The instructions lowering reuses the collective's name for.
fn lowered_name(i: &str) -> bool {
    i == "x"
}

fn ring(n: i64) -> (Value, Value) {
    (shard_mod(n, 1, 1), shard_mod(n, 1, n - 1))
}

fn recv_ring(n: usize) -> Vec<usize> {
    (0..n).map(|c| (c + n - 1) % n).collect()
}

fn kinds(m: &Module) -> Vec<(String, Opcode)> {
    let mut v = Vec::new();
    m.functions[0].walk(&mut |i| v.push((i.name.to_string(), i.opcode)));
    v
}

fn has_set(m: &Module, name: &str) -> bool {
    m.functions[0].memory_location_set(name).is_some()
}

// ------------------------------------------------------------------ SendRecv

fn send_recv_sb(ins_set: &str, rows: i64) -> Module {
    let (send, recv) = ring(2);
    let ap = [[64, rows], [1, 64]];
    module(
        &[set("a", "SB", [128, 64]), set("b", "SB", [128, 64])],
        vec![cc(
            "x",
            "SendRecv",
            sap(ins_set, &ap, vec![konst(0), konst(0)]),
            sap("b", &ap, vec![konst(0), konst(0)]),
            send,
            recv,
        )],
    )
}

#[test]
fn send_recv_between_two_cores_sb_becomes_one_gpsimd_sb2sb_of_the_same_name() {
    let out = lower_checked(split_n(send_recv_sb("a", 128), 2), &[1, 0], AccOp::Add, &opts());
    for m in &out {
        let k = kinds(m);
        assert_eq!(
            k,
            [
                ("x_before".to_string(), Opcode::CORE_BARRIER),
                ("x".to_string(), Opcode::GPSIMD_SB2SB),
                ("x_after".to_string(), Opcode::CORE_BARRIER)
            ]
        );
    }
    // The receiver's SB location is written by the other core.
    let b = out[1].functions[0].memory_location("b_loc").unwrap();
    assert_eq!(b.written_by_another_core, Some(true));
}

#[test]
fn send_recv_over_the_bpp_option_goes_through_a_dram_stage() {
    let o = LowerOptions {
        sendrecv_to_gpsimd_max_bpp: 128,
    };
    let out = lower_checked(split_n(send_recv_sb("a", 128), 2), &[1, 0], AccOp::Add, &o);
    let k: Vec<String> = kinds(&out[0]).into_iter().map(|x| x.0).collect();
    assert_eq!(k, ["x_before", "x_send", "x_mid", "x", "x_after"]);
    assert!(has_set(&out[0], "x_stage") && has_set(&out[0], "x_stage_remote_1"));
    assert!(has_set(&out[1], "x_stage") && has_set(&out[1], "x_stage_remote_1"));
    // The gate measures the footprint, not the set: 64 rows of 256 B still pass at 256.
    let o = LowerOptions {
        sendrecv_to_gpsimd_max_bpp: 256,
    };
    let out = lower_checked(split_n(send_recv_sb("a", 64), 2), &[1, 0], AccOp::Add, &o);
    assert_eq!(kinds(&out[0])[1].1, Opcode::GPSIMD_SB2SB);
}

#[test]
fn send_recv_in_place_on_sb_is_staged_because_sb2sb_would_race() {
    let (send, recv) = ring(2);
    let ap = [[64, 128], [1, 64]];
    let m = module(
        &[set("a", "SB", [128, 64])],
        vec![cc(
            "x",
            "SendRecv",
            sap("a", &ap, vec![konst(0), konst(0)]),
            sap("a", &ap, vec![konst(0), konst(0)]),
            send,
            recv,
        )],
    );
    let out = lower_checked(split_n(m, 2), &[1, 0], AccOp::Add, &opts());
    assert!(kinds(&out[0]).iter().all(|k| k.1 != Opcode::GPSIMD_SB2SB));
    assert!(has_set(&out[0], "x_stage"));
}

fn dram_ring(n: i64, kind: &str) -> Module {
    let (send, recv) = ring(n);
    let rows = 128 / n;
    let ap = [[64, rows], [1, 64]];
    module(
        &[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])],
        vec![cc(
            "x",
            kind,
            sap("a", &ap, vec![shard(n, rows, 0), konst(0)]),
            sap("b", &ap, vec![shard(n, rows, 0), konst(0)]),
            send,
            recv,
        )],
    )
}

#[test]
fn send_recv_to_dram_writes_the_receiver_through_proxies_the_same_on_every_core() {
    for n in [2usize, 4, 8] {
        for kind in ["SendRecv", "SendRecvCCE"] {
            let out = lower_checked(
                split_n(dram_ring(n as i64, kind), n),
                &recv_ring(n),
                AccOp::Add,
                &opts(),
            );
            let proxies = |m: &Module| -> Vec<String> {
                m.functions[0]
                    .allocations
                    .iter()
                    .map(|s| s.name.to_string())
                    .filter(|s| s.contains("_remote_"))
                    .collect()
            };
            let want: Vec<String> = (0..n).map(|t| format!("b_remote_{t}")).collect();
            for (c, m) in out.iter().enumerate() {
                let mut got = proxies(m);
                got.sort();
                let mut w = want.clone();
                w.sort();
                assert_eq!(got, w, "N = {n} core {c}");
                let k = kinds(m);
                assert_eq!(k[1], ("x".to_string(), Opcode::DMA_COPY));
                let t = (c + 1) % n;
                assert_eq!(
                    m.functions[0].basic_blocks[0].instructions[1].outs[0].memsetref(),
                    Some(&*format!("b_remote_{t}"))
                );
                let b = m.functions[0].memory_location("b_loc").unwrap();
                assert_eq!(b.written_by_another_core, Some(true));
                let p = m.functions[0].memory_location(&format!("b_loc_remote_{t}")).unwrap();
                let rlt = p.remote_local_target.as_ref().unwrap();
                assert_eq!((&*rlt.name, rlt.core), ("b_loc", t as i64));
            }
        }
    }
}

#[test]
fn a_send_to_itself_is_a_local_copy() {
    let ap = [[64, 64], [1, 64]];
    let m = module(
        &[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])],
        vec![cc(
            "x",
            "SendRecv",
            sap("a", &ap, vec![shard(2, 64, 0), konst(0)]),
            sap("b", &ap, vec![shard(2, 64, 0), konst(0)]),
            shard(2, 1, 0),
            shard(2, 1, 0),
        )],
    );
    let out = lower_checked(split_n(m, 2), &[0, 1], AccOp::Add, &opts());
    assert!(!has_set(&out[0], "b_remote_0") && !has_set(&out[0], "b_remote_1"));
}

// ----------------------------------------------------------------- AllReduce

type Side = (&'static str, [i64; 2], Vec<[i64; 2]>);

fn all_reduce(n: i64, op: &str, ins: Side, outs: Side, ty_out: &'static str) -> Module {
    let mut c = cc(
        "x",
        "AllReduce",
        sap(ins.0, &ins.2, vec![konst(0), konst(0)]),
        sap(outs.0, &outs.2, vec![konst(0), konst(0)]),
        konst(0),
        konst(0),
    );
    c["cc_channel"]["op"] = json!(op);
    c["cc_channel"]["replica_groups"] = json!([(0..n).collect::<Vec<_>>()]);
    let mut sets = vec![set(ins.0, "DRAM", ins.1)];
    if outs.0 != ins.0 {
        sets.push(set(outs.0, ty_out, outs.1));
    }
    module(&sets, vec![c])
}

#[test]
fn all_reduce_is_reduce_scatter_barrier_all_gather_for_every_n_and_op() {
    for n in [2usize, 4, 8] {
        for (op, acc) in [("add", AccOp::Add), ("max", AccOp::Max), ("min", AccOp::Min)] {
            let ap = vec![[64, 128], [1, 64]];
            let m = all_reduce(n as i64, op, ("a", [128, 64], ap.clone()), ("b", [128, 64], ap), "DRAM");
            let out = lower_checked(split_n(m, n), &[], acc, &opts());
            let k: Vec<String> = kinds(&out[0]).into_iter().map(|x| x.0).collect();
            let mut want = vec!["x_before".to_string(), "x_rs_init".into(), "x_rs".into()];
            want.extend((1..n).map(|p| format!("x_rs_{p}")));
            want.push("x_ag".into());
            want.extend((1..n).map(|p| format!("x_ag_{p}")));
            want.push("x_after".into());
            assert_eq!(k, want, "N = {n}");
            // The reduce-scatter accumulates with the collective's op.
            let rs1 = &out[0].functions[0].basic_blocks[0].instructions[3];
            assert_eq!(crate::analysis::accumulate_op(rs1).unwrap(), Some(acc));
        }
    }
}

#[test]
fn all_reduce_in_place_is_direct_and_race_free() {
    let ap = vec![[64, 128], [1, 64]];
    let m = all_reduce(4, "add", ("a", [128, 64], ap.clone()), ("a", [128, 64], ap), "DRAM");
    let out = lower_checked(split_n(m, 4), &[], AccOp::Add, &opts());
    assert!(!has_set(&out[0], "x_stage"));
}

#[test]
fn all_reduce_into_sb_goes_through_a_dram_stage() {
    let ap = vec![[64, 128], [1, 64]];
    let m = all_reduce(2, "add", ("a", [128, 64], ap.clone()), ("b", [128, 64], ap), "SB");
    let out = lower_checked(split_n(m, 2), &[], AccOp::Add, &opts());
    assert!(has_set(&out[0], "x_stage") && has_set(&out[0], "x_stage_remote_1"));
    let k: Vec<String> = kinds(&out[1]).into_iter().map(|x| x.0).collect();
    assert_eq!(
        k,
        [
            "x_before",
            "x_rs_init",
            "x_rs",
            "x_rs_0",
            "x_ag",
            "x_ag_0",
            "x_mid",
            "x",
            "x_after"
        ]
    );
}

#[test]
fn all_reduce_pairs_elements_in_ap_order_whatever_the_shapes() {
    // ins 128×64 and outs 64×128 elements: the chunks are cut by flat index.
    let m = all_reduce(
        4,
        "add",
        ("a", [128, 64], vec![[64, 128], [1, 64]]),
        ("b", [64, 128], vec![[128, 64], [1, 128]]),
        "DRAM",
    );
    lower_checked(split_n(m, 4), &[], AccOp::Add, &opts());
}

#[test]
fn all_reduce_without_a_scatter_dim_is_9102() {
    let ap = vec![[2, 128], [1, 2]];
    let m = all_reduce(2, "add", ("a", [128, 2], ap.clone()), ("b", [128, 2], ap), "DRAM");
    let mut cores = split_n(m, 2);
    let before: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    assert_eq!(code(lower_local_collectives(&mut cores, &opts()).unwrap_err()), 9102);
    let after: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    assert_eq!(before, after, "a failed lowering leaves the cores as they were");
}

// ------------------------------------------------------------ other kinds

#[test]
fn kinds_from_reduce_scatter_on_stay_behind_a_fence_and_a_second_run_adds_nothing() {
    for kind in ["ReduceScatter", "AllGather", "Permute", "AllToAll"] {
        let mut cores = split_n(dram_ring(2, kind), 2);
        lower_local_collectives(&mut cores, &opts()).unwrap();
        for m in &cores {
            let k = kinds(m);
            assert_eq!(
                k,
                [
                    ("x_fence".to_string(), Opcode::CORE_BARRIER),
                    ("x".to_string(), Opcode::COLLECTIVE_COMPUTE)
                ]
            );
        }
        let once: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
        lower_local_collectives(&mut cores, &opts()).unwrap();
        let twice: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
        assert_eq!(once, twice, "{kind}");
    }
}

#[test]
fn one_core_is_untouched() {
    let m = dram_ring(2, "SendRecv");
    let mut cores = vec![m];
    let before = dump_module(&cores[0], 2).unwrap();
    assert!(lower_local_collectives(&mut cores, &opts()).unwrap().is_empty());
    assert_eq!(dump_module(&cores[0], 2).unwrap(), before);
}

// -------------------------------------------------------------------- loops

/// A loop `l` over `i` = 0…3 holding `body`.
fn loop4(body: Value) -> Value {
    json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1},
           "blocks": [{"name": "body", "instructions": [body]}]})
}

#[test]
fn collectives_in_loops_are_checked_instance_by_instance() {
    let (send, recv) = ring(2);
    let ap = [[64, 16], [1, 64]];
    let body = cc(
        "x",
        "SendRecv",
        sap("a", &ap, vec![iv("i", 16, 0), konst(0)]),
        sap("b", &ap, vec![iv("i", 16, 64), konst(0)]),
        send,
        recv,
    );
    let lp = loop4(body);
    let m = module(&[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])], vec![lp]);
    lower_checked(split_n(m, 2), &[1, 0], AccOp::Add, &opts());
    // In place inside the loop: the direct plan would race, the stage does not.
    let (send, recv) = ring(2);
    let body = cc(
        "x",
        "SendRecv",
        sap("a", &ap, vec![iv("i", 16, 0), konst(0)]),
        sap("a", &ap, vec![iv("i", 16, 0), konst(0)]),
        send,
        recv,
    );
    let lp = loop4(body);
    let m = module(&[set("a", "DRAM", [128, 64])], vec![lp]);
    let out = lower_checked(split_n(m, 2), &[1, 0], AccOp::Add, &opts());
    assert!(has_set(&out[0], "x_stage"));
}

// ------------------------------------------------------------------- errors

#[test]
fn a_copy_missing_on_some_core_is_9101() {
    let mut m = dram_ring(2, "SendRecv");
    let mut v: Value = serde_json::from_slice(&dump_module(&m, 2).unwrap()).unwrap();
    v["functions"][0]["basic_blocks"][0]["instructions"][0]["predicates"] =
        json!([{"expr": shard(2, 1, 0), "ge": false}]);
    m = crate::bir::module_from_value(v).unwrap();
    assert_eq!(lowering_error(m), 9101);
}

/// Sets `a` and `b`, both `[128, 64]` in DRAM.
fn ab_sets() -> Vec<Set> {
    vec![set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])]
}

/// A collective `x` of `kind` from all of `a` to `b` through `ap_out`.
fn ab_cc(kind: &str, ap_out: &[[i64; 2]], send: Value, recv: Value) -> Value {
    let zeros = || vec![konst(0), konst(0)];
    cc(
        "x",
        kind,
        sap("a", &[[64, 64], [1, 64]], zeros()),
        sap("b", ap_out, zeros()),
        send,
        recv,
    )
}

const WHOLE: [[i64; 2]; 2] = [[64, 64], [1, 64]];

/// The code lowering `m`, split into 2 cores, fails with.
fn lowering_error(m: Module) -> u32 {
    let mut cores = split_n(m, 2);
    code(lower_local_collectives(&mut cores, &opts()).unwrap_err())
}

#[test]
fn ranks_that_are_not_a_permutation_or_out_of_range_are_9103() {
    for (send, recv) in [(konst(0), konst(0)), (konst(5), konst(0)), (shard(2, 1, 0), konst(1))] {
        let m = module(&ab_sets(), vec![ab_cc("Permute", &WHOLE, send, recv)]);
        assert_eq!(lowering_error(m), 9103);
    }
}

#[test]
fn a_created_name_a_user_already_took_is_9104() {
    let (send, recv) = ring(2);
    let taken = json!({"name": "x_before", "opcode": "NoOp"});
    let m = module(&ab_sets(), vec![taken, ab_cc("SendRecv", &WHOLE, send, recv)]);
    assert_eq!(lowering_error(m), 9104);
    // A user set named like a proxy that is not one.
    let (send, recv) = ring(2);
    let mut sets = ab_sets();
    sets.push(set("b_remote_1", "DRAM", [1, 1]));
    let m = module(&sets, vec![ab_cc("SendRecv", &WHOLE, send, recv)]);
    assert_eq!(lowering_error(m), 9104);
}

#[test]
fn an_unknown_kind_or_op_or_unequal_counts_are_9105() {
    let (send, recv) = ring(2);
    let bogus = ab_cc("Bogus", &WHOLE, send.clone(), recv.clone());
    let mut bad_op = bogus.clone();
    bad_op["cc_channel"] = json!({"kind": "AllReduce", "op": "mul"});
    let uneven = ab_cc("SendRecv", &[[64, 32], [1, 64]], send, recv);
    for inst in [bogus, bad_op, uneven] {
        assert_eq!(lowering_error(module(&ab_sets(), vec![inst])), 9105);
    }
}

#[test]
fn cores_out_of_order_are_9006() {
    let mut cores = split_n(dram_ring(2, "SendRecv"), 2);
    cores.swap(0, 1);
    assert_eq!(code(lower_local_collectives(&mut cores, &opts()).unwrap_err()), 9006);
}

// ------------------------------------------------- the checks can fail

fn remove(cores: &mut [Module], name: &str) {
    for m in cores.iter_mut() {
        m.functions[0].basic_blocks[0].instructions.retain(|i| &*i.name != name);
        crate::passes::core_barriers::renumber_core_barriers(m);
    }
}

#[test]
fn without_its_middle_barrier_an_all_reduce_races_and_computes_something_else() {
    let ap = vec![[64, 128], [1, 64]];
    let m = all_reduce(2, "add", ("a", [128, 64], ap.clone()), ("b", [128, 64], ap), "DRAM");
    let cores = split_n(m, 2);
    let reference = simulate(&cores, &[], AccOp::Add);
    let mut lowered = cores.clone();
    lower_local_collectives(&mut lowered, &opts()).unwrap();
    assert!(races(&lowered).is_empty());
    remove(&mut lowered, "x_ag");
    let r = races(&lowered);
    assert!(
        r.iter()
            .any(|((_, a), (_, b))| a.starts_with("x_") && b.starts_with("x_")),
        "{r:?}"
    );
    // Without the barrier the simulator still runs each core to the next
    // barrier in core order; core 0 gathers before core 1 has reduced.
    assert!(same_memory(&reference, &simulate(&lowered, &[], AccOp::Add)).is_err());
}

#[test]
fn the_reference_semantics_tell_the_ranks_apart() {
    let cores = split_n(dram_ring(4, "SendRecv"), 4);
    let a = simulate(&cores, &recv_ring(4), AccOp::Add);
    let b = simulate(&cores, &[1, 2, 3, 0], AccOp::Add);
    assert!(same_memory(&a, &b).is_err());
}

// ---------------------------------------------------------- physical APs

fn pap(loc: &str, set: Option<&str>, ap: &[[i64; 2]], offset: i64) -> Value {
    let mut v = json!({"kind": "physical_ap", "ap": ap, "offset": offset, "memref": loc, "dtype": "float32"});
    if let Some(s) = set {
        v["memsetref"] = json!(s);
    }
    v
}

#[test]
fn physical_access_patterns_are_chunked_and_proxied_by_location() {
    // AllReduce over physical APs: chunks move the offset (in elements).
    let ap = [[64, 128], [1, 64]];
    let mut x = cc(
        "x",
        "AllReduce",
        pap("a_loc", Some("a"), &ap, 0),
        pap("b_loc", Some("b"), &ap, 0),
        konst(0),
        konst(0),
    );
    x["cc_channel"]["replica_groups"] = json!([[0, 1, 2, 3]]);
    let m = module(&[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])], vec![x]);
    let out = lower_checked(split_n(m, 4), &[], AccOp::Add, &opts());
    // The reduce-scatter chunks are 16 of the 64 columns: their offsets are
    // 16·k elements (as bytes they would be 64·k).
    let mut offsets = std::collections::BTreeSet::new();
    for i in &out[0].functions[0].basic_blocks[0].instructions {
        for a in i.ins.iter().chain(&i.outs) {
            if let crate::bir::Argument::Physical(p) = a {
                offsets.insert(p.offset.unwrap_or(0));
            }
        }
    }
    assert_eq!(
        offsets,
        [0, 16, 32, 48].into_iter().collect(),
        "chunk offsets in elements"
    );
    // SendRecv whose output names only its location: the proxy is found by location.
    let (send, recv) = ring(2);
    let half = [[64, 64], [1, 64]];
    let x = cc(
        "x",
        "SendRecv",
        pap("a_loc", None, &half, 0),
        pap("b_loc", None, &half, 64 * 64),
        send,
        recv,
    );
    let m = module(&[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])], vec![x]);
    let out = lower_checked(split_n(m, 2), &[1, 0], AccOp::Add, &opts());
    let dst = &out[0].functions[0].basic_blocks[0].instructions[1].outs[0];
    match dst {
        crate::bir::Argument::Physical(p) => assert_eq!(p.memref.as_deref(), Some("b_loc_remote_1")),
        other => panic!("{other:?}"),
    }
}

// ----------------------------------------------------------- shared sets

#[test]
fn outputs_in_shared_dram_need_no_proxy() {
    let shared_b = Set {
        shared: true,
        ..set("b", "DRAM", [128, 64])
    };
    // Each core receives into its own rows of a shared set.
    let (send, recv) = ring(2);
    let ap = [[64, 64], [1, 64]];
    let x = cc(
        "x",
        "SendRecv",
        sap("a", &ap, vec![shard(2, 64, 0), konst(0)]),
        sap("b", &ap, vec![shard(2, 64, 0), konst(0)]),
        send,
        recv,
    );
    let m = module(&[set("a", "DRAM", [128, 64]), shared_b], vec![x]);
    let out = lower_checked(split_n(m, 2), &[1, 0], AccOp::Add, &opts());
    assert!(!has_set(&out[0], "b_remote_1"));
    // An AllReduce whose every core writes the same shared bytes.
    let shared_b = Set {
        shared: true,
        ..set("b", "DRAM", [128, 64])
    };
    let ap = [[64, 128], [1, 64]];
    let mut x = cc(
        "x",
        "AllReduce",
        sap("a", &ap, vec![konst(0), konst(0)]),
        sap("b", &ap, vec![konst(0), konst(0)]),
        konst(0),
        konst(0),
    );
    x["cc_channel"]["replica_groups"] = json!([[0, 1]]);
    let m = module(&[set("a", "DRAM", [128, 64]), shared_b], vec![x]);
    lower_checked(split_n(m, 2), &[], AccOp::Add, &opts());
}
