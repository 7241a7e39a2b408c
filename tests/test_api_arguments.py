"""Contract §4, "Argument checks" (issue 39, items 3 and 4): the public API refuses the wrong
inputs plainly — one Module object given twice, an argument of the wrong type, a module of
the wrong kind (a linked module to ``split``, a symbolic module to ``racecheck``, cores of
two kernels to the concretized verifier) — instead of an AttributeError or an error about
something else."""

from __future__ import annotations

import os
from pathlib import Path

import lncsplit
import pytest
from lncsplit.examples import example_paths


def _example(prefix: str) -> lncsplit.Module:
    return lncsplit.load(next(p for p in example_paths() if p.name.startswith(prefix)))


def _cores(prefix: str) -> list[lncsplit.Module]:
    return lncsplit.run_pipeline([_example(prefix)], lncsplit.PassOptions(lnc_size=2))


# ----------------------------------------------------------------------------- one object twice


def test_split_given_one_module_object_twice_names_both_indices() -> None:
    m = _example("01_")
    with pytest.raises(ValueError, match=r"modules\[0\] and modules\[2\]") as e:
        lncsplit.split([m, _example("02_"), m], 2)
    assert "same Module object" in str(e.value)
    # nothing was split: the module is still symbolic and whole
    assert m.neuron_core_id is None and m.instruction_count() == _example("01_").instruction_count()


def test_run_pipeline_given_one_module_object_twice_names_both_indices() -> None:
    m = _example("01_")
    with pytest.raises(ValueError, match=r"modules\[0\] and modules\[1\]"):
        lncsplit.run_pipeline([m, m], lncsplit.PassOptions(lnc_size=2))


def test_the_same_module_twice_is_refused_at_every_n() -> None:
    m = _example("01_")
    with pytest.raises(ValueError, match=r"modules\[0\] and modules\[1\]"):
        lncsplit.split([m, m], 1)


def test_two_clones_of_one_module_split_as_two_modules() -> None:
    m = _example("01_")
    out = lncsplit.split([m.clone(), m.clone()], 2)
    assert [c.neuron_core_id for c in out] == [0, 1, 0, 1]


# ----------------------------------------------------------------------------- wrong types


def test_run_pipeline_with_an_int_for_options_names_options() -> None:
    with pytest.raises(TypeError, match=r"options must be a PassOptions.*got int"):
        lncsplit.run_pipeline([_example("01_")], 2)  # type: ignore[arg-type]


def test_split_with_something_else_than_a_module_names_its_index() -> None:
    with pytest.raises(TypeError, match=r"modules\[1\] must be a lncsplit\.Module, got str"):
        lncsplit.split([_example("01_"), "02_loop_region.json"], 2)  # type: ignore[list-item]


def test_run_pipeline_with_a_path_for_a_module_names_its_index() -> None:
    with pytest.raises(TypeError, match=r"modules\[0\] must be a lncsplit\.Module.*lncsplit\.load"):
        lncsplit.run_pipeline(["m.json"], lncsplit.PassOptions(lnc_size=2))  # type: ignore[list-item]


def test_sim_equivalent_with_a_string_names_the_argument() -> None:
    from lncsplit import sim

    with pytest.raises(TypeError, match=r"\bb must be .*Module.*got str"):
        sim.equivalent(_example("01_"), "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"\ba must be .*Module.*got int"):
        sim.equivalent(3, _example("01_"))  # type: ignore[arg-type]


def test_sim_run_with_a_string_names_the_argument() -> None:
    from lncsplit import sim

    with pytest.raises(TypeError, match=r"modules must be .*Module.*got str"):
        sim.run("m.json")  # type: ignore[arg-type]


def test_explain_with_an_int_instruction_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"instruction must be a str .*got int"):
        lncsplit.explain(_example("01_"), 2, 123)  # type: ignore[arg-type]


def test_explain_with_a_path_for_the_module_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"module must be a lncsplit\.Module, got str"):
        lncsplit.explain("m.json", 2, "x")  # type: ignore[arg-type]


