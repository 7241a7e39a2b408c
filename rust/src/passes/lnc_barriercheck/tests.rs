//! Tests of lnc_barriercheck on hand-built core sets whose answer is known by
//! construction (contract §3.6).

use serde_json::{json, Value};

use super::{racecheck, racecheck_with, Band, Mode, RaceKind, RaceReport};
use crate::bir::{load_module_str, Module};
use crate::passes::lnc_splitter::{split_module, SplitOptions};
use crate::Result;

fn shard(ub: i64) -> Value {
    json!({"kind": "ShardIDKind", "ub": ub})
}

fn iv(axis: &str) -> Value {
    json!({"kind": "AffIVKind", "axis": axis})
}

fn aff(terms: &[(Value, i64)], c: i64) -> Value {
    let terms: Vec<Value> = terms.iter().map(|(i, k)| json!({"idx": i, "coeff": k})).collect();
    json!({"kind": "AffExprKind", "terms": terms, "c": c})
}

fn k(c: i64) -> Value {
    aff(&[], c)
}

/// `shard == core` (a predicate).
fn on(core: i64, n: i64) -> Value {
    json!({"expr": aff(&[(shard(n), 1)], -core), "ge": false})
}

fn ap(set: &str, ap: &[[i64; 2]], addrs: Vec<Value>) -> Value {
    json!({"kind": "symbolic_ap", "ap": ap, "dtype": "float32", "memsetref": set, "addrs": addrs})
}

/// Rows `row .. row+rows` of a `[P, 8]` float32 set.
fn rows(set: &str, row: Value, rows: i64) -> Value {
    ap(set, &[[8, rows], [1, 8]], vec![row, k(0)])
}

fn inst(name: &str, opcode: &str, ins: Vec<Value>, outs: Vec<Value>, preds: Vec<Value>) -> Value {
    json!({"name": name, "opcode": opcode, "ins": ins, "outs": outs, "predicates": preds})
}

fn write(name: &str, arg: Value, preds: Vec<Value>) -> Value {
    inst(name, "DMACopy", vec![], vec![arg], preds)
}

fn read(name: &str, arg: Value, preds: Vec<Value>) -> Value {
    inst(name, "DMACopy", vec![arg], vec![], preds)
}

fn barrier(name: &str, id: i64, cores: &[i64]) -> Value {
    json!({"name": name, "opcode": "CoreBarrier", "id": id, "cores": cores, "ins": [], "outs": []})
}

fn shared(name: &str, shape: &[i64]) -> Value {
    json!({"name": name, "kind": "Internal", "dtype": "float32", "tensor_shape": shape, "addr_space": "Shared",
           "locations": [{"name": format!("{name}_loc"), "type": "DRAM"}]})
}

fn sb(name: &str, shape: &[i64]) -> Value {
    json!({"name": name, "kind": "Internal", "dtype": "float32", "tensor_shape": shape,
           "locations": [{"name": format!("{name}_loc"), "type": "SB", "addr": 0, "base": 0}]})
}

fn module(sets: Vec<Value>, insts: Vec<Value>) -> Value {
    json!({"version": 2, "name": "k_nc_symbolic", "arch": "gen3", "functions": [{
        "name": "main", "registers": ["r0"], "allocations": sets,
        "basic_blocks": [{"name": "bb0", "instructions": insts}]}]})
}

/// Split a symbolic module into `n` cores, in core order.
fn split(m: &Value, n: usize) -> Vec<Module> {
    let mut orig = load_module_str(&m.to_string()).unwrap();
    let mut cores = split_module(&mut orig, &SplitOptions::new(n)).unwrap();
    cores.push(orig);
    cores
}

/// The report, checked to be the same whether the cores are walked on the
/// pool or on the calling thread (every test below compares them).
fn check(cores: &[Module], mode: Mode) -> Result<RaceReport> {
    let refs: Vec<&Module> = cores.iter().collect();
    let serial = racecheck_with(&refs, mode, false);
    let parallel = racecheck(&refs, mode);
    assert_eq!(format!("{serial:?}"), format!("{parallel:?}"));
    parallel
}

