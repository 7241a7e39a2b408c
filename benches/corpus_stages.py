"""Per-stage CPU time of the corpus split job (docs/performance.md, `pipe5` round).

Runs the steps of ``lncsplit.corpus.split_job._split_into`` on every ``*.json`` of a
directory (read + load, the pass pipeline, writing the cores to bytes,
freeing the cores, the atomic writes), ``--jobs 1`` style (``parallel=False``),
and prints the CPU time of each step and of each pass, best of ``rounds``.
CPU time is the whole process's (``time.process_time``: rayon's threads
included), which a loaded machine moves far less than wall time.

    python benches/corpus_stages.py DIR [rounds] [--lnc N]

Make DIR with ``benches/bench_corpus.py``'s ``make_corpus`` (or ``lncsplit gen``).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import shutil
import tempfile
import time
import types

from lncsplit import _core, _inputs, pipeline
from lncsplit._atomic import write_core_files
from lncsplit.pipeline import PassOptions

Totals = collections.Counter[str]


def _one_file(path: str, out: str, opts: PassOptions, tot: Totals) -> None:
    clock = time.process_time
    t0 = clock()
    module, _n = _inputs.with_input(path, lambda d: _core.Module.from_json(d, parallel=False))
    t1 = clock()
    pl = pipeline.Pipeline(opts)
    cores = pl.run([module])
    t2 = clock()
    tot.update(pl.timings)
    # (``to_bytes_all`` on a build before ``to_buffers_all``, for A/B runs.)
    write_all = getattr(_core, "to_buffers_all", _core.to_bytes_all)
    blobs = [memoryview(b) for b in write_all(cores, 2, False)]
    t3 = clock()
    _core.release(cores)
    del cores, module
    t4 = clock()
    dest = os.path.join(out, os.path.basename(path)[:-5])
    os.makedirs(dest, exist_ok=True)
    write_core_files(dest, blobs)
    t5 = clock()
    tot.update(
        {
            "read + from_json": t1 - t0,
            "passes (all)": t2 - t1,
            "to_buffers_all (to_bytes_all)": t3 - t2,
            "release": t4 - t3,
            "write_core_files": t5 - t4,
            "total": t5 - t0,
        }
    )


def stage_times(src: str, rounds: int = 3, lnc: int = 2) -> dict[str, float]:
    """Best CPU seconds of every step over ``rounds`` passes over the files of ``src``."""
    paths = sorted(glob.glob(os.path.join(src, "*.json")))
    opts = PassOptions(lnc_size=lnc, parallel=False)
    saved = pipeline.time
    # The pipeline's per-pass timer, read as process CPU time for this run.
    pipeline.time = types.SimpleNamespace(perf_counter=time.process_time)  # type: ignore[assignment]
    best: dict[str, float] = {}
    try:
        for _ in range(rounds):
            tot: Totals = collections.Counter()
            out = tempfile.mkdtemp(prefix="lncsplit-stages-")
            try:
                for p in paths:
                    _one_file(p, out, opts, tot)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            for k, v in tot.items():
                best[k] = min(best.get(k, v), v)
    finally:
        pipeline.time = saved
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("dir")
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--lnc", type=int, default=2)
    a = ap.parse_args()
    for k, v in stage_times(a.dir, a.rounds, a.lnc).items():
        print(f"{k:40s} {v * 1e3:8.1f} ms")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
