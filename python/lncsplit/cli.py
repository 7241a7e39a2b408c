"""The ``lncsplit`` command line (contract §5).

Subcommands::

    lncsplit split  [INPUT...] [--lnc N] [--out DIR] [--jobs J] [--report FILE]
                    [--no-verify] [--no-expand] [--executor E] [--scheduler ADDR]
                    [--batch-size B] [--quiet]
    lncsplit verify INPUT... [--lnc N] [--quiet]
    lncsplit info   FILE [--json]
    lncsplit gen    DIR [--modules M] [--instructions I] [--lnc N] [--seed S]
    lncsplit memory INPUT... [--lnc N] [--arch A] [--plot out.png] [--json]

Exit codes: 0 every input succeeded, 1 some input failed (the others are still
processed), 2 usage error (bad arguments, missing paths). Heavy modules are
imported inside each command, so ``lncsplit --help`` stays fast. Defaults and
decisions are documented in docs/cli.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DEFAULT_LNC = 2
DEFAULT_OUT = "lncsplit-out"


class UsageError(Exception):
    """A usage error: reported on stderr, exit code 2."""


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {v}")
    return v


def _non_negative(text: str) -> int:
    if text == "auto":
        return 0
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand."""
    p = argparse.ArgumentParser(
        prog="lncsplit",
        description="Split Neuron BIR-JSON modules across logical NeuronCores (LNC).",
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("split", help="split modules into per-core modules")
    s.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="module files or directories (searched recursively for *.json); "
        "none: the example corpus shipped with lncsplit",
    )
    s.add_argument(
        "--lnc",
        type=_positive,
        default=DEFAULT_LNC,
        help=f"number of cores N (default {DEFAULT_LNC})",
    )
    s.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default ./{DEFAULT_OUT})")
    s.add_argument(
        "--jobs",
        "-j",
        type=_non_negative,
        default=0,
        help="parallel workers (default 0 = every available CPU)",
    )
    s.add_argument("--report", metavar="FILE", help="write the JSON report here")
    s.add_argument(
        "--no-verify",
        action="store_true",
        help="skip birverifier, lnc_verifier and lnc_barriercheck",
    )
    s.add_argument("--no-expand", action="store_true", help="skip expand_replication")
    s.add_argument(
        "--executor",
        choices=("auto", "thread", "process", "dask"),
        default="auto",
        help="how files run in parallel (default auto: dask with --scheduler, else threads)",
    )
    s.add_argument(
        "--scheduler", metavar="ADDR", help="Dask scheduler address (implies --executor dask)"
    )
    s.add_argument("--batch-size", type=_positive, help="files per Dask task (default up to 200)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary table")

    v = sub.add_parser("verify", help="run the lnc_verifier on symbolic modules or split outputs")
    v.add_argument("inputs", nargs="+", metavar="INPUT")
    v.add_argument(
        "--lnc", type=_positive, help="N (default: from the ShardIds / the nc files found)"
    )
    v.add_argument("--quiet", "-q", action="store_true", help="print failures only")

    i = sub.add_parser("info", help="describe one module file")
    i.add_argument("file", metavar="FILE")
    i.add_argument("--json", action="store_true", help="print the description as JSON")

    g = sub.add_parser("gen", help="generate a synthetic corpus of symbolic modules")
    g.add_argument("dir", metavar="DIR")
    g.add_argument("--modules", type=_positive, default=8, help="number of modules (default 8)")
    g.add_argument(
        "--instructions",
        type=_positive,
        default=1000,
        help="instructions per module (default 1000)",
    )
    g.add_argument(
        "--lnc", type=_positive, default=DEFAULT_LNC, help=f"ShardId bound (default {DEFAULT_LNC})"
    )
    g.add_argument("--seed", type=int, default=0, help="seed (default 0)")

    m = sub.add_parser("memory", help="memory-model report (contract §3.4)")
    m.add_argument("inputs", nargs="+", metavar="INPUT")
    m.add_argument(
        "--lnc", type=_positive, help="N for symbolic inputs (default: from the ShardIds, else 2)"
    )
    m.add_argument("--arch", help="override the modules' arch")
    m.add_argument(
        "--plot", metavar="PNG", help="draw the report (several inputs: PNG gets -<k> suffixes)"
    )
    m.add_argument("--json", action="store_true", help="print JSON instead of tables")
    return p


