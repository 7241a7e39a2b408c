"""``lncsplit link DIR... --out FILE``: link split outputs into one program each (contract §5, §3.7).

Each DIR is searched like ``verify`` does: every directory holding
``nc00.json … nc<N-1>.json`` is one split output (a unit); other files are
not link's business. One split output: ``--out`` is the linked module's file
and its tensor map ``<stem>.tensor-map.json`` is written beside it (``--out
DIR/a.json`` → ``DIR/a.tensor-map.json``, so two links into one directory keep
both maps). Several (several DIRs, or one DIR holding several split outputs),
or ``--out`` an existing directory: ``--out`` is a directory and each split
output goes to ``<out>/<rel>/linked.json`` with its map
``linked.tensor-map.json``, ``rel`` being the DIR's name (or the split output's
path under it). The core files of a unit
must be ``nc00 … nc<N-1>``, each with its own ``neuron_core_id``, of one
kernel: anything else fails that unit with an error naming the files. Both
files of a unit are written atomically together; a failed unit leaves
neither.
"""

from __future__ import annotations

import argparse
import os
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal

from lncsplit._atomic import LINKED_FILE
from lncsplit.cli._common import (
    UsageError,
    add_pass_option,
    add_runner_options,
    add_spelling_option,
    discover,
    finish_with_table,
    print_units,
    run_bulk,
)

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.unit import FileResult, Unit

#: The suffix of the tensor map written beside every linked module: ``<stem>.tensor-map.json``.
TENSOR_MAP_SUFFIX = ".tensor-map.json"


def add_parser(sub: Any) -> None:
    """Register ``link`` on the subparsers ``sub``."""
    p = sub.add_parser("link", help="link split outputs (nc00.json …) into one linked module each")
    p.add_argument("inputs", nargs="+", metavar="DIR", help="split output directories")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the linked module (its map <stem>.tensor-map.json is written beside it); with "
        "several split outputs, a directory receiving <name>/linked.json and "
        "<name>/linked.tensor-map.json",
    )
    add_runner_options(p, "split outputs")
    add_pass_option(p)
    add_spelling_option(p)
    p.add_argument("--quiet", "-q", action="store_true", help="print failures only")
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Link every split output found; one line per unit, then the summary."""
    files = [p for p in a.inputs if os.path.exists(p) and not os.path.isdir(p)]
    if files:
        raise UsageError("link takes split output directories, not files: " + ", ".join(files))
    # The safety rules (contract §6); a missing INPUT stays as its error unit (exit 1).
    units = [u for u in discover(a, core_sets=True) if u.kind == "core_set" or u.error]
    into_dir = len(a.inputs) > 1 or len(units) > 1 or os.path.isdir(a.out)
    check_out(a.out, into_dir)
    out = a.out
    job = partial(link_unit, out=out, into_dir=into_dir, spelling=a.spelling)
    cleanup = partial(remove_unit_outputs, out=out, into_dir=into_dir)
    report = run_bulk(a, units, job, command="link", lnc=None, cleanup=cleanup, quiet=a.quiet)
    print_units(report, lambda f: f"ok    {f.input} -> {f.text}", quiet=a.quiet)
    return finish_with_table(a, report, quiet=a.quiet)


def check_out(out: str, into_dir: bool) -> None:
    """Before any work: ``--out`` as a directory is made and checked writable; as a FILE its
    directory must exist (contract §6). A usage error otherwise."""
    from lncsplit._atomic import OutputPathError, check_output_file, prepare_output_dir

    try:
        (prepare_output_dir if into_dir else check_output_file)(out)
    except OutputPathError as e:
        raise UsageError(f"--out {e}") from e


def tensor_map_path(linked: str) -> str:
    """The tensor map beside the linked module ``linked``: ``<stem>.tensor-map.json``."""
    from lncsplit._inputs import strip_json

    d, name = os.path.split(linked)
    return os.path.join(d, strip_json(name) + TENSOR_MAP_SUFFIX)


def destinations(unit: Unit, out: str, into_dir: bool) -> tuple[str, str]:
    """Where a unit's linked module and tensor map go."""
    dest = os.path.join(out, *unit.rel.split("/"), LINKED_FILE) if into_dir else out
    return dest, tensor_map_path(dest)


def remove_unit_outputs(unit: Unit, out: str, into_dir: bool) -> None:
    """What a killed worker may have left for ``unit``: its temporaries are
    hidden and never renamed, so only finished files could remain."""
    for path in destinations(unit, out, into_dir):
        try:
            os.unlink(path)
        except OSError:
            pass


def link_unit(
    unit: Unit, out: str, into_dir: bool, spelling: Literal["lncsplit", "compiler"] | None = None
) -> FileResult:
    """The job: link one split output and write it with its tensor map (the linked module
    in ``spelling``, None: the cores')."""
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_link, unit, out, into_dir, spelling))


def _link(
    unit: Unit,
    out: str,
    into_dir: bool,
    spelling: Literal["lncsplit", "compiler"] | None,
    res: FileResult,
) -> None:
    import json

    import lncsplit
    from lncsplit.corpus.discovery import load_core_set

    cores = load_core_set(unit)
    res.instructions_in = sum(m.instruction_count() for m in cores)
    linked = _link_naming_files(unit, cores)
    tmap = lncsplit.tensor_map(linked)
    dest, tmap_path = destinations(unit, out, into_dir)
    blobs = {
        dest: linked.to_bytes(spelling=spelling),
        tmap_path: (json.dumps(tmap, indent=2) + "\n").encode(),
    }
    write_all_atomic(blobs)
    res.outputs = list(blobs)
    res.instructions_out = [linked.instruction_count()]
    res.bytes_out = sum(len(b) for b in blobs.values())
    res.detail = {"lnc": len(cores), "linked": linked.name, "tensors": len(tmap)}
    res.text = f"{dest} ({linked.name}, {len(cores)} cores)"


def _link_naming_files(unit: Unit, cores: list[Module]) -> Module:
    """``link``, with a refusal about the core set (9006) naming its files."""
    import lncsplit
    from lncsplit.corpus.discovery import CoreSetError

    try:
        return lncsplit.link(cores)
    except lncsplit.NeuronAssertion as e:
        if e.code != 9006:
            raise
        files = ", ".join(f"cores[{c}] = {PurePath(f).name}" for c, f in enumerate(unit.files))
        raise CoreSetError(f"split output {unit.path}: {e} [{files}]") from e


def write_all_atomic(blobs: dict[str, bytes]) -> None:
    """Write every file through a hidden temporary, then rename them all;
    on failure nothing of this call remains (:func:`lncsplit._atomic.write_files_atomic`)."""
    from lncsplit._atomic import write_files_atomic

    write_files_atomic(blobs)