fn code(r: Result<RaceReport>) -> u32 {
    match r {
        Err(crate::Error::Neuron { code, .. }) => code,
        other => panic!("expected a NeuronAssertion, got {other:?}"),
    }
}

fn def_use(with_barrier: bool) -> Value {
    let mut insts = vec![write("w", rows("sh", k(1), 1), vec![on(0, 2)])];
    if with_barrier {
        insts.push(barrier("cb", 0, &[0, 1]));
    }
    insts.push(read("r", rows("sh", k(1), 2), vec![on(1, 2)]));
    module(vec![shared("sh", &[4, 8])], insts)
}

#[test]
fn a_shared_def_use_without_a_barrier_races_with_a_witness() {
    let r = check(&split(&def_use(false), 2), Mode::Exact).unwrap();
    assert_eq!(r.races.len(), 1, "{r:?}");
    let race = &r.races[0];
    assert_eq!((race.a.core, &*race.a.instruction), (0, "w"));
    assert_eq!((race.b.core, &*race.b.instruction), (1, "r"));
    assert_eq!((race.location.0, &*race.location.1), (0, "sh_loc"));
    assert_eq!(race.witness, (1, 0));
    assert_eq!(race.kind, RaceKind::ReadWrite);
    let none = Band { lo: -1, hi: None };
    assert_eq!((race.a.band, race.b.band), (none, none));
    assert!(race.fix.contains("after w and before r"), "{}", race.fix);
    assert!(!r.ok());
}

#[test]
fn a_barrier_between_def_and_use_orders_them() {
    for mode in [Mode::Exact, Mode::Interval] {
        assert!(check(&split(&def_use(true), 2), mode).unwrap().ok());
    }
}

#[test]
fn a_barrier_orders_only_the_cores_it_lists() {
    let m = module(
        vec![shared("sh", &[4, 8])],
        vec![
            write("w", rows("sh", k(0), 1), vec![on(0, 3)]),
            barrier("cb", 0, &[0, 1]),
            read("r", rows("sh", k(0), 1), vec![]),
        ],
    );
    let r = check(&split(&m, 3), Mode::Exact).unwrap();
    let pairs: Vec<_> = r.races.iter().map(|x| (x.a.core, x.b.core)).collect();
    assert_eq!(pairs, [(0, 2)], "{r:?}");
    assert_eq!(r.races[0].a.band, Band { lo: -1, hi: None });
}

#[test]
fn interleaved_strided_writes_clear_exact_mode_and_trip_interval_mode() {
    // Core c writes elements c, c+2, c+4, … of one row: never the same byte.
    let m = module(
        vec![shared("sh", &[1, 16])],
        vec![write(
            "w",
            ap("sh", &[[16, 1], [2, 8]], vec![k(0), aff(&[(shard(2), 1)], 0)]),
            vec![],
        )],
    );
    let cores = split(&m, 2);
    assert!(check(&cores, Mode::Exact).unwrap().ok());
    let r = check(&cores, Mode::Interval).unwrap();
    assert_eq!(r.races.len(), 1);
    // Boxes: bytes 0..=59 and 4..=63 of partition 0; the least common point is byte 4.
    assert_eq!(r.races[0].witness, (0, 4));
    assert_eq!(r.races[0].kind, RaceKind::WriteWrite);
    assert!(r.races[0].fix.contains("no barrier can order"), "{}", r.races[0].fix);
}

#[test]
fn disjoint_partitions_do_not_race_and_overlapping_ones_do() {
    let per_core = |start: Value, n: i64| {
        module(
            vec![shared("sh", &[4, 8])],
            vec![write("w", rows("sh", start, n), vec![])],
        )
    };
    let disjoint = split(&per_core(aff(&[(shard(2), 2)], 0), 2), 2);
    for mode in [Mode::Exact, Mode::Interval] {
        assert!(check(&disjoint, mode).unwrap().ok());
    }
    let overlapping = split(&per_core(aff(&[(shard(2), 1)], 0), 2), 2);
    for mode in [Mode::Exact, Mode::Interval] {
        let r = check(&overlapping, mode).unwrap();
        assert_eq!(r.races.len(), 1);
        assert_eq!(r.races[0].witness, (1, 0));
    }
}

