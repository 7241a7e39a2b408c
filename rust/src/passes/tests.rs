use crate::bir::{dump_module, module_from_value, Module};
use crate::passes::lnc_splitter::{split, CloneMode, SplitOptions};
use crate::passes::{expand_replication, lnc_verifier};
use serde_json::json;

fn shard_aff(coeff: i64, c: i64) -> serde_json::Value {
    json!({"kind": "AffExprKind", "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": coeff}], "c": c})
}

fn module() -> Module {
    module_from_value(json!({
        "name": "k_nc_symbolic", "version": 2,
        "functions": [{"name": "main",
          "allocations": [{"name": "t", "dtype": "float32", "tensor_shape": [64, 4], "locations": []}],
          "basic_blocks": [{"name": "bb", "instructions": [
            {"name": "only0", "opcode": "NoOp", "predicates": [{"expr": shard_aff(1, 0), "ge": false}]},
            {"name": "only1", "opcode": "NoOp", "predicates": [{"expr": shard_aff(1, -1), "ge": true}],
             "dependencies": [["only0", "Flow"]]},
            {"name": "cb", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]},
            {"name": "w", "opcode": "DMACopy", "outs": [{"kind": "symbolic_ap", "ap": [[4, 32], [1, 4]], "memsetref": "t",
              "addrs": [shard_aff(32, 0), {"kind": "AffExprKind", "terms": [], "c": 0}]}]},
            {"name": "mm", "opcode": "Matmult", "replication_resolution": 2, "replication_shift_amnt": 64,
             "replication_num_rows": 64,
             "ins": [{"kind": "symbolic_ap", "ap": [[4, 64], [1, 4]], "memsetref": "t", "addrs": []}]}
          ]}]}]
    }))
    .unwrap()
}

fn names(m: &Module) -> Vec<String> {
    let mut v = Vec::new();
    m.functions[0].walk(&mut |i| v.push(i.name.to_string()));
    v
}

#[test]
fn split_prunes_by_mask_and_renames() {
    let out = split(vec![module()], &SplitOptions::new(2)).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].name, "k_nc00");
    assert_eq!(out[1].name, "k_nc01");
    assert_eq!(out[0].neuron_core_id(), Some(0));
    assert!(names(&out[0]).contains(&"only0".to_string()));
    assert!(!names(&out[0]).contains(&"only1".to_string()));
    assert!(names(&out[1]).contains(&"only1".to_string()));
    assert!(!names(&out[1]).contains(&"only0".to_string()));
    assert!(out.iter().all(|m| !crate::passes::birverifier::has_shard_anywhere(m)));
    assert!(out.iter().all(|m| m.functions[0].shard_ids.is_empty()));
    // the dependency on the pruned `only0` is dropped on core 1
    let json = String::from_utf8(dump_module(&out[1], 2).unwrap()).unwrap();
    assert!(!json.contains("only0"), "{json}");
    let refs: Vec<&Module> = out.iter().collect();
    lnc_verifier::verify_concretized(&refs, 2).unwrap();
}

#[test]
fn json_clone_mode_gives_the_same_bytes() {
    let a = split(vec![module()], &SplitOptions::new(2)).unwrap();
    let b = split(
        vec![module()],
        &SplitOptions {
            clone: CloneMode::Json,
            ..SplitOptions::new(2)
        },
    )
    .unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(dump_module(x, 2).unwrap(), dump_module(y, 2).unwrap());
    }
}

#[test]
fn sequential_and_parallel_agree() {
    let a = split(
        vec![module()],
        &SplitOptions {
            parallel: false,
            ..SplitOptions::new(2)
        },
    )
    .unwrap();
    let b = split(vec![module()], &SplitOptions::new(2)).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(dump_module(x, 2).unwrap(), dump_module(y, 2).unwrap());
    }
}

#[test]
fn expand_replication_grows_and_inserts_copy() {
    let mut m = module();
    expand_replication::expand_replication(&mut m).unwrap();
    assert_eq!(m.functions[0].allocations[0].tensor_shape, vec![128, 4]);
    let n = names(&m);
    let w = n.iter().position(|x| x == "w").unwrap();
    // `w` writes 32 of the 64 rows (one half per core): one copy per replica,
    // its AP shifted by r·shift partitions (contract §3.2).
    assert_eq!(n[w + 1], "w_replicate_1");
    let doc: serde_json::Value = serde_json::from_slice(&dump_module(&m, 2).unwrap()).unwrap();
    let copy = &doc["functions"][0]["basic_blocks"][0]["instructions"][w + 1];
    assert_eq!(copy["outs"][0]["addrs"][0], shard_aff(32, 64));
    assert_eq!(copy["outs"][0]["ap"][0], json!([4, 32]));
    lnc_verifier::verify_symbolic(&m, 2).unwrap();
}

