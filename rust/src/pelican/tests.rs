//! One test per rule of contract §2 and neuronx-facts §1.5/§1.7/§1.9/§2.

use super::*;
use crate::error::Error;
use serde_json::{json, Value};

// ------------------------------------------------------------------ helpers

fn msg<T: std::fmt::Debug>(r: crate::Result<T>) -> String {
    match r {
        Err(Error::Pelican { message, .. }) | Err(Error::PelicanWire { message, .. }) => message,
        other => panic!("expected a pelican error, got {other:?}"),
    }
}

fn pel_err<T: std::fmt::Debug>(r: crate::Result<T>) -> (String, String) {
    match r {
        Err(Error::Pelican { message, location }) => (message, location),
        other => panic!("expected Error::Pelican, got {other:?}"),
    }
}

fn wire_err<T: std::fmt::Debug>(r: crate::Result<T>) -> String {
    match r {
        Err(Error::PelicanWire { message, .. }) => message,
        other => panic!("expected Error::PelicanWire, got {other:?}"),
    }
}

struct Fx {
    c: Context,
    i: ExprId,
    j: ExprId,
    s: ExprId,
}

/// A context with axis i ∈ [0, 8), axis j ∈ [2, 14) step 3, shard < 4.
fn fx() -> Fx {
    let mut c = Context::new();
    let ai = c.add_axis("i", 0, 8, 1).unwrap();
    let aj = c.add_axis("j", 2, 14, 3).unwrap();
    let i = c.affine_iv(ai).unwrap();
    let j = c.affine_iv(aj).unwrap();
    let s = c.shard_id(4).unwrap();
    Fx { c, i, j, s }
}

fn bind(pairs: &[(&str, i64)]) -> Bindings {
    let mut b = Bindings::default();
    for &(k, v) in pairs {
        if k == "shard" {
            b.shard = Some(v);
        } else {
            b.by_name.insert(k.to_string(), v);
        }
    }
    b
}

fn read2(c: &mut Context, v: &Value) -> crate::Result<ExprId> {
    c.from_json(v, 2, &mut ContextScope { axes: &[] })
}

fn read1(c: &mut Context, v: &Value) -> crate::Result<ExprId> {
    c.from_json(v, 1, &mut ContextScope { axes: &[] })
}

// ------------------------------------------------------ constructor checks

#[test]
fn cc_get_rank_rejects_negative_iteration_id() {
    let mut c = Context::new();
    assert_eq!(
        pel_err(c.cc_get_rank(-1, 0)),
        (
            "Invalid iteration_id or channel_id for CCGetRankExpr!".into(),
            "AffineExpr.h:326".into()
        )
    );
}

#[test]
fn cc_get_rank_rejects_negative_channel_id() {
    let mut c = Context::new();
    assert_eq!(
        msg(c.cc_get_rank(0, i64::MIN)),
        "Invalid iteration_id or channel_id for CCGetRankExpr!"
    );
    assert!(c.cc_get_rank(0, 0).is_ok());
}

#[test]
fn indirect_arg_rejects_negative_arg_id() {
    let mut c = Context::new();
    assert_eq!(
        pel_err(c.indirect_arg(-3)),
        ("Invalid arg_id for IndirectArgExpr!".into(), "AffineExpr.h:356".into())
    );
    assert!(c.indirect_arg(0).is_ok());
}

#[test]
fn div_like_rejects_nonpositive_denom() {
    let Fx { mut c, i, .. } = fx();
    for d in [0, -1, i64::MIN] {
        assert_eq!(
            pel_err(c.floor_div(i, d)),
            ("Unsupported denom for DivLikeExpr!".into(), "AffineExpr.h:711".into())
        );
        assert_eq!(msg(c.modulo(i, d)), "Unsupported denom for DivLikeExpr!");
        assert_eq!(msg(c.cc_div(i, d, 0)), "Unsupported denom for DivLikeExpr!");
        assert_eq!(msg(c.cc_mod(i, d, 0)), "Unsupported denom for DivLikeExpr!");
    }
}

#[test]
fn tiled_ap_index_requires_tile_dividing_trip_count() {
    let Fx { mut c, i, .. } = fx();
    let m = msg(c.tiled_ap_index(i, 0, 3, false));
    assert!(m.contains("must divide the trip count 8"), "{m}");
    assert!(c.tiled_ap_index(i, 0, 4, false).is_ok());
    assert!(c.tiled_ap_index(i, 0, 0, false).is_err());
}

#[test]
fn tiled_ap_index_same_partition_flag_fuses() {
    let mut c = Context::new();
    let s = c.shard_id(16).unwrap();
    let t2 = c.tiled_ap_index(s, 0, 2, true).unwrap();
    let t2x4 = c.tiled_ap_index(t2, 0, 4, true).unwrap();
    let t8 = c.tiled_ap_index(s, 0, 8, true).unwrap();
    assert_eq!(t2x4, t8);
    assert!(matches!(c.node(t8), Node::TiledAPIndex { child, tile_size: 8, .. } if *child == s));
}

#[test]
fn tiled_ap_index_different_partition_flag_does_not_fuse() {
    let mut c = Context::new();
    let s = c.shard_id(16).unwrap();
    let t2 = c.tiled_ap_index(s, 0, 2, true).unwrap();
    let t = c.tiled_ap_index(t2, 0, 4, false).unwrap();
    assert!(matches!(c.node(t), Node::TiledAPIndex { child, tile_size: 4, .. } if *child == t2));
    assert_eq!(c.trip_count(t), Some(2));
}

#[test]
fn aff_expr_term_must_be_index_leaf() {
    let Fx { mut c, i, .. } = fx();
    let e = c.aff_expr(&[(i, 1)], 0).unwrap();
    let m = msg(c.aff_expr(&[(e, 1)], 0));
    assert!(m.contains("must be an index (kinds 6-13)"), "{m}");
}

// ------------------------------------------------------------ interning

#[test]
fn interning_is_structural() {
    let Fx { mut c, s, .. } = fx();
    let a = c.aff_expr(&[(s, 1)], 0).unwrap();
    let b = c.aff_expr(&[(s, 1)], 0).unwrap();
    assert_eq!(a, b);
    let n = c.len();
    c.aff_expr(&[(s, 1)], 0).unwrap();
    assert_eq!(c.len(), n);
}

#[test]
fn aff_expr_term_order_is_canonical() {
    let Fx { mut c, i, j, .. } = fx();
    assert_eq!(
        c.aff_expr(&[(i, 2), (j, 3)], 1).unwrap(),
        c.aff_expr(&[(j, 3), (i, 2)], 1).unwrap()
    );
}

#[test]
fn sum_is_commutative() {
    let Fx { mut c, i, j, .. } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let b = c.aff_expr(&[(j, 1)], 0).unwrap();
    assert_eq!(c.sum(&[a, b]).unwrap(), c.sum(&[b, a]).unwrap());
}

#[test]
fn zero_coefficient_terms_are_dropped() {
    let Fx { mut c, i, .. } = fx();
    assert_eq!(c.aff_expr(&[(i, 0)], 3).unwrap(), c.constant(3));
}

#[test]
fn repeated_indices_are_merged() {
    let Fx { mut c, i, j, .. } = fx();
    assert_eq!(
        c.aff_expr(&[(i, 2), (j, 1), (i, 3)], 0).unwrap(),
        c.aff_expr(&[(i, 5), (j, 1)], 0).unwrap()
    );
    // merged to zero: dropped
    assert_eq!(c.aff_expr(&[(i, 2), (i, -2)], 7).unwrap(), c.constant(7));
}

