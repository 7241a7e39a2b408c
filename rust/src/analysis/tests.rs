//! Tests of the footprint foundation: exact intersection against brute force,
//! the layout rules of contract §3.6, the walk's instance order and masks, and
//! location resolution.

use std::collections::BTreeSet;

use super::footprint::{FootprintError, Layout, Progression};
use super::location::{Cores, Reach};
use super::walk::{walk_function, Limit, Mask};
use crate::bir::load_module_str;
use crate::bir::memory::MemoryLocationSet;

/// xorshift64*: deterministic randomness without a dev-dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo) as u64)) as i64
    }
}

fn random_progression(r: &mut Rng) -> Progression {
    let dims = r.range(0, 4) as usize;
    Progression {
        base: r.range(0, 40),
        dims: (0..dims).map(|_| [r.range(-6, 12), r.range(0, 5)]).collect(),
    }
}

fn bytes_of(p: &Progression, esize: i64) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    p.for_each(|e| {
        for k in 0..esize {
            out.insert(e * esize + k);
        }
    });
    out
}

#[test]
fn least_common_is_the_least_shared_byte() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let (a, b) = (random_progression(&mut r), random_progression(&mut r));
        let esize = [1, 2, 4][r.range(0, 3) as usize];
        let (sa, sb) = (bytes_of(&a, esize), bytes_of(&b, esize));
        let want = sa.intersection(&sb).next().copied();
        let (ra, rb) = (a.run_set(esize).unwrap(), b.run_set(esize).unwrap());
        assert_eq!(ra.least_common(&rb), want, "{a:?} {b:?} esize {esize}");
        assert_eq!(rb.least_common(&ra), want, "{b:?} {a:?} esize {esize}");
    }
}

#[test]
fn seek_finds_the_least_byte_at_or_after() {
    let mut r = Rng(7);
    for _ in 0..5_000 {
        let p = random_progression(&mut r);
        let bytes = bytes_of(&p, 2);
        let set = p.run_set(2).unwrap();
        for t in -3..120 {
            assert_eq!(set.seek(t), bytes.range(t..).next().copied(), "{p:?} t {t}");
        }
    }
}

#[test]
fn runs_and_bounds_cover_exactly_the_bytes() {
    let mut r = Rng(11);
    for _ in 0..5_000 {
        let p = random_progression(&mut r);
        let bytes = bytes_of(&p, 4);
        let set = p.run_set(4).unwrap();
        let mut got = BTreeSet::new();
        let mut last_end = i64::MIN;
        set.for_each_run(|s, e| {
            assert!(s > last_end, "runs are increasing and not adjacent: {p:?}");
            last_end = e;
            got.extend(s..e);
        });
        assert_eq!(got, bytes, "{p:?}");
        let want_bounds = bytes.first().map(|&lo| (lo, bytes.last().unwrap() + 1));
        assert_eq!(set.bounds(), want_bounds, "{p:?}");
    }
}

#[test]
fn interleaved_strided_accesses_never_meet_without_enumeration() {
    // Even and odd elements of a million-element run: the residue test decides.
    let even = Progression {
        base: 0,
        dims: smallvec::smallvec![[2, 1_000_000]],
    };
    let odd = Progression {
        base: 1,
        dims: smallvec::smallvec![[2, 1_000_000]],
    };
    let (a, b) = (even.run_set(4).unwrap(), odd.run_set(4).unwrap());
    assert_eq!(a.least_common(&b), None);
    let shifted = Progression {
        base: 2_000,
        dims: smallvec::smallvec![[2, 10]],
    };
    assert_eq!(a.least_common(&shifted.run_set(4).unwrap()), Some(8_000));
}

#[test]
fn max_bytes_per_window_counts_one_partition() {
    // 4 partitions of 8 elements; the access takes 3 elements of each of 2 partitions.
    let p = Progression {
        base: 8,
        dims: smallvec::smallvec![[8, 2], [1, 3]],
    };
    let s = p.run_set(2).unwrap();
    assert_eq!(s.max_bytes_per_window(16), 6);
    let wide = Progression {
        base: 6,
        dims: smallvec::smallvec![[1, 5]],
    };
    assert_eq!(wide.run_set(1).unwrap().max_bytes_per_window(8), 3);
}

fn set(shape: &[i64], dtype: &str) -> MemoryLocationSet {
    MemoryLocationSet {
        name: "t".into(),
        kind: None,
        dtype: dtype.into(),
        tensor_shape: shape.to_vec(),
        partition_dim: Some(0),
        addr_space: None,
        locations: Vec::new(),
        extra: None,
    }
}