#[test]
fn symbolic_verifier_rejects_partial_barrier() {
    let mut v = serde_json::to_value(String::from_utf8(dump_module(&module(), 2).unwrap()).unwrap()).unwrap();
    let s: serde_json::Value = serde_json::from_str(v.as_str().unwrap()).unwrap();
    v = s;
    v["functions"][0]["basic_blocks"][0]["instructions"][2]["predicates"] =
        json!([{"expr": shard_aff(1, 0), "ge": false}]);
    let m = module_from_value(v).unwrap();
    match lnc_verifier::verify_symbolic(&m, 2).unwrap_err() {
        crate::Error::Neuron { code, location, .. } => {
            assert_eq!(code, 1201);
            assert_eq!(location, "lnc_verifier.cpp:208");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn birverifier_rejects_duplicate_names_built_in_memory() {
    let mut m = module();
    let dup = m.functions[0].basic_blocks[0].instructions[0].clone();
    m.functions[0].basic_blocks[0].instructions.push(dup);
    match crate::passes::birverifier::verify_module(&m, 2).unwrap_err() {
        crate::Error::Neuron { code, .. } => assert_eq!(code, 9010),
        e => panic!("{e:?}"),
    }
}

#[test]
fn fused_clone_concretize_equals_clone_then_concretize() {
    use crate::gen::{generate_module, GenOptions};
    use crate::passes::lnc_splitter::{clone_concretized, concretize_module};
    for seed in 0..6 {
        let src = generate_module(&GenOptions {
            seed,
            instructions: 300,
            lnc: 4,
            ..Default::default()
        })
        .unwrap();
        for core in 0..4 {
            let fused = clone_concretized(&src, core).unwrap();
            let mut two_pass = src.clone();
            concretize_module(&mut two_pass, core).unwrap();
            assert_eq!(
                dump_module(&fused, 2).unwrap(),
                dump_module(&two_pass, 2).unwrap(),
                "seed {seed} core {core}"
            );
        }
    }
}

fn carried_module(extra_key: serde_json::Value) -> Module {
    module_from_value(json!({
        "name": "k_nc_symbolic", "version": 2,
        "functions": [{"name": "main", "allocations": [],
          "basic_blocks": [{"name": "bb", "instructions": [
            {"name": "a", "opcode": "NoOp", "order": extra_key,
             "ins": [{"kind": "register_ap", "regref": "r", "reg_ap_offset": shard_aff(4, 1)}]}
          ]}]}]
    }))
    .unwrap()
}

#[test]
fn carried_shard_ids_are_bound_on_every_core() {
    let out = split(vec![carried_module(shard_aff(10, 1))], &SplitOptions::new(2)).unwrap();
    for (core, m) in out.iter().enumerate() {
        let doc: serde_json::Value = serde_json::from_slice(&dump_module(m, 2).unwrap()).unwrap();
        let a = &doc["functions"][0]["basic_blocks"][0]["instructions"][0];
        let c = core as i64;
        assert_eq!(a["order"], json!({"kind": "AffExprKind", "terms": [], "c": 10 * c + 1}));
        assert_eq!(
            a["ins"][0]["reg_ap_offset"],
            json!({"kind": "AffExprKind", "terms": [], "c": 4 * c + 1})
        );
        assert!(!crate::passes::birverifier::has_shard_anywhere(m));
    }
}

#[test]
fn unbindable_carried_shard_is_refused_and_the_input_kept() {
    use crate::bir::carried::shards::UNBINDABLE_SHARD;
    use crate::passes::lnc_splitter::split_module;
    // A ShardId of ub 2 cannot be bound to core 2 of 3: core 0's clone probes
    // core 2, so the original is never touched.
    let mut m = carried_module(json!({"kind": "ShardIDKind", "ub": 2}));
    let before = dump_module(&m, 2).unwrap();
    for parallel in [false, true] {
        let opts = SplitOptions {
            parallel,
            ..SplitOptions::new(3)
        };
        match split_module(&mut m, &opts) {
            Err(crate::error::Error::Neuron { code, detail, .. }) => {
                assert_eq!(code, UNBINDABLE_SHARD);
                assert!(detail.contains("instruction \"a\" key \"order\""), "{detail}");
            }
            other => panic!("expected 9007, got {other:?}"),
        }
        assert_eq!(dump_module(&m, 2).unwrap(), before);
    }
}

#[test]
fn concretized_set_must_be_cores_0_to_n_minus_1_in_order() {
    let out = split(vec![module()], &SplitOptions::new(2)).unwrap();
    let twice = [&out[0], &out[0]];
    let err = lnc_verifier::verify_concretized(&twice, 2).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("9006") && text.contains("core 1 is missing"), "{text}");
    let swapped = [&out[1], &out[0]];
    let text = lnc_verifier::verify_concretized(&swapped, 2).unwrap_err().to_string();
    assert!(text.contains("position 0 holds core 1"), "{text}");
}

/// The split's fast path (no carried value holds a ShardId, so the cores
/// skip the binder) gives the bytes of the always-binding walk, on every
/// core of generated modules.
#[test]
fn split_without_carried_shards_equals_the_binding_walk() {
    use crate::bir::carried::shards::module_has_carried_shard;
    use crate::gen::{generate_module, GenOptions};
    use crate::passes::lnc_splitter::{clone_concretized, concretize_module};
    for seed in 0..4 {
        for lnc in [2usize, 4] {
            let mut src = generate_module(&GenOptions {
                seed,
                instructions: 400,
                lnc: lnc as i64,
                ..Default::default()
            })
            .unwrap();
            assert!(!module_has_carried_shard(&src), "the fast path is taken");
            assert!(!walk_probe(&mut src));
            let slow: Vec<Vec<u8>> = (0..lnc as i64)
                .map(|c| {
                    let m = if c + 1 < lnc as i64 {
                        clone_concretized(&src, c).unwrap()
                    } else {
                        let mut m = src.clone();
                        concretize_module(&mut m, c).unwrap();
                        m
                    };
                    dump_module(&m, 2).unwrap()
                })
                .collect();
            for parallel in [false, true] {
                let opts = SplitOptions {
                    parallel,
                    ..SplitOptions::new(lnc)
                };
                let fast = split(vec![src.clone()], &opts).unwrap();
                for (c, m) in fast.iter().enumerate() {
                    assert_eq!(dump_module(m, 2).unwrap(), slow[c], "seed {seed} lnc {lnc} core {c}");
                }
            }
        }
    }
}

/// The pre-scan finds a ShardId in every kind of carried value (so the
/// binder runs), changes nothing, and ignores the modelled fields the
/// split binds itself.
#[test]
fn carried_shard_probe_finds_every_carried_place() {
    use crate::bir::carried::shards::module_has_carried_shard;
    let s = shard_aff(1, 0);
    let arg = |extra: serde_json::Value| {
        let mut a = json!({"kind": "symbolic_ap", "ap": [[1, 2]], "memsetref": "t", "addrs": [shard_aff(2, 0)]});
        a.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        a
    };
    let module = |module_extra: serde_json::Value,
                  attrs: serde_json::Value,
                  fn_extra: serde_json::Value,
                  set_extra: serde_json::Value,
                  loc_extra: serde_json::Value,
                  block_extra: serde_json::Value,
                  inst: serde_json::Value| {
        let mut set = json!({"name": "t", "dtype": "float32", "tensor_shape": [4], "locations": [
            {"name": "l", "type": "SB"}]});
        set.as_object_mut()
            .unwrap()
            .extend(set_extra.as_object().unwrap().clone());
        set["locations"][0]
            .as_object_mut()
            .unwrap()
            .extend(loc_extra.as_object().unwrap().clone());
        let mut block = json!({"name": "bb", "instructions": [
            {"name": "p", "opcode": "NoOp", "predicates": [{"expr": shard_aff(1, 0), "ge": false}]},
            inst]});
        block
            .as_object_mut()
            .unwrap()
            .extend(block_extra.as_object().unwrap().clone());
        let mut f = json!({"name": "main", "allocations": [set], "basic_blocks": [block]});
        f.as_object_mut().unwrap().extend(fn_extra.as_object().unwrap().clone());
        let mut m = json!({"name": "k_nc_symbolic", "version": 2, "attributes": attrs, "functions": [f]});
        m.as_object_mut()
            .unwrap()
            .extend(module_extra.as_object().unwrap().clone());
        module_from_value(m).unwrap()
    };
    let none = json!({});
    let plain = json!({"name": "a", "opcode": "NoOp", "ins": [arg(json!({}))]});
    // Each case puts a ShardId in one place (or nowhere): that place's
    // extra, or the instruction itself; every other place stays plain.
    const MODULE: usize = 0;
    const ATTRS: usize = 1;
    const FUNCTION: usize = 2;
    const SET: usize = 3;
    const LOCATION: usize = 4;
    const BLOCK: usize = 5;
    const INST: usize = 6;
    let at = |place: usize, v: serde_json::Value| {
        let mut p = [
            none.clone(),
            json!({}),
            none.clone(),
            none.clone(),
            none.clone(),
            none.clone(),
            plain.clone(),
        ];
        p[place] = v;
        let [m, attrs, f, set, loc, block, inst] = p;
        module(m, attrs, f, set, loc, block, inst)
    };
    let cases = [
        ("none", at(INST, plain.clone()), false),
        ("module key", at(MODULE, json!({"x": s})), true),
        ("attribute", at(ATTRS, json!({"x": [s]})), true),
        ("function key", at(FUNCTION, json!({"x": s})), true),
        ("set key", at(SET, json!({"x": s})), true),
        ("location key", at(LOCATION, json!({"x": s})), true),
        ("block key", at(BLOCK, json!({"x": s})), true),
        (
            "instruction key",
            at(INST, json!({"name": "a", "opcode": "NoOp", "order": s})),
            true,
        ),
        (
            "dependency kind",
            at(
                INST,
                json!({"name": "a", "opcode": "NoOp", "dependencies": [["p", {"k": s}]]}),
            ),
            true,
        ),
        (
            "argument key",
            at(
                INST,
                json!({"name": "a", "opcode": "NoOp", "ins": [arg(json!({"x": s}))]}),
            ),
            true,
        ),
        (
            "access_shape",
            at(
                INST,
                json!({"name": "a", "opcode": "NoOp", "outs": [arg(json!({"access_shape": [s]}))]}),
            ),
            true,
        ),
        (
            "imm value",
            at(
                INST,
                json!({"name": "a", "opcode": "NoOp", "ins": [{"kind": "imm_value", "value": s}]}),
            ),
            true,
        ),
        (
            "register_ap",
            at(
                INST,
                json!({"name": "a", "opcode": "NoOp", "ins": [{"kind": "register_ap", "regref": "r", "o": s}]}),
            ),
            true,
        ),
        (
            "cc_channel",
            at(
                INST,
                json!({"name": "a", "opcode": "CollectiveCompute", "cc_channel": {"c": s}}),
            ),
            true,
        ),
        (
            "loop axis key",
            at(
                INST,
                json!({"name": "a", "opcode": "Loop", "axis": {"name": "i", "ub": 2, "lb_expr": s}, "blocks": []}),
            ),
            true,
        ),
        (
            "loop body",
            at(
                INST,
                json!({"name": "a", "opcode": "Loop", "axis": {"name": "i", "ub": 2}, "blocks": [{"name": "in",
          "instructions": [{"name": "b", "opcode": "NoOp", "order": s}]}]}),
            ),
            true,
        ),
    ];
    for (what, mut m, want) in cases {
        let before = dump_module(&m, 2).unwrap();
        assert_eq!(module_has_carried_shard(&m), want, "{what}");
        assert_eq!(walk_probe(&mut m), want, "{what}: the binder's walk sees it too");
        assert_eq!(dump_module(&m, 2).unwrap(), before, "{what}: the probe changes nothing");
        // Either way the split leaves no ShardId anywhere, serial (core 0's
        // clone tells the other cores whether to bind) or parallel (the
        // probe tells), with the same bytes.
        for lnc in [2usize] {
            let mut bytes = Vec::new();
            for parallel in [false, true] {
                let opts = SplitOptions {
                    parallel,
                    ..SplitOptions::new(lnc)
                };
                let out = split(vec![m.clone()], &opts).unwrap();
                assert!(
                    out.iter().all(|c| !crate::passes::birverifier::has_shard_anywhere(c)),
                    "{what}"
                );
                bytes.push(out.iter().map(|c| dump_module(c, 2).unwrap()).collect::<Vec<_>>());
            }
            assert_eq!(bytes[0], bytes[1], "{what} lnc {lnc}");
        }
    }
}

/// The binder's own walk (`bir::carried::walk_module`) as a probe: whether
/// it offers the binder any value holding a ShardId. The read-only
/// `module_has_carried_shard` must answer the same.
fn walk_probe(m: &mut Module) -> bool {
    use crate::bir::carried::shards::value_has_shard;
    use crate::bir::carried::{walk_module, ExprRewriter};
    use std::cell::Cell;
    struct Probe(Cell<bool>);
    impl ExprRewriter for Probe {
        fn wants(&self, v: &serde_json::Value) -> bool {
            if value_has_shard(v) {
                self.0.set(true);
            }
            false
        }
        fn expr(&mut self, _: &mut serde_json::Value, _: u32, _: &str) -> crate::error::Result<()> {
            Ok(())
        }
        fn too_deep(&self, site: &str) -> crate::error::Error {
            crate::error::Error::pelican(site.to_string(), "test")
        }
    }
    let mut p = Probe(Cell::new(false));
    walk_module(&mut p, m).unwrap();
    p.0.get()
}