#[test]
fn one_times_index_plus_zero_stays_aff_expr() {
    let Fx { mut c, i, .. } = fx();
    let e = c.aff_expr(&[(i, 1)], 0).unwrap();
    assert_ne!(e, i);
    assert_eq!(c.kind(e), ExprKind::AffExpr);
}

#[test]
fn sum_mult_div_keep_their_shape() {
    let Fx { mut c, i, .. } = fx();
    let e = c.aff_expr(&[(i, 1)], 0).unwrap();
    assert_ne!(c.mult(e, 1).unwrap(), e);
    assert_ne!(c.floor_div(e, 1).unwrap(), e);
    let s = c.sum(&[e]).unwrap();
    assert_eq!(c.kind(s), ExprKind::Sum);
}

#[test]
fn affine_iv_identity_is_by_axis() {
    let mut c = Context::new();
    let a1 = c.add_axis("k", 0, 4, 1).unwrap();
    let a2 = c.add_axis("k", 0, 4, 1).unwrap();
    let iv1 = c.affine_iv(a1).unwrap();
    let iv2 = c.affine_iv(a2).unwrap();
    assert_ne!(iv1, iv2, "two loops with equal bounds are two IVs");
    assert_eq!(c.affine_iv(a1).unwrap(), iv1, "one IV per axis");
}

#[test]
fn leaves_are_interned_by_value() {
    let mut c = Context::new();
    assert_eq!(c.shard_id(4).unwrap(), c.shard_id(4).unwrap());
    assert_ne!(c.shard_id(4).unwrap(), c.shard_id(2).unwrap());
    assert_eq!(c.symbolic_idx(0, 8, 1, 0).unwrap(), c.symbolic_idx(0, 8, 1, 0).unwrap());
    assert_eq!(c.int_runtime_value("r0").unwrap(), c.int_runtime_value("r0").unwrap());
}

#[test]
fn index_geometry() {
    let Fx { c, i, j, s } = fx();
    assert_eq!(c.trip_count(i), Some(8));
    assert_eq!(
        (c.infimum(j), c.supremum(j), c.trip_count(j)),
        (Some(2), Some(11), Some(4))
    );
    assert_eq!((c.infimum(s), c.supremum(s)), (Some(0), Some(3)));
    let mut c = c;
    let r = c.int_runtime_value("r").unwrap();
    assert_eq!(c.trip_count(r), None);
}

#[test]
fn deep_construction_is_refused() {
    let Fx { mut c, i, .. } = fx();
    let mut e = c.aff_expr(&[(i, 1)], 0).unwrap();
    let mut err = None;
    for _ in 0..MAX_DEPTH + 5 {
        match c.mult(e, 1) {
            Ok(x) => e = x,
            Err(x) => {
                err = Some(x);
                break;
            }
        }
    }
    let m = msg::<()>(Err(err.expect("depth limit")));
    assert!(m.contains("nested deeper than"), "{m}");
}

// ------------------------------------------------------------------ eval

#[test]
fn modulo_is_euclidean() {
    let mut c = Context::new();
    let m1 = c.constant(-1);
    let e = c.modulo(m1, 3).unwrap();
    assert_eq!(c.eval(e, &Bindings::default()).unwrap(), Some(2));
    let m7 = c.constant(-7);
    let e = c.cc_mod(m7, 4, 0).unwrap();
    assert_eq!(c.eval(e, &Bindings::default()).unwrap(), Some(1));
}

#[test]
fn floor_division_rounds_toward_negative_infinity() {
    let mut c = Context::new();
    let m7 = c.constant(-7);
    let e = c.floor_div(m7, 2).unwrap();
    assert_eq!(c.eval(e, &Bindings::default()).unwrap(), Some(-4));
    let e = c.cc_div(m7, 2, 5).unwrap();
    assert_eq!(c.eval(e, &Bindings::default()).unwrap(), Some(-4));
}

#[test]
fn eval_affine_sum_mult() {
    let Fx { mut c, i, j, s } = fx();
    let a = c.aff_expr(&[(i, 2), (j, -1), (s, 10)], 5).unwrap();
    let m = c.mult(a, 3).unwrap();
    let k = c.constant(4);
    let sum = c.sum(&[m, k, a]).unwrap();
    let b = bind(&[("i", 3), ("j", 5), ("shard", 1)]);
    assert_eq!(c.eval(a, &b).unwrap(), Some(6 - 5 + 10 + 5));
    assert_eq!(c.eval(sum, &b).unwrap(), Some(16 * 3 + 4 + 16));
}

#[test]
fn eval_unbound_index_is_undecided() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(i, 1), (s, 1)], 0).unwrap();
    assert_eq!(c.eval(a, &bind(&[("shard", 1)])).unwrap(), None);
    let m = c.modulo(a, 2).unwrap();
    assert_eq!(c.eval(m, &bind(&[("i", 1)])).unwrap(), None);
}

#[test]
fn eval_runtime_values_are_undecided() {
    let mut c = Context::new();
    let r = c.cc_get_rank(0, 1).unwrap();
    let ia = c.indirect_arg(2).unwrap();
    let rv = c.int_runtime_value("r1").unwrap();
    let a = c.aff_expr(&[(rv, 1)], 0).unwrap();
    let d = c.cc_div(r, 2, 0).unwrap();
    for e in [r, ia, rv, a, d] {
        assert_eq!(c.eval(e, &bind(&[("shard", 0)])).unwrap(), None);
    }
}

#[test]
fn eval_binding_by_id() {
    let Fx { mut c, i, .. } = fx();
    let a = c.aff_expr(&[(i, 3)], 0).unwrap();
    let mut b = Bindings::default();
    b.by_id.insert(i, 2);
    assert_eq!(c.eval(a, &b).unwrap(), Some(6));
}

#[test]
fn eval_binding_out_of_range_is_error() {
    let Fx { mut c, i, j, s } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    assert!(msg(c.eval(a, &bind(&[("i", 8)]))).contains("outside its range [0, 8)"));
    assert!(msg(c.eval(a, &bind(&[("i", -1)]))).contains("outside its range"));
    let b = c.aff_expr(&[(j, 1)], 0).unwrap();
    assert!(msg(c.eval(b, &bind(&[("j", 3)]))).contains("outside its range [2, 14) step 3"));
    let d = c.aff_expr(&[(s, 1)], 0).unwrap();
    assert!(msg(c.eval(d, &bind(&[("shard", 4)]))).contains("shard"));
}

#[test]
fn eval_out_of_range_is_error_even_when_otherwise_undecided() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(i, 1), (s, 1)], 0).unwrap();
    assert!(c.eval(a, &bind(&[("shard", 9)])).is_err());
}

#[test]
fn eval_overflow_is_error() {
    let Fx { mut c, i, .. } = fx();
    let a = c.aff_expr(&[(i, i64::MAX)], 0).unwrap();
    assert!(msg(c.eval(a, &bind(&[("i", 2)]))).contains("integer overflow"));
    let k = c.constant(i64::MAX);
    let s = c.sum(&[k, k]).unwrap();
    assert!(msg(c.eval(s, &Bindings::default())).contains("integer overflow"));
    let m = c.mult(k, 2).unwrap();
    assert!(msg(c.eval(m, &Bindings::default())).contains("integer overflow"));
    let km = c.constant(i64::MIN);
    let f = c.floor_div(km, 1).unwrap();
    assert_eq!(c.eval(f, &Bindings::default()).unwrap(), Some(i64::MIN));
}

