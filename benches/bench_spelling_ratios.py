"""The compiler's spelling costs nothing (contract §1.7; issue 33's performance figures).

``load_compiler_vs_dialect``: seconds to load a module written in the compiler's spelling
÷ seconds to load the same module in lncsplit's (same process, interleaved, best of
``repeat``); ``dump_compiler_vs_dialect``: the same for ``to_bytes`` in each spelling.
Target ≤ 1.05 each (lower is better).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from typing import Any

from lncsplit import Module
from lncsplit._core import generate_module

TARGETS = {"load_compiler_vs_dialect": 1.05, "dump_compiler_vs_dialect": 1.05}

#: Generated JSON bytes per instruction (as ``bench_bir_ratios``).
BYTES_PER_INSTRUCTION = 640


def _time(fn: Callable[[], Any]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    r = fn()
    dt = time.perf_counter() - t0
    del r
    return dt


def spelling_ratios(
    size_mb: float = 100, repeat: int = 5, seed: int = 1
) -> dict[str, tuple[float, str]]:
    """``{name: (ratio, detail)}`` on one generated module of about ``size_mb`` MB."""
    n = max(1000, int(size_mb * 1e6 / BYTES_PER_INSTRUCTION))
    dialect = generate_module(seed, n, 2).to_bytes()
    compiler = Module.from_json(dialect).to_bytes(spelling="compiler")
    a, b = Module.from_json(dialect), Module.from_json(compiler)
    loads: dict[str, float] = {"dialect": float("inf"), "compiler": float("inf")}
    dumps: dict[str, float] = {"dialect": float("inf"), "compiler": float("inf")}
    for _ in range(repeat):  # interleaved: the machine's noise hits both alike
        loads["dialect"] = min(loads["dialect"], _time(lambda: Module.from_json(dialect)))
        loads["compiler"] = min(loads["compiler"], _time(lambda: Module.from_json(compiler)))
        dumps["dialect"] = min(dumps["dialect"], _time(a.to_bytes))
        dumps["compiler"] = min(dumps["compiler"], _time(b.to_bytes))
    mb_d, mb_c = len(dialect) / 1e6, len(compiler) / 1e6
    return {
        "load_compiler_vs_dialect": (
            loads["compiler"] / loads["dialect"],
            f"{n} instructions, {mb_c:.0f} MB vs {mb_d:.0f} MB: "
            f"{loads['compiler']:.3f} s vs {loads['dialect']:.3f} s",
        ),
        "dump_compiler_vs_dialect": (
            dumps["compiler"] / dumps["dialect"],
            f"to_bytes {dumps['compiler']:.3f} s vs {dumps['dialect']:.3f} s",
        ),
    }


def main(argv: list[str]) -> int:
    size = float(argv[1]) if len(argv) > 1 else 100.0
    ok = True
    for name, (ratio, detail) in spelling_ratios(size).items():
        target = TARGETS[name]
        ok &= ratio <= target
        mark = "" if ratio <= target else "  ABOVE TARGET"
        print(f"{name}: {ratio:.3f}x (target <= {target}x){mark}  [{detail}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
