//! The compiler's spelling (contract §1.7): each row of its table, the
//! errors, and the conversions between the spellings.

use serde_json::{json, Value};

use super::dump::{dump_module, Form};
use super::load::load_module_reference;
use super::load_module_traced;
use super::schema::Spelling;
use super::{load_module, module_from_value, Module};
use crate::gen::{generate_module, GenOptions};

fn compiler() -> Form {
    Form::new(2, Some(Spelling::Compiler))
}

fn lncsplit() -> Form {
    Form::new(2, Some(Spelling::Lncsplit))
}

fn text(m: &Module, form: impl Into<Form>) -> String {
    String::from_utf8(dump_module(m, form).expect("writes")).expect("utf-8")
}

fn bir_error(v: Value) -> (String, String) {
    match module_from_value(v).expect_err("an error") {
        crate::Error::BirJson { message, path } => (message, path),
        other => panic!("expected a BirJsonError, got {other:?}"),
    }
}

/// A small compiler-spelled core: a nameless module, a set without name or
/// tensor_shape, dims, Skind, a LoopAxis Loop without a name, repeated
/// names, the compiler's memory types and tensor kinds, `sg0000`, `queues`.
pub(crate) fn compiler_core() -> Value {
    json!({
        "version": 2, "arch": "gen3", "attributes": {"neuron_core_id": 0},
        "functions": [{
            "name": "sg0000",
            "allocations": [
                {"Skind": "memory_location_set", "name": "in_set", "kind": "ExternalInput", "dtype": "float32",
                 "tensor_shape": [128, 64], "tensorId2MemLocSize": 1,
                 "memorylocations": [{"Skind": "memory_location", "name": "in", "type": "Input", "addr": 0,
                                      "dims": [128, 256], "pinned": false}]},
                {"kind": "Internal", "dtype": "float32", "debug": {"tensor_name": "x_sb"},
                 "memorylocations": [{"name": "x_sb", "type": "SB", "addr": 0, "dims": [128, 512], "base": 0}]},
                {"name": "rng", "kind": "Internal", "dtype": "uint32", "tensor_shape": [1, 4],
                 "memorylocations": [{"name": "rng", "type": "RNGSTATE", "dims": [1, 64]}]}
            ],
            "blocks": [{"name": "b0", "instructions": [
                {"name": "load", "opcode": "DMACopy", "engine": "SP", "queue": "q0",
                 "ins": [{"kind": "physical_ap", "ap": [[64, 128], [1, 64]], "offset": 0, "dtype": "float32", "memref": "in"}],
                 "outs": [{"kind": "physical_ap", "ap": [[128, 128], [1, 64]], "offset": 0, "dtype": "float32", "memref": "x_sb"}],
                 "sync_info": {"on_update": [{"id": 3, "update_value": 16}]}},
                {"opcode": "Loop", "LoopAxis": {"name": "i", "lb": 0, "ub": 4, "stride": 1}, "blocks": [
                    {"name": "body", "instructions": [
                        {"name": "barrier", "opcode": "AllEngineBarrier", "engine": "ALL", "ins": [], "outs": []}]}]},
                {"name": "barrier", "opcode": "AllEngineBarrier", "engine": "ALL", "ins": [], "outs": [],
                 "dependencies": [["barrier", "Flow"]]},
                {"name": "reset", "opcode": "GroupResetSemaphores", "engine": "ALL", "sema_group": [3], "ins": [], "outs": []}
            ]}]
        }],
        "queues": [{"name": "q0", "blocks": []}]
    })
}

/// The hand-made post-scheduling dump shipped in the `compiler/` examples:
/// `sync_info`, a DMA queue started by a `DMATrigger`, `GroupResetSemaphores`,
/// a repeated name (`barrier`), the compiler's tensor kinds.
pub(crate) const SCHEDULED: &str =
    include_str!("../../../python/lncsplit/examples/compiler/scheduled/nc00/sg00/bir_debug.sg0000.after-lower_sync.before-lower_act.json");

pub(crate) fn scheduled_example() -> Value {
    serde_json::from_str(SCHEDULED).expect("the example is JSON")
}

