"""Resource limits: what lncsplit refuses instead of exhausting memory or time (contract §6).

A corpus nobody here wrote may hold a module whose processing would blow up.
Each such case is refused with an error naming the file (and, for JSON, the
path in it), never an out-of-memory kill. The limits, where each is enforced,
and its error (docs/cli.md, "Resource limits", has the table):

- input size — ``--max-file-size`` (default :data:`DEFAULT_MAX_FILE_SIZE`:
  the machine's physical memory ÷ :data:`CLI_SPLIT_PEAK_FACTOR`, so a file the
  default admits can be split in memory), checked with ``stat`` before reading
  (discovery); peak memory is linear in the file size;
- JSON nesting — 128 levels inside one value (serde_json's recursion
  limit), 256 overall (``MAX_NESTING``, ``rust/src/bir/load.rs``); numbers
  must fit 64 bits ("number out of range"): ``BirJsonError`` with the JSON
  path;
- pelican expressions — bounded by the JSON nesting when read, 256 levels
  (``MAX_DEPTH``, ``rust/src/pelican/context.rs``) when built from Python;
  an expression whose shared sub-expressions would be written as a tree of
  more than 2^24 nodes (``MAX_TREE_NODES``, ``rust/src/pelican/wire.rs``) is
  refused before writing;
- ShardIds carried in unknown fields — 512 levels (``carried_shards.rs``);
- replication — ``rows × replication_resolution`` must fit the partitions
  (9002), so expand_replication makes at most 128 copies;
- tensor sizes — ``tensor_shape`` products are exact (Python integers) and
  reported as memory violations (``size_overflow``, the DRAM window), never
  allocated;
- the number of cores a module's content implies — a ShardId bound larger
  than :data:`MAX_INFERRED_LNC` is not taken as N by commands that infer N
  (``verify``, ``memory``…): :class:`ResourceLimitError`; an explicit
  ``--lnc`` is the user's choice;
- instances walked — the LNC tail's dynamic walk
  (``rust/src/tail/walk.rs``, :code:`Limit`) stops past its caller's
  maximum with that caller's code (the race checker: 9306); footprints are
  progressions compared without enumerating bytes, and an access with
  overlapping strides expands to at most 2^22 explicit runs
  (``MAX_EXPLICIT_RUNS``, ``rust/src/tail/footprint.rs``; the caller's
  error: 9302 in the race checker, 9401 in the simulator). The split and
  the memory checks never unroll a loop: a loop of 10^9 iterations costs
  what one iteration does.
"""

from __future__ import annotations

import os

from lncsplit.errors import LncsplitError

#: Peak memory (RSS growth) of ``lncsplit split`` of one big file into 2 cores, as a multiple
#: of the file's size: ``cli_split_peak_memory`` of ``benches/report.py`` measured 4.5× with
#: ``--jobs 1`` and 5.1× with the default jobs (30 MB generated module, 2026-12-02); since the
#: race check keeps its recorded accesses in chunks (2026-12-03) 3.4–3.7× on a 100 MB module
#: and 4.8× on a 30 MB one (a fixed part of the growth is the commands' own imports). 5.5 keeps
#: a margin for module shapes with more shared accesses (docs/performance.md). Each further
#: core adds about 1.5× the file.
CLI_SPLIT_PEAK_FACTOR = 5.5

#: ``--max-file-size`` when the machine's memory cannot be read.
FALLBACK_MAX_FILE_SIZE = 4 << 30


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (None when the OS does not say)."""
    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def default_max_file_size(memory: int | None = None) -> int:
    """The default ``--max-file-size``: ``memory`` (default: :func:`physical_memory`) ÷
    :data:`CLI_SPLIT_PEAK_FACTOR`, rounded down to a MiB — the largest file whose split fits
    in memory; :data:`FALLBACK_MAX_FILE_SIZE` when the memory is unknown."""
    mem = physical_memory() if memory is None else memory
    if mem is None:
        return FALLBACK_MAX_FILE_SIZE
    return max(1 << 20, int(mem / CLI_SPLIT_PEAK_FACTOR) >> 20 << 20)


#: Default ``--max-file-size``: a larger input is refused before it is read.
DEFAULT_MAX_FILE_SIZE = default_max_file_size()

#: Largest N a command infers from a module's ShardId bounds (every split
#: makes N copies of the module: a bound of 10^9 would be 10^9 modules).
MAX_INFERRED_LNC = 64


class ResourceLimitError(LncsplitError):
    """A module whose processing would exceed a documented resource limit."""


def check_inferred_lnc(n: int, what: str) -> int:
    """``n`` if at most :data:`MAX_INFERRED_LNC`, else :class:`ResourceLimitError`."""
    if n > MAX_INFERRED_LNC:
        raise ResourceLimitError(
            f"{what}: its ShardId bound {n} would make {n} per-core modules "
            f"(more than {MAX_INFERRED_LNC} are not inferred); pass --lnc {n} to insist"
        )
    return n


__all__ = [
    "CLI_SPLIT_PEAK_FACTOR",
    "DEFAULT_MAX_FILE_SIZE",
    "FALLBACK_MAX_FILE_SIZE",
    "MAX_INFERRED_LNC",
    "ResourceLimitError",
    "check_inferred_lnc",
    "default_max_file_size",
    "physical_memory",
]