#[test]
fn eval_tiled_index_is_outer_tile_of_child() {
    let Fx { mut c, j, s, .. } = fx();
    let t = c.tiled_ap_index(s, 0, 2, true).unwrap();
    assert_eq!(c.eval(t, &bind(&[("shard", 3)])).unwrap(), Some(1));
    // j = 2, 5, 8, 11 → ordinals 0..4; tile 2 → j = 8 is ordinal 2, tile 1
    let tj = c.tiled_ap_index(j, 0, 2, false).unwrap();
    assert_eq!(c.eval(tj, &bind(&[("j", 8)])).unwrap(), Some(1));
}

#[test]
fn eval_icmp() {
    let Fx { mut c, i, .. } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let k = c.constant(3);
    let e = c.icmp(CmpOp::Sge, a, k).unwrap();
    assert_eq!(c.eval(e, &bind(&[("i", 4)])).unwrap(), Some(1));
    assert_eq!(c.eval(e, &bind(&[("i", 2)])).unwrap(), Some(0));
}

#[test]
fn check_bindings_rejects_runtime_and_non_leaves() {
    let Fx { mut c, i, .. } = fx();
    let rv = c.int_runtime_value("r").unwrap();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let mut b = Bindings::default();
    b.by_id.insert(rv, 1);
    assert!(msg(c.check_bindings(&b)).contains("runtime value"));
    let mut b = Bindings::default();
    b.by_id.insert(a, 1);
    assert!(msg(c.check_bindings(&b)).contains("only index leaves"));
}

// ------------------------------------------------------- update_shard_id

#[test]
fn update_shard_id_folds_constants() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(s, 2), (i, 3)], 1).unwrap();
    let r = c.update_shard_id(a, 2).unwrap();
    assert_eq!(r, c.aff_expr(&[(i, 3)], 5).unwrap());
    let k = c.aff_expr(&[(s, 1)], 1).unwrap();
    let m = c.modulo(k, 2).unwrap();
    let r = c.update_shard_id(m, 3).unwrap();
    assert_eq!(c.as_constant(r), Some(0));
}

#[test]
fn update_shard_id_core_at_or_above_ub_is_error() {
    let Fx { mut c, s, .. } = fx();
    let a = c.aff_expr(&[(s, 1)], 0).unwrap();
    assert!(msg(c.update_shard_id(a, 4)).contains("outside its range [0, 4)"));
    assert!(c.update_shard_id(a, -1).is_err());
    assert!(c.update_shard_id(a, 3).is_ok());
}

#[test]
fn update_shard_id_leaves_no_shard() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(s, 2), (i, 1)], 0).unwrap();
    let m = c.mult(a, 3).unwrap();
    let d = c.floor_div(m, 2).unwrap();
    let t = c.tiled_ap_index(s, 0, 2, false).unwrap();
    let at = c.aff_expr(&[(t, 1)], 0).unwrap();
    let rank = c.cc_get_rank(0, 0).unwrap();
    let cd = c.cc_div(rank, 2, 0).unwrap();
    let ss = c.aff_expr(&[(s, 1)], 0).unwrap();
    let cm = c.cc_mod(ss, 2, 0).unwrap();
    let sum = c.sum(&[d, at, cd, cm]).unwrap();
    for core in 0..4 {
        let r = c.update_shard_id(sum, core).unwrap();
        assert!(!c.has_shard(r));
        for iv in 0..8 {
            let b = bind(&[("i", iv), ("shard", core)]);
            assert_eq!(c.eval(r, &b).unwrap(), c.eval(sum, &b).unwrap());
        }
    }
}

#[test]
fn update_shard_id_without_shard_is_identity() {
    let Fx { mut c, i, .. } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    assert_eq!(c.update_shard_id(a, 100).unwrap(), a);
}

#[test]
fn update_shard_id_overflow_is_error() {
    let Fx { mut c, s, .. } = fx();
    let a = c.aff_expr(&[(s, i64::MAX)], 0).unwrap();
    assert!(msg(c.update_shard_id(a, 2)).contains("integer overflow"));
}

// --------------------------------------------------------------- legality

fn legal(c: &Context, e: ExprId, part: bool, pred: bool) -> bool {
    c.is_legal_delinearized_address(e, 0, part, pred).unwrap()
}

#[test]
fn legality_index_leaves_and_runtime_value_are_legal() {
    let Fx { mut c, i, s, .. } = fx();
    let rv = c.int_runtime_value("r").unwrap();
    let sym = c.symbolic_idx(0, 4, 1, 0).unwrap();
    for e in [i, s, rv, sym] {
        assert!(legal(&c, e, true, true));
    }
}

#[test]
fn legality_aff_expr() {
    let Fx { mut c, i, .. } = fx();
    let k = c.constant(5);
    let a0 = c.aff_expr(&[(i, 1)], 0).unwrap();
    let a5 = c.aff_expr(&[(i, 1)], 5).unwrap();
    assert!(legal(&c, k, true, false), "no terms");
    assert!(legal(&c, a5, false, false), "not the partition dim");
    assert!(legal(&c, a0, true, false), "c == 0");
    assert!(!legal(&c, a5, true, false), "partition dim with c != 0");
}

#[test]
fn legality_sum_requires_all_terms() {
    let Fx { mut c, i, .. } = fx();
    let a0 = c.aff_expr(&[(i, 1)], 0).unwrap();
    let a5 = c.aff_expr(&[(i, 1)], 5).unwrap();
    let ok = c.sum(&[a0, i]).unwrap();
    let bad = c.sum(&[a0, a5]).unwrap();
    assert!(legal(&c, ok, true, false));
    assert!(!legal(&c, bad, true, false));
}

#[test]
fn legality_mult_delegates() {
    let Fx { mut c, i, .. } = fx();
    let a5 = c.aff_expr(&[(i, 1)], 5).unwrap();
    let m = c.mult(a5, 2).unwrap();
    assert!(!legal(&c, m, true, false));
    assert!(legal(&c, m, false, false));
}

#[test]
fn legality_div_of_index_leaf() {
    let Fx { mut c, i, .. } = fx();
    // trip count 8
    let d3 = c.floor_div(i, 3).unwrap();
    let d4 = c.modulo(i, 4).unwrap();
    assert!(legal(&c, d3, false, false), "no predicate required");
    assert!(!legal(&c, d3, false, true), "8 % 3 != 0 needs a predicate");
    assert!(legal(&c, d4, false, true), "8 % 4 == 0");
    let rv = c.int_runtime_value("r").unwrap();
    let dr = c.cc_div(rv, 2, 0).unwrap();
    assert!(legal(&c, dr, false, false));
    assert!(!legal(&c, dr, false, true), "unknown trip count needs a predicate");
}

#[test]
fn legality_div_of_single_term_aff_expr_uses_gcd() {
    let Fx { mut c, i, j, .. } = fx();
    // i: tc 8. (2i) div 4: g = 2, 8 % 2 == 0 → legal
    let a = c.aff_expr(&[(i, 2)], 0).unwrap();
    let e = c.floor_div(a, 4).unwrap();
    assert!(legal(&c, e, true, false));
    // (3i) div 16: g = 1, 8 % 16 != 0 → illegal, whatever require_pred is
    let a3 = c.aff_expr(&[(i, 3)], 1).unwrap();
    let e = c.modulo(a3, 16).unwrap();
    assert!(!legal(&c, e, false, false));
    // j: tc 4. (6j) ccmod 12: g = 6, 4 % 2 == 0 → legal
    let a6 = c.aff_expr(&[(j, 6)], 0).unwrap();
    let e = c.cc_mod(a6, 12, 0).unwrap();
    assert!(legal(&c, e, false, false));
    // (-4i) ccdiv 3: g = 1, 8 % 3 != 0 → illegal
    let am = c.aff_expr(&[(i, -4)], 0).unwrap();
    let e = c.cc_div(am, 3, 0).unwrap();
    assert!(!legal(&c, e, false, false));
}