/// Core 0 owns `x` (private DRAM); core 1 writes it through a proxy.
fn proxy_cores(with_barrier: bool) -> Vec<Module> {
    proxy_cores_to(with_barrier, "x_loc")
}

fn proxy_cores_to(with_barrier: bool, target: &str) -> Vec<Module> {
    let core = |c: i64, sets: Value, insts: Vec<Value>| {
        let mut insts = insts;
        if with_barrier {
            insts.insert(1, barrier("cb", 0, &[]));
        }
        json!({"version": 2, "name": format!("k_nc0{c}"), "arch": "gen3",
               "attributes": {"neuron_core_id": c},
               "functions": [{"name": "main", "allocations": sets,
                              "basic_blocks": [{"name": "bb0", "instructions": insts}]}]})
    };
    let x = json!([{"name": "x", "kind": "Internal", "dtype": "float32", "tensor_shape": [4, 8],
                    "locations": [{"name": "x_loc", "type": "DRAM", "addr": 0}]}]);
    let px = json!([{"name": "x", "kind": "Internal", "dtype": "float32", "tensor_shape": [4, 8],
                     "locations": [{"name": "x_loc", "type": "DRAM", "addr": 0}]},
                    {"name": "x_remote_0", "kind": "Internal", "dtype": "float32", "tensor_shape": [4, 8],
                     "locations": [{"name": "x_loc_remote_0", "type": "DRAM",
                                    "remote_local_target": {"name": target, "core": 0}}]}]);
    let c0 = core(
        0,
        x,
        vec![
            inst("nop", "NoOp", vec![], vec![], vec![]),
            read("use", rows("x", k(2), 1), vec![]),
        ],
    );
    let c1 = core(
        1,
        px,
        vec![
            write("put", rows("x_remote_0", k(2), 2), vec![]),
            inst("nop", "NoOp", vec![], vec![], vec![]),
        ],
    );
    [c0, c1]
        .iter()
        .map(|v| load_module_str(&v.to_string()).unwrap())
        .collect()
}

#[test]
fn a_write_through_a_proxy_races_with_the_owner() {
    let r = check(&proxy_cores(false), Mode::Exact).unwrap();
    assert_eq!(r.races.len(), 1, "{r:?}");
    let race = &r.races[0];
    assert_eq!((&*race.a.instruction, &*race.b.instruction), ("use", "put"));
    assert_eq!((race.location.0, &*race.location.1), (0, "x_loc"));
    assert_eq!(race.witness, (2, 0));
    assert!(check(&proxy_cores(true), Mode::Exact).unwrap().ok());
}

fn accumulate(name: &str, op: &str) -> Value {
    let mut i = write(name, rows("sh", k(0), 1), vec![]);
    i["accumulate"] = json!(op);
    i
}

#[test]
fn accumulates_of_one_op_commute_and_others_conflict() {
    let same = module(vec![shared("sh", &[4, 8])], vec![accumulate("acc", "add")]);
    assert!(check(&split(&same, 2), Mode::Exact).unwrap().ok());
    let mixed = module(
        vec![shared("sh", &[4, 8])],
        vec![accumulate("add", "add"), {
            let mut i = accumulate("max", "max");
            i["predicates"] = json!([on(1, 2)]);
            i
        }],
    );
    let r = check(&split(&mixed, 2), Mode::Exact).unwrap();
    let got: Vec<_> = r
        .races
        .iter()
        .map(|x| (&*x.a.instruction, &*x.b.instruction, x.kind))
        .collect();
    assert_eq!(got, [("add", "max", RaceKind::WriteWrite)], "{r:?}");
}

#[test]
fn loops_race_in_the_one_epoch_where_rows_meet() {
    // Body: core 0 writes row i, barrier, core 1 reads row 3 - i. Row x is
    // written in epoch x and read in epoch 4 - x: they meet at x = 2.
    let body = vec![
        write("w", rows("sh", iv("i"), 1), vec![on(0, 2)]),
        barrier("cb", 0, &[]),
        read("r", rows("sh", aff(&[(iv("i"), -1)], 3), 1), vec![on(1, 2)]),
    ];
    let m = module(
        vec![shared("sh", &[4, 8])],
        vec![
            json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1},
                    "blocks": [{"name": "body", "instructions": body}]}),
        ],
    );
    for mode in [Mode::Exact, Mode::Interval] {
        let r = check(&split(&m, 2), mode).unwrap();
        assert_eq!(r.races.len(), 1, "{r:?}");
        assert_eq!(r.races[0].witness, (2, 0));
        assert_eq!(r.races[0].a.band, Band { lo: 1, hi: Some(2) });
        // Positions are per core: r is the third instruction left on core 1.
        assert_eq!((r.races[0].a.position, r.races[0].b.position), (1, 2));
    }
}

