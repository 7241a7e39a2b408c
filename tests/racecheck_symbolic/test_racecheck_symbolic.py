"""racecheck_symbolic on hand-built modules whose answer depends on N (contract §3.11)."""

from __future__ import annotations

import json

import kernels
import lncsplit
import pytest
from agreement import disagreements
from lncsplit.passes.racecheck_symbolic import racecheck_symbolic, with_shard_bound

NS = range(2, 7)


def _races(
    rep: lncsplit.passes.racecheck_symbolic.SymbolicRaceReport,
) -> dict[tuple[str, str], object]:
    return {(r.a.instruction, r.b.instruction): r for r in rep.races}


def test_an_overlap_that_needs_a_third_core_races_from_n_3() -> None:
    m = kernels.overlap_from_three()
    rep = racecheck_symbolic(m, NS)
    (race,) = rep.races
    assert race.n == [3, 4, 5, 6]
    w = race.witness
    assert (w.N, w.s1, w.s2, w.partition, w.byte) == (3, 0, 2, 0, 0)
    assert race.kind == "write-write"
    assert disagreements(m, rep, NS) == []


def test_a_predicate_shard_minus_2_races_only_from_the_cores_it_holds_on() -> None:
    m = kernels.late_cores()
    rep = racecheck_symbolic(m, NS)
    races = _races(rep)
    assert races[("early", "late")].n == [3, 4, 5, 6]  # type: ignore[attr-defined]
    assert races[("early", "late")].witness.s2 == 2  # type: ignore[attr-defined]
    assert races[("late", "late")].n == [4, 5, 6]  # type: ignore[attr-defined]
    assert (races[("late", "late")].witness.s1, races[("late", "late")].witness.s2) == (2, 3)  # type: ignore[attr-defined]
    assert disagreements(m, rep, NS) == []


def test_shard_div_2_addresses_collide_on_pairs_of_cores_at_every_n() -> None:
    m = kernels.pairs_of_cores(disjoint=False)
    rep = racecheck_symbolic(m, NS)
    (race,) = rep.races
    assert race.n == "all"
    assert (race.witness.N, race.witness.s1, race.witness.s2) == (2, 0, 1)
    assert disagreements(m, rep, NS) == []


def test_shard_div_2_plus_shard_mod_2_is_the_ownership_slice_32_shard() -> None:
    # 64·(s div 2) + 32·(s mod 2) is 32·s: the affine normal form makes it a lemma.
    m = kernels.pairs_of_cores(disjoint=True)
    rep = racecheck_symbolic(m, NS)
    assert rep.ok
    assert str(rep).startswith("race-free for N in 2-6")
    (proof,) = rep.proved
    assert proof["reason"] == "ownership"
    assert proof["detail"] == "bytes 128·s1 + [0, 127] vs 128·s2 + [0, 127]"
    assert disagreements(m, rep, NS) == []


def test_halves_are_proved_disjoint_by_the_solver_up_to_8_and_race_from_9() -> None:
    m = kernels.halves()
    rep = racecheck_symbolic(m, range(2, 9))
    assert rep.ok, str(rep)
    (proof,) = rep.proved
    assert proof["reason"] == "empty-set"
    assert proof["detail"].startswith("{ [s1, s2, x")
    assert rep.stats["queries"] == 1
    rep = racecheck_symbolic(m, range(2, 13))
    (race,) = rep.races
    assert race.n == [9, 10, 11, 12]
    w = race.witness
    assert (w.N, w.s1, w.s2, w.partition, w.byte) == (9, 1, 8, 0, 256)
    assert disagreements(m, rep, range(2, 13)) == []


def test_a_barrier_over_cores_0_and_1_orders_only_that_pair() -> None:
    m = kernels.barrier_of_two()
    rep = racecheck_symbolic(m, NS)
    (race,) = rep.races
    assert (race.a.instruction, race.b.instruction) == ("w0", "r")
    assert race.n == [3, 4, 5, 6]
    assert (race.witness.N, race.witness.s1, race.witness.s2) == (3, 0, 2)
    assert racecheck_symbolic(m, [2]).ok
    assert disagreements(m, rep, NS) == []


def test_a_barrier_in_a_loop_orders_by_iteration() -> None:
    m = kernels.barrier_in_loop(rotate=False)
    rep = racecheck_symbolic(m, NS)
    (race,) = rep.races
    # The write of iteration 1 meets the read of iteration 0 (one epoch).
    assert (race.a.instruction, race.b.instruction) == ("w", "r")
    assert (race.a.iterations, race.b.iterations) == ({"i": 1}, {"i": 0})
    assert disagreements(m, rep, NS) == []
    rotating = kernels.barrier_in_loop(rotate=True)
    rep = racecheck_symbolic(rotating, NS)
    assert rep.ok
    assert disagreements(rotating, rep, NS) == []


def test_every_reported_witness_is_the_concrete_checkers_at_its_n_and_cores() -> None:
    from lncsplit.passes import split
    from lncsplit.passes.racecheck import racecheck

    for m in (kernels.overlap_from_three(), kernels.late_cores(), kernels.barrier_of_two()):
        for r in racecheck_symbolic(m, NS).races:
            w = r.witness
            cores = split([with_shard_bound(m, w.N)], w.N)
            got = [
                c
                for c in racecheck(cores).races
                if (c.a.core, c.b.core, c.a.instruction, c.b.instruction)
                == (w.s1, w.s2, r.a.instruction, r.b.instruction)
            ]
            assert [(c.witness.partition, c.witness.byte, c.kind) for c in got] == [
                (w.partition, w.byte, r.kind)
            ]


