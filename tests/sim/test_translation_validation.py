"""Translation validation (contract §3.8): lncsplit's rewrites keep the meaning.

For race-free symbolic modules: symbolic ≡ split, and symbolic (after
expand_replication) ≡ the full pipeline's output; with the linker, cores ≡
unlink(link(cores)). Mutations of a correct split — a flipped prune, a moved
address, a dropped barrier, a removed replicate copy — are told apart (the
dropped barrier shows as a dynamic race). Properties over passes that are not
in this build yet switch on by themselves when the functions exist.
"""

from __future__ import annotations

import json
import random
from typing import Any

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core, sim
from sim_modules import Builder, assemble, build

props = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**32 - 1)
lncs = st.sampled_from([1, 2, 4, 8])

HAS_TAIL = hasattr(lncsplit, "lower_local_collectives") and hasattr(
    lncsplit, "extend_shared_lifetimes"
)
HAS_LINKER = hasattr(lncsplit, "link") and hasattr(lncsplit, "unlink")


def expanded(seed: int, n: int) -> lncsplit.Module:
    m = build(seed, n)
    lncsplit.expand_replication(m)
    return m


def assert_equivalent(a: Any, b: Any) -> sim.Equivalence:
    e = sim.equivalent(a, b)
    assert e, str(e)
    assert not e.a.races, e.a.races[0]
    assert not e.b.races, e.b.races[0]
    return e


@props
@given(seed=seeds, n=lncs)
def test_symbolic_equals_split(seed: int, n: int) -> None:
    m = expanded(seed, n)
    assert_equivalent(m, lncsplit.split([m.clone()], n))


@props
@given(seed=seeds, n=lncs)
def test_symbolic_after_expand_replication_equals_the_pipeline_output(seed: int, n: int) -> None:
    m = build(seed, n)
    cores = lncsplit.run_pipeline([m.clone()], lncsplit.PassOptions(lnc_size=n))
    if n > 1:  # with N == 1 the pipeline passes the module through untouched
        lncsplit.expand_replication(m)
    assert_equivalent(m, cores)


@pytest.mark.skipif(
    not HAS_TAIL, reason="lower_local_collectives / extend_shared_lifetimes not in this build yet"
)
@props
@given(seed=seeds, n=st.sampled_from([2, 4, 8]))
def test_symbolic_equals_split_lowered_and_lifetimes_extended(seed: int, n: int) -> None:
    m = expanded(seed, n)
    cores = lncsplit.split([m.clone()], n)
    cores = lncsplit.lower_local_collectives(cores, lncsplit.PassOptions(lnc_size=n))  # type: ignore[attr-defined]
    cores = lncsplit.extend_shared_lifetimes(cores)  # type: ignore[attr-defined]
    assert_equivalent(m, cores)


@pytest.mark.skipif(not HAS_LINKER, reason="link / unlink not in this build yet")
@props
@given(seed=seeds, n=lncs)
def test_cores_equal_unlink_of_link(seed: int, n: int) -> None:
    cores = lncsplit.run_pipeline([build(seed, n)], lncsplit.PassOptions(lnc_size=n))
    linked = lncsplit.link(cores)  # type: ignore[attr-defined]
    assert_equivalent(cores, lncsplit.unlink(linked))  # type: ignore[attr-defined]
    assert_equivalent(cores, linked)


# Generated modules with small access patterns (`lncsplit gen --ap-partitions 4
# --ap-columns 8`): every generator feature, at a size simulated in milliseconds.
# The default AP size (128 partitions × columns/(2N)) moves ~70k elements per
# instance; one example of it per N keeps the big-tile paths covered.
SMALL_AP = {"ap_partitions": 4, "ap_columns": 8}


def generated(seed: int, n: int, instructions: int = 200, **caps: int) -> lncsplit.Module:
    kw = caps or SMALL_AP
    return _core.generate_module(seed=seed, instructions=instructions, lnc=n, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("seed", "n"), [(1, 2), (2, 4), (3, 8), (4, 2), (5, 1)])