#[test]
fn a_barrier_with_an_undecided_mask_does_not_order() {
    let mut m = def_use(true);
    let runtime = json!({"kind": "IntRuntimeValueKind", "regref": "r0"});
    m["functions"][0]["basic_blocks"][0]["instructions"][1]["predicates"] =
        json!([{"expr": aff(&[(runtime, 1)], 0), "ge": true}]);
    let r = check(&split(&m, 2), Mode::Exact).unwrap();
    assert_eq!(r.races.len(), 1, "{r:?}");
}

#[test]
fn gpsimd_sb2sb_writes_the_partner() {
    // Both copies read their own rows 0-1 and write the partner's rows 0-1.
    let m = |dst: Value| {
        module(
            vec![sb("p", &[4, 8])],
            vec![inst(
                "x",
                "GPSIMDSB2SB",
                vec![rows("p", k(0), 2)],
                vec![rows("p", dst, 2)],
                vec![],
            )],
        )
    };
    let r = check(&split(&m(k(0)), 2), Mode::Exact).unwrap();
    let locs: Vec<_> = r.races.iter().map(|x| (x.location.0, x.kind)).collect();
    assert_eq!(locs, [(0, RaceKind::ReadWrite), (1, RaceKind::ReadWrite)], "{r:?}");
    // Writing the partner's rows 2-3 touches nothing it reads.
    assert!(check(&split(&m(k(2)), 2), Mode::Exact).unwrap().ok());
}

#[test]
fn races_are_reported_once_per_instruction_pair_and_sorted() {
    let m = module(
        vec![shared("sh", &[4, 8])],
        vec![
            write("w1", rows("sh", k(0), 4), vec![on(0, 2)]),
            json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1},
                   "blocks": [{"name": "body", "instructions": [
                       read("r", rows("sh", iv("i"), 1), vec![on(1, 2)])]}]}),
            write("w2", rows("sh", k(3), 1), vec![on(1, 2)]),
        ],
    );
    let r = check(&split(&m, 2), Mode::Exact).unwrap();
    let got: Vec<_> = r
        .races
        .iter()
        .map(|x| (&*x.a.instruction, &*x.b.instruction, x.witness))
        .collect();
    assert_eq!(got, [("w1", "r", (0, 0)), ("w1", "w2", (3, 0))], "{r:?}");
    let v = r.to_value();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["mode"], json!("exact"));
    assert_eq!(v["races"][0]["a"]["band"], json!([-1, null]));
    assert_eq!(v["races"][0]["witness"], json!({"partition": 0, "byte": 0}));
    assert_eq!(v["races"][0]["location"], json!({"core": 0, "name": "sh_loc"}));
}

#[test]
fn a_footprint_outside_its_location_is_9302() {
    let m = module(
        vec![shared("sh", &[4, 8])],
        vec![write("w", rows("sh", k(3), 2), vec![])],
    );
    let err = check(&split(&m, 2), Mode::Exact).unwrap_err().to_string();
    assert!(
        err.contains("9302") && err.contains("outs[0]") && err.contains("sh"),
        "{err}"
    );
}

#[test]
fn a_remote_local_target_naming_nothing_is_9303() {
    assert_eq!(code(check(&proxy_cores_to(false, "nothing"), Mode::Exact)), 9303);
}

