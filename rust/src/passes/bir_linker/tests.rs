use serde_json::json;

use super::*;
use crate::bir::{dump_module, load_module, module_from_value};
use crate::gen::{generate_module, GenOptions};
use crate::passes::lnc_splitter::{split, SplitOptions};
use crate::passes::{birverifier, expand_replication};

fn cores_of(seed: u64, instructions: usize, n: usize) -> Vec<Module> {
    let mut m = generate_module(&GenOptions {
        seed,
        instructions,
        lnc: n as i64,
        ..GenOptions::default()
    })
    .unwrap();
    expand_replication::expand_replication(&mut m).unwrap();
    split(vec![m], &SplitOptions::new(n)).unwrap()
}

fn refs(v: &[Module]) -> Vec<&Module> {
    v.iter().collect()
}

fn bytes(m: &Module) -> Vec<u8> {
    dump_module(m, 2).unwrap()
}

fn code(e: Error) -> u32 {
    match e {
        Error::Neuron { code, .. } => code,
        other => panic!("not a NeuronAssertion: {other:?}"),
    }
}

#[test]
fn unlink_of_link_gives_the_cores_bytes_back() {
    for n in [1, 2, 4, 8] {
        for seed in 0..4 {
            let cores = cores_of(seed, 600, n);
            let linked = link(&refs(&cores)).unwrap();
            let back = unlink(&linked).unwrap();
            assert_eq!(back.len(), n);
            for (a, b) in cores.iter().zip(&back) {
                assert_eq!(bytes(a), bytes(b), "n={n} seed={seed} core {}", a.name);
            }
        }
    }
}

#[test]
fn unlink_after_a_file_round_trip_of_the_linked_module_is_exact() {
    let cores = cores_of(3, 800, 2);
    let linked = link(&refs(&cores)).unwrap();
    let reloaded = load_module(&bytes(&linked)).unwrap();
    assert_eq!(bytes(&reloaded), bytes(&linked));
    for (a, b) in cores.iter().zip(unlink(&reloaded).unwrap()) {
        assert_eq!(bytes(a), bytes(&b));
    }
}