def test_generated_modules_symbolic_equals_split(seed: int, n: int) -> None:
    m = generated(seed, n, 300)
    lncsplit.expand_replication(m)
    assert_equivalent(m, lncsplit.split([m.clone()], n))


@pytest.mark.parametrize(("seed", "n"), [(0, 1), (1, 2), (2, 4), (3, 8)])
def test_generated_modules_with_default_aps_symbolic_equals_split(seed: int, n: int) -> None:
    m = _core.generate_module(seed=seed, instructions=40, lnc=n)
    lncsplit.expand_replication(m)
    assert_equivalent(m, lncsplit.split([m.clone()], n))


gen_props = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@gen_props
@given(seed=seeds, n=lncs)
def test_generated_modules_symbolic_equals_the_pipeline_output(seed: int, n: int) -> None:
    """Every generator feature (loops, replication, shared DRAM, every collective kind)
    through every pass: collectives lowered, lifetimes extended, shared DRAM placed."""
    m = generated(seed, n)
    cores = lncsplit.run_pipeline([m.clone()], lncsplit.PassOptions(lnc_size=n))
    if n > 1:  # with N == 1 the pipeline passes the module through untouched
        lncsplit.expand_replication(m)
    assert_equivalent(m, cores)


@pytest.mark.skipif(not HAS_LINKER, reason="link / unlink not in this build yet")
@settings(gen_props, max_examples=6)
@given(seed=seeds, n=lncs)
def test_generated_cores_equal_unlink_of_link(seed: int, n: int) -> None:
    m = generated(seed, n)
    cores = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=n))
    linked = lncsplit.link(cores)  # type: ignore[attr-defined]
    ran = sim.run(cores)  # one run of the cores for both comparisons
    assert_equivalent(ran, lncsplit.unlink(linked))  # type: ignore[attr-defined]
    assert_equivalent(ran, linked)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n=lncs, data=st.data())
def test_malformed_modules_are_refused_never_crash(seed: int, n: int, data: st.DataObject) -> None:
    j = json.loads(build(seed, n).to_json())
    insts = j["functions"][0]["basic_blocks"][0]["instructions"]
    victim = insts[data.draw(st.integers(0, len(insts) - 1))]
    key = data.draw(st.sampled_from(["ap", "addrs", "dtype", "opcode", "memsetref"]))
    junk = data.draw(
        st.sampled_from(
            [[[1, -3]], [[2**40, 2], [1, 2]], "float16", "Nonsense", "nothing", [], None]
        )
    )
    args = victim.get("ins", []) + victim.get("outs", [])
    target = args[0] if args and key != "opcode" else victim
    target[key] = junk
    try:
        m = lncsplit.Module.from_json(json.dumps(j))
        sim.run(m, lnc=n)
    except lncsplit.LncsplitError:
        pass


# ---------------------------------------------------------------- mutations


def _edit(m: lncsplit.Module, fn: Any) -> lncsplit.Module:
    j = json.loads(m.to_json())
    fn(j["functions"][0]["basic_blocks"][0]["instructions"])
    return lncsplit.Module.from_json(json.dumps(j))


def _named(insts: list[dict[str, Any]], prefix: str) -> int:
    return next(i for i, x in enumerate(insts) if x["name"].startswith(prefix))


def test_a_flipped_prune_is_told_apart() -> None:
    m = build(0, 2, ops=0)
    # A Memset of core 1's tile that the split prunes on core 0.
    ms = {
        "name": "only_core1",
        "opcode": "Memset",
        "ins": [{"kind": "imm_value", "dtype": "uint32", "value": 77}],
        "outs": [
            {
                "kind": "symbolic_ap",
                "ap": [[8, 4], [1, 8]],
                "dtype": "uint32",
                "memsetref": "t0",
                "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0}] * 2,
            }
        ],
        "predicates": [
            {
                "expr": {
                    "kind": "AffExprKind",
                    "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": 1}],
                    "c": -1,
                },
                "ge": False,
            }
        ],
    }
    m = _edit(m, lambda insts: insts.insert(len(insts) - 1, ms))
    m = _edit(m, lambda insts: insts[-1]["ins"][0].update(memsetref="t0"))
    cores = lncsplit.split([m.clone()], 2)
    assert_equivalent(m, cores)
    kept_on_core0 = _edit(
        cores[0], lambda insts: insts.insert(len(insts) - 1, dict(ms, predicates=[]))
    )
    e = sim.equivalent(m, [kept_on_core0, cores[1]])
    assert not e and e.difference is not None and e.difference.core == 0
    pruned_on_core1 = _edit(cores[1], lambda insts: insts.pop(_named(insts, "only_core1")))
    e = sim.equivalent(m, [cores[0], pruned_on_core1])
    assert not e and e.difference is not None and e.difference.core == 1


