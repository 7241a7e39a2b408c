"""The Python package was reorganized by subsystem (lncsplit.corpus, lncsplit.passes,
lncsplit.arch, lncsplit._inputs); the former module paths stay importable for this turn
as shims that re-export the new homes, and every ``lncsplit.…`` path the docs name resolves."""

from __future__ import annotations

import importlib
import pickle
import re
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import lncsplit
import pytest
from lncsplit.pipeline import PassOptions

ROOT = Path(__file__).resolve().parent.parent

#: Former module path → its new home(s).
SHIMS = {
    "lncsplit._job": (
        "lncsplit._inputs",
        "lncsplit.corpus.unit",
        "lncsplit.corpus.split_job",
        "lncsplit.limits",
    ),
    "lncsplit.discovery": ("lncsplit.corpus.discovery",),
    "lncsplit.runner": ("lncsplit.corpus.runner",),
    "lncsplit.executors": ("lncsplit.corpus.executors",),
    "lncsplit.executors.local": ("lncsplit.corpus.executors.local",),
    "lncsplit.executors.dask": ("lncsplit.corpus.executors.dask",),
    "lncsplit.tail": ("lncsplit.passes.tail",),
    "lncsplit.barriercheck": ("lncsplit.passes.racecheck",),
    "lncsplit.bir_linker": ("lncsplit.passes.linker",),
    "lncsplit.memory.arch": ("lncsplit.arch",),
}


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_a_former_module_path_re_exports_its_new_home(old: str) -> None:
    shim = importlib.import_module(old)
    homes = [importlib.import_module(h) for h in SHIMS[old]]
    assert shim.__all__
    for name in shim.__all__:
        value = getattr(shim, name)
        assert any(getattr(h, name, None) is value for h in homes), (old, name)


def test_the_public_names_come_from_the_new_homes() -> None:
    from lncsplit import corpus, passes

    assert lncsplit.racecheck is passes.racecheck.racecheck
    assert lncsplit.RaceReport is passes.racecheck.RaceReport
    assert lncsplit.link is passes.linker.link
    assert lncsplit.lower_local_collectives is passes.tail.lower_local_collectives
    assert lncsplit.process_files is corpus.process_files
    # `import lncsplit` loaded these two before they moved: still attributes of the package.
    assert lncsplit.bir_linker.is_linked is passes.linker.is_linked
    assert lncsplit.tail.extend_shared_lifetimes is passes.tail.extend_shared_lifetimes


def test_a_job_taken_through_a_shim_pickles_by_its_new_home() -> None:
    from lncsplit import _job

    job = partial(_job.process_file, out="out", options=PassOptions(lnc_size=2))
    data = pickle.dumps(job)
    assert b"lncsplit.corpus.split_job" in data and b"lncsplit._job" not in data
    assert (
        pickle.loads(data).func is importlib.import_module("lncsplit.corpus.split_job").process_file
    )


def test_the_phase_hook_set_through_the_shim_is_the_split_jobs(tmp_path: Path) -> None:
    from lncsplit import _job
    from lncsplit._core import generate_module
    from lncsplit.corpus import split_job

    src = tmp_path / "m.json"
    src.write_bytes(generate_module(5, 50, 2).to_bytes())
    seen: list[str] = []
    saved = split_job.PHASE_REPORT_AFTER
    split_job.PHASE_REPORT_AFTER = -1.0  # every file is "slow"
    _job.set_phase_hook(lambda path, phase, s: seen.append(phase))
    try:
        res = _job.process_file(str(src), str(tmp_path / "out"), PassOptions(lnc_size=2))
    finally:
        _job.set_phase_hook(None)
        split_job.PHASE_REPORT_AFTER = saved
    assert res.ok and seen == ["load", "passes", "write"]


def _resolve(dotted: str) -> Any:
    """The object ``lncsplit.a.b.c`` names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: ModuleType | Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def _doc_paths() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for m in re.finditer(r"(?<![\w/])lncsplit(?:\.[A-Za-z_]\w*)+", doc.read_text()):
            found.setdefault(m.group(0), doc.name)
    return sorted(found.items())


def test_the_docs_name_module_paths() -> None:
    assert any(name.startswith("lncsplit.corpus.") for name, _doc in _doc_paths())


@pytest.mark.parametrize(("dotted", "doc"), _doc_paths())
def test_every_lncsplit_path_the_docs_name_resolves(dotted: str, doc: str) -> None:
    _resolve(dotted)
