"""Side-by-side speed ratios of the BIR module model against Python JSON tools.

All measurements run in one process on the same generated module (about
``size_mb`` MB of BIR-JSON). Each ratio is ``baseline time / lncsplit time``
(higher is better), best of ``repeat`` runs. Run as a script::

    python benches/bench_bir_ratios.py [size_mb]

Measure with a release build (``maturin develop --release``).
"""

from __future__ import annotations

import copy
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson
from lncsplit import Module
from lncsplit._core import generate_module

#: name → target ratio (None: informational only). Baselines run with the
#: interpreter's default cyclic GC on; the ``_nogc`` variants disable it while
#: the baseline runs (the strongest Python baseline: allocating millions of
#: dicts otherwise triggers many GC passes).
TARGETS: dict[str, float | None] = {
    "load_vs_orjson_loads": 1.5,
    "load_vs_orjson_loads_nogc": 3.0,
    "load_vs_json_loads": None,
    "to_json_vs_orjson_dumps": 2.0,
    "clone_vs_orjson_roundtrip": 20.0,
    "clone_vs_orjson_roundtrip_nogc": 20.0,
    "clone_vs_deepcopy": None,
    "clone_vs_serde_roundtrip": 3.0,
}

#: Generated JSON bytes per instruction (measured; used to size the module).
BYTES_PER_INSTRUCTION = 640


def _best(fn: Callable[[], Any], repeat: int, nogc: bool = False) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if nogc:
            gc.disable()
        try:
            t0 = time.perf_counter()
            r = fn()
            dt = time.perf_counter() - t0
        finally:
            gc.enable()
        del r
        best = min(best, dt)
    return best


def bir_ratios(size_mb: float = 50, repeat: int = 3, seed: int = 1) -> dict[str, tuple[float, str]]:
    """Measure every ratio; returns ``{name: (ratio, detail)}``."""
    n = max(1000, int(size_mb * 1e6 / BYTES_PER_INSTRUCTION))
    module = generate_module(seed, n, 2)
    data = module.to_bytes()
    text = data.decode()
    mb = len(data) / 1e6
    as_dicts = orjson.loads(data)

    t_load = _best(lambda: Module.from_json(data), repeat)
    t_orjson_loads = _best(lambda: orjson.loads(data), repeat)
    t_json_loads = _best(lambda: json.loads(text), max(1, repeat - 1))
    t_to_json = _best(module.to_json, repeat)
    t_orjson_dumps = _best(lambda: orjson.dumps(as_dicts), repeat)
    t_clone = _best(module.clone, repeat)
    t_serde_clone = _best(lambda: module.clone("json"), repeat)
    t_orjson_rt = _best(lambda: orjson.loads(orjson.dumps(as_dicts)), max(1, repeat - 1))
    t_orjson_loads_nogc = _best(lambda: orjson.loads(data), repeat, nogc=True)
    t_orjson_rt_nogc = _best(lambda: orjson.loads(orjson.dumps(as_dicts)), repeat, nogc=True)
    t_deepcopy = _best(lambda: copy.deepcopy(as_dicts), 1)

    def detail(ours: float, theirs: float, what: str) -> str:
        return f"lncsplit {ours * 1e3:.1f} ms vs {what} {theirs * 1e3:.1f} ms on {mb:.1f} MB ({n} instructions)"

    return {
        "load_vs_orjson_loads": (
            t_orjson_loads / t_load,
            detail(t_load, t_orjson_loads, "orjson.loads"),
        ),
        "load_vs_orjson_loads_nogc": (
            t_orjson_loads_nogc / t_load,
            detail(t_load, t_orjson_loads_nogc, "orjson.loads (GC off)"),
        ),
        "load_vs_json_loads": (t_json_loads / t_load, detail(t_load, t_json_loads, "json.loads")),
        "to_json_vs_orjson_dumps": (
            t_orjson_dumps / t_to_json,
            detail(t_to_json, t_orjson_dumps, "orjson.dumps"),
        ),
        "clone_vs_orjson_roundtrip": (
            t_orjson_rt / t_clone,
            detail(t_clone, t_orjson_rt, "orjson.loads(orjson.dumps(d))"),
        ),
        "clone_vs_orjson_roundtrip_nogc": (
            t_orjson_rt_nogc / t_clone,
            detail(t_clone, t_orjson_rt_nogc, "orjson.loads(orjson.dumps(d)) (GC off)"),
        ),
        "clone_vs_deepcopy": (
            t_deepcopy / t_clone,
            detail(t_clone, t_deepcopy, "copy.deepcopy(d)"),
        ),
        "clone_vs_serde_roundtrip": (
            t_serde_clone / t_clone,
            detail(t_clone, t_serde_clone, 'clone("json")'),
        ),
    }


def main(argv: list[str]) -> int:
    size = float(argv[1]) if len(argv) > 1 else 50.0
    ok = True
    for name, (ratio, detail) in bir_ratios(size).items():
        target = TARGETS.get(name)
        tgt = f"target {target}x" if target is not None else "no target"
        mark = "" if target is None or ratio >= target else "  BELOW TARGET"
        ok &= target is None or ratio >= target
        print(f"{name}: {ratio:.2f}x ({tgt}){mark}  [{detail}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
