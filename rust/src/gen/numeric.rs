//! `lncsplit gen --numeric`: seeded symbolic modules whose compute computes
//! (contract §3.8, "Numbers"): random ops of the vocabulary and random funcs
//! on float32 and bfloat16 SB tiles, per-partition operands, reductions, a
//! K-tiled contracting Matmult accumulating in PSUM, Iota with a ShardId
//! base, Select, conversions, a float `add` accumulate onto an output, and
//! AllReduces (one with no scatter dim; over subgroups of two when N ≥ 4).
//! Every core reads its own rows of the Input sets (drawn finite by the
//! simulator) and writes its own rows of the Output sets: race-free, so the
//! whole pipeline takes it and `sim.equivalent` must hold exactly.
//!
//! The module is small (a few dozen instructions), built as JSON and read by
//! the loader like any file.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::GenOptions;
use crate::bir::load::{load_str, LoadOptions};
use crate::bir::module::Module;
use crate::error::Result;
use crate::sim::numeric::func::ALL as FUNCS;

const R: i64 = 4; // rows per core
const C: i64 = 16; // columns
const K: i64 = 8; // contraction rows per matmul tile

/// The float ops a generated module draws from (bitwise ops take integers).
const FLOAT_OPS: [&str; 18] = [
    "add",
    "subtract",
    "mult",
    "divide",
    "max",
    "min",
    "pow",
    "mod",
    "is_equal",
    "not_equal",
    "is_gt",
    "is_ge",
    "is_lt",
    "is_le",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bypass",
];

struct G {
    rng: ChaCha8Rng,
    n: i64,
    insts: Vec<Value>,
    k: usize,
}

fn aff(terms: Vec<Value>, c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": terms, "c": c})
}

fn shard_rows(n: i64, rows: i64) -> Value {
    aff(vec![json!({"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": rows})], 0)
}

fn ap(set: &str, rows: i64, cols: i64, stride: i64, p0: Value, dtype: &str) -> Value {
    json!({"kind": "symbolic_ap", "ap": [[stride, rows], [1, cols]], "dtype": dtype,
           "memsetref": set, "addrs": [p0, aff(vec![], 0)]})
}

fn tile(set: &str, cols: i64, dtype: &str) -> Value {
    ap(set, R, cols, cols, aff(vec![], 0), dtype)
}

fn set(name: &str, kind: &str, shape: [i64; 2], dtype: &str, ty: &str) -> Value {
    let mut loc = json!({"name": format!("{name}_loc"), "type": ty});
    if ty != "DRAM" {
        loc["base"] = json!(0);
    }
    json!({"name": name, "kind": kind, "dtype": dtype, "tensor_shape": shape, "locations": [loc]})
}

impl G {
    fn name(&mut self, p: &str) -> String {
        self.k += 1;
        format!("{p}_{}", self.k)
    }

    fn emit(&mut self, opcode: &str, prefix: &str, ins: Vec<Value>, out: Value, keys: Value) {
        let mut i = json!({"name": self.name(prefix), "opcode": opcode, "ins": ins, "outs": [out]});
        if let (Some(o), Some(k)) = (i.as_object_mut(), keys.as_object()) {
            o.extend(k.clone());
        }
        self.insts.push(i);
    }

    fn pick<'a>(&mut self, v: &'a [&'a str]) -> &'a str {
        v[self.rng.random_range(0..v.len())]
    }

    fn float_tile(&mut self) -> &'static str {
        ["t0", "t1", "t2", "t3"][self.rng.random_range(0..4)]
    }

