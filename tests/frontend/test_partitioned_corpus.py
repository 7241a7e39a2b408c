"""The shipped JAX corpus through lower_partitioned (contract §3.9): every program XLA partitioned
lowers to one symbolic module that verifies, passes the default pipeline over its N, and computes
what JAX computed."""

from __future__ import annotations

import json

import lncsplit
import pytest
from bir_numpy_ref import run_reference
from jax_corpus import check_outputs, names, program
from lncsplit import sim
from lncsplit.frontend import LoweringError
from lncsplit.frontend.partitioned import lower_partitioned, lower_partitioned_json, supported_ops

#: The program that holds ops outside §3.9's list on purpose.
OUTSIDE = "int32_bitwise_shifts"
LOWERED = [n for n in names() if n != OUTSIDE and program(n).ops <= set(supported_ops())]


def test_the_corpus_holds_the_programs_the_issues_ask_for() -> None:
    assert len(names()) >= 8 and OUTSIDE in names()


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_lowers_to_a_symbolic_module_that_verifies(name: str) -> None:
    prog = program(name)
    m = lower_partitioned(prog.after, before=prog.before)
    assert m.name.endswith("_nc_symbolic") and m.neuron_core_id is None
    lncsplit.verify_symbolic(m, prog.n)
    doc = json.loads(m.to_json())
    sets = {s["name"]: s for s in doc["functions"][0]["allocations"]}
    for k, spec in enumerate(prog.meta["inputs"]):
        s = sets[f"arg{k}"]
        assert (s["kind"], s["addr_space"], s["tensor_shape"]) == (
            "Input",
            "Shared",
            spec["shape"] or [1],
        )
    for k, spec in enumerate(prog.meta["outputs"]):
        s = sets[f"out{k}"]
        assert (s["kind"], s["addr_space"], s["tensor_shape"]) == (
            "Output",
            "Shared",
            spec["shape"] or [1],
        )


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_passes_the_default_pipeline_over_its_n(name: str) -> None:
    prog = program(name)
    m = lower_partitioned(prog.after, before=prog.before)
    cores = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=prog.n))
    assert [c.neuron_core_id for c in cores] == list(range(prog.n))
    assert lncsplit.racecheck(cores).ok
    assert lncsplit.check_memory(cores).ok


def _inputs(name: str) -> dict[tuple[str, str], object]:
    return {("main", k): v for k, v in program(name).inputs().items()}


def _outputs(run: object, name: str) -> dict[str, object]:
    return {
        f"out{k}": run.values(0, "main", f"out{k}")
        for k in range(len(program(name).meta["outputs"]))
    }  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_computes_what_jax_computes_on_the_split_cores(name: str) -> None:
    """§3.9: sim.run(run_pipeline([m], N), JAX's inputs) gives JAX's outputs within tolerance."""
    prog = program(name)
    m = lower_partitioned(prog.after, before=prog.before)
    cores = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=prog.n))
    run = sim.run(cores, _inputs(name))
    assert not run.opaque and not run.races
    check_outputs(prog, _outputs(run, name))


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_computes_what_jax_computes_as_a_symbolic_module(name: str) -> None:
    prog = program(name)
    m = lower_partitioned(prog.after, before=prog.before)
    run = sim.run(m, _inputs(name), lnc=prog.n)
    assert not run.opaque
    check_outputs(prog, _outputs(run, name))


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_links_and_unlinks_to_the_same_cores(name: str) -> None:
    prog = program(name)
    m = lower_partitioned(prog.after, before=prog.before)
    cores = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=prog.n))
    linked = lncsplit.link(cores)
    back = lncsplit.unlink(linked)
    assert [c.to_json() for c in back] == [c.to_json() for c in cores]
    again = sim.run(linked, _inputs(name))
    check_outputs(prog, _outputs(again, name))


@pytest.mark.parametrize("name", LOWERED)
def test_shipped_program_computes_what_jax_computes_by_the_reference_interpreter(name: str) -> None:
    """An independent numpy reading of §3.6/§3.8 (bir_numpy_ref) runs the symbolic module on
    every core: its outputs are JAX's within §3.9's tolerance."""
    prog = program(name)
    doc = lower_partitioned_json(prog.after, before=prog.before)
    check_outputs(prog, run_reference(doc, prog.n, prog.inputs()))


def test_a_program_with_ops_outside_the_list_is_a_lowering_error_naming_op_and_line() -> None:
    prog = program(OUTSIDE)
    with pytest.raises(LoweringError) as e:
        lower_partitioned(prog.after, before=prog.before)
    msg = str(e.value)
    line = next(
        k + 1 for k, t in enumerate(prog.after.splitlines()) if " xor(" in t and "%xor" in t
    )
    assert "xor is not an op" in msg and "%xor" in msg and f"(line {line})" in msg


COMPILED = [n for n in names() if (program(n).dir / "compiled.txt").is_file()]


@pytest.mark.parametrize("name", COMPILED)
def test_the_compiled_modules_text_computes_the_same_with_its_fusions_inlined(name: str) -> None:
    """§3.9: the compiled module's as_text() is accepted too (fusion = its computation)."""
    prog = program(name)
    text = (prog.dir / "compiled.txt").read_text()
    assert " fusion(" in text and "is_scheduled=true" in text
    m = lower_partitioned(text, before=prog.before)
    cores = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=prog.n))
    check_outputs(prog, _outputs(sim.run(cores, _inputs(name)), name))