def test_lower_to_symbolic_with_text_names_the_argument_and_says_how() -> None:
    from lncsplit.frontend import lower_to_symbolic

    with pytest.raises(TypeError, match=r"hlo_module must be an HloModule.*HloModule\.parse"):
        lower_to_symbolic("HloModule m", 2)  # type: ignore[arg-type]


def test_load_and_dump_take_the_paths_their_messages_name(tmp_path: Path) -> None:
    """``load`` refused a wrong type with "expected str, bytes or os.PathLike object": bytes are
    such a path for ``load`` and ``dump`` alike (``dump(m, b'p')`` used to fail inside with
    "startswith first arg must be bytes")."""
    src = example_paths()[0]
    m = lncsplit.load(os.fsencode(str(src)))
    assert m.name == lncsplit.load(src).name
    target = tmp_path / "m.json"
    lncsplit.dump(m, os.fsencode(str(target)))
    assert lncsplit.load(target).to_json() == m.to_json()


@pytest.mark.parametrize("call", ["load", "dump"])
def test_load_and_dump_name_a_path_of_the_wrong_type(call: str) -> None:
    m = _example("01_")
    with pytest.raises(TypeError, match=r"path must be a str, bytes or os\.PathLike.*got int"):
        lncsplit.load(123) if call == "load" else lncsplit.dump(m, 123)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- wrong kinds


def test_split_of_a_linked_module_is_9008() -> None:
    linked = lncsplit.link(_cores("03_"))
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.split([linked], 2)
    assert e.value.code == 9008
    assert "a linked module (made by link): unlink it first" in str(e.value)


@pytest.mark.parametrize("n", [1, 2])
def test_run_pipeline_of_a_linked_module_is_9008(n: int) -> None:
    linked = lncsplit.link(_cores("03_"))
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.run_pipeline([linked], lncsplit.PassOptions(lnc_size=n))
    assert e.value.code == 9008
    assert "a linked module (made by link): unlink it first" in str(e.value)


def test_racecheck_of_a_symbolic_module_says_it_takes_split_cores() -> None:
    """The SB2SB example given as one core was 9305 about GPSIMDSB2SB needing 2 cores, and
    nothing more. One module without a core id is an N = 1 core set (contract §3.6), so the
    code stays 9305; the error now says what was given and how to split it."""
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.racecheck([_example("04_")])
    assert e.value.code == 9305
    msg = str(e.value)
    assert "racecheck takes split cores" in msg and "a symbolic module" in msg
    assert "lncsplit.split([module], 2)" in msg and "lncsplit split --lnc 2" in msg


def test_one_symbolic_module_is_still_an_n1_core_set_where_nothing_needs_more() -> None:
    """Contract §3.6: one module without ``neuron_core_id`` is the N = 1 case."""
    m = _example("01_")
    assert lncsplit.racecheck([m]).ok
    assert lncsplit.link([m]).name.endswith("/sgLnk")


def test_verify_concretized_of_cores_of_two_kernels_says_so() -> None:
    """Core 0 of one kernel and core 1 of another used to be 1187 (CoreBarrier counts)."""
    a, b = _cores("03_"), _cores("01_")
    with pytest.raises(lncsplit.NeuronAssertion, match="cores of different kernels") as e:
        lncsplit.verify_concretized([a[0], b[1]], 2)
    assert e.value.code == 9006


def test_verify_concretized_accepts_one_kernels_cores() -> None:
    lncsplit.verify_concretized(_cores("03_"), 2)


def test_explain_with_a_string_for_n_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"lnc must be a positive integer, got str"):
        lncsplit.explain(_example("01_"), "2", "x")  # type: ignore[arg-type]


def test_diff_with_a_path_for_a_core_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"cores\[0\] must be a lncsplit\.Module, got str"):
        lncsplit.diff(["nc00.json"])  # type: ignore[list-item]


def test_check_memory_with_a_path_for_a_module_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"modules\[0\] must be a lncsplit\.Module, got str"):
        lncsplit.check_memory(["nc00.json"])  # type: ignore[list-item]


def test_sim_run_with_a_path_for_inputs_names_the_argument() -> None:
    from lncsplit import sim

    with pytest.raises(TypeError, match=r"inputs must be a mapping .*got str"):
        sim.run(_example("01_"), "inputs.npz")  # type: ignore[arg-type]