#[test]
fn legality_div_of_constant_is_legal() {
    let mut c = Context::new();
    let k = c.constant(7);
    let e = c.floor_div(k, 3).unwrap();
    assert!(legal(&c, e, true, true));
}

#[test]
fn legality_div_of_other_numerators_is_illegal() {
    let Fx { mut c, i, j, .. } = fx();
    let two = c.aff_expr(&[(i, 1), (j, 1)], 0).unwrap();
    let e = c.floor_div(two, 2).unwrap();
    assert!(!legal(&c, e, false, false), "more than one term");
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let s = c.sum(&[a]).unwrap();
    let e = c.modulo(s, 2).unwrap();
    assert!(!legal(&c, e, false, false), "numerator a Sum");
}

#[test]
fn legality_opaque_values_are_illegal() {
    let Fx { mut c, i, .. } = fx();
    let r = c.cc_get_rank(0, 0).unwrap();
    let ia = c.indirect_arg(0).unwrap();
    let f = c.opaque_fn("f", &[i]).unwrap();
    for e in [r, ia, f] {
        assert!(!legal(&c, e, false, false));
    }
}

#[test]
fn legality_icmp_is_not_implemented() {
    let Fx { mut c, i, .. } = fx();
    let e = c.icmp(CmpOp::Eq, i, i).unwrap();
    assert_eq!(
        msg(c.is_legal_delinearized_address(e, 0, false, false)),
        "Not implemented!"
    );
}

// ------------------------------------------------------------ predicates

#[test]
fn eval_mask_rules() {
    let Fx { mut c, i, s, .. } = fx();
    let ge = c.aff_expr(&[(s, 1)], -2).unwrap(); // shard - 2 >= 0
    let eq = c.aff_expr(&[(s, 1)], -3).unwrap(); // shard - 3 == 0
    let und = c.aff_expr(&[(i, 1)], -100).unwrap();
    let p_ge = AffinePredicate { expr: ge, ge: true };
    let p_eq = AffinePredicate { expr: eq, ge: false };
    let p_und = AffinePredicate { expr: und, ge: true };
    assert_eq!(eval_mask(&c, &[], &Bindings::default()).unwrap(), 1, "no predicates");
    assert_eq!(eval_mask(&c, &[p_ge], &bind(&[("shard", 1)])).unwrap(), 0);
    assert_eq!(eval_mask(&c, &[p_ge], &bind(&[("shard", 2)])).unwrap(), 1);
    assert_eq!(eval_mask(&c, &[p_ge, p_eq], &bind(&[("shard", 2)])).unwrap(), 0);
    assert_eq!(eval_mask(&c, &[p_ge, p_eq], &bind(&[("shard", 3)])).unwrap(), 1);
    assert_eq!(
        eval_mask(&c, &[p_und], &bind(&[("shard", 3)])).unwrap(),
        1,
        "undecided may fire"
    );
    assert_eq!(p_und.eval(&c, &Bindings::default()).unwrap(), None);
    let cores: Vec<i64> = vec![0, 1, 2, 3, 3, 2, 1, 0];
    let batch = eval_mask_batch(&c, &[p_ge, p_und], &Bindings::default(), &cores).unwrap();
    assert_eq!(batch, vec![0, 0, 1, 1, 1, 1, 0, 0]);
    assert!(eval_mask_batch(&c, &[p_ge], &Bindings::default(), &[0, 7]).is_err());
    let wide: Vec<i64> = vec![0, 3, 2];
    assert_eq!(
        eval_mask_batch(&c, &[], &Bindings::default(), &wide).unwrap(),
        vec![1, 1, 1]
    );
}

#[test]
fn eval_mask_batch_sparse_core_ids() {
    let mut c = Context::new();
    let s = c.shard_id(i64::MAX).unwrap();
    let e = c.aff_expr(&[(s, 1)], -5).unwrap();
    let p = AffinePredicate { expr: e, ge: true };
    let cores = vec![0, i64::MAX - 1, 4, 5, 0];
    assert_eq!(
        eval_mask_batch(&c, &[p], &Bindings::default(), &cores).unwrap(),
        vec![0, 1, 0, 1, 0]
    );
}

// ------------------------------------------------------------------ wire

fn roundtrip_v2(c: &mut Context, e: ExprId, expected: Value) {
    let v = c.to_json(e, 2).unwrap();
    assert_eq!(v, expected);
    assert_eq!(read2(c, &v).unwrap(), e);
}

#[test]
fn wire_v2_each_tag() {
    let Fx { mut c, i, s, .. } = fx();
    let iv = json!({"kind": "AffIVKind", "axis": "i"});
    let sh = json!({"kind": "ShardIDKind", "ub": 4});
    let r = c.cc_get_rank(1, 2).unwrap();
    roundtrip_v2(
        &mut c,
        r,
        json!({"kind": "CCGetRankKind", "iteration_id": 1, "channel_id": 2}),
    );
    let ia = c.indirect_arg(3).unwrap();
    roundtrip_v2(&mut c, ia, json!({"kind": "IndirectArgId", "arg_id": 3}));
    roundtrip_v2(&mut c, i, iv.clone());
    let rv = c.int_runtime_value("reg7").unwrap();
    roundtrip_v2(&mut c, rv, json!({"kind": "IntRuntimeValueKind", "regref": "reg7"}));
    roundtrip_v2(&mut c, s, sh.clone());
    let a = c.aff_expr(&[(i, 2), (s, -1)], 3).unwrap();
    let aj = json!({"kind": "AffExprKind", "terms": [{"idx": iv, "coeff": 2}, {"idx": sh, "coeff": -1}], "c": 3});
    roundtrip_v2(&mut c, a, aj.clone());
    let k = c.constant(1);
    let sum = c.sum(&[a, k]).unwrap();
    let kj = json!({"kind": "AffExprKind", "terms": [], "c": 1});
    roundtrip_v2(&mut c, sum, json!({"kind": "SumKind", "n_terms": 2, "terms": [aj, kj]}));
    let m = c.mult(a, 5).unwrap();
    roundtrip_v2(&mut c, m, json!({"kind": "MultKind", "var": aj, "scale": 5}));
    let f = c.floor_div(a, 2).unwrap();
    roundtrip_v2(&mut c, f, json!({"kind": "FloorDivKind", "numer": aj, "denom": 2}));
    let md = c.modulo(a, 2).unwrap();
    roundtrip_v2(&mut c, md, json!({"kind": "ModuloKind", "numer": aj, "denom": 2}));
    let cd = c.cc_div(a, 2, 9).unwrap();
    roundtrip_v2(
        &mut c,
        cd,
        json!({"kind": "CCDivKind", "numer": aj, "denom": 2, "replica_groups_id": 9}),
    );
}

#[test]
fn wire_ccmod_kind_reads_as_modulo() {
    let Fx { mut c, .. } = fx();
    let v = json!({"kind": "CCModKind", "numer": {"kind": "ShardIDKind", "ub": 4}, "denom": 2});
    let e = read2(&mut c, &v).unwrap();
    assert_eq!(c.kind(e), ExprKind::Modulo);
}

#[test]
fn wire_unknown_tag() {
    let mut c = Context::new();
    assert_eq!(
        wire_err(read2(&mut c, &json!({"kind": "FancyKind"}))),
        "Walrus doesn't support this kind of Expr: FancyKind"
    );
}

