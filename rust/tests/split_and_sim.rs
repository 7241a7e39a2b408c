//! Tests across layers, at the top of the crate's import graph: the split
//! (a pass) and the simulator (which imports no pass) together, and the
//! split's outputs as fixed points of the writer. The layers' own test modules
//! keep to their layer (`scripts/test`'s never-checks).

use lncsplit::bir::{dump_module, load_module, load_module_str, Module};
use lncsplit::gen::{generate_module, GenOptions};
use lncsplit::passes::lnc_splitter::{split, split_module, CloneMode, SplitOptions};
use lncsplit::sim::{run, SimInput, SimResult};
use serde_json::{json, Value};

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

fn iota(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

fn split_cores(m: &Module, lnc: usize) -> Vec<Module> {
    let mut m = m.clone();
    let mut cores = split_module(&mut m, &SplitOptions::new(lnc)).unwrap();
    cores.push(m);
    cores
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
fn copies_move_each_cores_rows_and_symbolic_equals_split() {
    let m = halves(2);
    let x = iota(8 * 8 * 2);
    let inputs: Vec<SimInput> = (0..2)
        .map(|c| SimInput {
            core: c,
            function: "main".into(),
            set: "x".into(),
            bytes: x.clone(),
        })
        .collect();
    let sym = run(&[&m], None, &inputs).unwrap();
    assert_eq!(sym.lnc, 2);
    for c in 0..2 {
        let y = output(&sym, c, "y");
        let half = 4 * 8 * 2;
        assert_eq!(&y[c * half..(c + 1) * half], &x[c * half..(c + 1) * half]);
        assert!(y[(1 - c) * half..(2 - c) * half].iter().all(|&b| b == 0));
    }
    let cores = split_cores(&m, 2);
    let refs: Vec<&Module> = cores.iter().collect();
    let cr = run(&refs, None, &inputs).unwrap();
    for c in 0..2 {
        assert_eq!(output(&sym, c, "y"), output(&cr, c, "y"));
        assert_eq!(output(&sym, c, "z"), output(&cr, c, "z"));
    }
    // The two cores' opaque outputs differ: they read different rows.
    assert_ne!(output(&sym, 0, "z"), output(&sym, 1, "z"));
    assert!(sym.races.is_empty());
    assert_eq!(sym.steps, 6);
}

#[test]
fn generated_modules_split_the_same_in_both_clone_modes_into_fixed_points() {
    for seed in 0..6u64 {
        let o = GenOptions {
            seed,
            instructions: 400,
            lnc: 2 + 2 * (seed as i64 % 2),
            ..GenOptions::default()
        };
        let m = generate_module(&o).unwrap();
        let opts = |clone| SplitOptions {
            clone,
            ..SplitOptions::new(o.lnc as usize)
        };
        let a = split(vec![m.clone()], &opts(CloneMode::Structural));
        let b = split(vec![m.clone()], &opts(CloneMode::Json));
        for (x, y) in a.unwrap().iter().zip(b.unwrap().iter()) {
            let bx = dump_module(x, 2).unwrap();
            assert_eq!(bx, dump_module(y, 2).unwrap(), "seed {seed}");
            assert_eq!(dump_module(&load_module(&bx).unwrap(), 2).unwrap(), bx, "seed {seed}");
        }
    }
}
