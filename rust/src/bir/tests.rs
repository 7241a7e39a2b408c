use super::*;
use crate::gen::{generate_module, GenOptions};
use serde_json::json;

pub(crate) fn small_module() -> serde_json::Value {
    json!({
        "version": 2, "name": "k_nc_symbolic", "arch": "trn2", "custom_top": [1, 2],
        "functions": [{
            "name": "main", "registers": ["r0"],
            "allocations": [{"name": "t", "kind": "Internal", "dtype": "float32", "tensor_shape": [128, 4],
                             "locations": [{"name": "t_sb", "type": "SB", "addr": 0, "x": true}]}],
            "basic_blocks": [{"name": "bb0", "instructions": [
                {"name": "a", "opcode": "DMACopy", "ins": [], "outs": [
                    {"kind": "symbolic_ap", "ap": [[1, 64], [1, 4]], "dtype": "float32", "memsetref": "t",
                     "addrs": [{"kind": "AffExprKind", "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": 64}], "c": 0},
                               {"kind": "AffExprKind", "terms": [], "c": 0}]}],
                 "predicates": [{"expr": {"kind": "AffExprKind", "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": -1}], "c": 0}, "ge": false}],
                 "weird": {"k": 1}},
                {"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1},
                 "blocks": [{"name": "body", "instructions": [
                    {"name": "b", "opcode": "NoOp", "ins": [], "outs": [], "dependencies": [["a", "Flow"]],
                     "predicates": [{"expr": {"kind": "AffExprKind", "terms": [{"idx": {"kind": "AffIVKind", "axis": "i"}, "coeff": 1}], "c": -1}}]}]}]}
            ]}]
        }]
    })
}

#[test]
fn load_dump_round_trip_is_stable() {
    let v = small_module();
    let m = module_from_value(v).unwrap();
    assert_eq!(m.functions[0].shard_ids, vec![2]);
    let a = dump_module(&m, 2).unwrap();
    let m2 = load_module(&a).unwrap();
    let b = dump_module(&m2, 2).unwrap();
    assert_eq!(a, b);
    let s = String::from_utf8(a).unwrap();
    assert!(s.contains("\"weird\":{\"k\":1}"));
    assert!(s.contains("\"custom_top\":[1,2]"));
    assert!(s.contains("\"arch\":\"gen3\""));
}

#[test]
fn clone_equals_json_round_trip() {
    let m = module_from_value(small_module()).unwrap();
    let a = dump_module(&m.structural_clone(), 2).unwrap();
    let b = dump_module(&m.json_clone().unwrap(), 2).unwrap();
    assert_eq!(a, b);
}