#[test]
fn wire_sum_term_count_mismatch() {
    let mut c = Context::new();
    let k = json!({"kind": "AffExprKind", "terms": [], "c": 1});
    let v = json!({"kind": "SumKind", "n_terms": 3, "terms": [k, k]});
    assert_eq!(wire_err(read2(&mut c, &v)), "Number of terms don't match");
}

#[test]
fn wire_write_unsupported_kinds() {
    let Fx { mut c, i, s, .. } = fx();
    let ap = c.ap_index(0, 4, 1, 1, None).unwrap();
    let t = c.tiled_ap_index(s, 0, 2, false).unwrap();
    let sym = c.symbolic_idx(0, 4, 1, 0).unwrap();
    let ic = c.icmp(CmpOp::Eq, i, s).unwrap();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let cm = c.cc_mod(a, 2, 0).unwrap();
    let nested = c.sum(&[a, cm]).unwrap();
    let at = c.aff_expr(&[(t, 1)], 0).unwrap();
    for e in [ap, t, sym, ic, cm, nested, at] {
        assert_eq!(pel_err(c.to_json(e, 2)).0, "Unsupported expression kind");
    }
}

#[test]
fn wire_term_idx_must_be_index_leaf() {
    let mut c = Context::new();
    let k = json!({"kind": "AffExprKind", "terms": [], "c": 1});
    let v = json!({"kind": "AffExprKind", "terms": [{"idx": k, "coeff": 1}], "c": 0});
    assert!(wire_err(read2(&mut c, &v)).contains("must be an index"));
}

#[test]
fn wire_unknown_axis_is_error_naming_it() {
    let mut c = Context::new();
    let m = wire_err(read2(&mut c, &json!({"kind": "AffIVKind", "axis": "zz"})));
    assert!(m.contains("\"zz\""), "{m}");
}

#[test]
fn wire_axes_table_resolves_affiv() {
    let mut c = Context::new();
    let table = vec![("k".to_string(), 0, 6, 2)];
    let e = c
        .from_json(
            &json!({"kind": "AffIVKind", "axis": "k"}),
            2,
            &mut ContextScope { axes: &table },
        )
        .unwrap();
    assert_eq!(c.trip_count(e), Some(3));
    let again = c
        .from_json(
            &json!({"kind": "AffIVKind", "axis": "k"}),
            2,
            &mut ContextScope { axes: &table },
        )
        .unwrap();
    assert_eq!(e, again);
}

#[test]
fn wire_is_a_tree_not_a_dag() {
    let Fx { mut c, i, .. } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let s = c.sum(&[a, a]).unwrap();
    let aj = c.to_json(a, 2).unwrap();
    assert_eq!(
        c.to_json(s, 2).unwrap(),
        json!({"kind": "SumKind", "n_terms": 2, "terms": [aj, aj]})
    );
}

#[test]
fn wire_bad_version() {
    let mut c = Context::new();
    let v = json!({"kind": "ShardIDKind", "ub": 2});
    assert_eq!(
        wire_err(c.from_json(&v, 3, &mut ContextScope { axes: &[] })),
        "Check the version of bir json file - should be 1 (old) or 2 (new)"
    );
    let s = c.shard_id(2).unwrap();
    assert_eq!(msg(c.to_json(s, 0)), "Check the version - should be 1 (old) or 2 (new)");
}

#[test]
fn wire_v1_read_and_write() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(i, 2)], 3).unwrap();
    let v1 = json!({"terms": [{"AxisLabel": "i", "coef": 2}], "c": 3});
    assert_eq!(c.to_json(a, 1).unwrap(), v1);
    assert_eq!(read1(&mut c, &v1).unwrap(), a);
    for (e, op) in [
        (c.floor_div(a, 4).unwrap(), "Div"),
        (c.modulo(a, 4).unwrap(), "Mod"),
        (c.cc_div(a, 4, 0).unwrap(), "CCGetRank"),
    ] {
        let v = json!({"terms": [{"AxisLabel": "i", "coef": 2}], "c": 3, "op": op, "op_param": 4});
        assert_eq!(c.to_json(e, 1).unwrap(), v);
        assert_eq!(read1(&mut c, &v).unwrap(), e);
    }
    let ia = c.indirect_arg(5).unwrap();
    let v = json!({"terms": [], "c": 0, "op": "IndirectArgId", "op_param": 5});
    assert_eq!(c.to_json(ia, 1).unwrap(), v);
    assert_eq!(read1(&mut c, &v).unwrap(), ia);
    // the v1 ShardIDKind form is byte-identical to v2
    assert_eq!(read1(&mut c, &json!({"kind": "ShardIDKind", "ub": 4})).unwrap(), s);
    // lncsplit extension: a ShardId term of a v1 AffExpr is a nested object
    let sa = c.aff_expr(&[(s, 1)], 0).unwrap();
    let v = c.to_json(sa, 1).unwrap();
    assert_eq!(
        v,
        json!({"terms": [{"AxisLabel": {"kind": "ShardIDKind", "ub": 4}, "coef": 1}], "c": 0})
    );
    assert_eq!(read1(&mut c, &v).unwrap(), sa);
}

#[test]
fn wire_v1_cc_get_rank_writes_op_and_reads_as_ccdiv() {
    let mut c = Context::new();
    let r = c.cc_get_rank(3, 5).unwrap();
    let v = c.to_json(r, 1).unwrap();
    assert_eq!(v, json!({"terms": [], "c": 3, "op": "CCGetRank", "op_param": 5}));
    let back = read1(&mut c, &v).unwrap();
    assert_eq!(c.kind(back), ExprKind::CCDiv);
}

#[test]
fn wire_v1_is_v1_check() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(i, 1)], 0).unwrap();
    let sum = c.sum(&[a]).unwrap();
    let m = c.mult(a, 2).unwrap();
    let d = c.floor_div(i, 2).unwrap();
    let ds = c.floor_div(sum, 2).unwrap();
    for e in [sum, m, d, ds, s, i] {
        assert!(!c.is_v1(e));
        assert_eq!(msg(c.to_json(e, 1)), "Pelican Expr should be in V1 format");
    }
}

#[test]
fn wire_v1_unknown_op() {
    let mut c = Context::new();
    let v = json!({"terms": [], "c": 0, "op": "Xor", "op_param": 1});
    assert_eq!(
        wire_err(read1(&mut c, &v)),
        "Walrus doesn't support this kind of Expr: Xor"
    );
}

/// Build `{"kind":"MultKind","var":{…}}` nested `n` deep without recursion.
fn nested_mult(n: usize) -> Value {
    let mut v = json!({"kind": "AffExprKind", "terms": [], "c": 1});
    for _ in 0..n {
        let mut m = serde_json::Map::new();
        m.insert("kind".into(), Value::from("MultKind"));
        m.insert("var".into(), v);
        m.insert("scale".into(), Value::from(1));
        v = Value::Object(m);
    }
    v
}

/// Drop a deeply nested value iteratively (serde_json's Drop recurses).
fn drop_iteratively(mut v: Value) {
    loop {
        let next = match &mut v {
            Value::Object(m) => m.remove("var"),
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None => break,
        }
    }
}