#[test]
fn barrier_sequences_that_differ_are_9304() {
    // Core 0's barrier is undecided (runtime value): it does not count there.
    let cores = split(&def_use(true), 2);
    let text = crate::bir::dump_module(&cores[0], 2).unwrap();
    let mut v: Value = serde_json::from_slice(&text).unwrap();
    let runtime = json!({"kind": "IntRuntimeValueKind", "regref": "r0"});
    v["functions"][0]["basic_blocks"][0]["instructions"][0]["predicates"] = json!([]);
    let insts = v["functions"][0]["basic_blocks"][0]["instructions"]
        .as_array_mut()
        .unwrap();
    let cb = insts.iter_mut().find(|i| i["name"] == "cb").unwrap();
    cb["predicates"] = json!([{"expr": aff(&[(runtime, 1)], 0), "ge": true}]);
    let c0 = load_module_str(&v.to_string()).unwrap();
    let err = check(&[c0, cores[1].clone()], Mode::Exact);
    assert_eq!(code(err), 9304);
}

#[test]
fn gpsimd_sb2sb_with_other_than_two_cores_is_9305() {
    let m = module(
        vec![sb("p", &[4, 8])],
        vec![inst(
            "x",
            "GPSIMDSB2SB",
            vec![rows("p", k(0), 1)],
            vec![rows("p", k(0), 1)],
            vec![],
        )],
    );
    assert_eq!(code(check(&split(&m, 3), Mode::Exact)), 9305);
    assert_eq!(code(check(&split(&m, 1), Mode::Exact)), 9305);
}

#[test]
fn gpsimd_sb2sb_in_a_symbolic_module_given_as_one_core_says_to_split_it() {
    let mut v = module(
        vec![sb("p", &[4, 8])],
        vec![inst(
            "x",
            "GPSIMDSB2SB",
            vec![rows("p", k(0), 1)],
            vec![rows("p", k(0), 1)],
            vec![],
        )],
    );
    v["functions"][0]["shard_ids"] = json!([2]);
    let m = load_module_str(&v.to_string()).unwrap();
    match check(&[m], Mode::Exact) {
        Err(e @ crate::Error::Neuron { code: 9305, .. }) => {
            let text = e.to_string();
            assert!(text.contains("racecheck takes split cores"), "{text}");
            assert!(text.contains("split it first (lncsplit.split([module], 2)"), "{text}");
        }
        other => panic!("expected 9305, got {other:?}"),
    }
}

#[test]
fn more_than_1e8_instances_is_9306() {
    let m = module(
        vec![],
        vec![
            json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 200_000_000, "step": 1},
                    "blocks": [{"name": "body", "instructions": [inst("n", "NoOp", vec![], vec![], vec![])]}]}),
        ],
    );
    assert_eq!(code(check(&split(&m, 2), Mode::Exact)), 9306);
}

#[test]
fn a_bad_core_list_is_9006_and_a_bad_set_the_verifiers_error() {
    let cores = split(&def_use(true), 2);
    let swapped = [cores[1].clone(), cores[0].clone()];
    assert_eq!(code(check(&swapped, Mode::Exact)), 9006);
    assert_eq!(code(check(&[], Mode::Exact)), 9006);
    let no_barrier = split(&def_use(false), 2);
    assert_eq!(
        code(check(&[cores[0].clone(), no_barrier[1].clone()], Mode::Exact)),
        1187
    );
}

#[test]
fn one_core_never_races() {
    let m = load_module_str(&def_use(false).to_string()).unwrap();
    assert!(check(&[m], Mode::Exact).unwrap().ok());
}