#[test]
fn linked_module_has_the_contract_layout() {
    let cores = cores_of(5, 400, 2);
    let linked = link(&refs(&cores)).unwrap();
    assert_eq!(linked.name, linked_name(&cores[0].name));
    assert!(linked.name.ends_with("/sgLnk"));
    assert_eq!(linked.neuron_core_id(), None);
    assert_eq!(linked.attributes.as_ref().unwrap()["lnc"], json!(2));
    let names: Vec<&str> = linked.functions.iter().map(|f| &*f.name).collect();
    assert_eq!(names[0], "main");
    let per_core: Vec<String> = cores[0].functions.iter().map(|f| format!("nc00.{}", f.name)).collect();
    assert_eq!(
        &names[1..=per_core.len()],
        per_core.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let main = &linked.functions[0];
    assert_eq!(main.basic_blocks.len(), 1);
    assert_eq!(&*main.basic_blocks[0].name, "dispatch");
    for (c, call) in main.basic_blocks[0].instructions.iter().enumerate() {
        assert_eq!(*call.name, *format!("call_def_{c}_instance_0"));
        assert_eq!(call.opcode, Opcode::CALL);
        assert_eq!(
            call.op,
            OpFields::Call {
                callee: Some(Arc::from(format!("nc{c:02}.main"))),
                core: Some(c as i64)
            }
        );
    }
    for c in 0..2 {
        let f = linked.function(&format!("nc{c:02}.main")).unwrap();
        let first = &f.basic_blocks[0].instructions[0];
        assert_eq!(
            (&*first.name, first.opcode),
            (&*format!("I-SQI-{c}"), Opcode::SWITCH_QUEUE_INSTANCE)
        );
        let last = &f.basic_blocks.last().unwrap().instructions;
        let (cb, ret) = (&last[last.len() - 2], &last[last.len() - 1]);
        assert_eq!((&*cb.name, cb.opcode), ("cb_return", Opcode::CORE_BARRIER));
        assert!(matches!(&cb.op, OpFields::CoreBarrier { cores: Some(v), local_id: None, .. } if *v == vec![0, 1]));
        assert_eq!((&*ret.name, ret.opcode), (&*format!("return_nc{c:02}"), Opcode::RETURN));
    }
    let entries = linked.extra.as_ref().unwrap()["cores"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["name"], json!(cores[1].name));
    assert_eq!(entries[1]["attributes"]["neuron_core_id"], json!(1));
    birverifier::verify_module(&linked, 1).unwrap();
}

/// Every CoreBarrier, in function order (the order the verifier reads).
fn barriers(m: &Module) -> Vec<(String, Option<i64>, Option<i64>)> {
    let mut v = Vec::new();
    for f in &m.functions {
        f.walk(&mut |i| {
            if let OpFields::CoreBarrier { id, local_id, .. } = &i.op {
                v.push((format!("{}:{}", f.name, i.name), *id, local_id.as_deref().copied()));
            }
        });
    }
    v
}

#[test]
fn barriers_are_numbered_densely_over_the_module_keeping_local_ids() {
    let cores = cores_of(11, 1500, 4);
    let linked = link(&refs(&cores)).unwrap();
    let all = barriers(&linked);
    let ids: Vec<i64> = all.iter().map(|b| b.1.unwrap()).collect();
    assert_eq!(ids, (0..all.len() as i64).collect::<Vec<_>>());
    let per_core = barriers(&cores[0]).len();
    assert!(per_core > 0, "the generated module has barriers");
    assert_eq!(all.len(), 4 * (per_core + 1));
    for (c, core) in cores.iter().enumerate() {
        let tag = format!("nc{c:02}.");
        let local: Vec<Option<i64>> = all
            .iter()
            .filter(|b| b.0.starts_with(&tag) && !b.0.ends_with(":cb_return"))
            .map(|b| b.2)
            .collect();
        let own: Vec<Option<i64>> = barriers(core).iter().map(|b| b.1).collect();
        assert_eq!(local, own);
    }
}

fn shared_core(c: i64, extra_set_key: bool) -> serde_json::Value {
    let mut set = json!({"name": "buf", "kind": "Internal", "dtype": "float32", "tensor_shape": [4, 4],
        "addr_space": "Shared", "locations": [{"name": "buf_dram", "type": "DRAM", "addr": 4096}]});
    if extra_set_key {
        set["alias_of"] = json!("x");
    }
    json!({
        "version": 2, "name": format!("k_nc{c:02}"), "arch": "trn2", "top_extra": {"c": c},
        "attributes": {"neuron_core_id": c, "subgraph_id": 0},
        "functions": [{"name": "main", "fn_extra": 1,
            "allocations": [
                set,
                {"name": "x", "kind": "Input", "dtype": "bfloat16", "tensor_shape": [128, 8], "set_extra": true,
                 "locations": [{"name": "x_dram", "type": "DRAM", "addr": 1024 * (c + 1), "loc_extra": [1]}]},
                {"name": "y", "kind": "Output", "dtype": "float32", "tensor_shape": [128, 8], "locations": []}],
            "basic_blocks": [{"name": "bb0", "block_extra": "b", "instructions": [
                {"name": "load", "opcode": "DMACopy", "inst_extra": {"k": 1},
                 "ins": [{"kind": "symbolic_ap", "ap": [[8, 128], [1, 8]], "memsetref": "x", "arg_extra": 2,
                          "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0},
                                    {"kind": "AffExprKind", "terms": [], "c": c}]}], "outs": []},
                {"name": "cb0", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]}
            ]}]}]
    })
}

fn shared_cores() -> Vec<Module> {
    (0..2)
        .map(|c| module_from_value(shared_core(c, false)).unwrap())
        .collect()
}

#[test]
fn shared_sets_are_unified_in_main_and_aliased_by_every_core() {
    let cores = shared_cores();
    let linked = link(&refs(&cores)).unwrap();
    let main = linked.function("main").unwrap();
    let names: Vec<&str> = main.allocations.iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["main.buf"]);
    assert_eq!(&*main.allocations[0].locations[0].name, "buf_dram");
    for c in 0..2 {
        let f = linked.function(&format!("nc{c:02}.main")).unwrap();
        let buf = f.memory_location_set("buf").unwrap();
        assert_eq!(buf.extra.as_ref().unwrap()[ALIAS_OF], json!("main.buf"));
        assert!(f
            .memory_location_set("x")
            .unwrap()
            .extra
            .as_ref()
            .unwrap()
            .get(ALIAS_OF)
            .is_none());
    }
    assert_eq!(linked.name, "k/sgLnk");
    assert_eq!(linked.attributes.as_ref().unwrap()["subgraph_id"], json!(0));
}