#[test]
fn wire_deep_nesting_is_clear_error() {
    let mut c = Context::new();
    let v = nested_mult(MAX_DEPTH as usize + 10);
    let m = wire_err(read2(&mut c, &v));
    assert!(m.contains("nested deeper than"), "{m}");
    drop_iteratively(v);
    let v = nested_mult(10_000);
    assert!(read2(&mut c, &v).is_err());
    drop_iteratively(v);
    // as text: serde_json's own recursion limit answers first
    let text = "{\"kind\":\"MultKind\",\"scale\":1,\"var\":".repeat(10_000);
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[test]
fn wire_bad_field_types_are_errors() {
    let mut c = Context::new();
    for v in [
        json!(5),
        json!({"kind": 5}),
        json!({"kind": "ShardIDKind"}),
        json!({"kind": "ShardIDKind", "ub": "x"}),
        json!({"kind": "ShardIDKind", "ub": 0}),
        json!({"kind": "SumKind", "n_terms": -1, "terms": []}),
        json!({"kind": "CCDivKind", "numer": {"kind": "ShardIDKind", "ub": 2}, "denom": 0}),
        json!({"kind": "CCGetRankKind", "iteration_id": -1, "channel_id": 0}),
    ] {
        assert!(matches!(read2(&mut c, &v), Err(Error::PelicanWire { .. })), "{v}");
    }
}

// ------------------------------------------------------------ batch API

#[test]
fn intern_batch_rows_and_refs() {
    let mut c = Context::new();
    let ids = c
        .intern_batch(
            &[13, 17, 0, 0, 26, 18, 0, 0, 23, 27],
            &[4, 2, -1, -1, -2, 2, -2, -5, -6, -9],
            &[0, 0, 2, 3, 3, 0, 0, 0, 2, 4],
            &[0, 7, 0, 0, 0, 0, 0, 0, 0, 1],
        )
        .unwrap();
    let s = c.shard_id(4).unwrap();
    let a = c.aff_expr(&[(s, 5)], 7).unwrap();
    let m = c.modulo(a, 3).unwrap();
    let sum = c.sum(&[a, m]).unwrap();
    let mu = c.mult(sum, 2).unwrap();
    let cd = c.cc_div(mu, 4, 1).unwrap();
    assert_eq!(ids, vec![s.0, a.0, NO_ID, NO_ID, m.0, sum.0, NO_ID, NO_ID, mu.0, cd.0]);
}

#[test]
fn intern_batch_errors_name_the_row() {
    let mut c = Context::new();
    assert!(msg(c.intern_batch(&[13, 25], &[4, -1], &[0, 0], &[0, 0])).contains("row 1"));
    assert!(msg(c.intern_batch(&[13, 25], &[4, -2], &[0, 2], &[0, 0])).contains("earlier row"));
    assert!(msg(c.intern_batch(&[0], &[0], &[0], &[0])).contains("argument row"));
    assert!(msg(c.intern_batch(&[17], &[3], &[0], &[0])).contains("argument rows do not follow"));
    assert!(msg(c.intern_batch(&[99], &[0], &[0], &[0])).contains("unsupported op code 99"));
    assert!(msg(c.intern_batch(&[13], &[0, 1], &[0], &[0])).contains("differ in length"));
    assert!(msg(c.intern_batch(&[23], &[1 << 40], &[0], &[0])).contains("unknown expression id"));
}

#[test]
fn intern_batch_argument_row_naming_its_own_node_is_an_error() {
    // an argument row may not name the AffExpr or Sum row it belongs to,
    // nor an argument row of the same node (once a bounds panic)
    let mut c = Context::new();
    for op in [17u8, 18] {
        let e = msg(c.intern_batch(&[op, 0], &[1, -1], &[0, 1], &[0, 0]));
        assert!(
            e.contains("row 1") && e.contains("names the node this argument row belongs to"),
            "{e}"
        );
        let e = msg(c.intern_batch(&[13, op, 0, 0], &[4, 2, -1, -3], &[0, 0, 1, 1], &[0; 4]));
        assert!(e.contains("row 3") && e.contains("names the node"), "{e}");
    }
    assert_eq!(c.len(), 1, "only the ShardId before the failing node is interned");
}

#[test]
fn display_is_readable_and_bounded() {
    let Fx { mut c, i, s, .. } = fx();
    let a = c.aff_expr(&[(i, 2), (s, 1)], 3).unwrap();
    let m = c.modulo(a, 4).unwrap();
    assert_eq!(c.display(m, 200), "(2*i + 1*shard<4> + 3) mod 4");
    let mut e = a;
    for _ in 0..30 {
        e = c.sum(&[e, e]).unwrap();
    }
    assert!(c.display(e, 100).chars().count() <= 101);
}

/// Every recursive algorithm survives an expression of the maximum depth on
/// a 2 MiB thread stack (Rust's default for spawned threads and rayon).
#[test]
fn max_depth_expression_fits_a_small_stack() {
    let h = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut c = Context::new();
            let s = c.shard_id(4).unwrap();
            let mut e = c.aff_expr(&[(s, 1)], 1).unwrap();
            let mut kinds = 0;
            while c.depth(e) < MAX_DEPTH {
                e = match kinds % 4 {
                    0 => c.mult(e, 1),
                    1 => c.sum(&[e]),
                    2 => c.floor_div(e, 1),
                    _ => c.modulo(e, 1 << 40),
                }
                .unwrap();
                kinds += 1;
            }
            assert!(c.mult(e, 1).is_err());
            assert_eq!(c.eval(e, &bind(&[("shard", 2)])).unwrap(), Some(3));
            let v = c.to_json(e, 2).unwrap();
            assert_eq!(read2(&mut c, &v).unwrap(), e);
            let r = c.update_shard_id(e, 3).unwrap();
            assert_eq!(c.as_constant(r), Some(4));
            assert!(c.is_legal_delinearized_address(e, 0, true, true).is_ok());
            assert!(!c.display(e, 10_000).is_empty());
            let mut v = v;
            // iterative drop of the deep JSON
            loop {
                let next = match &mut v {
                    Value::Object(m) => {
                        m.remove("var")
                            .or_else(|| m.remove("numer"))
                            .or_else(|| match m.remove("terms") {
                                Some(Value::Array(mut a)) if !a.is_empty() => Some(a.swap_remove(0)),
                                _ => None,
                            })
                    }
                    _ => None,
                };
                match next {
                    Some(n) => v = n,
                    None => break,
                }
            }
        })
        .unwrap();
    assert!(h.join().is_ok());
}