#[test]
fn a_compiler_dump_reads_in_the_compiler_spelling() {
    let m = module_from_value(compiler_core()).expect("loads");
    assert_eq!(m.spelling, Spelling::Compiler);
    assert_eq!(m.name, "", "a module without name reads as \"\"");
    let f = &m.functions[0];
    assert_eq!(
        f.basic_blocks[0].instructions.len(),
        4,
        "blocks are read, not kept as unknown"
    );
    let x = &f.allocations[1];
    assert_eq!(&*x.name, "", "a set without name");
    assert_eq!(
        x.tensor_shape,
        vec![128, 128],
        "tensor_shape from dims [128, 512] of float32"
    );
    assert_eq!(
        f.allocations[0].locations[0].dims, None,
        "dims equal to the shape's are implied"
    );
    assert_eq!(
        f.allocations[2].locations[0].dims,
        Some(vec![1, 64]),
        "dims that differ are kept"
    );
    assert_eq!(
        &*f.basic_blocks[0].instructions[1].name, "loop@1",
        "a Loop without name"
    );
    assert!(f.allocations[0].is_input(), "ExternalInput counts as Input");
    assert_eq!(m.entry_function().map(|f| &*f.name), Some("sg0000"));
    let extra = m.extra.as_ref().expect("unknown keys");
    assert!(extra.contains_key("queues"), "module queues are kept");
}

#[test]
fn writers_write_back_the_spelling_read_byte_stable_after_one_load() {
    let m = module_from_value(compiler_core()).expect("loads");
    let once = text(&m, 2);
    assert!(once.contains("\"blocks\":[{\"name\":\"b0\""), "{once}");
    assert!(!once.contains("basic_blocks"));
    assert!(!once.contains("\"name\":\"\""), "empty names are left out: {once}");
    assert!(once.contains("\"LoopAxis\":{\"name\":\"i\",\"lb\":0,\"ub\":4,\"stride\":1}"));
    assert!(
        once.contains("{\"opcode\":\"Loop\""),
        "the anonymous loop is written without name"
    );
    let back = load_module(once.as_bytes()).expect("reloads");
    assert_eq!(back.spelling, Spelling::Compiler);
    assert_eq!(text(&back, 2), once);
}

#[test]
fn converting_and_converting_back_gives_the_original_bytes() {
    // From the compiler's spelling…
    let m = module_from_value(compiler_core()).expect("loads");
    // (repeated names have no lncsplit spelling: drop the loop's copy)
    let mut unique = m.clone();
    let OpFields::Loop { blocks, .. } = &mut unique.functions[0].basic_blocks[0].instructions[1].op else {
        panic!("a loop")
    };
    blocks[0].instructions[0].name = "inner".into();
    let c = text(&unique, 2);
    let l = text(&unique, lncsplit());
    assert!(l.contains("\"basic_blocks\":") && l.contains("\"locations\":") && l.contains("\"axis\":"));
    assert!(
        l.contains("\"name\":\"loop@1\""),
        "lncsplit's spelling names every instruction"
    );
    let from_l = load_module(l.as_bytes()).expect("the lncsplit text reads");
    assert_eq!(from_l.spelling, Spelling::Lncsplit);
    assert_eq!(text(&from_l, compiler()), c);
    // …and from lncsplit's, on generated modules and the shipped examples.
    for seed in 0..4 {
        let g = generate_module(&GenOptions {
            seed,
            instructions: 400,
            lnc: 2,
            ..GenOptions::default()
        })
        .expect("generates");
        let l = text(&g, 2);
        let c = text(&g, compiler());
        let back = load_module(c.as_bytes()).expect("the compiler text reads");
        assert_eq!(back.spelling, Spelling::Compiler, "seed {seed}");
        assert_eq!(text(&back, 2), c, "seed {seed}: compiler text stable");
        assert_eq!(text(&back, lncsplit()), l, "seed {seed}: back to the original bytes");
    }
}

use super::instruction::OpFields;

#[test]
fn mixed_spellings_are_an_error_naming_both_paths() {
    let mut v = compiler_core();
    let sets = v["functions"][0]["allocations"].as_array_mut().expect("sets");
    let locs = sets[2]
        .as_object_mut()
        .expect("a set")
        .remove("memorylocations")
        .expect("locations");
    sets[2]["locations"] = locs;
    let (message, path) = bir_error(v);
    assert_eq!(path, "$.functions[0].allocations[2].locations");
    assert!(message.contains("mixed spellings"), "{message}");
    assert!(
        message.contains("$.functions[0].allocations[0].memorylocations"),
        "{message}"
    );
    // A Loop's axis in the other spelling.
    let mut v = compiler_core();
    let l = &mut v["functions"][0]["blocks"][0]["instructions"][1];
    let axis = l.as_object_mut().expect("loop").remove("LoopAxis").expect("axis");
    l["axis"] = axis;
    let (message, path) = bir_error(v);
    assert_eq!(path, "$.functions[0].blocks[0].instructions[1].axis");
    assert!(message.contains("mixed spellings"), "{message}");
    // A function key of the other spelling.
    let mut v = compiler_core();
    let f1 = json!({"name": "f1", "allocations": [], "basic_blocks": []});
    v["functions"].as_array_mut().expect("functions").push(f1);
    let (message, path) = bir_error(v);
    assert_eq!(path, "$.functions[1].basic_blocks");
    assert!(
        message.contains("$.functions[0].allocations[0].memorylocations"),
        "{message}"
    );
}

