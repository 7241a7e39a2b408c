"""Live JAX (contract §3.9): programs dumped fresh by XLA inside the test, lowered, split and
simulated, compute what JAX computed. Skipped when no interpreter with JAX is at hand (JAX is
not an lncsplit dependency: the ``jax`` extra, ``pip install lncsplit[jax]``, installs it for
these tests — ``scripts/test`` does — or point ``LNCSPLIT_JAX_PYTHON`` at a Python that has
it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import lncsplit
import numpy as np
import pytest
from jax_corpus import TOLERANCE, JaxProgram, max_relative_error
from lncsplit import sim
from lncsplit.frontend.xla_dump import lower_hlo_input, scan_dump_root

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _jax_python() -> str | None:
    env = os.environ.get("LNCSPLIT_JAX_PYTHON")
    if env:
        return env
    return sys.executable if importlib.util.find_spec("jax") is not None else None


JAX_PYTHON = _jax_python()
pytestmark = [
    pytest.mark.skipif(
        JAX_PYTHON is None,
        reason="JAX is not installed here (pip install jax ml_dtypes, or set LNCSPLIT_JAX_PYTHON)",
    ),
    pytest.mark.skipif(
        not (SCRIPTS / "make-jax-corpus").exists(), reason="needs the repository's scripts/"
    ),
]

XLA_FLAGS = (
    "--xla_dump_hlo_pass_re=spmd-partitioning --xla_force_host_platform_device_count=8 "
    "--xla_dump_large_constants=true"
)


def _run(after: Path, n: int, inputs: dict[str, np.ndarray]) -> sim.SimResult:
    module = lower_hlo_input(after).module()
    cores = lncsplit.run_pipeline([module], lncsplit.PassOptions(lnc_size=n))
    return sim.run(cores, {("main", k): v for k, v in inputs.items()})


@pytest.fixture(scope="module")
def fresh_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jax-fresh")
    assert JAX_PYTHON is not None
    r = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "make-jax-corpus"),
            "--python",
            JAX_PYTHON,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    return out


@pytest.mark.timeout(3600)
def test_freshly_dumped_programs_compute_what_jax_computes(fresh_corpus: Path) -> None:
    checked = 0
    for d in sorted(p for p in fresh_corpus.iterdir() if (p / "program.json").is_file()):
        prog = JaxProgram(d.name, d, json.loads((d / "program.json").read_text()))
        if prog.name == "int32_bitwise_shifts":  # outside §3.9's op list on purpose
            continue
        run = _run(prog.after_path, prog.n, prog.inputs())
        io = prog.io()
        for k, spec in enumerate(prog.meta["outputs"]):
            err = max_relative_error(run.values(0, "main", f"out{k}"), io[f"out{k}"])
            assert err <= TOLERANCE.get(spec["dtype"], 0.0), (prog.name, k, err)
        checked += 1
    assert checked >= 8


@pytest.mark.timeout(3600)
def test_a_generated_family_of_random_programs_agrees_with_jax(tmp_path: Path) -> None:
    """Random chains of elementwise ops, broadcasts, reductions and dots over random shardings
    (N = 2 and 4, 1-D and 2-D meshes, sharding constraints inside), dumped by XLA here."""
    dump = tmp_path / "dump"
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} {XLA_FLAGS}", JAX_PLATFORMS="cpu")
    assert JAX_PYTHON is not None
    r = subprocess.run(
        [JAX_PYTHON, str(SCRIPTS / "jax_random_programs.py"), str(tmp_path / "io"), "0", "16"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    units = scan_dump_root(dump).units
    assert len(units) == 16
    ns = set()
    for u in units:
        name = u.name.removeprefix("jit_")
        meta = json.loads((tmp_path / "io" / f"{name}.json").read_text())
        with np.load(tmp_path / "io" / f"{name}.npz") as z:
            io = {k: z[k] for k in z.files}
        run = _run(
            Path(u.after), meta["n"], {f"arg{k}": io[f"arg{k}"] for k in range(meta["inputs"])}
        )
        for k in range(len(meta["outputs"])):
            err = max_relative_error(run.values(0, "main", f"out{k}"), io[f"out{k}"])
            assert err <= TOLERANCE["float32"], (name, meta, k, err)
        ns.add(meta["n"])
    assert ns == {2, 4}


@pytest.mark.timeout(1800)
def test_every_hlo_file_of_a_fresh_dump_of_every_pass_parses_and_prints_back(
    tmp_path: Path,
) -> None:
    """The HLO reader on XLA's own dump of today's JAX: a corpus program dumped after every
    pass (``make-jax-corpus --all-passes``), each file's every computation line an
    instruction, printed back byte for byte."""
    from lncsplit.frontend import HloModule

    assert JAX_PYTHON is not None
    r = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "make-jax-corpus"),
            "--python",
            JAX_PYTHON,
            "--all-passes",
            "--only",
            "megatron_mlp",
            "attention_heads",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    files = sorted(tmp_path.glob("*/*.txt"))
    assert len(files) >= 10
    for f in files:
        text = f.read_text()
        m = HloModule.parse(text)
        assert str(m) == text, f.name
        unparsed = [b for c in m.computations for b in c.body if isinstance(b, str)]
        assert not unparsed, (f.name, unparsed[:3])