def test_a_witness_that_does_not_replay_is_unknown_never_a_race() -> None:
    from dataclasses import replace

    from lncsplit.passes import racecheck_symbolic as rs

    m = kernels.overlap_from_three()
    (race,) = racecheck_symbolic(m, NS).races
    wrong = replace(race, witness=replace(race.witness, byte=4))
    kept, unknown = rs._replay(m, [wrong])
    assert kept == []
    assert "did not replay" in unknown[0]["why"]


def test_a_register_address_is_unknown_with_the_reason_and_not_proved() -> None:
    rep = racecheck_symbolic(kernels.register_address(), NS)
    assert not rep.ok
    assert rep.races == []
    assert "register r0" in rep.unknown[0]["why"]
    assert str(rep).startswith("not proved")


def test_a_split_core_is_refused_with_9005() -> None:
    (core0, _) = lncsplit.split([kernels.overlap_from_three()], 2)
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        racecheck_symbolic(core0)
    assert e.value.code == 9005


def test_invalid_n_holds_the_first_cause_and_is_neither_race_nor_proved() -> None:
    # Columns 64·shard … +64 of 128: cores ≥ 2 leave the set (9302).
    m = kernels.build([kernels.write("w", kernels.s(64), 64)])
    rep = racecheck_symbolic(m, NS)
    assert sorted(k for k in rep.invalid if isinstance(k, int)) == [3, 4, 5, 6]
    assert {v["code"] for v in rep.invalid.values()} == {9302}
    assert rep.races == [] and not rep.ok
    assert str(rep).startswith("race-free for N in 2; invalid for N in 3-6 (codes 9302)")
    assert disagreements(m, rep, NS) == []


def test_lnc_all_answers_every_n_with_one_parametric_query_per_pair() -> None:
    rep = racecheck_symbolic(kernels.overlap_from_three(), "all")
    (race,) = rep.races
    assert race.n == ["3-"]
    assert rep.to_dict()["lnc"] == "all"
    assert rep.stats["queries"] == 1
    rep = racecheck_symbolic(kernels.same_columns(), "all")
    assert rep.races[0].n == "all"
    assert str(rep).startswith("races for N in 2-")


def test_lnc_all_gives_an_unbounded_tail_of_invalid_n_one_key() -> None:
    # 256 columns: cores ≥ 8 leave the set, so every N ≥ 9 is invalid (one key "9-").
    rep = racecheck_symbolic(kernels.pairs_of_cores(disjoint=False), "all")
    assert list(rep.invalid) == ["9-"]
    assert rep.invalid["9-"]["code"] == 9302
    (race,) = rep.races
    assert race.n == list(range(2, 9))
    assert rep.to_dict()["invalid"] == {"9-": rep.invalid["9-"]}


def test_lnc_takes_a_range_a_list_one_n_or_all_and_refuses_the_rest() -> None:
    m = kernels.overlap_from_three()
    assert racecheck_symbolic(m, range(2, 5)).to_dict()["lnc"] == [2, 4]
    assert racecheck_symbolic(m, [4, 2]).to_dict()["lnc"] == [2, 4]
    # n is "all" when the pair races at every N asked, else the list of its N.
    assert racecheck_symbolic(m, 3).races[0].n == "all"
    assert racecheck_symbolic(m, [2, 3, 5]).races[0].n == [3, 5]
    for bad in ([1, 2], "some", [], range(1, 4)):
        with pytest.raises(ValueError):
            racecheck_symbolic(m, bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        racecheck_symbolic(m, [2.5])  # type: ignore[list-item]


def test_to_json_has_the_contracts_keys() -> None:
    doc = json.loads(racecheck_symbolic(kernels.late_cores(), NS).to_json())
    assert set(doc) >= {"ok", "lnc", "races", "proved", "unknown", "invalid"}
    race = doc["races"][0]
    assert set(race) >= {"a", "b", "location", "kind", "witness", "n"}
    assert set(race["a"]) == {"instruction", "position", "iterations"}
    assert set(race["location"]) == {"core", "name"}
    assert set(race["witness"]) == {"N", "s1", "s2", "partition", "byte"}
    assert str(racecheck_symbolic(kernels.late_cores(), NS)).startswith("races for N in 3-6")


def test_with_shard_bound_sets_every_ub_and_keeps_the_module() -> None:
    m = kernels.late_cores()
    b = with_shard_bound(m, 7)
    text = b.to_json()

    def ubs(v: object) -> list[int]:
        if isinstance(v, dict):
            own = [v["ub"]] if v.get("kind") == "ShardIDKind" else []
            return own + [u for c in v.values() for u in ubs(c)]
        if isinstance(v, list):
            return [u for c in v for u in ubs(c)]
        return []

    assert set(ubs(json.loads(text))) == {7}
    assert json.loads(text)["functions"][0]["shard_ids"] == [7]
    assert with_shard_bound(b, 2).to_json() == m.to_json()
    cores = lncsplit.split([b], 7)
    assert len(cores) == 7
    with pytest.raises(ValueError):
        with_shard_bound(m, 0)
    with pytest.raises(TypeError):
        with_shard_bound("m", 2)  # type: ignore[arg-type]