/// Timing harness (ignored): `RC_WHAT=gen|split|race|interval RC_REPS=n`
/// under `perf stat` gives CPU figures that a loaded machine's wall clock hides.
#[test]
#[ignore]
fn time_racecheck_on_a_generated_module() {
    use crate::gen::{generate_module, GenOptions};
    let what = std::env::var("RC_WHAT").unwrap_or_default();
    let reps: usize = std::env::var("RC_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let n: usize = std::env::var("RC_N")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200_000);
    let m = generate_module(&GenOptions {
        seed: 7,
        instructions: n,
        lnc: 2,
        ..Default::default()
    })
    .unwrap();
    let mut copy = m.clone();
    let mut cores = split_module(&mut copy, &SplitOptions::new(2)).unwrap();
    cores.push(copy);
    let refs: Vec<&Module> = cores.iter().collect();
    for _ in 0..reps {
        let t = std::time::Instant::now();
        match what.as_str() {
            "split" => {
                let mut c = m.clone();
                let out = split_module(&mut c, &SplitOptions::new(2)).unwrap();
                std::hint::black_box(out);
            }
            "clone" => {
                std::hint::black_box(m.clone());
            }
            "race" => assert!(racecheck(&refs, Mode::Exact).unwrap().ok()),
            "interval" => assert!(racecheck(&refs, Mode::Interval).unwrap().ok()),
            _ => {}
        }
        eprintln!("{what}: {:?}", t.elapsed());
    }
}

fn generated_cores(seed: u64, n: usize, lnc: i64, racy: bool) -> Vec<Module> {
    use crate::gen::{generate_module, GenOptions};
    let mut m = generate_module(&GenOptions {
        seed,
        instructions: n,
        lnc,
        racy,
        ..Default::default()
    })
    .unwrap();
    crate::passes::expand_replication::expand_replication(&mut m).unwrap();
    crate::passes::lnc_verifier::verify_symbolic(&m, lnc as usize).unwrap();
    let mut cores = split_module(&mut m, &SplitOptions::new(lnc as usize)).unwrap();
    cores.push(m);
    cores
}

#[test]
fn generated_modules_are_race_free() {
    for lnc in [1i64, 2, 3, 4, 8] {
        for seed in 0..6u64 {
            let cores = generated_cores(seed, 1500, lnc, false);
            for mode in [Mode::Exact, Mode::Interval] {
                let r = check(&cores, mode).unwrap();
                assert!(r.ok(), "seed {seed} lnc {lnc} {mode:?}: {}", r.races[0].describe());
            }
        }
    }
}

#[test]
fn racy_generated_modules_race_only_through_planted_instructions() {
    for lnc in [2i64, 4] {
        for seed in 0..4u64 {
            let cores = generated_cores(seed, 1500, lnc, true);
            let r = check(&cores, Mode::Exact).unwrap();
            assert!(!r.ok(), "seed {seed} lnc {lnc}");
            for race in &r.races {
                assert!(
                    race.a.instruction.starts_with("racy_") || race.b.instruction.starts_with("racy_"),
                    "{}",
                    race.describe()
                );
            }
        }
    }
}

fn private_loop(addr: Value, ub: i64) -> Value {
    let body = vec![write("w", rows("p", addr, 2), vec![])];
    module(
        vec![sb("p", &[4, 8])],
        vec![
            json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": ub, "step": 1},
                    "blocks": [{"name": "body", "instructions": body}]}),
        ],
    )
}

#[test]
fn a_private_footprint_outside_its_location_is_9302_too() {
    // No other core reaches p, yet its footprints are checked: statically…
    let top = module(vec![sb("p", &[4, 8])], vec![write("w", rows("p", k(3), 2), vec![])]);
    assert_eq!(code(check(&split(&top, 2), Mode::Exact)), 9302);
    // …over a loop's range (rows i, i+1 leave at i = 3)…
    assert_eq!(code(check(&split(&private_loop(iv("i"), 4), 2), Mode::Exact)), 9302);
    assert!(check(&split(&private_loop(iv("i"), 3), 2), Mode::Exact).unwrap().ok());
    // …and instance by instance where the range is too coarse: (2i mod 4) is
    // 0 or 2, though its range is [0, 3].
    let m = json!({"kind": "ModuloKind", "numer": aff(&[(iv("i"), 2)], 0), "denom": 4});
    assert!(check(&split(&private_loop(m, 4), 2), Mode::Exact).unwrap().ok());
}

/// What one core's walk recorded, comparable: per item its instruction,
/// location, position, barrier count, role and footprint; and the barriers.
type Recorded = (Vec<u32>, Vec<(String, u32, u32, u32, String, [i64; 5], String)>);

