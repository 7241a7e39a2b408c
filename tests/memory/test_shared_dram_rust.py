"""Orders 82 and 83 try their common case in Rust (``passes/shared_dram.rs``)
and leave everything else to the Python passes, which stay the definition:
on every input both ways give the same modules, the same log records and
the same error."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from builders import make_module, module, one
from lncsplit import Module, split
from lncsplit._core import generate_module, shared_dram_pass
from lncsplit.memory import allocate_shared_dram, shared_dram, sync_shared_allocations

Cores = Callable[[], list[Module]]


def _run(make: Cores, rust: bool, caplog: pytest.LogCaptureFixture) -> tuple[Any, ...]:
    mods = make()
    caplog.clear()
    saved = shared_dram.USE_RUST
    shared_dram.USE_RUST = rust
    error = None
    try:
        with caplog.at_level(logging.DEBUG, logger="lncsplit.memory"):
            allocate_shared_dram(mods, len(mods))
            sync_shared_allocations(mods, len(mods))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        error = (type(e), str(e))
    finally:
        shared_dram.USE_RUST = saved
    logs = [(r.levelno, r.getMessage()) for r in caplog.records]
    return [m.to_bytes() for m in mods], logs, error


def _same_both_ways(make: Cores, caplog: pytest.LogCaptureFixture) -> tuple[Any, ...]:
    fast = _run(make, True, caplog)
    general = _run(make, False, caplog)
    assert fast == general
    return fast


@pytest.mark.parametrize(("seed", "lnc"), [(1, 2), (2, 2), (3, 4), (4, 8)])
def test_split_generated_modules_give_the_same_cores_and_logs(
    seed: int, lnc: int, caplog: pytest.LogCaptureFixture
) -> None:
    src = generate_module(seed, 300, lnc).to_bytes()
    _, logs, error = _same_both_ways(lambda: split([Module.from_json(src)], lnc), caplog)
    assert error is None and logs  # the common case, with shared tensors to place
    # ... which the Rust path keeps (None would hand it to Python).
    mods = split([Module.from_json(src)], lnc)
    assert shared_dram_pass(mods, list(range(lnc)), False) is not None
    assert shared_dram_pass(mods, list(range(lnc)), True) is not None


def _core(c: int, *extra: dict[str, Any], fname: str = "main") -> Module:
    sets = [one("priv", "DRAM", [4, 4], addr=0)]
    sets += [one(f"sh{i}", "DRAM", [1, 25], addr_space="Shared", base=None) for i in range(2)]
    return make_module(module([*sets, *extra], core=c, fname=fname))


#: Inputs the Rust path hands to Python (errors, numbers past 64 bits, one
#: object twice, targets the pass itself changes) and a few it keeps.
CASES: dict[str, Cores] = {
    "plain": lambda: [_core(c) for c in range(3)],
    "preplaced": lambda: [
        _core(0, one("pre", "DRAM", [1, 8], addr_space="Shared", addr=4096, allocated=True)),
        _core(1, one("pre", "DRAM", [1, 8], addr_space="Shared")),
    ],
    "flagged_local": lambda: [
        _core(c, one("fl", "DRAM", [2, 2], shared=True, base=None)) for c in range(2)
    ],
    "huge": lambda: [
        _core(c, one("big", "DRAM", [1 << 20, 1 << 20, 1 << 20], addr_space="Shared"))
        for c in range(2)
    ],
    "missing_function": lambda: [_core(0), _core(1, fname="other")],
    "missing_location": lambda: [
        _core(0),
        _core(1, one("only1", "DRAM", [1, 4], addr_space="Shared")),
    ],
    "same_object_twice": lambda: [_core(0)] * 2,
    "no_owner": lambda: [_core(1), _core(2)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_case_gives_the_same_cores_logs_and_error(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    _same_both_ways(CASES[case], caplog)


def test_a_target_without_allocation_on_core_0_is_the_python_pass_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def make() -> list[Module]:
        # Core 0's "t" is private and unplaced; core 1's is flagged shared.
        return [
            _core(0, one("t", "DRAM", [1, 4], base=None)),
            _core(1, one("t", "DRAM", [1, 4], shared=True, base=None)),
        ]

    _, _, error = _same_both_ways(make, caplog)
    assert error is not None and "is not allocated" in error[1]
