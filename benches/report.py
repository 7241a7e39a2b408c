"""Every performance figure of lncsplit, side by side with its peer, in one run.

    python benches/report.py [--quick] [--json FILE] [--only SECTION,...]

Sections (each measures lncsplit and its peer in the same process, on the same
data, interleaved): ``pelican`` (interning, eval_mask), ``bir`` (load, dump,
clone), ``split`` (split vs clone, vs a pure-Python peer, scaling exponents,
peak memory), ``corpus`` (jobs 2 vs 1, end-to-end vs orjson), ``sim`` (BirSim
instructions per second, simulation vs split), ``link`` (link + unlink vs
clone), ``racecheck`` (lnc_barriercheck vs the split it checks, size exponent),
``frontend`` (lower_partitioned's instructions per second, the JAX corpus end to end),
``racecheck_symbolic`` (every N at once vs one concrete check, the lemmas' share, the
solver queries, z3 vs isl),
``enginecheck`` (the intra-core check vs loading the module, size exponent),
``spelling`` (load and dump in the compiler's spelling vs lncsplit's, same module).
Prints one table
and one ``name: <ratio>x (target <target>x)`` line per figure; ``--json``
writes ``{"figures": {name: {value, target, better, unit, peer}}, "machine":
{...}}``. Exit status is 0 whenever the report ran, whatever the figures.

``--quick`` uses smaller inputs and finishes in under 3 minutes on 2 cores.
Use a release build (``scripts/setup-env`` or ``maturin develop --release``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.insert(0, os.path.join(os.path.dirname(_here), "tests"))

from benchutil import Figure, print_figures  # noqa: E402


def pelican_figures(quick: bool) -> list[Figure]:
    import bench_pelican_ratios as bp

    n = 200_000 if quick else 1_000_000
    ir, idet = bp.intern_ratio(n)
    er, edet = bp.eval_mask_ratio(n)
    return [
        Figure(
            "intern_vs_python_dict",
            ir,
            bp.TARGETS["intern"],
            "higher",
            "x",
            f"pure-Python dict hash-consing of the same {n} rows",
        ),
        Figure(
            "eval_mask_batch_vs_python_loop",
            er,
            50.0,
            "higher",
            "x",
            f"pure-Python loop over {n} core ids",
        ),
    ]


def bir_figures(quick: bool) -> list[Figure]:
    import bench_bir_ratios as bb

    figs = []
    for name, (ratio, detail) in bb.bir_ratios(size_mb=10 if quick else 50).items():
        target = bb.TARGETS.get(name)
        # Ratios the issues name without a target are informational (target 0).
        figs.append(
            Figure(name, float(ratio), target if target is not None else 0.0, "higher", "x", detail)
        )
    return figs


def split_figures(quick: bool) -> list[Figure]:
    import bench_split_ratios as bs

    return bs.figures(quick=quick)


def corpus_figures(quick: bool) -> list[Figure]:
    import bench_corpus as bc
    from lncsplit.corpus import DEFAULT_LOCAL_EXECUTOR

    r = bc.corpus_ratios(total_mb=30 if quick else 200, files=30 if quick else 200)
    what = f"{r['files']:.0f} files, {r['corpus_mb']:.0f} MB"
    return [
        Figure(
            "corpus_jobs2_vs_jobs1",
            r["jobs2_vs_jobs1"],
            bc.TARGETS["jobs2_vs_jobs1"],
            "higher",
            "x",
            f"--jobs 1 on the same corpus ({what})",
        ),
        Figure(
            "corpus_split_vs_orjson",
            r["split_vs_orjson"],
            bc.TARGETS["split_vs_orjson"],
            "higher",
            "x",
            f"orjson.loads + orjson.dumps of the same files in one process ({what})",
        ),
        Figure(
            "corpus_threads_vs_processes_jobs2",
            r["thread_vs_process_j2"],
            0.0,
            "higher",
            "x",
            "informational: --jobs 2 with worker processes instead of threads (>1: threads faster)",
        ),
        Figure(
            "corpus_throughput_jobs2",
            r[f"{DEFAULT_LOCAL_EXECUTOR}_j2_mb_s"],
            r["orjson_mb_s"] * 0.5,
            "higher",
            "MB/s",
            "end-to-end split with 2 jobs; target = half the orjson MB/s",
        ),
    ]


def link_figures(quick: bool) -> list[Figure]:
    import bench_link_ratios as bl

    return bl.figures(quick=quick)


def sim_figures(quick: bool) -> list[Figure]:
    import bench_sim

    return bench_sim.figures(quick)


def racecheck_figures(quick: bool) -> list[Figure]:
    import bench_racecheck_ratios as br

    return br.figures(quick)


def frontend_figures(quick: bool) -> list[Figure]:
    import bench_frontend

    return bench_frontend.figures(quick)


def racecheck_symbolic_figures(quick: bool) -> list[Figure]:
    import bench_racecheck_symbolic as bs

    return bs.figures(quick)


def enginecheck_figures(quick: bool) -> list[Figure]:
    import bench_enginecheck_ratios as be

    return be.figures(quick)


def spelling_figures(quick: bool) -> list[Figure]:
    import bench_spelling_ratios as bsp

    return [
        Figure(name, float(ratio), bsp.TARGETS[name], "lower", "x", detail)
        for name, (ratio, detail) in bsp.spelling_ratios(size_mb=10 if quick else 100).items()
    ]


SECTIONS: dict[str, Callable[[bool], list[Figure]]] = {
    "pelican": pelican_figures,
    "bir": bir_figures,
    "split": split_figures,
    "corpus": corpus_figures,
    "link": link_figures,
    "sim": sim_figures,
    "racecheck": racecheck_figures,
    "frontend": frontend_figures,
    "racecheck_symbolic": racecheck_symbolic_figures,
    "enginecheck": enginecheck_figures,
    "spelling": spelling_figures,
}


def _extension(path: str | None) -> dict[str, Any]:
    """Which compiled extension was measured: its path, size and build time.

    `machine.commit` is the checkout's HEAD, which says nothing about the
    extension installed: a stale build, or one built with another profile
    (the non-LTO fast build is ~20 % larger and slower), shows here.
    """
    if not path:
        return {}
    st = os.stat(path)
    built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))
    return {"file": path, "bytes": st.st_size, "built": built}


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None
            )
    except OSError:
        pass
    try:
        import lncsplit
        from lncsplit import _core

        info["lncsplit"] = lncsplit.__version__
        info["extension"] = _extension(_core.__file__)
    except Exception:  # noqa: BLE001 - the report still runs
        pass
    try:
        info["commit"] = subprocess.run(
            ["git", "-C", _here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="smaller inputs (< 3 min on 2 cores)")
    ap.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    ap.add_argument(
        "--only", metavar="SECTIONS", help="comma-separated subset of " + ",".join(SECTIONS)
    )
    args = ap.parse_args(argv)
    wanted = args.only.split(",") if args.only else list(SECTIONS)
    figs: list[Figure] = []
    errors: dict[str, str] = {}
    t0 = time.perf_counter()
    for name in wanted:
        if name not in SECTIONS:
            ap.error(f"unknown section {name!r}")
        ts = time.perf_counter()
        try:
            figs.extend(SECTIONS[name](args.quick))
        except Exception as e:  # noqa: BLE001 - a broken section must not hide the others
            errors[name] = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
        print(f"[{name}: {time.perf_counter() - ts:.0f} s]", file=sys.stderr)
    print_figures(figs)
    for name, err in errors.items():
        print(f"{name}: section failed: {err}")
    total = time.perf_counter() - t0
    print(f"({total:.0f} s, {'quick' if args.quick else 'full'})")
    if args.json:
        doc = {
            "figures": {f.name: f.to_json() for f in figs},
            "machine": machine(),
            "errors": errors,
            "seconds": total,
            "quick": args.quick,
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