@props
@given(seed=seeds, n=st.sampled_from([2, 4, 8]), data=st.data())
def test_a_moved_address_is_told_apart(seed: int, n: int, data: st.DataObject) -> None:
    m = expanded(seed, n)
    cores = lncsplit.split([m.clone()], n)
    c = data.draw(st.integers(0, n - 1))
    # Move the final store of core c to its neighbour's rows.
    other = (c + 1) % n * 4

    def move(insts: list[dict[str, Any]]) -> None:
        insts[-1]["outs"][0]["addrs"][0] = {"kind": "AffExprKind", "terms": [], "c": other}

    cores[c] = _edit(cores[c], move)
    e = sim.equivalent(m, cores)
    assert not e and e.difference is not None
    assert (e.difference.core, e.difference.set) == (c, "y")
    # The moved store wrote the first differing element on one of the sides.
    last = json.loads(cores[c].to_json())["functions"][0]["basic_blocks"][0]["instructions"][-1][
        "name"
    ]
    writers = [
        w.instruction for w in (e.difference.a_writer, e.difference.b_writer) if w is not None
    ]
    assert last in writers, e


def test_a_dropped_barrier_is_reported_as_a_race() -> None:
    seed = next(
        s
        for s in range(100)
        if any(i.name.startswith("put") for f in build(s, 2).functions for i in f.instructions())
    )
    m = expanded(seed, 2)
    cores = lncsplit.split([m.clone()], 2)
    assert not sim.run(cores).races

    def drop(insts: list[dict[str, Any]]) -> None:
        insts.pop(_named(insts, "put") + 1)  # the barrier between put and get

    racy = [_edit(c, drop) for c in cores]
    r = sim.run(racy)
    assert r.races, "dropping the barrier between a shared write and its read must show"
    assert r.races[0].location[0] == 0 or r.races[0].location[1] != "sh_loc"


def test_a_removed_replicate_copy_is_told_apart() -> None:
    b = Builder(2, random.Random(0))
    b.replicated_matmult()
    m = assemble(b, "repl")
    lncsplit.expand_replication(m)
    cores = lncsplit.split([m.clone()], 2)
    assert_equivalent(m, cores)

    def drop(insts: list[dict[str, Any]]) -> None:
        insts.pop(next(i for i, x in enumerate(insts) if x.get("mode") == "Replicate"))

    e = sim.equivalent(m, [_edit(c, drop) for c in cores])
    assert not e, "a Matmult reading unreplicated rows must compute something else"


def test_carried_shard_ids_are_bound_as_the_split_binds_them() -> None:
    b = Builder(2, random.Random(1))
    b.load()
    b.emit(
        {
            "name": "carrier",
            "opcode": "Activation",
            "order": {
                "kind": "AffExprKind",
                "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": 3}],
                "c": 1,
            },
            "ins": [
                {
                    "kind": "symbolic_ap",
                    "ap": [[8, 4], [1, 8]],
                    "dtype": "uint32",
                    "memsetref": "x",
                    "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0}] * 2,
                }
            ],
            "outs": [
                {
                    "kind": "symbolic_ap",
                    "ap": [[8, 4], [1, 8]],
                    "dtype": "uint32",
                    "memsetref": "z",
                    "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0}] * 2,
                }
            ],
        }
    )
    m = assemble(b, "carried")
    assert_equivalent(m, lncsplit.split([m.clone()], 2))
