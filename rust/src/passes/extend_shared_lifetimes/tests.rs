//! Tests of extend_shared_lifetimes on hand-built kernels.

use serde_json::{json, Value};

use super::*;
use crate::bir::{dump_module, module_from_value, OpFields};
use crate::passes::lnc_verifier;
use crate::passes::tail_testkit::*;

fn code(e: Error) -> u32 {
    match e {
        Error::Neuron { code, .. } => code,
        other => panic!("not a NeuronAssertion: {other}"),
    }
}

fn shared(name: &'static str) -> Set {
    Set {
        shared: true,
        ..set(name, "DRAM", [128, 64])
    }
}

fn rows(set: &str, n: i64) -> Value {
    sap(set, &[[64, 128 / n], [1, 64]], vec![shard(n, 128 / n, 0), konst(0)])
}

fn noop(name: &str) -> Value {
    json!({"name": name, "opcode": "NoOp"})
}

/// Block names and instruction names of core `c`, block by block.
fn layout(m: &Module) -> Vec<(String, Vec<String>)> {
    m.functions[0]
        .basic_blocks
        .iter()
        .map(|b| {
            let v = b.instructions.iter().map(|i| i.name.to_string()).collect();
            (b.name.to_string(), v)
        })
        .collect()
}

fn barrier_ids(m: &Module) -> Vec<(String, i64)> {
    crate::passes::core_barriers::core_barriers(&m.functions)
        .iter()
        .map(|i| match i.op {
            OpFields::CoreBarrier { id, .. } => (i.name.to_string(), id.unwrap()),
            _ => unreachable!(),
        })
        .collect()
}

/// s0 written in b1 and read in b2, s1 written and read in b1; an Input
/// shared set is exempt; s2 is never touched.
fn kernel(n: i64) -> Module {
    let input = Set {
        kind: "Input",
        ..shared("inp")
    };
    module_blocks(
        &[
            shared("s0"),
            shared("s1"),
            input,
            shared("s2"),
            set("p", "DRAM", [128, 64]),
        ],
        vec![
            ("b0", vec![noop("n0"), dma("read_input", rows("inp", n), rows("p", n))]),
            (
                "b1",
                vec![
                    dma("w0", rows("p", n), rows("s0", n)),
                    dma("w1", rows("p", n), rows("s1", n)),
                    json!({"name": "cb_user", "opcode": "CoreBarrier", "id": 0, "cores": (0..n).collect::<Vec<_>>()}),
                    dma("r1", rows("s1", n), rows("p", n)),
                ],
            ),
            ("b2", vec![dma("r0", rows("s0", n), rows("p", n)), noop("n2")]),
        ],
    )
}

#[test]
fn each_touched_shared_location_is_bracketed_from_its_first_writing_block_to_its_last_block() {
    for n in [2usize, 4, 8] {
        let mut cores = split_n(kernel(n as i64), n);
        let out = extend_shared_lifetimes(&mut cores).unwrap();
        let got: Vec<(usize, &str, &str, &str)> = out
            .iter()
            .map(|e| (e.k, &*e.location, &*e.start_block, &*e.end_block))
            .collect();
        assert_eq!(got, [(0, "s0_loc", "b1", "b2"), (1, "s1_loc", "b1", "b1")]);
        for m in &cores {
            let l = layout(m);
            let names = |b: usize| l[b].1.iter().map(String::as_str).collect::<Vec<_>>();
            assert_eq!(l.len(), 3, "block count unchanged");
            assert_eq!(names(0), ["n0", "read_input"]);
            assert_eq!(
                names(1),
                [
                    "cb_sg0_start_0",
                    "cb_sg0_start_1",
                    "w0",
                    "w1",
                    "cb_user",
                    "r1",
                    "cb_sg0_end_1"
                ]
            );
            assert_eq!(names(2), ["r0", "n2", "cb_sg0_end_0"]);
            let ids: Vec<i64> = barrier_ids(m).into_iter().map(|x| x.1).collect();
            assert_eq!(ids, [0, 1, 2, 3, 4], "renumbered in program order");
        }
        let refs: Vec<&Module> = cores.iter().collect();
        lnc_verifier::verify_concretized(&refs, n).unwrap();
    }
}

#[test]
fn a_second_run_changes_nothing() {
    let mut cores = split_n(kernel(2), 2);
    extend_shared_lifetimes(&mut cores).unwrap();
    let once: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    extend_shared_lifetimes(&mut cores).unwrap();
    let twice: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    assert_eq!(once, twice);
}

#[test]
fn the_subgraph_id_names_the_barriers() {
    let mut m = kernel(2);
    m.attributes
        .get_or_insert_with(Default::default)
        .insert("subgraph_id".into(), json!(3));
    let mut cores = split_n(m, 2);
    extend_shared_lifetimes(&mut cores).unwrap();
    assert!(names(&cores[1]).contains(&"cb_sg3_end_0".to_string()));
}