#[test]
fn unknown_keys_survive_link_and_unlink() {
    let cores = shared_cores();
    let linked = link(&refs(&cores)).unwrap();
    let text = String::from_utf8(bytes(&linked)).unwrap();
    for key in [
        "fn_extra",
        "set_extra",
        "loc_extra",
        "block_extra",
        "inst_extra",
        "arg_extra",
    ] {
        assert!(text.contains(key), "{key} in the linked module");
    }
    assert!(text.contains("\"top_extra\":{\"c\":1}"));
    for (a, b) in cores.iter().zip(unlink(&linked).unwrap()) {
        assert_eq!(bytes(a), bytes(&b));
    }
}

#[test]
fn tensor_map_lists_inputs_and_outputs_per_core() {
    let linked = link(&refs(&shared_cores())).unwrap();
    let tm = tensor_map(&linked).unwrap();
    assert_eq!(
        tm,
        json!({
            "main.x": {"kind": "Input", "dtype": "bfloat16", "shape": [128, 8], "cores": [
                {"core": 0, "location": "x_dram", "addr": 1024},
                {"core": 1, "location": "x_dram", "addr": 2048}]},
            "main.y": {"kind": "Output", "dtype": "float32", "shape": [128, 8], "cores": [
                {"core": 0, "location": null, "addr": null},
                {"core": 1, "location": null, "addr": null}]}
        })
    );
}

/// Two cores whose AffExpr terms are interned in opposite orders: the term
/// order each core writes must survive (no node is shared across cores).
#[test]
fn term_order_of_each_core_survives() {
    let term = |kind: serde_json::Value| json!({"idx": kind, "coeff": 1});
    let iv = json!({"kind": "AffIVKind", "axis": "i"});
    let reg = json!({"kind": "IntRuntimeValueKind", "regref": "r0"});
    let core = |c: i64, first: &serde_json::Value, second: &serde_json::Value| {
        json!({"name": format!("k_nc{c:02}"), "attributes": {"neuron_core_id": c},
          "functions": [{"name": "main", "registers": ["r0"],
            "allocations": [{"name": "t", "dtype": "float32", "tensor_shape": [4, 64], "locations": []}],
            "basic_blocks": [{"name": "b", "instructions": [
              {"name": "l", "opcode": "Loop", "axis": {"name": "i", "ub": 4}, "blocks": [{"name": "body", "instructions": [
                {"name": "w", "opcode": "DMACopy", "outs": [{"kind": "symbolic_ap", "ap": [[64, 4], [1, 8]], "memsetref": "t",
                  "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0},
                            {"kind": "AffExprKind", "terms": [term(first.clone()), term(second.clone())], "c": 0}]}]}]}]}]}]}]})
    };
    let cores = vec![
        module_from_value(core(0, &reg, &iv)).unwrap(),
        module_from_value(core(1, &iv, &reg)).unwrap(),
    ];
    let (b0, b1) = (bytes(&cores[0]), bytes(&cores[1]));
    assert_ne!(b0.len(), 0);
    let back = unlink(&link(&refs(&cores)).unwrap()).unwrap();
    assert_eq!(bytes(&back[0]), b0);
    assert_eq!(bytes(&back[1]), b1);
}

#[test]
fn single_core_links_with_one_call() {
    let cores = cores_of(2, 300, 1);
    assert_eq!(cores[0].neuron_core_id(), None);
    let linked = link(&refs(&cores)).unwrap();
    let calls = &linked.functions[0].basic_blocks[0].instructions;
    assert_eq!(calls.len(), 1);
    assert_eq!(&*calls[0].name, "call_def_0_instance_0");
    assert_eq!(linked.attributes.as_ref().unwrap()["lnc"], json!(1));
    assert_eq!(bytes(&unlink(&linked).unwrap()[0]), bytes(&cores[0]));
}

/// A lone core without `neuron_core_id` stays symbolic through unlink (no
/// implied core 0: the simulator binds its ShardId); each of N ≥ 2 cores
/// is implied by its place.
#[test]
fn unlink_implies_core_ids_only_for_two_or_more_cores() {
    let one = cores_of(2, 300, 1);
    let back = unlink(&link(&refs(&one)).unwrap()).unwrap();
    assert_eq!(back[0].neuron_core_id(), None);
    let two = cores_of(2, 300, 2);
    let back = unlink(&link(&refs(&two)).unwrap()).unwrap();
    let ids: Vec<Option<i64>> = back.iter().map(|m| m.implied_core).collect();
    assert_eq!(ids, [Some(0), Some(1)]);
}