/// Every function's per-core records, with the fast paths (planned
/// accesses) on or off; an error as its message.
fn records(cores: &[Module], mode: Mode, fast: bool) -> std::result::Result<Vec<Recorded>, String> {
    let refs: Vec<&Module> = cores.iter().collect();
    let cs = super::Cores::checked(&refs, "test").map_err(|e| e.to_string())?;
    let syncs: Vec<super::engines::CoreSync> = (refs.iter().map(|m| super::engines::CoreSync::of(m)))
        .collect::<super::Result<_>>()
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for f in &cores[0].functions {
        let mut reach = super::Reach::default();
        let fns = super::resolve_all(cs, &syncs, &f.name, &mut reach).map_err(|e| e.to_string())?;
        for cf in &fns {
            let c = super::collect(cf, &syncs[cf.core], &reach, mode, fast).map_err(|e| e.to_string())?;
            let items = (c.items.iter())
                .map(|it| {
                    let fp = &it.fp;
                    let boxed = [fp.plo, fp.phi, fp.blo, fp.bhi, fp.pb];
                    let role = format!("{:?}", it.role);
                    (
                        it.inst.name.to_string(),
                        it.phys,
                        it.pos,
                        it.g,
                        role,
                        boxed,
                        format!("{:?}", fp.exact),
                    )
                })
                .collect();
            out.push((c.barriers, items));
        }
    }
    Ok(out)
}

/// How many instructions the scans planned, over every function and core.
fn planned(cores: &[Module]) -> usize {
    let refs: Vec<&Module> = cores.iter().collect();
    let cs = super::Cores::checked(&refs, "test").unwrap();
    let syncs: Vec<super::engines::CoreSync> =
        (refs.iter().map(|m| super::engines::CoreSync::of(m).unwrap())).collect();
    let mut n = 0;
    for f in &cores[0].functions {
        let mut reach = super::Reach::default();
        for cf in &super::resolve_all(cs, &syncs, &f.name, &mut reach).unwrap() {
            let reached = super::reached_sets(cf, &reach);
            n += super::scan(cf, &reach, &reached, true).unwrap().plans.len();
        }
    }
    n
}

fn assert_fast_matches_general(cores: &[Module], what: &str) {
    for mode in [Mode::Exact, Mode::Interval] {
        let general = records(cores, mode, false);
        let fast = records(cores, mode, true);
        assert_eq!(fast, general, "{what} {mode:?}");
    }
}

#[test]
fn the_planned_walk_records_what_the_general_walk_records_on_generated_modules() {
    for (lnc, racy) in [(2i64, false), (2, true), (3, false), (4, true)] {
        for seed in 0..5u64 {
            let cores = generated_cores(seed, 1200, lnc, racy);
            let general = records(&cores, Mode::Exact, false).unwrap();
            // The comparison means something only if the walk recorded
            // accesses and the fast path planned some.
            assert!(general.iter().any(|r| !r.1.is_empty()), "seed {seed} lnc {lnc}");
            assert!(planned(&cores) > 0, "seed {seed} lnc {lnc}");
            assert_fast_matches_general(&cores, &format!("seed {seed} lnc {lnc} racy {racy}"));
        }
    }
}

#[test]
fn the_planned_walk_matches_the_general_walk_on_hand_built_edge_cases() {
    let modulo = json!({"kind": "ModuloKind", "numer": aff(&[(iv("i"), 2)], 0), "denom": 4});
    let shared_loop = |addr: Value, ub: i64| {
        let body = vec![
            write("w", rows("s", addr.clone(), 2), vec![]),
            read("r", rows("s", addr, 1), vec![]),
        ];
        module(
            vec![shared("s", &[8, 8])],
            vec![
                json!({"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": ub, "step": 2},
                        "blocks": [{"name": "body", "instructions": body}]}),
            ],
        )
    };
    let cases = [
        ("private modulo loop", split(&private_loop(modulo.clone(), 4), 2)),
        ("private loop leaving", split(&private_loop(iv("i"), 4), 2)),
        ("shared affine loop", split(&shared_loop(aff(&[(iv("i"), 1)], 1), 6), 2)),
        (
            "shared loop leaving",
            split(&shared_loop(aff(&[(iv("i"), 1)], 1), 8), 2),
        ),
        ("shared modulo loop", split(&shared_loop(modulo, 4), 2)),
        ("shard-dependent rows", split(&def_use(false), 2)),
        ("proxy", proxy_cores(false)),
    ];
    for (what, cores) in &cases {
        assert_fast_matches_general(cores, what);
    }
}