# ----------------------------------------------------------------------------- helpers


class _Progress:
    """A plain ``\\r`` counter on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.label = label
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        pct = 100.0 * done / total if total else 100.0
        sys.stderr.write(f"\r{self.label} {done}/{total} ({pct:5.1f}%) {now - self.t0:6.1f}s")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _err(msg: str) -> None:
    sys.stderr.write(f"lncsplit: {msg}\n")


def _check_paths(paths: Sequence[str]) -> None:
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise UsageError("no such file or directory: " + ", ".join(missing))


def _format_error(info: dict[str, Any]) -> str:
    """``Type code: message``, without repeating what the message already says."""
    msg = str(info.get("message"))
    typ = str(info.get("type"))
    if msg.startswith(typ):
        return msg
    code = f" {info['code']}" if info.get("code") is not None else ""
    return f"{typ}{code}: {msg}"


def _describe_error(e: BaseException) -> str:
    from lncsplit.corpus import error_info

    return _format_error(error_info(e))


# ----------------------------------------------------------------------------- split


def cmd_split(a: argparse.Namespace) -> int:  # noqa: C901
    from lncsplit.corpus import InputConflictError, process_files
    from lncsplit.pipeline import PassOptions

    inputs: list[str] = list(a.inputs)
    if not inputs:
        from lncsplit.examples import examples_dir

        inputs = [str(examples_dir())]
    _check_paths(inputs)
    executor = a.executor
    if a.scheduler and executor == "auto":
        executor = "dask"
    if a.scheduler and executor != "dask":
        raise UsageError("--scheduler needs --executor dask")
    if a.batch_size is not None and executor != "dask":
        raise UsageError("--batch-size is only used by --executor dask")
    # Writing outputs creates each core's artifact directory (contract §3.1),
    # for modules that carry an artifact_path.
    # --no-verify also skips lnc_barriercheck: bands need the verifier's barrier match.
    options = PassOptions(
        lnc_size=a.lnc,
        verify=not a.no_verify,
        expand=not a.no_expand,
        create_artifact_dirs=True,
        racecheck=not a.no_verify,
    )
    progress = _Progress(not a.quiet, "split")
    try:
        report = process_files(
            inputs,
            a.out,
            options,
            jobs=a.jobs,
            executor=executor,
            scheduler=a.scheduler,
            progress=progress,
            batch_size=a.batch_size,
        )
    except (InputConflictError, FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from e
    except ImportError as e:
        raise UsageError(str(e)) from e
    finally:
        progress.close()
    for f in report.failed:
        _err(f"{f.input}: {_format_error(f.error or {})}")
    status = report.exit_code
    if a.report:
        try:
            report.write(a.report)
        except OSError as e:
            _err(f"cannot write the report {a.report}: {e}")
            status = EXIT_FAILED
    if not a.quiet:
        print(report.table())
    return status


# ----------------------------------------------------------------------------- verify


def _infer_lnc(module: Any) -> int | None:
    import json

    doc = json.loads(module.to_json())
    ubs = {ub for f in doc.get("functions", []) for ub in f.get("shard_ids", [])}
    return max(ubs) if ubs else None


def _verify_units(inputs: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """(kind, label, files): kind "set" for a split output dir, "file" otherwise."""
    from lncsplit.corpus import core_file_name

    units: list[tuple[str, str, list[str]]] = []

    def core_set(d: str, names: set[str]) -> list[str] | None:
        if core_file_name(0) not in names:
            return None
        files = []
        c = 0
        while core_file_name(c) in names:
            files.append(os.path.join(d, core_file_name(c)))
            c += 1
        return files

    for inp in inputs:
        if os.path.isdir(inp):
            for dirpath, dirnames, filenames in os.walk(inp):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                names = set(filenames)
                cs = core_set(dirpath, names)
                taken: set[str] = set()
                if cs is not None:
                    units.append(("set", dirpath, cs))
                    taken = {os.path.basename(x) for x in cs}
                for fn in sorted(filenames):
                    if fn.startswith(".") or not fn.lower().endswith(".json") or fn in taken:
                        continue
                    units.append(("file", os.path.join(dirpath, fn), [os.path.join(dirpath, fn)]))
        else:
            units.append(("file", inp, [inp]))
    return units


def cmd_verify(a: argparse.Namespace) -> int:  # noqa: C901
    _check_paths(a.inputs)
    import lncsplit
    from lncsplit import passes

    units = _verify_units(a.inputs)
    failed = 0
    for kind, label, files in units:
        try:
            mods = [lncsplit.load(f) for f in files]
            if kind == "set":
                n = a.lnc if a.lnc is not None else len(mods)
                if len(mods) != n:
                    raise ValueError(f"found {len(mods)} core files (nc00…), expected --lnc {n}")
                for m in mods:
                    if m.neuron_core_id is None:
                        raise ValueError(f"{m.name} in a split output has no neuron_core_id")
                    passes.verify_bir(m, n)
                passes.verify_concretized(mods, n)
                what = f"concretized set of {n} cores"
            else:
                m = mods[0]
                if m.neuron_core_id is None:
                    n = a.lnc if a.lnc is not None else (_infer_lnc(m) or DEFAULT_LNC)
                    passes.verify_bir(m, n)
                    passes.verify_symbolic(m, n)
                    what = f"symbolic, lnc {n}"
                else:
                    passes.verify_bir(m, 1)
                    what = f"core {m.neuron_core_id} (structural checks only; verify its directory)"
            if not a.quiet:
                print(f"ok    {label} ({what})")
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL  {label}: {_describe_error(e)}")
    if not units:
        _err("no modules found")
    if not a.quiet:
        print(f"{len(units) - failed} ok, {failed} failed")
    return EXIT_FAILED if failed else EXIT_OK


# ----------------------------------------------------------------------------- info


def describe_module(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``lncsplit info`` description of a module's JSON document."""
    from collections import Counter

    ops: Counter[str] = Counter()
    functions = []
    for f in doc.get("functions", []):
        count = 0

        def walk(blocks: list[dict[str, Any]]) -> None:
            nonlocal count
            for b in blocks:
                for ins in b.get("instructions", []):
                    count += 1
                    ops[str(ins.get("opcode"))] += 1
                    if ins.get("opcode") == "Loop":
                        walk(ins.get("blocks", []))

        walk(f.get("basic_blocks", []))
        functions.append(
            {
                "name": f.get("name"),
                "shard_ids": f.get("shard_ids", []),
                "blocks": len(f.get("basic_blocks", [])),
                "instructions": count,
                "memory": [
                    {
                        "name": s.get("name"),
                        "kind": s.get("kind"),
                        "dtype": s.get("dtype"),
                        "tensor_shape": s.get("tensor_shape"),
                        "addr_space": s.get("addr_space", "Local"),
                        "locations": [
                            {k: loc.get(k) for k in ("name", "type", "addr") if k in loc}
                            for loc in s.get("locations", [])
                        ],
                    }
                    for s in f.get("allocations", [])
                ],
            }
        )
    attrs = doc.get("attributes") or {}
    return {
        "name": doc.get("name"),
        "arch": doc.get("arch", "gen3"),
        "version": doc.get("version"),
        "neuron_core_id": attrs.get("neuron_core_id"),
        "artifact_path": doc.get("artifact_path"),
        "instructions": sum(f["instructions"] for f in functions),
        "opcodes": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "functions": functions,
    }