/// The batch starts fetching the next row's index slot when it is a unary
/// node over an already known id (a hint): the ids are those of interning
/// the rows one node at a time, across several merges of the index's small
/// table, and a next row with a bad operand still fails at its own row.
#[test]
fn intern_batch_look_ahead_changes_no_id_and_no_error() {
    let [ops, a, b, c] = bench_intern_rows(60_000);
    let ops: Vec<u8> = ops.iter().map(|&o| o as u8).collect();
    let mut whole = Context::new();
    let ids = whole.intern_batch(&ops, &a, &b, &c).unwrap();
    // one node (with its argument rows) per call, references made absolute
    let mut single = Context::new();
    let (mut row, mut got) = (0, Vec::<u32>::new());
    while row < ops.len() {
        let k = if matches!(ops[row], 17 | 18) {
            a[row] as usize
        } else {
            0
        };
        let rows = row..row + k + 1;
        let refers = |j: usize| j > row || ops[j] >= 23;
        let a_abs: Vec<i64> = rows
            .clone()
            .map(|j| match a[j] {
                r if refers(j) && r < 0 => got[(-(r + 1)) as usize] as i64,
                r => r,
            })
            .collect();
        let part = single.intern_batch(&ops[rows.clone()], &a_abs, &b[rows.clone()], &c[rows]);
        got.extend(part.unwrap());
        row += k + 1;
    }
    assert_eq!(ids, got);
    assert_eq!(whole.len(), single.len());
    // next rows over an existing id (a ref ≥ 0) and over an earlier row
    let mut c = Context::new();
    let s = c.shard_id(4).unwrap();
    let ids = c.intern_batch(&[12, 25, 26, 23], &[0, 0, -2, -3], &[64, 3, 5, 2], &[1, 0, 0, 0]);
    let fd = c.floor_div(s, 3).unwrap();
    let md = c.modulo(fd, 5).unwrap();
    assert_eq!(ids.unwrap()[1..], [fd.0, md.0, c.mult(md, 2).unwrap().0]);
    // a bad operand in the row looked ahead at: its own error, no panic
    for bad in [i64::MIN, i64::MAX, -2, -3, 1 << 40] {
        let e = msg(c.intern_batch(&[13, 25], &[4, bad], &[0, 3], &[0, 0]));
        assert!(e.contains("row 1"), "{bad}: {e}");
    }
    let e = msg(c.intern_batch(&[13, 17, 0, 25, 26], &[4, 1, -1, -2, -3], &[0, 0, 2, 3, 3], &[0; 5]));
    assert!(e.contains("row 4") && e.contains("names an argument row"), "{e}");
    let e = msg(c.intern_batch(&[13, 12, 28], &[4, 0, -1], &[0, 64, 3], &[0, 1, -1]));
    assert!(e.contains("replica_groups_id"), "{e}");
}

/// The rows of `benches/bench_pelican_ratios.py::intern_rows(n)`: per group an
/// AffExpr over the shard and a SymbolicIdx, a Modulo, a FloorDiv, a Mult, a
/// Sum and a CCDiv (11 rows); constants repeat so many nodes are duplicates.
fn bench_intern_rows(n: usize) -> [Vec<i64>; 4] {
    let groups = (n / 6).max(1) as i64;
    let (mut ops, mut a, mut b, mut c) = (vec![13, 12], vec![4, 0], vec![0, 64], vec![0, 1]);
    let r = |row: i64| -(row + 1);
    for k in 0..groups {
        let r0 = 2 + 11 * k;
        let rows: [(i64, i64, i64, i64); 11] = [
            (17, 2, 0, k % 10_000),
            (0, r(0), k % 7 + 1, 0),
            (0, r(1), k % 5, 0),
            (26, r(r0), 2 + k % 9, 0),
            (25, r(r0), 3, 0),
            (23, r(r0 + 3), 2 + k % 3, 0),
            (18, 3, 0, 0),
            (0, r(r0 + 4), 0, 0),
            (0, r(r0 + 5), 0, 0),
            (0, r(r0), 0, 0),
            (27, r(r0 + 6), 4, 1),
        ];
        for (o, x, y, z) in rows {
            ops.push(o);
            a.push(x);
            b.push(y);
            c.push(z);
        }
    }
    [ops, a, b, c]
}