    /// One random computing instruction on the float32 tiles.
    fn compute(&mut self) {
        let (a, b, out) = (self.float_tile(), self.float_tile(), self.float_tile());
        let f32t = |s: &str| tile(s, C, "float32");
        match self.rng.random_range(0..7) {
            0 => {
                let op = self.pick(&FLOAT_OPS);
                self.emit(
                    "TensorTensor",
                    "tt",
                    vec![f32t(a), f32t(b)],
                    f32t(out),
                    json!({"op": op}),
                );
            }
            1 => {
                let (op0, op1) = (self.pick(&FLOAT_OPS[..6]), self.pick(&FLOAT_OPS[..6]));
                let c: f64 = self.rng.random_range(-2.0..2.0);
                let rev = self.rng.random_bool(0.5);
                let keys = json!({"op0": op0, "const0": (c * 8.0).round() / 8.0, "reverse0": rev,
                                  "op1": op1, "operand1": {"ins": 1}});
                self.emit(
                    "TensorScalar",
                    "ts",
                    vec![f32t(a), tile("sc", 1, "float32")],
                    f32t(out),
                    keys,
                );
            }
            2 | 3 => {
                let func = FUNCS[self.rng.random_range(0..FUNCS.len())].name();
                let mut keys = json!({"func": func, "scale": 0.5});
                if self.rng.random_bool(0.5) {
                    keys["bias"] = json!({"ins": 1});
                }
                let mut ins = vec![f32t(a)];
                if keys.get("bias").is_some() {
                    ins.push(tile("sc", 1, "float32"));
                }
                self.emit("Activation", "act", ins, f32t(out), keys);
            }
            4 => {
                let op = self.pick(&["add", "max", "min"]);
                self.emit(
                    "TensorReduce",
                    "red",
                    vec![f32t(a)],
                    tile("sc", 1, "float32"),
                    json!({"op": op, "axes": [1]}),
                );
            }
            5 => {
                let pred = self.float_tile();
                self.emit(
                    "Select",
                    "sel",
                    vec![f32t(pred), f32t(a), f32t(b)],
                    f32t(out),
                    json!({"select": true}),
                );
            }
            _ => {
                self.emit(
                    "TensorCopy",
                    "cvt",
                    vec![f32t(a)],
                    tile("tb", C, "bfloat16"),
                    json!({"convert": true}),
                );
                self.emit(
                    "TensorCopy",
                    "cvt",
                    vec![tile("tb", C, "bfloat16")],
                    f32t(out),
                    json!({"convert": true}),
                );
            }
        }
    }

    fn load(&mut self, from: &str, to: &str, cols: i64, dtype: &str) {
        let src = ap(from, R, cols, cols, shard_rows(self.n, R), dtype);
        self.emit("DMACopy", "load", vec![src], tile(to, cols, dtype), json!({}));
    }

    fn store(&mut self, from: &str, to: &str, acc: bool) {
        let dst = ap(to, R, C, C, shard_rows(self.n, R), "float32");
        let keys = if acc { json!({"accumulate": "add"}) } else { json!({}) };
        self.emit("DMACopy", "store", vec![tile(from, C, "float32")], dst, keys);
    }

    fn matmul(&mut self) {
        // two K-tiles of stationary [K, R] · moving [K, C], accumulated in PSUM
        let st = |t: i64| ap("wst", K, R, R, aff(vec![], t * K), "bfloat16");
        let mv = |t: i64| ap("wmv", K, C, C, aff(vec![], t * K), "bfloat16");
        for t in 0..2 {
            let keys = if t == 0 {
                json!({"contract": true})
            } else {
                json!({"contract": true, "accumulate": "add"})
            };
            self.emit("Matmult", "mm", vec![st(t), mv(t)], tile("ps", C, "float32"), keys);
        }
        let func = if self.rng.random_bool(0.5) { "identity" } else { "tanh" };
        self.emit(
            "Activation",
            "evac",
            vec![tile("ps", C, "float32")],
            tile("t3", C, "float32"),
            json!({"func": func}),
        );
    }

    fn all_reduce(&mut self, name: &str, groups: Value) {
        let (i, o) = (format!("{name}_in"), format!("{name}_out"));
        let ch = json!({"kind": "AllReduce", "replica_groups": groups, "op": "add"});
        let keys = json!({"cc_channel": ch, "recv_from_rank": 0, "send_to_rank": 0});
        self.emit(
            "CollectiveCompute",
            name,
            vec![ap(&i, 1, 6, 6, aff(vec![], 0), "float32")],
            ap(&o, 1, 6, 6, aff(vec![], 0), "float32"),
            keys,
        );
    }
}