#[test]
fn symbolic_points_follow_partition_major_strides() {
    // [4, 3, 5] float32: F = 15, S' = [15, 5, 1].
    let l = Layout::of(&set(&[4, 3, 5], "float32"), "SB").unwrap();
    assert_eq!((l.partitions, l.free, l.esize), (4, 15, 4));
    let p = l.symbolic(&[[15, 2], [5, 2], [1, 3]], &[1, 1, 2], 4).unwrap();
    let mut got = Vec::new();
    p.for_each(|e| got.push(e));
    let base = 15 + 5 + 2;
    let mut want = Vec::new();
    for i0 in 0..2 {
        for i1 in 0..2 {
            for i2 in 0..3 {
                want.push(base + 15 * i0 + 5 * i1 + i2);
            }
        }
    }
    assert_eq!(got, want);
}

/// A `physical_ap` of random offset and steps touches exactly the elements a
/// brute-force enumeration gives with the offset counted in **elements**
/// (contract §3.6 since 2026-12-02: bytes would put element 8 of a float32
/// set at element 2).
#[test]
fn physical_points_count_the_offset_in_elements() {
    use crate::bir::argument::PhysicalAp;
    let l = Layout::of(&set(&[8, 16], "float32"), "DRAM").unwrap();
    let mut r = Rng(0x51);
    for _ in 0..2_000 {
        let offset = r.range(0, 64);
        let dims: Vec<[i64; 2]> = vec![[16, r.range(1, 3)], [r.range(1, 3), r.range(1, 5)]];
        let ap = PhysicalAp {
            ap: dims.iter().copied().collect(),
            offset: Some(offset),
            dtype: None,
            memref: None,
            memsetref: None,
            extra: None,
        };
        let mut want = Vec::new();
        for i0 in 0..dims[0][1] {
            for i1 in 0..dims[1][1] {
                want.push(offset + dims[0][0] * i0 + dims[1][0] * i1);
            }
        }
        let mut got = Vec::new();
        l.physical(&ap, 4).unwrap().for_each(|e| got.push(e));
        assert_eq!(got, want, "offset {offset} ap {dims:?}");
    }
    // offset 8 (elements): the first point is element 8, partition 0's 9th.
    let ap = PhysicalAp {
        ap: [[16, 1], [1, 1]].into_iter().collect(),
        offset: Some(8),
        dtype: None,
        memref: None,
        memsetref: None,
        extra: None,
    };
    assert_eq!(l.physical(&ap, 4).unwrap().base, 8);
}

#[test]
fn an_ap_of_other_rank_adds_the_free_addresses() {
    // Rank 3, ap of 2 dims: e = addrs[0]·F + addrs[1] + Σ step·i.
    let l = Layout::of(&set(&[4, 3, 5], "bfloat16"), "DRAM").unwrap();
    let p = l.symbolic(&[[15, 1], [1, 4]], &[2, 7], 2).unwrap();
    assert_eq!(p.base, 2 * 15 + 7);
}

#[test]
fn on_chip_runs_never_wrap_but_dram_runs_may() {
    let s = set(&[4, 8], "int8");
    let sb = Layout::of(&s, "SB").unwrap();
    let err = sb.symbolic(&[[8, 1], [1, 4]], &[0, 6], 1).unwrap_err();
    assert!(
        matches!(err, FootprintError::WrapsPartition { within: 9, free: 8 }),
        "{err:?}"
    );
    let dram = Layout::of(&s, "DRAM").unwrap();
    assert!(dram.symbolic(&[[8, 1], [1, 4]], &[0, 6], 1).is_ok());
    let out = dram.symbolic(&[[8, 1], [1, 4]], &[3, 6], 1).unwrap_err();
    assert!(
        matches!(
            out,
            FootprintError::OutsideLocation {
                element: 33,
                elements: 32
            }
        ),
        "{out:?}"
    );
}

#[test]
fn addrs_must_match_the_ap_and_sizes_must_agree() {
    let l = Layout::of(&set(&[4, 8], "float32"), "SB").unwrap();
    assert!(matches!(
        l.symbolic(&[[8, 1], [1, 4]], &[0], 4),
        Err(FootprintError::AddrsCount { ap: 2, addrs: 1 })
    ));
    assert!(matches!(
        l.symbolic(&[[8, 1], [1, 4]], &[0, 0], 2),
        Err(FootprintError::DtypeSize { ap: 2, set: 4 })
    ));
}

