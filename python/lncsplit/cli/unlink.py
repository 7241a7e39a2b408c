"""``lncsplit unlink FILE --out DIR``: a linked module back into its split output (contract §5, §3.7).

Writes ``DIR/nc00.json … nc<N-1>.json``, all or nothing — the exact bytes the
cores had when they were linked. A module that ``link`` did not make is an
error (``NeuronAssertion`` 9501), exit 1, and nothing is written.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from lncsplit.cli._common import (
    EXIT_OK,
    add_layout_option,
    add_spelling_option,
    input_failed,
    one_file,
    prepare_out,
)


def add_parser(sub: Any) -> None:
    """Register ``unlink`` on the subparsers ``sub``."""
    p = sub.add_parser("unlink", help="write a linked module's cores back (nc00.json …)")
    p.add_argument("file", metavar="FILE", help="a linked module (lncsplit link, split --link)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for nc00.json …")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    add_spelling_option(p)
    add_layout_option(p)
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Unlink one file into ``--out``."""
    one_file(a.file, "unlink takes one linked module file")
    prepare_out(a, create=False)  # a file there, or not writable: a usage error (§6)
    import lncsplit
    from lncsplit._atomic import write_core_files, write_files_atomic
    from lncsplit._inputs import input_stem, load_input
    from lncsplit.corpus.dump_root import layout_paths, subgraph_of

    try:
        cores = lncsplit.unlink(load_input(a.file))  # HLO lowered first: 9501, no JSON error
        blobs = [m.to_bytes(spelling=a.spelling) for m in cores]
        if a.layout == "compiler":  # OUT/nc<cc>/sg<k>/<stem>.json (contract §1.7)
            stem = input_stem(os.path.basename(a.file))
            paths = layout_paths(a.out, stem, [subgraph_of(m) for m in cores])
            written = write_files_atomic(dict(zip(paths, blobs, strict=True)))
        else:
            written = write_core_files(a.out, blobs)
    except Exception as e:  # noqa: BLE001 - reported, exit 1
        return input_failed(a.file, e)
    if not a.quiet:
        names = ", ".join(os.path.relpath(p, a.out) for p in written)
        print(f"ok    {a.file} -> {a.out} ({len(cores)} cores: {names})")
    return EXIT_OK