/// A `gen --numeric` module (see the module docs); `opts.instructions` caps
/// the number of random computing instructions.
pub fn generate(opts: &GenOptions) -> Result<Module> {
    let seed = opts.seed ^ (opts.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x4E55_4D45_5249_4300;
    let n = opts.lnc;
    let mut g = G {
        rng: ChaCha8Rng::seed_from_u64(seed),
        n,
        insts: Vec::new(),
        k: 0,
    };
    let rows = n * R;
    let mut sets = vec![
        set("x0", "Input", [rows, C], "float32", "DRAM"),
        set("x1", "Input", [rows, C], "float32", "DRAM"),
        set("xs", "Input", [rows, 1], "float32", "DRAM"),
        set("wst", "Input", [2 * K, R], "bfloat16", "SB"),
        set("wmv", "Input", [2 * K, C], "bfloat16", "SB"),
        set("y", "Output", [rows, C], "float32", "DRAM"),
        set("ymm", "Output", [rows, C], "float32", "DRAM"),
        set("yio", "Output", [rows, C], "float32", "DRAM"),
        set("ps", "Internal", [R, C], "float32", "PSUM"),
        set("tb", "Internal", [R, C], "bfloat16", "SB"),
        set("ti", "Internal", [R, C], "int32", "SB"),
        set("sc", "Internal", [R, 1], "float32", "SB"),
    ];
    for t in ["t0", "t1", "t2", "t3"] {
        sets.push(set(t, "Internal", [R, C], "float32", "SB"));
    }
    let mut cc = vec!["ar"];
    if n >= 4 {
        cc.push("ars");
    }
    for name in &cc {
        sets.push(set(&format!("{name}_in"), "Input", [1, 6], "float32", "DRAM"));
        sets.push(set(&format!("{name}_out"), "Output", [1, 6], "float32", "DRAM"));
    }
    g.load("x0", "t0", C, "float32");
    g.load("x1", "t1", C, "float32");
    g.load("x0", "t2", C, "float32");
    g.load("xs", "sc", 1, "float32");
    g.load("x1", "t3", C, "float32");
    let budget = opts.instructions.clamp(1, 64);
    for k in 0..budget {
        if k == budget / 2 {
            g.matmul();
            g.store("t3", "ymm", false);
        }
        g.compute();
    }
    let last = ["t0", "t1", "t2"][g.rng.random_range(0..3)];
    g.store(last, "y", false);
    g.store("t3", "y", true); // a float add accumulate onto the output
    let base = aff(
        vec![json!({"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": R * C})],
        3,
    );
    let iota = json!({"base": base, "channel_multiplier": C, "multipliers": [1]});
    g.emit("Iota", "iota", vec![], tile("ti", C, "int32"), iota);
    g.emit(
        "TensorCopy",
        "cvt",
        vec![tile("ti", C, "int32")],
        tile("t0", C, "float32"),
        json!({"convert": true}),
    );
    g.store("t0", "yio", false);
    g.all_reduce("ar", json!([(0..n).collect::<Vec<_>>()]));
    if n >= 4 {
        let pairs: Vec<Vec<i64>> = (0..n / 2).map(|p| vec![2 * p, 2 * p + 1]).collect();
        g.all_reduce("ars", json!(pairs));
    }
    let m = json!({
        "version": 2,
        "name": format!("num{}_{}_nc_symbolic", opts.seed, opts.index),
        "arch": opts.arch.clone().unwrap_or_else(|| "gen3".into()),
        "attributes": {"previous_pass": "lower_to_symbolic"},
        "functions": [{
            "name": "main",
            "shard_ids": if n > 1 { vec![n] } else { vec![] },
            "allocations": sets,
            "basic_blocks": [{"name": "entry", "instructions": g.insts}],
        }],
    });
    load_str(&m.to_string(), LoadOptions::default())
}