#[test]
fn cores_out_of_order_missing_or_duplicated_are_9006() {
    let cores = cores_of(1, 200, 4);
    let swapped = vec![&cores[1], &cores[0], &cores[2], &cores[3]];
    let e = link(&swapped).unwrap_err();
    assert!(e.to_string().contains("cores[0]"), "{e}");
    assert_eq!(code(e), BAD_CORES);
    let dup = vec![&cores[0], &cores[0], &cores[2], &cores[3]];
    let msg = link(&dup).unwrap_err().to_string();
    assert!(
        msg.contains("core 0 is given 2 times") && msg.contains("core 1 is missing"),
        "{msg}"
    );
    let e = link(&[&cores[0], &cores[1], &cores[2]]).unwrap_err();
    assert!(e.to_string().contains("synchronizes core 3"), "{e}");
    assert_eq!(code(e), BAD_CORES);
    assert_eq!(code(link(&[&cores[1]]).unwrap_err()), BAD_CORES);
    assert_eq!(code(link(&[]).unwrap_err()), BAD_CORES);
}

#[test]
fn cores_of_different_kernels_are_9006_naming_both() {
    let a = cores_of(1, 200, 2);
    let mut b = cores_of(1, 200, 2);
    b[1].name = "other_nc01".into();
    let e = link(&[&a[0], &b[1]]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("different kernels") && msg.contains("other_nc01"), "{msg}");
    assert_eq!(code(e), BAD_CORES);
}

#[test]
fn cores_failing_the_concretized_verifier_are_refused_with_its_error() {
    let mut cores = shared_cores();
    cores[1].functions[0].basic_blocks[0].instructions.pop();
    assert_eq!(code(link(&refs(&cores)).unwrap_err()), 1187);
}

#[test]
fn names_and_keys_link_inserts_must_be_free_9502() {
    let mut cores = shared_cores();
    cores[1].functions[0].basic_blocks[0].instructions[0].name = Arc::from("I-SQI-1");
    let e = link(&refs(&cores)).unwrap_err();
    assert!(e.to_string().contains("I-SQI-1"));
    assert_eq!(code(e), NAME_COLLISION);

    let mut cores = shared_cores();
    for c in &mut cores {
        c.functions[0].basic_blocks[0].instructions[0].name = Arc::from("cb_return");
    }
    assert_eq!(code(link(&refs(&cores)).unwrap_err()), NAME_COLLISION);

    let cores: Vec<Module> = (0..2)
        .map(|c| module_from_value(shared_core(c, true)).unwrap())
        .collect();
    assert!(link(&refs(&cores)).unwrap_err().to_string().contains("alias_of"));

    let mut cores = shared_cores();
    for c in &mut cores {
        if let OpFields::CoreBarrier { local_id, .. } = &mut c.functions[0].basic_blocks[0].instructions[1].op {
            *local_id = Some(Box::new(0));
        }
    }
    assert_eq!(code(link(&refs(&cores)).unwrap_err()), NAME_COLLISION);

    // No function at all: no entry function to hold what link inserts.
    let mut cores = shared_cores();
    cores[1].functions.clear();
    let e = link(&refs(&cores)).unwrap_err();
    assert!(e.to_string().contains("no function"), "{e}");
    assert_eq!(code(e), NAME_COLLISION);
}

/// Contract §1.7: a core without `main` has its first function as its entry
/// function (the compiler's `sg0000`); dispatch calls it, unlink gives it back.
#[test]
fn the_entry_function_is_main_else_the_first() {
    let mut cores = shared_cores();
    for c in &mut cores {
        c.functions[0].name = Arc::from("sg0000");
    }
    let linked = link(&refs(&cores)).expect("links");
    let dispatch = &linked.functions[0].basic_blocks[0].instructions;
    assert!(matches!(&dispatch[1].op, OpFields::Call { callee: Some(c), .. } if &**c == "nc01.sg0000"));
    let back = unlink(&linked).expect("unlinks");
    assert_eq!(&*back[1].functions[0].name, "sg0000");
    // Entry functions of different names on two cores are refused.
    let mut cores = shared_cores();
    cores[1].functions[0].name = Arc::from("sg0000");
    assert_eq!(code(link(&refs(&cores)).unwrap_err()), NAME_COLLISION);
}

