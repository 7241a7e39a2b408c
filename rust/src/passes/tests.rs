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
    assert_eq!(n[w + 1], "w_replicate");
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
    use crate::bir::{generate_module, GenOptions};
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