/// The interning benchmark's Rust side, for callgrind and wall-time A/B:
/// `LNCSPLIT_INTERN_N=1000000 cargo test --release intern_bench_rows -- --ignored --nocapture`.
#[test]
#[ignore]
fn intern_bench_rows() {
    let n = std::env::var("LNCSPLIT_INTERN_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let reps: usize = std::env::var("LNCSPLIT_INTERN_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let [ops, a, b, c] = bench_intern_rows(n);
    let ops: Vec<u8> = ops.iter().map(|&o| o as u8).collect();
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        let mut ctx = Context::new();
        let ids = ctx.intern_batch(&ops, &a, &b, &c).unwrap();
        assert_eq!(ids.len(), ops.len());
        drop(ctx);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let nodes = ops.iter().filter(|&&o| o != 0).count();
    println!(
        "intern {nodes} nodes: best {:.1} ms, {:.1} ns/node",
        best * 1e3,
        best * 1e9 / nodes as f64
    );
}

/// `sort_by_content` (the keyed sort the AffExpr and Sum factories use) puts
/// terms in exactly the order of `Context::order`, ties of equal content
/// (two loops with the same name and bounds) and equal digests included.
#[test]
fn sort_by_content_matches_the_content_order() {
    let mut c = Context::new();
    let ax = [
        c.add_axis("i", 0, 8, 1),
        c.add_axis("i", 0, 8, 1),
        c.add_axis("j", 0, 4, 1),
    ];
    let mut ids = Vec::new();
    for a in ax {
        ids.push(c.affine_iv(a.unwrap()).unwrap());
    }
    ids.push(c.shard_id(4).unwrap());
    ids.push(c.symbolic_idx(0, 64, 1, 0).unwrap());
    ids.push(c.int_runtime_value("r").unwrap());
    for k in 0..6 {
        let e = c.aff_expr(&[(ids[k % 5], k as i64 + 1)], k as i64).unwrap();
        ids.push(e);
        ids.push(c.modulo(e, 3).unwrap());
        ids.push(c.floor_div(e, 3).unwrap());
        ids.push(c.mult(e, 2).unwrap());
    }
    // every rotation and a reversal of several windows, duplicates included
    for w in ids.windows(7).step_by(3) {
        for r in 0..w.len() {
            let mut v: smallvec::SmallVec<[ExprId; 8]> = w.iter().copied().cycle().skip(r).take(w.len()).collect();
            v.push(w[r]);
            let mut want = v.clone();
            want.sort_unstable_by(|&x, &y| c.order(x, y));
            c.sort_by_content(&mut v[..], |&x| x);
            assert_eq!(v, want);
            v.reverse();
            c.sort_by_content(&mut v[..], |&x| x);
            assert_eq!(v, want);
        }
    }
}

/// Hash-consing holds across many index segments and their growth (tens
/// of thousands of nodes): re-interning every expression — over old
/// children and over children interned since — gives back the same ids,
/// and nothing new is added.
#[test]
fn interning_is_idempotent_across_index_segments() {
    let mut c = Context::new();
    let s = c.shard_id(4).unwrap();
    let y = c.symbolic_idx(0, 64, 1, 0).unwrap();
    let build = |c: &mut Context, k: i64| -> Vec<ExprId> {
        let a = c.aff_expr(&[(s, k % 7 + 1), (y, k % 5)], k % 10_000).unwrap();
        let m = c.modulo(a, 2 + k % 9).unwrap();
        let f = c.floor_div(a, 3).unwrap();
        let x = c.mult(m, 2 + k % 3).unwrap();
        let u = c.sum(&[f, x, a]).unwrap();
        vec![a, m, f, x, u, c.cc_div(u, 4, 1).unwrap()]
    };
    let first: Vec<Vec<ExprId>> = (0..40_000).map(|k| build(&mut c, k)).collect();
    let n = c.len();
    assert!(n > 100_000, "enough nodes for several segments: {n}");
    for (k, ids) in first.iter().enumerate() {
        assert_eq!(&build(&mut c, k as i64), ids);
    }
    assert_eq!(c.len(), n);
    let iv = c.add_axis("i", 0, 8, 1).unwrap();
    let iv = c.affine_iv(iv).unwrap();
    assert_eq!(c.lookup(&Node::AffineIV { axis: AxisId(0) }), Some(iv));
    let old = c.node(first[7][3]).clone();
    assert_eq!(c.lookup(&old), Some(first[7][3]));
}

/// A node equal to one interned just after its newest child is found by
/// the scan of the last ids (no table read), and by the tables once more
/// nodes follow; a different one is new.
#[test]
fn a_node_equal_to_one_just_interned_is_found() {
    let mut c = Context::new();
    let s = c.shard_id(4).unwrap();
    let m = c.modulo(s, 3).unwrap();
    let x = c.mult(m, 2).unwrap();
    let d = c.floor_div(m, 5).unwrap();
    assert_eq!(c.mult(m, 2).unwrap(), x, "within the scan");
    assert_eq!(c.floor_div(m, 5).unwrap(), d);
    assert_ne!(c.mult(m, 3).unwrap(), x);
    for k in 0..40 {
        c.modulo(s, 7 + k).unwrap();
    }
    assert_eq!(c.mult(m, 2).unwrap(), x, "past the scan");
    let n = c.len();
    assert_eq!(c.mult(m, 2).unwrap(), x);
    assert_eq!(c.len(), n);
}

// ------------------------------------------------ moving nodes between contexts

/// `extend_mapped` appends nodes one to one with the metadata interning them
/// would give (digest, depth, flags), and they stay findable (`lookup`).
#[test]
fn extend_mapped_copies_nodes_with_their_metadata() {
    let Fx { c: src, i, j, s } = fx();
    let mut src = src;
    let e = src.aff_expr(&[(i, 2), (j, 3)], 1).unwrap();
    let top = src.mult(e, 5).unwrap();
    let mut dst = Context::new();
    dst.add_axis("i", 0, 8, 1).unwrap();
    dst.add_axis("j", 2, 14, 3).unwrap();
    assert!(dst
        .extend_mapped(&src, 0..src.len() as u32, true, |n| n.clone())
        .unwrap());
    assert_eq!(dst.len(), src.len());
    for id in [i, j, s, e, top] {
        assert_eq!(dst.node(id), src.node(id));
        assert_eq!(dst.digest(id), src.digest(id));
        assert_eq!(dst.depth(id), src.depth(id));
        assert_eq!(dst.has_shard(id), src.has_shard(id));
        assert_eq!(dst.lookup(src.node(id)), Some(id));
    }
}

/// Fresh nodes may repeat what is there; a one-to-one copy stops at the
/// first node the context already holds.
#[test]
fn extend_mapped_fresh_repeats_and_checked_stops_at_an_equal_node() {
    let Fx { c: src, .. } = fx();
    let mut dst = src.clone();
    assert!(dst
        .extend_mapped(&src, 0..src.len() as u32, true, |n| n.clone())
        .unwrap());
    assert_eq!(dst.len(), 2 * src.len());
    let mut dst = src.clone();
    assert!(!dst
        .extend_mapped(&src, 0..src.len() as u32, false, |n| n.clone())
        .unwrap());
    assert_eq!(dst.len(), src.len());
}

/// A node naming an id the target does not have is refused, as by
/// `insert_canonical`.
#[test]
fn extend_mapped_refuses_foreign_ids() {
    let Fx { c: src, .. } = fx();
    let mut dst = Context::new();
    let r = dst.extend_mapped(&src, 0..src.len() as u32, true, |n| n.clone());
    assert!(msg(r).contains("does not have"));
    assert!(msg(dst.extend_mapped(&src, 0..src.len() as u32 + 1, true, |n| n.clone())).contains("does not have"));
}

/// Marks name ranges of the context; one that is not is ignored.
#[test]
fn mark_appended_keeps_only_ranges_of_the_context() {
    let Fx { mut c, .. } = fx();
    let n = c.len() as u32;
    c.mark_appended(Appended {
        lo: 0,
        hi: n,
        alo: 0,
        ahi: 2,
    });
    c.mark_appended(Appended {
        lo: 0,
        hi: n + 1,
        alo: 0,
        ahi: 2,
    });
    c.mark_appended(Appended {
        lo: 0,
        hi: n,
        alo: 1,
        ahi: 3,
    });
    assert_eq!(
        c.appended(),
        &[Appended {
            lo: 0,
            hi: n,
            alo: 0,
            ahi: 2
        }]
    );
    assert_eq!(c.clone().appended().len(), 1);
}

/// The factories that intern from parts (Mult, FloorDiv, Modulo, CCDiv,
/// CCMod, Sum, AffExpr: no `Node` until a new one is stored) give the same
/// index hash, content digest, depth and flags as the generic path computes
/// from the node itself.
#[test]
fn factories_from_parts_agree_with_the_generic_node_path() {
    let mut c = Context::new();
    let s = c.shard_id(4).unwrap();
    let i = c.symbolic_idx(0, 64, 1, 0).unwrap();
    let mut ids = vec![c.aff_expr(&[(s, 3), (i, 2)], 5).unwrap(), c.constant(7)];
    for k in 1..40i64 {
        let x = ids[(k as usize * 7) % ids.len()];
        let made = match k % 7 {
            0 => c.mult(x, k - 20),
            1 => c.floor_div(x, k),
            2 => c.modulo(x, k + 1),
            3 => c.cc_div(x, k, k as u64 * 3),
            4 => c.cc_mod(x, k, u64::MAX - k as u64),
            5 => c.sum(&[x, ids[k as usize % ids.len()], s]),
            _ => c.aff_expr(&[(i, k), (s, -k)], -k),
        };
        ids.push(made.unwrap());
    }
    for &id in &ids {
        let node = c.node(id).clone();
        // the index hash: a lookup by the node finds the id
        assert_eq!(c.lookup(&node), Some(id), "{node:?}");
        assert_eq!(c.digest(id), c.content_digest(&node, |_| {}), "{node:?}");
        let kids = node.children();
        let depth = 1 + kids.iter().map(|&k| c.depth(k)).max().unwrap_or(0);
        let shard = kids.iter().any(|&k| c.has_shard(k));
        assert_eq!(c.depth(id), depth, "{node:?}");
        assert_eq!(
            c.has_shard(id),
            shard || matches!(node, Node::ShardId { .. }),
            "{node:?}"
        );
    }
}

/// A batch's AffExpr rows are prepared ahead of their turn (`AffAhead`); one
/// that fails its checks still fails at its own row, with the error it has
/// without the look-ahead, and the rows before it stay interned.
#[test]
fn intern_batch_prepared_aff_expr_fails_at_its_own_row() {
    // rows: 0 ShardId, 1 SymbolicIdx, 2 AffExpr(s, i), 5 Modulo(row 2),
    // 6 AffExpr over row 2 (an AffExpr: not an index leaf; known, so looked
    // at ahead of its turn), 8 FloorDiv(row 2)
    let ops = [13, 12, 17, 0, 0, 26, 17, 0, 25];
    let a = [4, 0, 2, -1, -2, -3, 1, -3, -3];
    let b = [0, 64, 0, 3, 5, 7, 0, 2, 3];
    let c = [0, 1, 9, 0, 0, 0, 0, 0, 0];
    let mut ctx = Context::new();
    let e = msg(ctx.intern_batch(&ops, &a, &b, &c));
    assert!(
        e.contains("AffExpr term idx must be an index") && e.contains("row 6"),
        "{e}"
    );
    // shard, idx, the AffExpr and its Modulo were interned before the error
    assert_eq!(ctx.len(), 4);
    // an overflowing AffExpr prepared ahead: the same overflow error at its row
    let ops = [13, 17, 0, 0, 26, 17, 0, 0];
    let a = [4, 2, -1, -1, -2, 2, -1, -1];
    let b = [0, 0, 1, 2, 7, 0, i64::MAX, 1];
    let c = [0, 0, 0, 0, 0, 0, 0, 0];
    let mut ctx = Context::new();
    let e = msg(ctx.intern_batch(&ops, &a, &b, &c));
    assert!(e.contains("row 5"), "{e}");
    assert_eq!(ctx.len(), 3);
}