#[test]
fn a_shared_location_first_read_is_live_into_the_entry_block_9202() {
    let m = module_blocks(
        &[shared("s0"), set("p", "DRAM", [128, 64])],
        vec![
            ("b0", vec![dma("r", rows("s0", 2), rows("p", 2))]),
            ("b1", vec![dma("w", rows("p", 2), rows("s0", 2))]),
        ],
    );
    let mut cores = split_n(m, 2);
    let before: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    assert_eq!(code(extend_shared_lifetimes(&mut cores).unwrap_err()), 9202);
    let after: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
    assert_eq!(before, after);
    // At a tie (one instruction reads and writes it first) the read counts first.
    let m = module_blocks(
        &[shared("s0")],
        vec![(
            "b0",
            vec![dma(
                "rw",
                rows("s0", 2),
                sap("s0", &[[64, 64], [1, 64]], vec![konst(64), konst(0)]),
            )],
        )],
    );
    let mut cores = split_n(m, 2);
    assert_eq!(code(extend_shared_lifetimes(&mut cores).unwrap_err()), 9202);
}

#[test]
fn an_access_in_a_loop_counts_at_the_loop_and_accumulates_count_as_writes() {
    let lp = json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 2, "step": 1},
                    "blocks": [{"name": "body", "instructions": [dma("r", rows("s0", 2), rows("p", 2))]}]});
    let mut acc = dma("w", rows("p", 2), rows("s0", 2));
    acc["accumulate"] = json!("add");
    let m = module_blocks(
        &[shared("s0"), set("p", "DRAM", [128, 64])],
        vec![("b0", vec![acc]), ("b1", vec![noop("n"), lp])],
    );
    let mut cores = split_n(m, 2);
    extend_shared_lifetimes(&mut cores).unwrap();
    let l = layout(&cores[0]);
    assert_eq!(l[0].1, ["cb_sg0_start_0", "w"]);
    assert_eq!(l[1].1, ["n", "l", "cb_sg0_end_0"]);
}

#[test]
fn blocks_that_differ_between_cores_are_9201() {
    let mut cores = split_n(kernel(2), 2);
    let mut v: Value = serde_json::from_slice(&dump_module(&cores[1], 2).unwrap()).unwrap();
    v["functions"][0]["basic_blocks"][2]["name"] = json!("other");
    cores[1] = module_from_value(v).unwrap();
    assert_eq!(code(extend_shared_lifetimes(&mut cores).unwrap_err()), 9201);
}

#[test]
fn a_user_instruction_with_a_bracket_name_elsewhere_is_9203() {
    let m = module_blocks(
        &[shared("s0"), set("p", "DRAM", [128, 64])],
        vec![("b0", vec![noop("cb_sg0_end_0"), dma("w", rows("p", 2), rows("s0", 2))])],
    );
    let mut cores = split_n(m, 2);
    assert_eq!(code(extend_shared_lifetimes(&mut cores).unwrap_err()), 9203);
}

#[test]
fn one_core_is_untouched_and_a_bad_cores_list_is_9006() {
    let mut one = vec![kernel(2)];
    let before = dump_module(&one[0], 2).unwrap();
    assert!(extend_shared_lifetimes(&mut one).unwrap().is_empty());
    assert_eq!(dump_module(&one[0], 2).unwrap(), before);
    let mut cores = split_n(kernel(2), 2);
    cores.swap(0, 1);
    assert_eq!(code(extend_shared_lifetimes(&mut cores).unwrap_err()), 9006);
}

#[test]
fn proxies_made_by_lowering_are_not_shared() {
    let (send, recv) = (shard_mod(2, 1, 1), shard_mod(2, 1, 1));
    let m = module(
        &[set("a", "DRAM", [128, 64]), set("b", "DRAM", [128, 64])],
        vec![cc("x", "SendRecv", rows("a", 2), rows("b", 2), send, recv)],
    );
    let mut cores = split_n(m, 2);
    crate::passes::lower_local_collectives::lower_local_collectives(&mut cores, &Default::default()).unwrap();
    assert!(extend_shared_lifetimes(&mut cores).unwrap().is_empty());
}

#[test]
fn a_subgraph_id_that_is_not_an_integer_of_at_least_zero_is_refused_not_read_as_0() {
    for bad in [json!("3"), json!(-1), json!(1.5), json!(null)] {
        let mut m = kernel(2);
        m.attributes
            .get_or_insert_with(Default::default)
            .insert("subgraph_id".into(), bad.clone());
        let mut cores = split_n(m, 2);
        let before: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
        match extend_shared_lifetimes(&mut cores) {
            Err(Error::BirJson { message, path }) => {
                assert_eq!(path, "$.attributes.subgraph_id");
                assert!(message.contains("subgraph_id must be an integer >= 0"), "{message}");
            }
            other => panic!("subgraph_id {bad}: expected a BirJsonError, got {other:?}"),
        }
        let after: Vec<Vec<u8>> = cores.iter().map(|m| dump_module(m, 2).unwrap()).collect();
        assert_eq!(before, after, "a refused kernel is left untouched");
    }
}
