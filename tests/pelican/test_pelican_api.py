"""One test per promised behaviour of lncsplit.pelican (contract §2, §4),
mirroring rust/src/pelican/tests.rs through the Python API."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from lncsplit import pelican
from lncsplit.errors import BirJsonError, PelicanAssertion, PelicanWireError
from lncsplit.pelican import Context, Expr, Predicate, eval_mask, eval_mask_batch


@pytest.fixture
def ctx() -> Context:
    return Context()


@pytest.fixture
def fx(ctx: Context) -> tuple[Context, Expr, Expr, Expr]:
    return ctx, ctx.affine_iv("i", 0, 8, 1), ctx.affine_iv("j", 2, 14, 3), ctx.shard_id(4)


def raises(cls: type[BaseException], message: str) -> Any:
    """pytest.raises checking the class AND the exact ``.message``."""

    class _Check:
        def __enter__(self) -> None:
            self.cm = pytest.raises(cls)
            self.info = self.cm.__enter__()

        def __exit__(self, *exc: Any) -> bool:
            handled = self.cm.__exit__(*exc)
            assert self.info.value.message == message  # type: ignore[attr-defined]
            return bool(handled)

    return _Check()


# --------------------------------------------------------- constructor checks


def test_cc_get_rank_rejects_negative_ids(ctx: Context) -> None:
    for it, ch in [(-1, 0), (0, -1)]:
        with raises(PelicanAssertion, "Invalid iteration_id or channel_id for CCGetRankExpr!"):
            ctx.cc_get_rank(it, ch)
    with pytest.raises(PelicanAssertion) as e:
        ctx.cc_get_rank(-1, 0)
    assert e.value.location == "AffineExpr.h:326"
    assert str(e.value) == (
        "Pelican exception: Invalid iteration_id or channel_id for CCGetRankExpr! at AffineExpr.h:326"
    )


def test_indirect_arg_rejects_negative_arg_id(ctx: Context) -> None:
    with raises(PelicanAssertion, "Invalid arg_id for IndirectArgExpr!"):
        ctx.indirect_arg(-1)


@pytest.mark.parametrize("factory", ["floordiv", "modulo", "ccdiv", "ccmod"])
@pytest.mark.parametrize("denom", [0, -3])
def test_div_like_rejects_nonpositive_denom(fx: Any, factory: str, denom: int) -> None:
    ctx, i, _, _ = fx
    with raises(PelicanAssertion, "Unsupported denom for DivLikeExpr!"):
        getattr(ctx, factory)(i, denom)


def test_tiled_ap_index_requires_tile_dividing_trip_count(fx: Any) -> None:
    ctx, i, _, _ = fx
    with raises(
        PelicanAssertion, "TiledAPIndex tile size 3 must divide the trip count 8 of its child"
    ):
        ctx.tiled_ap_index(i, 3)
    assert ctx.tiled_ap_index(i, 4).trip_count == 2


def test_tiled_ap_index_same_partition_flag_fuses(ctx: Context) -> None:
    s = ctx.shard_id(16)
    fused = ctx.tiled_ap_index(ctx.tiled_ap_index(s, 2, True), 4, True)
    assert fused == ctx.tiled_ap_index(s, 8, True)
    assert fused.children == [s]
    unfused = ctx.tiled_ap_index(ctx.tiled_ap_index(s, 2, True), 4, False)
    assert unfused.children[0].kind_name == "TiledAPIndex"


def test_aff_expr_term_must_be_index_leaf(fx: Any) -> None:
    ctx, i, _, _ = fx
    e = ctx.aff_expr([(i, 1)])
    with pytest.raises(PelicanAssertion, match="must be an index"):
        ctx.aff_expr([(e, 1)])


# ------------------------------------------------------------------ interning


def test_structurally_equal_is_same_id(fx: Any) -> None:
    ctx, i, j, s = fx
    a = ctx.aff_expr([(i, 2), (s, 1)], 3)
    n = len(ctx)
    b = ctx.aff_expr([(i, 2), (s, 1)], 3)
    assert a == b and a.id == b.id and hash(a) == hash(b) and len(ctx) == n


def test_a_plus_b_is_b_plus_a(fx: Any) -> None:
    ctx, i, j, _ = fx
    assert ctx.aff_expr([(i, 2), (j, 3)]) == ctx.aff_expr([(j, 3), (i, 2)])
    a, b = ctx.aff_expr([(i, 1)]), ctx.aff_expr([(j, 1)])
    assert ctx.sum([a, b]) == ctx.sum([b, a])


def test_zero_terms_dropped(fx: Any) -> None:
    ctx, i, _, _ = fx
    assert ctx.aff_expr([(i, 0)], 3) == ctx.constant(3)
    assert ctx.aff_expr([(i, 2), (i, -2)], 3) == ctx.constant(3)


def test_repeated_indices_merged(fx: Any) -> None:
    ctx, i, j, _ = fx
    assert ctx.aff_expr([(i, 2), (j, 1), (i, 3)]) == ctx.aff_expr([(i, 5), (j, 1)])


def test_one_times_index_plus_zero_stays_aff_expr(fx: Any) -> None:
    ctx, i, _, _ = fx
    e = ctx.aff_expr([(i, 1)], 0)
    assert e != i and e.kind == 17 and e.kind_name == "AffExpr"


def test_affine_iv_identity_is_by_axis(ctx: Context) -> None:
    a = ctx.affine_iv("k", 0, 4, 1)
    b = ctx.affine_iv("k", 0, 4, 1)
    assert a != b and a.id != b.id


def test_kind_codes(fx: Any) -> None:
    ctx, i, _, s = fx
    a = ctx.aff_expr([(i, 1)])
    cases = {
        ctx.cc_get_rank(0, 0): 2,
        ctx.indirect_arg(0): 3,
        i: 6,
        ctx.int_runtime_value("r"): 7,
        ctx.ap_index(0, 4, 1, 2): 9,
        ctx.tiled_ap_index(s, 2): 10,
        ctx.symbolic_idx(0, 4, 1): 12,
        s: 13,
        a: 17,
        ctx.sum([a]): 18,
        ctx.icmp("sge", a, a): 20,
        ctx.mult(a, 2): 23,
        ctx.floordiv(a, 2): 25,
        ctx.modulo(a, 2): 26,
        ctx.ccdiv(a, 2): 27,
        ctx.ccmod(a, 2): 28,
        ctx.opaque_fn("f", [a]): 29,
    }
    for e, k in cases.items():
        assert e.kind == k and pelican.KIND_NAMES[k] == e.kind_name


def test_geometry_of_index_leaves(fx: Any) -> None:
    ctx, i, j, s = fx
    assert (j.infimum, j.supremum, j.trip_count) == (2, 11, 4)
    assert (s.infimum, s.supremum, s.trip_count) == (0, 3, 4)
    assert ctx.int_runtime_value("r").trip_count is None
    assert ctx.aff_expr([(i, 1)]).trip_count is None


def test_mixing_contexts_is_an_error(fx: Any) -> None:
    ctx, i, _, _ = fx
    other = Context()
    with raises(PelicanAssertion, "expressions from different contexts cannot be mixed"):
        other.aff_expr([(i, 1)])
    with raises(PelicanAssertion, "expressions from different contexts cannot be mixed"):
        other.shard_id(2).eval({i: 1})
    with raises(PelicanAssertion, "expressions from different contexts cannot be mixed"):
        eval_mask([Predicate(i), Predicate(other.shard_id(2))])
    assert i != other.affine_iv("i", 0, 8, 1) or i.context is other


def test_expr_accessors(fx: Any) -> None:
    ctx, i, _, s = fx
    a = ctx.aff_expr([(i, 2), (s, 1)], 3)
    assert a.context is ctx
    assert set(a.children) == {i, s}
    assert a.has_shard and not ctx.aff_expr([(i, 1)]).has_shard
    assert repr(ctx.modulo(a, 4)).endswith("(2*i + 1*shard<4> + 3) mod 4)")
    assert ctx.expr(a.id) == a
    with raises(PelicanAssertion, "unknown expression id 99999"):
        ctx.expr(99999)


# ----------------------------------------------------------------------- eval


def test_modulo_is_euclidean(ctx: Context) -> None:
    assert ctx.modulo(ctx.constant(-1), 3).eval({}) == 2
    assert ctx.ccmod(ctx.constant(-7), 4).eval() == 1


def test_floor_division_toward_negative_infinity(ctx: Context) -> None:
    assert ctx.floordiv(ctx.constant(-7), 2).eval() == -4
    assert ctx.ccdiv(ctx.constant(-7), 2).eval() == -4


def test_eval_by_name_shard_and_expr(fx: Any) -> None:
    ctx, i, j, s = fx
    a = ctx.aff_expr([(i, 2), (j, -1), (s, 10)], 5)
    assert a.eval({"i": 3, "j": 5, "shard": 1}) == 16
    assert a.eval({i: 3, j: 5, s: 1}) == 16


def test_eval_unbound_index_is_undecided(fx: Any) -> None:
    ctx, i, _, s = fx
    assert ctx.aff_expr([(i, 1), (s, 1)]).eval({"shard": 1}) is None


def test_eval_runtime_values_are_undecided(ctx: Context) -> None:
    for e in [
        ctx.cc_get_rank(0, 1),
        ctx.indirect_arg(2),
        ctx.aff_expr([(ctx.int_runtime_value("r"), 1)]),
        ctx.ccdiv(ctx.cc_get_rank(0, 0), 2),
    ]:
        assert e.eval({"shard": 0}) is None


def test_binding_a_runtime_value_is_an_error(ctx: Context) -> None:
    r = ctx.int_runtime_value("r")
    with raises(
        PelicanAssertion,
        "a runtime value (IntRuntimeValue) cannot be bound: it is never decided at compile time",
    ):
        r.eval({r: 1})


def test_eval_out_of_range_binding_is_error(fx: Any) -> None:
    ctx, i, j, s = fx
    with raises(PelicanAssertion, "binding 8 for axis i is outside its range [0, 8) step 1"):
        ctx.aff_expr([(i, 1)]).eval({"i": 8})
    with raises(PelicanAssertion, "binding 3 for axis j is outside its range [2, 14) step 3"):
        j.eval({"j": 3})
    with raises(PelicanAssertion, "binding 4 for shard is outside its range [0, 4) step 1"):
        s.eval({"shard": 4})


def test_eval_overflow_is_error(fx: Any) -> None:
    ctx, i, _, _ = fx
    with raises(PelicanAssertion, "integer overflow in eval (mul)"):
        ctx.aff_expr([(i, 2**63 - 1)]).eval({"i": 2})
    with raises(PelicanAssertion, "integer overflow in eval (add)"):
        ctx.sum([ctx.constant(2**63 - 1), ctx.constant(1)]).eval()


def test_eval_bad_binding_types(fx: Any) -> None:
    _, i, _, _ = fx
    with pytest.raises(TypeError):
        i.eval({3: 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        i.eval(5)  # type: ignore[arg-type]


# ------------------------------------------------------------ update_shard_id


def test_update_shard_id_folds(fx: Any) -> None:
    ctx, i, _, s = fx
    e = ctx.aff_expr([(s, 2), (i, 3)], 1)
    assert e.update_shard_id(2) == ctx.aff_expr([(i, 3)], 5)
    assert ctx.modulo(ctx.aff_expr([(s, 1)], 1), 2).update_shard_id(3) == ctx.constant(0)


def test_update_shard_id_core_at_or_above_ub_is_error(fx: Any) -> None:
    ctx, _, _, s = fx
    with raises(PelicanAssertion, "binding 4 for shard is outside its range [0, 4) step 1"):
        ctx.aff_expr([(s, 1)]).update_shard_id(4)


def test_update_shard_id_leaves_no_shard(fx: Any) -> None:
    ctx, i, _, s = fx
    e = ctx.sum(
        [
            ctx.floordiv(ctx.mult(ctx.aff_expr([(s, 2), (i, 1)]), 3), 2),
            ctx.ccmod(ctx.aff_expr([(s, 1)]), 2),
        ]
    )
    for core in range(4):
        r = e.update_shard_id(core)
        assert not r.has_shard
        for iv in range(8):
            assert r.eval({"i": iv}) == e.eval({"i": iv, "shard": core})


def test_update_shard_id_overflow_is_error(fx: Any) -> None:
    ctx, _, _, s = fx
    with raises(PelicanAssertion, "integer overflow in folding"):
        ctx.aff_expr([(s, 2**63 - 1)]).update_shard_id(2)


# ------------------------------------------------------------------- legality


def legal(e: Expr, part: bool = False, pred: bool = False) -> bool:
    return e.is_legal_delinearized_address(0, part, pred)


def test_legality_index_leaves_and_runtime_value(fx: Any) -> None:
    ctx, i, _, s = fx
    for e in [i, s, ctx.int_runtime_value("r"), ctx.symbolic_idx(0, 4, 1)]:
        assert legal(e, True, True)


def test_legality_aff_expr(fx: Any) -> None:
    ctx, i, _, _ = fx
    assert legal(ctx.constant(5), part=True)
    assert legal(ctx.aff_expr([(i, 1)], 5), part=False)
    assert legal(ctx.aff_expr([(i, 1)], 0), part=True)
    assert not legal(ctx.aff_expr([(i, 1)], 5), part=True)


def test_legality_sum_and_mult(fx: Any) -> None:
    ctx, i, _, _ = fx
    ok, bad = ctx.aff_expr([(i, 1)]), ctx.aff_expr([(i, 1)], 5)
    assert legal(ctx.sum([ok, i]), part=True)
    assert not legal(ctx.sum([ok, bad]), part=True)
    assert not legal(ctx.mult(bad, 2), part=True) and legal(ctx.mult(bad, 2), part=False)


def test_legality_div_of_index_leaf(fx: Any) -> None:
    ctx, i, _, _ = fx
    assert legal(ctx.floordiv(i, 3))
    assert not legal(ctx.floordiv(i, 3), pred=True)
    assert legal(ctx.modulo(i, 4), pred=True)


def test_legality_div_of_single_term_uses_gcd(fx: Any) -> None:
    ctx, i, j, _ = fx
    assert legal(ctx.floordiv(ctx.aff_expr([(i, 2)]), 4))
    assert not legal(ctx.modulo(ctx.aff_expr([(i, 3)], 1), 16))
    assert legal(ctx.ccmod(ctx.aff_expr([(j, 6)]), 12))
    assert not legal(ctx.ccdiv(ctx.aff_expr([(i, -4)]), 3))


def test_legality_div_of_constant_and_others(fx: Any) -> None:
    ctx, i, j, _ = fx
    assert legal(ctx.floordiv(ctx.constant(7), 3), True, True)
    assert not legal(ctx.floordiv(ctx.aff_expr([(i, 1), (j, 1)]), 2))
    assert not legal(ctx.modulo(ctx.sum([ctx.aff_expr([(i, 1)])]), 2))


def test_legality_opaque_values_illegal(fx: Any) -> None:
    ctx, i, _, _ = fx
    for e in [ctx.cc_get_rank(0, 0), ctx.indirect_arg(0), ctx.opaque_fn("f", [i])]:
        assert not legal(e)


def test_legality_icmp_not_implemented(fx: Any) -> None:
    ctx, i, _, _ = fx
    with raises(PelicanAssertion, "Not implemented!"):
        legal(ctx.icmp("eq", i, i))


def test_icmp_unknown_op(fx: Any) -> None:
    ctx, i, _, _ = fx
    with pytest.raises(PelicanAssertion, match="unknown comparison"):
        ctx.icmp("lt", i, i)


# ---------------------------------------------------------------------- masks


def test_eval_mask_rules(fx: Any) -> None:
    ctx, i, _, s = fx
    p_ge = Predicate(ctx.aff_expr([(s, 1)], -2))
    p_eq = Predicate(ctx.aff_expr([(s, 1)], -3), ge=False)
    p_und = Predicate(ctx.aff_expr([(i, 1)], -100))
    assert eval_mask([], {}) == 1
    assert eval_mask([p_ge], {"shard": 1}) == 0
    assert eval_mask([p_ge], {"shard": 2}) == 1
    assert eval_mask([p_ge, p_eq], {"shard": 2}) == 0
    assert eval_mask([p_ge, p_eq], {"shard": 3}) == 1
    assert eval_mask([p_und], {"shard": 3}) == 1
    assert p_und.eval({}) is None and p_eq.eval({"shard": 3}) is True
    assert p_ge.expr == ctx.aff_expr([(s, 1)], -2) and p_ge.ge and not p_eq.ge


def test_eval_mask_batch(fx: Any) -> None:
    ctx, i, _, s = fx
    preds = [Predicate(ctx.aff_expr([(s, 1)], -2)), Predicate(ctx.aff_expr([(i, 1)], -100))]
    cores = np.array([0, 1, 2, 3, 3, 2, 1, 0], dtype=np.int64)
    out = eval_mask_batch(preds, cores)
    assert out.dtype == np.uint8 and out.tolist() == [0, 0, 1, 1, 1, 1, 0, 0]
    assert eval_mask_batch(preds, cores[::2]).tolist() == [0, 1, 1, 0]
    assert eval_mask_batch([], cores).tolist() == [1] * 8
    with pytest.raises(PelicanAssertion, match="outside its range"):
        eval_mask_batch(preds, np.array([7], dtype=np.int64))


# ----------------------------------------------------------------------- wire

IV = {"kind": "AffIVKind", "axis": "i"}
SH = {"kind": "ShardIDKind", "ub": 4}
AJ = {"kind": "AffExprKind", "terms": [{"idx": IV, "coeff": 2}, {"idx": SH, "coeff": -1}], "c": 3}
V2_CASES: list[dict[str, Any]] = [
    {"kind": "CCGetRankKind", "iteration_id": 1, "channel_id": 2},
    {"kind": "IndirectArgId", "arg_id": 3},
    IV,
    {"kind": "IntRuntimeValueKind", "regref": "reg7"},
    SH,
    AJ,
    {"kind": "SumKind", "n_terms": 2, "terms": [AJ, {"kind": "AffExprKind", "terms": [], "c": 1}]},
    {"kind": "MultKind", "var": AJ, "scale": 5},
    {"kind": "FloorDivKind", "numer": AJ, "denom": 2},
    {"kind": "ModuloKind", "numer": AJ, "denom": 2},
    {"kind": "CCDivKind", "numer": AJ, "denom": 2, "replica_groups_id": 9},
]


@pytest.mark.parametrize("wire", V2_CASES, ids=[c["kind"] for c in V2_CASES])
def test_wire_v2_each_tag_round_trips(fx: Any, wire: dict[str, Any]) -> None:
    ctx = fx[0]
    e = ctx.from_json(wire)
    assert e.to_json() == wire
    assert ctx.from_json(json.dumps(wire)) == e
    assert ctx.from_json(json.dumps(wire).encode()) == e


def test_from_json_on_class_makes_fresh_context() -> None:
    e = Context.from_json(AJ, axes={"i": (0, 8, 1)})
    assert isinstance(e.context, Context) and e.eval({"i": 1, "shard": 0}) == 5
    f = Context.from_json(AJ, axes={"i": (0, 8, 1)})
    assert e.context is not f.context and e != f


def test_from_json_unknown_axis_names_it(ctx: Context) -> None:
    with raises(PelicanWireError, 'AffIVKind axis "zz" is not defined by any enclosing Loop'):
        ctx.from_json({"kind": "AffIVKind", "axis": "zz"})


def test_wire_ccmod_kind_reads_as_modulo(ctx: Context) -> None:
    e = ctx.from_json({"kind": "CCModKind", "numer": SH, "denom": 2})
    assert e.kind_name == "Modulo"


def test_wire_unknown_tag(ctx: Context) -> None:
    with raises(PelicanWireError, "Walrus doesn't support this kind of Expr: FancyKind"):
        ctx.from_json({"kind": "FancyKind"})
    assert issubclass(PelicanWireError, BirJsonError) and issubclass(
        PelicanWireError, PelicanAssertion
    )


def test_wire_number_of_terms_dont_match(ctx: Context) -> None:
    with raises(PelicanWireError, "Number of terms don't match"):
        ctx.from_json({"kind": "SumKind", "n_terms": 3, "terms": []})


def test_wire_write_unsupported_kinds(fx: Any) -> None:
    ctx, i, _, s = fx
    a = ctx.aff_expr([(i, 1)])
    for e in [
        ctx.ap_index(0, 4, 1, 1),
        ctx.tiled_ap_index(s, 2),
        ctx.symbolic_idx(0, 4, 1),
        ctx.icmp("eq", i, s),
        ctx.ccmod(a, 2),
        ctx.sum([a, ctx.ccmod(a, 2)]),
    ]:
        with raises(PelicanAssertion, "Unsupported expression kind"):
            e.to_json()


def test_wire_is_a_tree_not_a_dag(fx: Any) -> None:
    ctx, i, _, _ = fx
    a = ctx.aff_expr([(i, 1)])
    assert ctx.sum([a, a]).to_json() == {
        "kind": "SumKind",
        "n_terms": 2,
        "terms": [a.to_json()] * 2,
    }


def test_wire_bad_version(ctx: Context) -> None:
    with raises(
        PelicanWireError, "Check the version of bir json file - should be 1 (old) or 2 (new)"
    ):
        ctx.from_json(SH, version=3)
    with raises(PelicanAssertion, "Check the version - should be 1 (old) or 2 (new)"):
        ctx.shard_id(2).to_json(version=0)


def test_wire_v1_read_and_write(fx: Any) -> None:
    ctx, i, _, s = fx
    a = ctx.aff_expr([(i, 2)], 3)
    body = {"terms": [{"AxisLabel": "i", "coef": 2}], "c": 3}
    assert a.to_json(version=1) == body
    assert ctx.from_json(body, version=1) == a
    for e, op in [
        (ctx.floordiv(a, 4), "Div"),
        (ctx.modulo(a, 4), "Mod"),
        (ctx.ccdiv(a, 4), "CCGetRank"),
    ]:
        wire = {**body, "op": op, "op_param": 4}
        assert e.to_json(version=1) == wire
        assert ctx.from_json(wire, version=1) == e
    ia = ctx.indirect_arg(5)
    wire = {"terms": [], "c": 0, "op": "IndirectArgId", "op_param": 5}
    assert ia.to_json(1) == wire and ctx.from_json(wire, 1) == ia


def test_wire_v1_requires_is_v1(fx: Any) -> None:
    ctx, i, _, s = fx
    a = ctx.aff_expr([(i, 1)])
    for e in [ctx.sum([a]), ctx.mult(a, 2), ctx.floordiv(i, 2), s, i]:
        with raises(PelicanAssertion, "Pelican Expr should be in V1 format"):
            e.to_json(version=1)


def deep(n: int) -> dict[str, Any]:
    v: dict[str, Any] = {"kind": "AffExprKind", "terms": [], "c": 1}
    for _ in range(n):
        v = {"kind": "MultKind", "var": v, "scale": 1}
    return v


def test_deeply_nested_json_is_a_clear_error(ctx: Context) -> None:
    with raises(PelicanWireError, "JSON nested deeper than 528 levels"):
        ctx.from_json(deep(10_000))
    text = '{"kind":"MultKind","scale":1,"var":' * 10_000
    with pytest.raises(PelicanWireError, match="recursion limit exceeded"):
        ctx.from_json(text)
    with pytest.raises(PelicanWireError, match="nested deeper than 256 levels"):
        ctx.from_json(deep(300))
    assert ctx.from_json(deep(100)).eval() == 1


def test_malformed_json_is_wire_error(ctx: Context) -> None:
    for bad in [
        "{",
        b"[1,",
        {"kind": 5},
        {"kind": "ShardIDKind", "ub": "x"},
        {1: 2},
        {"k": object()},
        {"k": 2**70},
    ]:
        with pytest.raises(PelicanWireError):
            ctx.from_json(bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------ batch API


def test_intern_batch_matches_factories(ctx: Context) -> None:
    ids = ctx.intern_batch(
        [13, 17, 0, 0, 26, 18, 0, 0, 23, 27],
        [4, 2, -1, -1, -2, 2, -2, -5, -6, -9],
        [0, 0, 2, 3, 3, 0, 0, 0, 2, 4],
        [0, 7, 0, 0, 0, 0, 0, 0, 0, 1],
    )
    assert ids.dtype == np.uint32
    s = ctx.shard_id(4)
    a = ctx.aff_expr([(s, 5)], 7)
    m = ctx.modulo(a, 3)
    sm = ctx.sum([a, m])
    mu = ctx.mult(sm, 2)
    cd = ctx.ccdiv(mu, 4, 1)
    none = pelican.NO_ID
    assert ids.tolist() == [s.id, a.id, none, none, m.id, sm.id, none, none, mu.id, cd.id]
    assert ctx.expr(int(ids[-1])) == cd


def test_intern_batch_errors(ctx: Context) -> None:
    with raises(PelicanAssertion, "Unsupported denom for DivLikeExpr! (intern_batch row 1)"):
        ctx.intern_batch([13, 25], [4, -1], [0, 0], [0, 0])
    with raises(PelicanAssertion, "intern_batch row 1: reference -2 does not name an earlier row"):
        ctx.intern_batch([13, 25], [4, -2], [0, 2], [0, 0])
    with pytest.raises(PelicanAssertion, match="differ in length"):
        ctx.intern_batch([13], [4, 5], [0], [0])


def test_intern_batch_argument_row_naming_its_own_node_is_an_error(ctx: Context) -> None:
    # once a Rust bounds panic (PanicException) rather than a typed error
    for op in (17, 18):
        with raises(
            PelicanAssertion,
            "intern_batch row 1: reference -1 names the node this argument row belongs to,"
            " or one of its argument rows",
        ):
            ctx.intern_batch([op, 0], [1, -1], [0, 1], [0, 0])
    assert len(ctx) == 0