#[test]
fn a_function_with_neither_blocks_key_is_an_error_at_that_function() {
    for v in [
        json!({"version": 2, "name": "m", "functions": [{"name": "main", "allocations": []}]}),
        json!({"version": 2, "functions": [{"name": "sg0000", "allocations": [], "blocks": []},
                                          {"name": "f", "allocations": []}]}),
    ] {
        let (message, path) = bir_error(v.clone());
        let last = v["functions"].as_array().expect("functions").len() - 1;
        assert_eq!(path, format!("$.functions[{last}]"));
        assert!(
            message.contains("neither \"basic_blocks\"") && message.contains("\"blocks\""),
            "{message}"
        );
    }
}

#[test]
fn lncsplit_spelling_keeps_its_required_keys() {
    let base = || {
        json!({"version": 2, "name": "m", "functions": [{"name": "main",
            "allocations": [{"name": "t", "dtype": "float32", "tensor_shape": [2, 2],
                             "locations": [{"name": "t0", "type": "SB", "dims": [2, 8]}]}],
            "basic_blocks": [{"name": "b", "instructions": [
                {"name": "l", "opcode": "Loop", "axis": {"name": "i", "ub": 2}, "blocks": []}]}]}]})
    };
    assert!(module_from_value(base()).is_ok());
    let mut v = base();
    v.as_object_mut().expect("module").remove("name");
    assert!(bir_error(v).0.contains("missing required key \"name\""));
    let mut v = base();
    v["functions"][0]["allocations"][0]
        .as_object_mut()
        .expect("set")
        .remove("tensor_shape");
    let (message, path) = bir_error(v);
    assert_eq!(path, "$.functions[0].allocations[0]");
    assert!(message.contains("\"tensor_shape\""), "{message}");
    let mut v = base();
    v["functions"][0]["allocations"][0]
        .as_object_mut()
        .expect("set")
        .remove("name");
    let (message, path) = bir_error(v);
    assert_eq!(path, "$.functions[0].allocations[0]");
    assert!(message.contains("\"name\""), "{message}");
    let mut v = base();
    v["functions"][0]["basic_blocks"][0]["instructions"][0]
        .as_object_mut()
        .expect("loop")
        .remove("name");
    assert!(bir_error(v).0.contains("\"name\""));
    let mut v = base();
    let i = v["functions"][0]["basic_blocks"][0]["instructions"][0].clone();
    v["functions"][0]["basic_blocks"][0]["instructions"] = json!([i.clone(), i]);
    assert!(bir_error(v).0.contains("used twice"));
}

#[test]
fn dims_are_kept_as_read_and_never_an_error() {
    let mut v = compiler_core();
    v["functions"][0]["allocations"][0]["memorylocations"][0]["dims"] = json!("odd");
    v["functions"][0]["allocations"][2]["memorylocations"][0]["dims"] = json!([1, 16, 4]);
    let m = module_from_value(v).expect("loads");
    let f = &m.functions[0];
    assert_eq!(f.allocations[0].locations[0].dims, None);
    let kept = f.allocations[0].locations[0].extra.as_ref().expect("kept");
    assert_eq!(kept.get("dims"), Some(&json!("odd")));
    assert_eq!(f.allocations[2].locations[0].dims, Some(vec![1, 16, 4]));
    let once = text(&m, 2);
    assert_eq!(text(&load_module(once.as_bytes()).expect("reloads"), 2), once);
    assert_eq!(once.matches("\"dims\":\"odd\"").count(), 1);
}

#[test]
fn the_compiler_memory_types_are_read() {
    use super::memory::Memory;
    let m = module_from_value(compiler_core()).expect("loads");
    let f = &m.functions[0];
    assert_eq!(f.allocations[0].locations[0].memory(), Memory::Dram);
    assert_eq!(f.allocations[2].locations[0].memory(), Memory::Unmodelled);
    let mut v = compiler_core();
    v["functions"][0]["allocations"][0]["memorylocations"][0]["type"] = json!("HBM");
    let (message, _) = bir_error(v);
    assert!(
        message.contains("Unknown memory type") && message.contains("Unallocated"),
        "{message}"
    );
}

