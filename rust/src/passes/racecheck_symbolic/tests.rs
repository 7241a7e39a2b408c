//! Tests of the symbolic race checker's sweep: its invalid N against the
//! concrete checker, and the lemmas on generated modules (the solver side and
//! the race agreement are tested from Python, `tests/racecheck_symbolic/`).

use super::nset::ISet;
use super::plan;
use super::shard_bound::with_shard_bound;
use crate::bir::Module;
use crate::error::Error;
use crate::gen::{generate_module, GenOptions};
use crate::passes::lnc_barriercheck::{racecheck, Mode};
use crate::passes::lnc_splitter::{split, SplitOptions};

/// The concrete answer at N: Ok(race count) or the error's code.
fn concrete(m: &Module, n: usize) -> Result<usize, u32> {
    let b = with_shard_bound(m, n as i64).unwrap();
    let cores = split(vec![b], &SplitOptions::new(n)).unwrap();
    let refs: Vec<&Module> = cores.iter().collect();
    match racecheck(&refs, Mode::Exact) {
        Ok(r) => Ok(r.races.len()),
        Err(Error::Neuron { code, .. }) => Err(code),
        Err(e) => panic!("{e}"),
    }
}

fn invalid_codes(v: &serde_json::Value, n: i64) -> Option<u32> {
    v["invalid"].as_array().unwrap().iter().find_map(|c| {
        let hit = c["n"].as_array().unwrap().iter().any(|p| {
            let lo = p[0].as_i64().unwrap();
            let hi = p[1].as_i64();
            lo <= n && hi.is_none_or(|h| n <= h)
        });
        hit.then(|| c["code"].as_u64().unwrap() as u32)
    })
}

#[test]
fn invalid_n_and_their_first_cause_are_the_concrete_checkers() {
    for lnc in 2..=5 {
        for seed in 0..2 {
            let m = generate_module(&GenOptions {
                seed,
                instructions: 250,
                lnc,
                ..Default::default()
            })
            .unwrap();
            let v = plan(&m, &ISet::range(2, 7)).unwrap();
            for n in 2..=7usize {
                let want = concrete(&m, n).err();
                assert_eq!(invalid_codes(&v, n as i64), want, "lnc {lnc} seed {seed} N {n}");
            }
        }
    }
}

#[test]
fn a_generic_module_is_valid_for_every_n_up_to_its_bound_and_the_lemmas_clear_it() {
    let m = generate_module(&GenOptions {
        seed: 5,
        instructions: 2000,
        lnc: 16,
        lnc_generic: true,
        ..Default::default()
    })
    .unwrap();
    let v = plan(&m, &ISet::range(2, 16)).unwrap();
    assert_eq!(v["invalid"].as_array().unwrap().len(), 0);
    assert_eq!(v["unknown"].as_array().unwrap().len(), 0);
    assert_eq!(v["queries"].as_array().unwrap().len(), 0);
    assert!(v["stats"]["candidates"].as_u64().unwrap() > 0);
    for n in [2usize, 7, 16] {
        assert_eq!(concrete(&m, n), Ok(0));
    }
    // Past its bound the footprints leave their sets (9302).
    let v = plan(&m, &ISet::range(17, 17)).unwrap();
    assert_eq!(invalid_codes(&v, 17), Some(9302));
    // Nothing in it fixes N: no GPSIMDSB2SB, no collective, barriers over every core.
    for f in &m.functions {
        f.walk(&mut |i| {
            assert!(i.opcode != crate::bir::Opcode::GPSIMD_SB2SB);
            assert!(i.opcode != crate::bir::Opcode::COLLECTIVE_COMPUTE);
            if let crate::bir::OpFields::CoreBarrier { cores, .. } = &i.op {
                assert_eq!(cores.as_deref(), Some(&[][..]));
            }
        });
    }
}

#[test]
fn a_split_core_is_9005_and_a_lnc_below_2_is_refused() {
    let m = generate_module(&GenOptions::default()).unwrap();
    let cores = split(vec![m.structural_clone()], &SplitOptions::new(2)).unwrap();
    match plan(&cores[0], &ISet::range(2, 4)) {
        Err(Error::Neuron { code, .. }) => assert_eq!(code, 9005),
        other => panic!("{other:?}"),
    }
    assert!(plan(&m, &ISet::range(1, 4)).is_err());
}

#[test]
#[ignore]
fn profile_plan_on_the_big_generic_module() {
    let m = generate_module(&GenOptions {
        seed: 0,
        instructions: 200_000,
        lnc: 64,
        lnc_generic: true,
        ..Default::default()
    })
    .unwrap();
    let lnc = ISet::range(2, 64);
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let v = plan(&m, &lnc).unwrap();
        eprintln!("plan {:?}", t.elapsed());
        let t = std::time::Instant::now();
        let s = v.to_string();
        eprintln!("to_string {:?} {}", t.elapsed(), s.len());
    }
    let cores = split(vec![with_shard_bound(&m, 2).unwrap()], &SplitOptions::new(2)).unwrap();
    let refs: Vec<&Module> = cores.iter().collect();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        racecheck(&refs, Mode::Exact).unwrap();
        eprintln!("racecheck {:?}", t.elapsed());
    }
}

#[test]
fn a_loop_footprint_past_the_modules_shard_bound_is_invalid_not_undecided() {
    // Written for N = 2 (ShardId ub 2); at N ≥ 3 core 2's tile loads leave
    // their sets. Finding the instance that leaves evaluates core 2, which
    // the module's own ShardIds refuse: it is evaluated as with_shard_bound's.
    let text = include_str!("../../../../python/lncsplit/examples/02_loop_region.json");
    let m = crate::bir::load::load(text.as_bytes(), Default::default()).unwrap();
    let v = plan(&m, &ISet::range(2, 5)).unwrap();
    assert_eq!(v["unknown"].as_array().unwrap().len(), 0, "{}", v["unknown"]);
    for n in 2..=5usize {
        assert_eq!(invalid_codes(&v, n as i64), concrete(&m, n).err(), "N {n}");
    }
}