#[test]
fn unlink_refuses_a_module_link_did_not_make_9501() {
    let cores = shared_cores();
    assert_eq!(code(unlink(&cores[0]).unwrap_err()), NOT_LINKED);
    let mut symbolic = cores[0].clone();
    symbolic.attributes = None;
    assert_eq!(code(unlink(&symbolic).unwrap_err()), NOT_LINKED);
    assert_eq!(code(tensor_map(&symbolic).unwrap_err()), NOT_LINKED);

    let linked = link(&refs(&cores)).unwrap();
    let mut tampered = linked.clone();
    tampered.functions[0].basic_blocks[0].instructions.pop();
    assert_eq!(code(unlink(&tampered).unwrap_err()), NOT_LINKED);
    let mut tampered = linked.clone();
    tampered.functions[1].basic_blocks[0].instructions.remove(0);
    assert_eq!(code(unlink(&tampered).unwrap_err()), NOT_LINKED);
    let mut tampered = linked.clone();
    tampered.functions[2].name = Arc::from("main2");
    assert_eq!(code(unlink(&tampered).unwrap_err()), NOT_LINKED);
    let mut tampered = linked;
    tampered.extra = None;
    assert_eq!(code(unlink(&tampered).unwrap_err()), NOT_LINKED);
}

#[test]
fn link_does_not_modify_the_cores() {
    let cores = cores_of(4, 500, 2);
    let before: Vec<Vec<u8>> = cores.iter().map(bytes).collect();
    link(&refs(&cores)).unwrap();
    let after: Vec<Vec<u8>> = cores.iter().map(bytes).collect();
    assert_eq!(before, after);
}

#[test]
fn kernel_base_removes_the_tag_and_one_separator() {
    assert_eq!(kernel_base("k_nc00", 0), "k");
    assert_eq!(kernel_base("k-nc00-fwd", 0), "k-fwd");
    assert_eq!(kernel_base("k.nc00", 0), "k");
    assert_eq!(kernel_base("nc00", 0), "");
    assert_eq!(kernel_base("k_nc001_nc00", 0), "k_nc001");
    assert_eq!(kernel_base("k_nc_symbolic", 0), "k_nc_symbolic");
    assert_eq!(kernel_base("k__nc03", 3), "k_");
    assert_eq!(linked_name("model_nc00_x"), "model_x/sgLnk");
}