#[test]
fn every_reader_gives_the_same_compiler_spelled_module() {
    for seed in 0..3 {
        let g = generate_module(&GenOptions {
            seed,
            instructions: 3000,
            lnc: 2,
            ..GenOptions::default()
        })
        .expect("generates");
        let c = text(&g, compiler());
        let reference = load_module_reference(&c).expect("serde_json reads it");
        let fast = load_module(c.as_bytes()).expect("the fast reader reads it");
        assert_eq!(text(&reference, 2), c);
        assert_eq!(text(&fast, 2), c);
        let (par, path) = load_module_traced(c.as_bytes(), 64);
        assert_eq!(path, super::load::LoadPath::Parallel, "seed {seed}");
        let par = par.expect("the parallel loader reads it");
        assert_eq!(par.spelling, Spelling::Compiler);
        assert_eq!(text(&par, 2), c);
    }
}

#[test]
fn repeated_names_have_no_lncsplit_spelling() {
    let m = module_from_value(compiler_core()).expect("loads");
    match dump_module(&m, lncsplit()).expect_err("refused") {
        crate::Error::Neuron { code, detail, .. } => {
            assert_eq!(code, 9010);
            assert!(
                detail.contains("barrier") && detail.contains("positions 2 and 3"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn dims_round_trip_between_the_spellings_whatever_locations_carry_them() {
    // Every combination of three locations with no dims, the implied dims
    // [2, 16] or other dims [2, 32], in lncsplit's spelling: converting to
    // the compiler's and back gives the bytes of one load.
    let choices = [None, Some(json!([2, 16])), Some(json!([2, 32]))];
    for a in &choices {
        for b in &choices {
            for c in &choices {
                let locs: Vec<Value> = [a, b, c]
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let mut l = json!({"name": format!("t{i}"), "type": "SB"});
                        if let Some(d) = d {
                            l["dims"] = d.clone();
                        }
                        l
                    })
                    .collect();
                let doc = json!({"version": 2, "name": "m", "functions": [{"name": "main",
                    "allocations": [{"name": "t", "dtype": "float32", "tensor_shape": [2, 4], "locations": locs}],
                    "basic_blocks": []}]});
                let m = module_from_value(doc).expect("loads");
                let l = text(&m, 2);
                let once = text(&load_module(l.as_bytes()).expect("reloads"), 2);
                assert_eq!(once, l, "lncsplit's spelling is byte-stable");
                let cm = load_module(text(&m, compiler()).as_bytes()).expect("compiler text reads");
                let c = text(&cm, 2);
                assert_eq!(text(&load_module(c.as_bytes()).expect("reloads"), 2), c);
                assert_eq!(text(&cm, lncsplit()), l, "{a:?} {b:?} {c:?}: back to lncsplit's bytes");
                let back = load_module(l.as_bytes()).expect("reloads");
                assert_eq!(text(&back, compiler()), c, "and to the compiler's again");
            }
        }
    }
}

#[test]
fn every_compiler_memory_type_and_tensor_kind_reads_as_its_dialect_meaning() {
    use super::memory::Memory;
    let mut v = compiler_core();
    let types = ["Input", "Output", "Unallocated", "RNGSTATE", "REG"];
    let kinds = [
        "ExternalInput",
        "ExternalInputParameter",
        "ExternalOutput",
        "ExternalOutputParameter",
        "Internal",
    ];
    let sets: Vec<Value> = types
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(k, (ty, kind))| {
            json!({"name": format!("s{k}"), "kind": kind, "dtype": "float32", "tensor_shape": [1, 4],
                   "memorylocations": [{"name": format!("l{k}"), "type": ty, "dims": [1, 16]}]})
        })
        .collect();
    v["functions"][0]["allocations"] = Value::Array(sets);
    v["functions"][0]["blocks"][0]["instructions"] = json!([]);
    let m = module_from_value(v).expect("loads");
    let f = &m.functions[0];
    let memory: Vec<Memory> = f.allocations.iter().map(|s| s.locations[0].memory()).collect();
    assert_eq!(
        memory,
        [
            Memory::Dram,
            Memory::Dram,
            Memory::Unallocated,
            Memory::Unmodelled,
            Memory::Unmodelled
        ]
    );
    assert!(memory[2].is_dram(), "Unallocated is unplaced DRAM");
    let io: Vec<(bool, bool)> = f.allocations.iter().map(|s| (s.is_input(), s.is_output())).collect();
    assert_eq!(
        io,
        [
            (true, false),
            (true, false),
            (false, true),
            (false, true),
            (false, false)
        ]
    );
    // kept as written: the types and kinds come back in the compiler's spelling
    let back: Value = serde_json::from_str(&text(&m, compiler())).expect("JSON");
    for (k, (ty, kind)) in types.iter().zip(kinds).enumerate() {
        let s = &back["functions"][0]["allocations"][k];
        assert_eq!(
            (s["kind"].as_str(), s["memorylocations"][0]["type"].as_str()),
            (Some(kind), Some(*ty))
        );
    }
}