#[test]
fn dangling_memsetref_is_an_error_with_path() {
    let mut v = small_module();
    v["functions"][0]["basic_blocks"][0]["instructions"][0]["outs"][0]["memsetref"] = json!("nope");
    let e = module_from_value(v).unwrap_err();
    match e {
        crate::Error::BirJson { message, path } => {
            assert!(message.contains("nope") && message.contains("main"), "{message}");
            assert_eq!(path, "$.functions[0].basic_blocks[0].instructions[0].outs[0].memsetref");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_version_message() {
    let mut v = small_module();
    v["version"] = json!(3);
    let e = module_from_value(v).unwrap_err();
    assert!(e
        .to_string()
        .contains("Check the version of bir json file - should be 1 (old) or 2 (new)"));
}

#[test]
fn unknown_opcode_and_argument_kind() {
    let mut v = small_module();
    v["functions"][0]["basic_blocks"][0]["instructions"][0]["opcode"] = json!("Frobnicate");
    assert!(module_from_value(v).unwrap_err().to_string().contains("Unknown opcode"));
    let mut v = small_module();
    v["functions"][0]["basic_blocks"][0]["instructions"][0]["outs"][0]["kind"] = json!("weird_ap");
    assert!(module_from_value(v)
        .unwrap_err()
        .to_string()
        .contains("Unsupported argument kind"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let mut s = String::new();
    for _ in 0..10_000 {
        s.push('[');
    }
    for _ in 0..10_000 {
        s.push(']');
    }
    assert!(load_module(s.as_bytes()).is_err());
}

#[test]
fn gen_is_deterministic_and_round_trips() {
    for (seed, n, lnc) in [(1u64, 500usize, 2i64), (7, 2000, 2), (3, 300, 1), (9, 800, 4)] {
        let o = GenOptions {
            seed,
            instructions: n,
            lnc,
            ..Default::default()
        };
        let a = dump_module(&generate_module(&o).unwrap(), 2).unwrap();
        let b = dump_module(&generate_module(&o).unwrap(), 2).unwrap();
        assert_eq!(a, b);
        let m = load_module(&a).unwrap();
        assert_eq!(m.instruction_count(), n, "seed {seed}");
        assert_eq!(dump_module(&m, 2).unwrap(), a);
        assert_eq!(m.functions[0].shard_ids, vec![lnc]);
        let per = a.len() / n;
        assert!((200..=1024).contains(&per), "{per} bytes per instruction");
    }
}

fn sort_keys(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), sort_keys(&m[k]));
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

#[test]
fn key_order_does_not_matter() {
    // nlohmann writes keys sorted: "axis"/"blocks"/"ins" before "opcode",
    // "functions" before "version", "addrs"/"ap" before an argument's "kind".
    for seed in [1u64, 2, 3] {
        let o = GenOptions {
            seed,
            instructions: 400,
            lnc: 2,
            ..Default::default()
        };
        let a = dump_module(&generate_module(&o).unwrap(), 2).unwrap();
        let sorted = sort_keys(&serde_json::from_slice(&a).unwrap());
        let m = load_module(&serde_json::to_vec(&sorted).unwrap()).unwrap();
        let back = sort_keys(&serde_json::from_slice(&dump_module(&m, 2).unwrap()).unwrap());
        assert_eq!(back, sorted);
    }
}

#[test]
fn duplicate_instruction_name_is_an_error() {
    let mut v = small_module();
    v["functions"][0]["basic_blocks"][0]["instructions"][1]["blocks"][0]["instructions"][0]["name"] = json!("a");
    let e = module_from_value(v).unwrap_err();
    match e {
        crate::Error::BirJson { message, path } => {
            assert!(message.contains("used twice"), "{message}");
            assert_eq!(
                path,
                "$.functions[0].basic_blocks[0].instructions[1].blocks[0].instructions[0].name"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_key_floats_are_byte_stable() {
    // Found by the bir_load fuzz target: without serde_json's exact float
    // parsing, 5.5555555555555555e75 re-read differently after one write.
    let mut v = small_module();
    v["custom_top"] = serde_json::from_str("[5.5555555555555555e75, 0.1, 1e-300, 2.2250738585072014e-308]").unwrap();
    let a = dump_module(&module_from_value(v).unwrap(), 2).unwrap();
    let b = dump_module(&load_module(&a).unwrap(), 2).unwrap();
    assert_eq!(a, b);
}

/// Clone and split cost is dominated by memory: keep the hot structs small.
#[test]
fn hot_structs_stay_small() {
    assert!(
        std::mem::size_of::<Instruction>() <= 240,
        "{}",
        std::mem::size_of::<Instruction>()
    );
    assert!(
        std::mem::size_of::<Argument>() <= 160,
        "{}",
        std::mem::size_of::<Argument>()
    );
    assert!(
        std::mem::size_of::<OpFields>() <= 64,
        "{}",
        std::mem::size_of::<OpFields>()
    );
    assert!(
        std::mem::size_of::<Dependency>() <= 32,
        "{}",
        std::mem::size_of::<Dependency>()
    );
}

/// `aux` is read first but written after `main`, so the ShardId and the
/// register get their ids in the opposite order on reload (issue 15.2).
fn interning_order_module() -> serde_json::Value {
    let shard = json!({"kind": "ShardIDKind", "ub": 4});
    let reg = json!({"kind": "IntRuntimeValueKind", "regref": "r0"});
    let pred = |name: &str, e: serde_json::Value| json!({"name": name, "opcode": "NoOp", "predicates": [{"expr": e}]});
    json!({
        "version": 2, "name": "order",
        "functions": [
            {"name": "aux", "allocations": [], "basic_blocks": [{"name": "b", "instructions": [pred("a0", shard.clone())]}]},
            {"name": "main", "registers": ["r0"], "allocations": [], "basic_blocks": [{"name": "b", "instructions": [
                pred("m0", reg.clone()),
                pred("m1", json!({"kind": "AffExprKind", "terms": [{"idx": reg.clone(), "coeff": 1}, {"idx": shard.clone(), "coeff": 2}], "c": 0})),
                pred("m2", json!({"kind": "SumKind", "n_terms": 2, "terms": [shard, reg]})),
            ]}]}
        ]
    })
}

#[test]
fn dump_is_a_fixed_point_after_one_load_whatever_the_interning_order() {
    let m = module_from_value(interning_order_module()).unwrap();
    let once = dump_module(&m, 2).unwrap();
    let twice = dump_module(&load_module(&once).unwrap(), 2).unwrap();
    assert_eq!(
        String::from_utf8(once.clone()).unwrap(),
        String::from_utf8(twice).unwrap()
    );
    assert_eq!(once, dump_module(&m.json_clone().unwrap(), 2).unwrap());
    assert_eq!(once, dump_module(&m.structural_clone(), 2).unwrap());
}

#[test]
fn generated_modules_are_fixed_points() {
    for seed in 0..6u64 {
        let o = GenOptions {
            seed,
            instructions: 400,
            lnc: 2 + 2 * (seed as i64 % 2),
            ..GenOptions::default()
        };
        let m = generate_module(&o).unwrap();
        let once = dump_module(&load_module(&dump_module(&m, 2).unwrap()).unwrap(), 2).unwrap();
        assert_eq!(
            dump_module(&load_module(&once).unwrap(), 2).unwrap(),
            once,
            "seed {seed}"
        );
    }
}

/// Equal unknown-key maps of scalars are loaded once and shared; a map with
/// the same keys in another order is not (it writes its own order back).
#[test]
fn equal_unknown_key_maps_are_shared_in_key_order() {
    let mut v = small_module();
    let insts = v["functions"][0]["basic_blocks"][0]["instructions"]
        .as_array_mut()
        .unwrap();
    insts[0]["weird"] = json!("x");
    insts[0]["origin"] = json!("Penguin");
    let body = insts[1]["blocks"][0]["instructions"][0].as_object_mut().unwrap();
    body.insert("weird".into(), json!("x"));
    body.insert("origin".into(), json!("Penguin"));
    let mut text = serde_json::to_string(&v).unwrap();
    // A third instruction with the same keys in the other order.
    let third = r#"{"name": "c", "opcode": "NoOp", "origin": "Penguin", "weird": "x"}"#;
    text = text.replacen(r#"{"name":"l","#, &format!("{third}, {{\"name\":\"l\","), 1);
    let m = load_module(text.as_bytes()).unwrap();
    let top = &m.functions[0].basic_blocks[0].instructions;
    let OpFields::Loop { blocks, .. } = &top[2].op else {
        panic!("a loop")
    };
    let (a, c, b) = (&top[0].extra, &top[1].extra, &blocks[0].instructions[0].extra);
    assert!(
        Arc::ptr_eq(a.as_ref().unwrap(), b.as_ref().unwrap()),
        "equal maps are shared"
    );
    assert!(
        !Arc::ptr_eq(a.as_ref().unwrap(), c.as_ref().unwrap()),
        "another key order is another map"
    );
    let out = String::from_utf8(dump_module(&m, 2).unwrap()).unwrap();
    assert!(out.contains(r#""origin":"Penguin","weird":"x"}"#) && out.contains(r#""weird":"x","origin":"Penguin""#));
    assert_eq!(
        dump_module(&load_module(out.as_bytes()).unwrap(), 2).unwrap(),
        out.as_bytes()
    );
}

#[test]
fn non_utf8_input_is_rejected_with_the_position_of_the_bad_byte() {
    // Past the SIMD validator's 64-byte blocks, at every offset of one: the
    // fast validator and std agree, and std's message names the byte.
    let body = format!("{{\"name\": \"{}\"}}", "x".repeat(200));
    for at in 100..170 {
        let mut b = body.clone().into_bytes();
        b[at] = 0xff;
        let err = load_module(&b).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("input is not UTF-8"), "{text}");
        assert!(text.contains(&format!("from index {at}")), "{text}");
    }
    let mut split = body.into_bytes();
    split.truncate(150);
    split.extend_from_slice("é".as_bytes().get(..1).unwrap());
    assert!(load_module(&split).unwrap_err().to_string().contains("not UTF-8"));
}