#[test]
fn call_return_and_switch_queue_instance_round_trip() {
    let v = json!({"version": 2, "name": "m", "functions": [{"name": "main", "allocations": [], "basic_blocks": [
        {"name": "b", "instructions": [
            {"name": "s", "opcode": "SwitchQueueInstance", "engine": "SP", "ins": [], "outs": [], "q": 1},
            {"name": "c", "opcode": "Call", "callee": "f", "core": 3, "ins": [], "outs": []},
            {"name": "cb", "opcode": "CoreBarrier", "id": 4, "cores": [], "local_id": 0, "ins": [], "outs": []},
            {"name": "r", "opcode": "Return", "ins": [], "outs": []}]}]}]});
    let m = module_from_value(v).unwrap();
    let i = &m.functions[0].basic_blocks[0].instructions;
    assert_eq!(
        i[1].op,
        OpFields::Call {
            callee: Some(Arc::from("f")),
            core: Some(3)
        }
    );
    assert!(matches!(&i[2].op, OpFields::CoreBarrier { local_id: Some(l), .. } if **l == 0));
    let a = bytes(&m);
    assert_eq!(bytes(&load_module(&a).unwrap()), a);
    let text = String::from_utf8(a).unwrap();
    assert!(text.contains(r#""opcode":"Call","callee":"f","core":3"#), "{text}");
    assert!(text.contains(r#""local_id":0"#));
    let bad = json!({"version": 2, "name": "m", "functions": [{"name": "main", "allocations": [], "basic_blocks": [
        {"name": "b", "instructions": [{"name": "c", "opcode": "Call", "core": "x"}]}]}]});
    assert!(matches!(module_from_value(bad), Err(Error::BirJson { .. })));
}

/// The two ways `unlink` copies a core's expressions (a shifted slice, a
/// table of the reached nodes) give the same bytes.
#[test]
fn slice_and_table_extraction_write_the_same_blocks() {
    let cores = cores_of(9, 3000, 4);
    let linked = link(&refs(&cores)).unwrap();
    for c in 0..4 {
        let tag = format!("nc{c:02}.");
        let fns: Vec<&Function> = linked.functions.iter().filter(|f| f.name.starts_with(&tag)).collect();
        let (sctx, smap) = ids::extract_context(&linked.ctx, &fns, usize::MAX).unwrap();
        let (tctx, tmap) = ids::extract_context(&linked.ctx, &fns, 0).unwrap();
        assert_eq!(smap.is_identity(), c == 0);
        assert!(tctx.len() <= sctx.len());
        for f in &fns {
            for b in &f.basic_blocks {
                let a = crate::bir::dump::block_to_value(&sctx, &ids::copy_block(b, &smap, ids::Barriers::Keep), 2)
                    .unwrap();
                let t = crate::bir::dump::block_to_value(&tctx, &ids::copy_block(b, &tmap, ids::Barriers::Keep), 2)
                    .unwrap();
                let orig = crate::bir::dump::block_to_value(&linked.ctx, b, 2).unwrap();
                assert_eq!(a, t);
                assert_eq!(a, orig);
            }
        }
    }
}

/// `link` marks each core's range of the linked arena, consecutive and
/// covering it; copying a core through its mark writes what the walk-based
/// extraction writes, and no id of the core falls outside.
#[test]
fn marked_ranges_cover_the_arena_and_copy_like_the_walk() {
    let cores = cores_of(9, 3000, 4);
    let linked = link(&refs(&cores)).unwrap();
    let segments = linked.ctx.appended();
    assert_eq!(segments.len(), 4);
    assert_eq!(segments[0].lo, 0);
    assert_eq!(segments[3].hi as usize, linked.ctx.len());
    for (c, w) in segments.windows(2).enumerate() {
        assert_eq!(w[0].hi, w[1].lo, "core {c}");
        assert_eq!(w[0].ahi, w[1].alo, "core {c}");
    }
    for (c, core) in cores.iter().enumerate() {
        let tag = format!("nc{c:02}.");
        let fns: Vec<&Function> = linked.functions.iter().filter(|f| f.name.starts_with(&tag)).collect();
        let (mctx, mmap) = ids::marked_context(&linked.ctx, c, 4).unwrap();
        assert_eq!(mctx.len(), core.ctx.len());
        let (sctx, smap) = ids::extract_context(&linked.ctx, &fns, usize::MAX).unwrap();
        for f in &fns {
            for b in &f.basic_blocks {
                let m = crate::bir::dump::block_to_value(&mctx, &ids::copy_block(b, &mmap, ids::Barriers::Keep), 2);
                let s = crate::bir::dump::block_to_value(&sctx, &ids::copy_block(b, &smap, ids::Barriers::Keep), 2);
                assert_eq!(m.unwrap(), s.unwrap());
            }
        }
        assert!(!mmap.missed(), "core {c}");
    }
}

/// A linked module changed in memory so that a core refers to an expression
/// outside its marked range is still unlinked exactly: the mark is dropped
/// for that core and its reached expressions are copied, as for the same
/// module without marks.
#[test]
fn a_core_leaving_its_marked_range_is_unlinked_like_an_unmarked_module() {
    let cores = cores_of(5, 1500, 2);
    let mut linked = link(&refs(&cores)).unwrap();
    let foreign = linked.ctx.appended()[0].lo;
    let mut changed = false;
    for f in linked.functions.iter_mut().filter(|f| f.name.starts_with("nc01.")) {
        for b in &mut f.basic_blocks {
            for i in &mut b.instructions {
                for a in i.arguments_mut() {
                    if let crate::bir::Argument::Symbolic(s) = a {
                        if let Some(e) = s.addrs.first_mut().filter(|_| !changed) {
                            *e = crate::pelican::ExprId(foreign);
                            changed = true;
                        }
                    }
                }
            }
        }
    }
    assert!(changed);
    // The same module with the same ids and no marks.
    let mut unmarked = linked.clone();
    unmarked.ctx = crate::pelican::Context::new();
    ids::append_context(&mut unmarked.ctx, &linked.ctx).unwrap();
    assert!(unmarked.ctx.appended().is_empty());
    let marked = unlink(&linked).unwrap();
    let walked = unlink(&unmarked).unwrap();
    for (a, b) in marked.iter().zip(&walked) {
        assert_eq!(bytes(a), bytes(b), "core {}", a.name);
    }
    assert_eq!(bytes(&marked[0]), bytes(&cores[0]));
    assert_ne!(bytes(&marked[1]), bytes(&cores[1]));
}
