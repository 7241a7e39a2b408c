"""``lncsplit gen --lnc-generic NMAX`` (issue 38): modules valid for every N ≤ NMAX at once,
for ``racecheck --symbolic``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lncsplit
from lncsplit.cli import main
from lncsplit.passes.racecheck_symbolic import racecheck_symbolic, with_shard_bound


def _walk(blocks: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        for i in b["instructions"]:
            out.append(i)
            if i["opcode"] == "Loop":
                out += _walk(i["blocks"])
    return out


def _generated(tmp_path: Path, *args: str) -> lncsplit.Module:
    assert main(["gen", str(tmp_path), "--modules", "1", "--instructions", "400", *args]) == 0
    (path,) = sorted(tmp_path.glob("*.json"))
    return lncsplit.load(str(path))


def test_gen_lnc_generic_writes_a_module_nothing_in_which_fixes_n(tmp_path: Path) -> None:
    m = _generated(tmp_path, "--lnc-generic", "16", "--seed", "3")
    doc = json.loads(m.to_json())
    insts = [i for f in doc["functions"] for i in _walk(f["basic_blocks"])]
    assert {f["shard_ids"][0] for f in doc["functions"] if f.get("shard_ids")} == {16}
    assert all(i["cores"] == [] for i in insts if i["opcode"] == "CoreBarrier")
    assert any(i["opcode"] == "CoreBarrier" for i in insts)
    assert not [i for i in insts if i["opcode"] in ("GPSIMDSB2SB", "CollectiveCompute")]


def test_gen_lnc_generic_is_race_free_and_valid_for_every_n_up_to_its_bound(tmp_path: Path) -> None:
    m = _generated(tmp_path, "--lnc-generic", "16", "--seed", "4")
    rep = racecheck_symbolic(m, range(2, 17))
    assert rep.ok, str(rep)
    assert str(rep).startswith("race-free for N in 2-16")
    # Past its bound core 16's slices leave their sets.
    assert {v["code"] for v in racecheck_symbolic(m, [17]).invalid.values()} == {9302}


def test_gen_lnc_generic_passes_the_whole_pipeline_at_each_n(tmp_path: Path) -> None:
    m = _generated(tmp_path, "--lnc-generic", "8", "--seed", "5")
    for n in (2, 3, 5, 8):
        cores = lncsplit.run_pipeline([with_shard_bound(m, n)], lncsplit.PassOptions(lnc_size=n))
        assert len(cores) == n
