"""Split benchmarks (issue 4) and split scaling (issue 8), side by side in one process.

Figures (each a :class:`benchutil.Figure`):

- ``split2_vs_clone`` / ``split8_vs_clone``: split(N) time ÷ (N × structural
  clone time); target ≤ 2 (concretize + prune cost no more than one clone per core).
- ``split8_over_split2``: between 3 and 4.5 (linear in N, less with parallel cores).
- ``split2_vs_python_peer``: the pure-Python peer (dicts + deepcopy + dict walk)
  time ÷ lncsplit's; target ≥ 30.
- ``split_exponent_size`` / ``split_exponent_cores``: log-log slope of split time
  against instructions and against N; target ≈ 1 (linear).
- ``split_peak_memory``: peak RSS growth of loading + splitting a ~100 MB module
  into 2 cores, ÷ the file size; target ≤ 3.2 (issue 17).
- ``cli_split_peak_memory``: peak RSS growth of ``lncsplit split FILE`` (the whole
  pipeline and the write, in one process) ÷ the file size; target ≤ 3.5 (issue 40).
  ``--max-file-size``'s default divides the machine's memory by the measured factor
  (``lncsplit.limits.CLI_SPLIT_PEAK_FACTOR``).
- ``info_vs_load``: ``lncsplit info`` on that module file ÷ ``lncsplit.load`` of
  it; target ≤ 1.3 (issue 17: info costs no more than loading).

Run as a script: ``python benches/bench_split_ratios.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.insert(
    0, os.path.join(os.path.dirname(_here), "tests")
)  # python_peer, the reference splitter

import lncsplit  # noqa: E402
import python_peer  # noqa: E402
from benchutil import Figure, best_of, exponent_figure, interleaved, print_figures  # noqa: E402
from lncsplit import _core  # noqa: E402


def _module(instructions: int, lnc: int, seed: int = 7) -> lncsplit.Module:
    return _core.generate_module(seed, instructions, lnc)


def _split_time(base: lncsplit.Module, n: int, rounds: int) -> float:
    return best_of(_fresh_split(base, n), rounds)


def _fresh_split(base: lncsplit.Module, n: int) -> Callable[[], Callable[[], object]]:
    """A maker: clone outside the timed region, time only the split."""

    def make() -> Callable[[], object]:
        m = base.clone()
        return lambda: lncsplit.split([m], n)

    return make


def split_figures(instructions: int = 200_000, rounds: int = 3, peer: bool = True) -> list[Figure]:
    base = _module(instructions, 8)
    clone_t, s2, s8 = interleaved(
        [lambda: base.clone, _fresh_split(base, 2), _fresh_split(base, 8)],
        rounds,
    )
    figs = [
        Figure(
            "split2_vs_clone",
            s2 / (2 * clone_t),
            2.0,
            "lower",
            "x",
            f"2 x structural clone ({clone_t * 1e3:.1f} ms); split(2) {s2 * 1e3:.1f} ms",
        ),
        Figure(
            "split8_vs_clone",
            s8 / (8 * clone_t),
            2.0,
            "lower",
            "x",
            f"8 x structural clone; split(8) {s8 * 1e3:.1f} ms",
        ),
        Figure(
            "split8_over_split2",
            s8 / s2,
            4.5,
            "lower",
            "x",
            "split(2) on the same module (target band 3-4.5)",
        ),
    ]
    if peer:
        text = base.to_bytes()

        def peer_maker() -> Callable[[], object]:
            d = json.loads(text)
            return lambda: python_peer.split_dicts(d, 2)

        peer_t, ours = interleaved([peer_maker, _fresh_split(base, 2)], max(1, rounds - 1))
        figs.append(
            Figure(
                "split2_vs_python_peer",
                peer_t / ours,
                30.0,
                "higher",
                "x",
                f"pure-Python dict split ({peer_t:.2f} s vs {ours * 1e3:.1f} ms)",
            )
        )
    return figs


def scaling_figures(top: int = 200_000, rounds: int = 3) -> list[Figure]:
    sizes = [top // 8, top // 4, top // 2, top]
    times = [_split_time(_module(s, 2), 2, rounds) for s in sizes]
    base = _module(top // 2, 8)
    cores = [2, 4, 8]
    ctimes = [_split_time(base, n, rounds) for n in cores]
    return [
        exponent_figure("split_exponent_size", "split(2) time vs instructions", sizes, times),
        exponent_figure("split_exponent_cores", "split time vs N", cores, ctimes),
    ]


# VmHWM (this process's own peak RSS), not ru_maxrss: getrusage keeps the
# parent's high-water mark across fork/exec, which would hide the child's.
_PEAK_SCRIPT = r"""
import sys, lncsplit
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
path = sys.argv[1]
before = hwm()
m = lncsplit.load(path)
out = lncsplit.split([m], 2)
print(hwm() - before)
"""


# The same for the command line: ``lncsplit split FILE --out DIR`` in process (the whole
# pipeline: verifiers, the LNC tail, memory checks, race check, then the write), the modules
# imported before the first reading so the import is not counted.
_CLI_PEAK_SCRIPT = r"""
import sys
import lncsplit.cli, lncsplit.corpus.split_job, lncsplit.pipeline
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
before = hwm()
rc = lncsplit.cli.main(["split", sys.argv[1], "--out", sys.argv[2], "--lnc", "2", "-q"])
assert rc == 0, rc
print(hwm() - before)
"""


def _info_vs_load(path: str, rounds: int = 2) -> tuple[float, float]:
    """``lncsplit info FILE`` (in process, output discarded) and ``lncsplit.load``."""
    import contextlib
    import io

    from lncsplit.cli import main as cli_main

    def info() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            cli_main(["info", path])

    t_info, t_load = interleaved([lambda: info, lambda: lambda: lncsplit.load(path)], rounds)
    return t_info, t_load


def peak_memory_figure(size_mb: int = 100) -> list[Figure]:
    """``split_peak_memory`` and ``info_vs_load`` on one generated module file."""
    per_inst = len(_module(2000, 2).to_bytes()) / 2000
    n = int(size_mb * 1e6 / per_inst)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.json")
        lncsplit.dump(_module(n, 2), path)
        size = os.path.getsize(path)
        out = subprocess.run(
            [sys.executable, "-c", _PEAK_SCRIPT, path], capture_output=True, text=True, check=True
        )
        grown = int(out.stdout.strip())
        cli = subprocess.run(
            [sys.executable, "-c", _CLI_PEAK_SCRIPT, path, os.path.join(d, "out")],
            capture_output=True,
            text=True,
            check=True,
        )
        cli_grown = int(cli.stdout.strip())
        t_info, t_load = _info_vs_load(path)
    return [
        Figure(
            "split_peak_memory",
            grown / size,
            3.2,
            "lower",
            "x input",
            f"peak RSS growth {grown / 1e6:.0f} MB for a {size / 1e6:.0f} MB module split into 2",
        ),
        Figure(
            "cli_split_peak_memory",
            cli_grown / size,
            3.5,
            "lower",
            "x input",
            f"peak RSS growth {cli_grown / 1e6:.0f} MB of `lncsplit split` (whole pipeline and "
            f"write, default jobs) of that {size / 1e6:.0f} MB module into 2",
        ),
        Figure(
            "info_vs_load",
            t_info / t_load,
            1.3,
            "lower",
            "x",
            f"lncsplit info {t_info:.2f} s vs lncsplit.load {t_load:.2f} s on {size / 1e6:.0f} MB",
        ),
    ]


def figures(quick: bool = False) -> list[Figure]:
    if quick:
        return (
            split_figures(40_000, rounds=2)
            + scaling_figures(40_000, rounds=2)
            + peak_memory_figure(20)
        )
    return split_figures() + scaling_figures() + peak_memory_figure()


if __name__ == "__main__":
    t0 = time.perf_counter()
    print_figures(figures(quick="--quick" in sys.argv))
    print(f"({time.perf_counter() - t0:.0f} s)")