#[test]
fn check_symbolic_gives_symbolic_verdicts() {
    // The race checker's static bounds use the check without the points:
    // the same Ok / error on random accesses (in, across and out of bounds,
    // empty, negative steps, either rank, both memory kinds).
    let mut r = Rng(0x5eed_0008);
    for (shape, mem) in [
        (&[4i64, 3, 5][..], "SB"),
        (&[4, 3, 5][..], "DRAM"),
        (&[8, 6][..], "PSUM"),
    ] {
        let l = Layout::of(&set(shape, "float32"), mem).unwrap();
        for _ in 0..4000 {
            let rank = if r.range(0, 2) == 0 {
                l.rank()
            } else {
                r.range(1, 4) as usize
            };
            let ap: Vec<[i64; 2]> = (0..rank).map(|_| [r.range(-8, 16), r.range(0, 5)]).collect();
            let n = if r.range(0, 20) == 0 { rank + 1 } else { rank };
            let addrs: Vec<i64> = (0..n).map(|_| r.range(-3, 9)).collect();
            let es = if r.range(0, 20) == 0 { 2 } else { 4 };
            let want = l.symbolic(&ap, &addrs, es).map(|_| ());
            assert_eq!(l.check_symbolic(&ap, &addrs, es), want, "{ap:?} {addrs:?} {es}");
        }
    }
    let l = Layout::of(&set(&[4, 8], "float32"), "DRAM").unwrap();
    assert_eq!(
        l.check_symbolic(&[[1, 2]], &[i64::MAX / 4], 4),
        l.symbolic(&[[1, 2]], &[i64::MAX / 4], 4).map(|_| ())
    );
}

const WALK_MODULE: &str = r#"{
  "version": 2, "name": "k_nc_symbolic", "arch": "gen3",
  "functions": [{
    "name": "main",
    "allocations": [
      {"name": "sh", "kind": "Internal", "dtype": "float32", "tensor_shape": [2, 8], "addr_space": "Shared",
       "locations": [{"name": "sh_loc", "type": "DRAM"}]},
      {"name": "px", "kind": "Internal", "dtype": "float32", "tensor_shape": [2, 8],
       "locations": [{"name": "px_loc", "type": "DRAM", "remote_local_target": {"name": "sh_loc", "core": 1}}]},
      {"name": "bad", "kind": "Internal", "dtype": "float32", "tensor_shape": [2, 8],
       "locations": [{"name": "bad_loc", "type": "DRAM", "remote_local_target": {"name": "nothing", "core": 0}}]}
    ],
    "basic_blocks": [
      {"name": "b0", "instructions": [
        {"name": "first", "opcode": "NoOp"},
        {"name": "loop", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 3, "step": 1},
         "blocks": [{"name": "body", "instructions": [
            {"name": "odd", "opcode": "NoOp", "predicates": [{"expr": {"kind": "AffExprKind", "terms": [{"idx": {"kind": "AffIVKind", "axis": "i"}, "coeff": 1}], "c": -1}, "ge": false}]},
            {"name": "all", "opcode": "NoOp"}
         ]}]},
        {"name": "last", "opcode": "NoOp"}
      ]},
      {"name": "b1", "instructions": [{"name": "tail", "opcode": "NoOp"}]}
    ]
  }]
}"#;

#[test]
fn walk_unrolls_loops_in_order_with_masks_and_positions() {
    let m = load_module_str(WALK_MODULE).unwrap();
    let f = &m.functions[0];
    let limit = Limit {
        max: 1000,
        code: 9306,
        location: "test",
    };
    let mut seen = Vec::new();
    walk_function(&m.ctx, f, Some(0), limit, &mut |i| {
        seen.push((i.inst.name.to_string(), i.pos, i.block, i.top, i.mask));
        Ok(())
    })
    .unwrap();
    let names: Vec<_> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["first", "loop", "all", "odd", "all", "all", "last", "tail"]);
    let pos: Vec<_> = seen.iter().map(|s| (s.1, s.2, s.3)).collect();
    assert_eq!(
        pos,
        [
            (0, 0, 0),
            (1, 0, 1),
            (3, 0, 1),
            (2, 0, 1),
            (3, 0, 1),
            (3, 0, 1),
            (4, 0, 2),
            (5, 1, 0)
        ]
    );
    assert!(seen.iter().all(|s| s.4 == Mask::True));
    let small = Limit { max: 4, ..limit };
    let err = walk_function(&m.ctx, f, Some(0), small, &mut |_| Ok(())).unwrap_err();
    assert!(err.to_string().contains("9306"), "{err}");
}

#[test]
fn locations_resolve_to_shared_proxy_and_private_owners() {
    let m = load_module_str(WALK_MODULE).unwrap();
    let mods = [&m, &m];
    let cores = Cores { modules: &mods };
    let f = &m.functions[0];
    let loc = |i: usize| (&f.allocations[i], f.allocations[i].locations.first());
    let (s, l) = loc(0);
    let r = cores.resolve(1, f, s, l, false).unwrap();
    assert_eq!((r.phys.core, &*r.phys.name, r.reach), (0, "sh_loc", Reach::Shared));
    let (s, l) = loc(1);
    let r = cores.resolve(0, f, s, l, false).unwrap();
    assert_eq!((r.phys.core, &*r.phys.name, r.reach), (1, "sh_loc", Reach::Proxy));
    let r = cores.resolve(0, f, s, l, true).unwrap();
    assert_eq!((r.phys.core, &*r.phys.name, r.reach), (1, "px_loc", Reach::Partner));
    let (s, l) = loc(2);
    let err = cores.resolve(0, f, s, l, false).unwrap_err();
    assert!(err.to_string().contains("9303"), "{err}");
}