def cmd_info(a: argparse.Namespace) -> int:
    _check_paths([a.file])
    if os.path.isdir(a.file):
        raise UsageError(f"{a.file} is a directory; info takes one module file")
    import json

    import lncsplit

    try:
        m = lncsplit.load(a.file)
        doc = json.loads(m.to_json())
    except Exception as e:  # noqa: BLE001
        _err(f"{a.file}: {_describe_error(e)}")
        return EXIT_FAILED
    d = describe_module(doc)
    if a.json:
        print(json.dumps(d, indent=2))
        return EXIT_OK
    core = d["neuron_core_id"]
    lines = [
        f"file          {a.file}",
        f"name          {d['name']}",
        f"arch          {d['arch']}",
        f"version       {d['version']}",
        f"core id       {core if core is not None else '- (symbolic)'}",
    ]
    if d["artifact_path"]:
        lines.append(f"artifact path {d['artifact_path']}")
    lines.append(f"instructions  {d['instructions']}")
    lines.append("opcodes")
    lines += [f"  {op:<28} {n:>8}" for op, n in d["opcodes"].items()]
    for f in d["functions"]:
        sids = ", ".join(str(x) for x in f["shard_ids"]) or "-"
        lines.append(
            f"function {f['name']}: {f['blocks']} blocks, {f['instructions']} instructions, shard ids [{sids}]"
        )
        for s in f["memory"]:
            shape = "x".join(str(x) for x in (s["tensor_shape"] or []))
            types = ",".join(sorted({str(loc.get("type")) for loc in s["locations"]})) or "-"
            lines.append(
                f"  {s['name']:<24} {s['kind'] or '-':<9} {s['dtype'] or '-':<9} {shape:<12} "
                f"{s['addr_space']:<7} {types:<5} {len(s['locations'])} loc"
            )
    print("\n".join(lines))
    return EXIT_OK


