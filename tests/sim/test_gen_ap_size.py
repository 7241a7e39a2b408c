"""The generator's AP size knob (``ap_partitions`` / ``ap_columns``, ``lncsplit gen
--ap-partitions/--ap-columns``): small access patterns for fast simulation, every
guarantee kept, and the default untouched so existing corpora keep their bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from lncsplit import _core

# One per set per function, documented as keeping their full size.
FULL_SIZE = ("shared_init_", "ifmap_load_")


def _instructions(m: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def walk(insts: list[dict[str, Any]]) -> None:
        for i in insts:
            out.append(i)
            for b in i.get("blocks", []):
                walk(b["instructions"])

    for f in json.loads(m.to_json())["functions"]:
        for b in f["basic_blocks"]:
            walk(b["instructions"])
    return out


def _aps(inst: dict[str, Any]) -> list[list[list[int]]]:
    args = inst.get("ins", []) + inst.get("outs", [])
    return [a["ap"] for a in args if a.get("kind") == "symbolic_ap"]


@pytest.mark.parametrize("lnc", [1, 2, 4, 8])
def test_caps_bound_every_access_but_the_one_time_writers(lnc: int) -> None:
    m = _core.generate_module(seed=3, instructions=400, lnc=lnc, ap_partitions=4, ap_columns=8)
    checked = 0
    for inst in _instructions(m):
        if inst["name"].startswith(FULL_SIZE):
            continue
        replicated = "replication_num_rows" in inst  # its read keeps the replicated rows
        for ap in _aps(inst):
            rows, cols = ap[0][1], ap[-1][1]
            assert replicated or rows <= 4, (inst["name"], ap)
            if inst["opcode"] == "CollectiveCompute":
                # Per-core unit min(default, max(4, C / lnc)), × lnc where the kind needs it.
                assert cols <= max(4, 8 // lnc) * max(lnc, 2), (inst["name"], ap)
            else:
                assert cols <= 8, (inst["name"], ap)
            checked += 1
    assert checked > 100


def test_without_caps_the_module_is_unchanged() -> None:
    a = _core.generate_module(seed=11, instructions=300, lnc=2)
    b = _core.generate_module(seed=11, instructions=300, lnc=2, ap_partitions=None, ap_columns=None)
    assert a.to_json() == b.to_json()


def test_caps_keep_the_instruction_stream() -> None:
    """The caps draw no random numbers: the same instructions, in the same order."""
    a = _core.generate_module(seed=5, instructions=300, lnc=4)
    b = _core.generate_module(seed=5, instructions=300, lnc=4, ap_partitions=2, ap_columns=4)
    names = [(i["name"], i["opcode"]) for i in _instructions(a)]
    assert names == [(i["name"], i["opcode"]) for i in _instructions(b)]


@pytest.mark.parametrize("kw", [{"ap_partitions": 0}, {"ap_columns": -3}])
def test_a_cap_below_one_is_refused(kw: dict[str, int]) -> None:
    with pytest.raises(Exception, match="must be ≥ 1"):
        _core.generate_module(seed=0, instructions=50, lnc=2, **kw)


def test_the_cli_takes_the_caps(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    args = ["gen", str(out), "--modules", "1", "--instructions", "200", "--lnc", "2"]
    run = [sys.executable, "-m", "lncsplit", *args, "--ap-partitions", "2", "--ap-columns", "4"]
    subprocess.run(run, check=True, capture_output=True)
    want = _core.generate_module(seed=0, instructions=200, lnc=2, ap_partitions=2, ap_columns=4)
    got = lncsplit.load(out / "gen_0000.json")
    assert got.to_json() == want.to_json()
    bad = subprocess.run([*run[:-1], "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--ap-columns" in bad.stderr
