"""racecheck_symbolic agrees with the concrete checker N by N (contract §3.11): for each N
the racing (function, a, b, location) set — or the invalid N's code — is the one of
``racecheck(split([with_shard_bound(m, N)], N))``."""

from __future__ import annotations

import random

import lncsplit
import pytest
from agreement import delete_barrier, disagreements
from lncsplit import _core
from lncsplit.passes.racecheck_symbolic import racecheck_symbolic

NS = range(2, 9)


@pytest.mark.parametrize("lnc", range(2, 9))
def test_gen_modules_agree_for_every_n_2_to_8(lnc: int) -> None:
    for seed in range(2):
        m = _core.generate_module(seed, 300, lnc, racy=seed == 1)
        rep = racecheck_symbolic(m, NS)
        assert rep.unknown == []
        assert disagreements(m, rep, NS) == [], (lnc, seed)
        if seed == 1:
            assert rep.races, "a racy module races"


@pytest.mark.parametrize("lnc", range(2, 9))
def test_gen_modules_with_one_barrier_deleted_agree_for_every_n_2_to_8(lnc: int) -> None:
    rng = random.Random(lnc)
    for seed in range(3):
        m = delete_barrier(_core.generate_module(100 + seed, 400, lnc), rng)
        if m is None:
            continue
        rep = racecheck_symbolic(m, NS)
        assert rep.unknown == []
        assert disagreements(m, rep, NS) == [], (lnc, seed)


def test_a_deleted_barrier_without_renumbering_is_invalid_1188_at_every_n() -> None:
    m = delete_barrier(_core.generate_module(7, 400, 4), random.Random(0), renumber=False)
    assert m is not None
    rep = racecheck_symbolic(m, NS)
    assert {v["code"] for v in rep.invalid.values()} == {1188}
    assert disagreements(m, rep, NS) == []


@pytest.mark.slow
def test_lnc_generic_64_modules_agree_for_every_n_up_to_64() -> None:
    ns = range(2, 65)
    for seed, cut in ((0, False), (1, True)):
        m = _core.generate_module(seed, 250, 64, lnc_generic=True)
        if cut:
            d = delete_barrier(m, random.Random(seed))
            assert d is not None
            m = d
        rep = racecheck_symbolic(m, ns)
        assert rep.unknown == [] and rep.invalid == {}
        assert disagreements(m, rep, ns) == []


HLO_EXAMPLE = "jax_lnc_constraints.hlo.txt"


def _shipped_names() -> list[str]:
    from lncsplit.examples import example_paths

    return [p.name for p in example_paths()] + [HLO_EXAMPLE]


def _shipped(name: str) -> lncsplit.Module:
    """A shipped example as a symbolic module (the HLO text lowered for N = 2)."""
    from lncsplit.examples import examples_dir
    from lncsplit.frontend import lower_hlo_file

    path = str(examples_dir() / name)
    return lower_hlo_file(path, 2).module() if name == HLO_EXAMPLE else lncsplit.load(path)


@pytest.mark.parametrize("name", _shipped_names())
def test_the_shipped_examples_agree_for_every_n_2_to_8(name: str) -> None:
    m = _shipped(name)
    rep = racecheck_symbolic(m, NS)
    assert rep.unknown == [], rep.unknown
    assert disagreements(m, rep, NS) == []
    # Each is written for N = 2 and passes the pipeline there, race-free.
    assert 2 not in rep.invalid and rep.races_at(2) == []