# ----------------------------------------------------------------------------- gen


def cmd_gen(a: argparse.Namespace) -> int:
    from lncsplit import _core

    gen: Any = getattr(_core, "generate_corpus", None)
    if gen is None:
        raise UsageError("this build of lncsplit has no generator (_core.generate_corpus)")
    try:
        paths = gen(a.dir, a.modules, a.instructions, a.lnc, a.seed)
    except Exception as e:  # noqa: BLE001
        _err(f"{a.dir}: {_describe_error(e)}")
        return EXIT_FAILED
    n = len(paths) if paths is not None else a.modules
    print(f"wrote {n} modules to {a.dir}")
    return EXIT_OK


# ----------------------------------------------------------------------------- memory


def _memory_units(inputs: Sequence[str], lnc: int | None) -> list[tuple[str, list[str]]]:
    return [(label, files) for _kind, label, files in _verify_units(inputs)]


def _memory_modules(files: list[str], lnc: int | None, arch: str | None) -> list[Any]:
    """Per-core modules for one unit: a split set as is; a symbolic file split first."""
    import lncsplit
    from lncsplit.pipeline import PassOptions, run_pipeline

    mods = [lncsplit.load(f) for f in files]
    if len(mods) == 1 and mods[0].neuron_core_id is None:
        n = lnc if lnc is not None else (_infer_lnc(mods[0]) or DEFAULT_LNC)
        # The pipeline without its memory step: the report below is the
        # memory step, and it reports violations instead of raising.
        mods = run_pipeline(mods, PassOptions(lnc_size=n, verify=False, memory=False, arch=arch))
        try:
            from lncsplit import memory

            if n > 1:
                memory.allocate_shared_dram(mods, n)
                memory.sync_shared_allocations(mods, n)
        except (ImportError, AttributeError):
            pass
    return mods


def cmd_memory(a: argparse.Namespace) -> int:
    _check_paths(a.inputs)
    import json

    from lncsplit import memory

    units = _memory_units(a.inputs, a.lnc)
    failed = 0
    docs = []
    for k, (label, files) in enumerate(units):
        try:
            mods = _memory_modules(files, a.lnc, a.arch)
            report = memory.check_memory(mods, arch=a.arch)
        except Exception as e:  # noqa: BLE001
            failed += 1
            if a.json:
                docs.append({"input": label, "error": _describe_error(e)})
            else:
                print(f"FAIL  {label}: {_describe_error(e)}")
            continue
        if not report.ok:
            failed += 1
        if a.json:
            rj = report.to_json()
            docs.append({"input": label, "report": json.loads(rj) if isinstance(rj, str) else rj})
        else:
            print(f"== {label}")
            print(str(report))
        if a.plot:
            path = a.plot
            if len(units) > 1:
                root, ext = os.path.splitext(a.plot)
                path = f"{root}-{k}{ext or '.png'}"
            memory.plot_report(report, path)
    if a.json:
        print(json.dumps(docs, indent=2))
    if not units:
        _err("no modules found")
    return EXIT_FAILED if failed else EXIT_OK


# ----------------------------------------------------------------------------- main


COMMANDS = {
    "split": cmd_split,
    "verify": cmd_verify,
    "info": cmd_info,
    "gen": cmd_gen,
    "memory": cmd_memory,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0, 1 or 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if args.version:
        from lncsplit._core import __version__

        print(f"lncsplit {__version__}")
        return EXIT_OK
    if args.command is None:
        parser.print_usage(sys.stderr)
        _err("a command is required (split, verify, info, gen, memory)")
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except UsageError as e:
        _err(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
