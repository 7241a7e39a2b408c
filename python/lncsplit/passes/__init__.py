"""The split passes as Python functions (contract §3.1–3.3).

Each is a thin call into the Rust core, which runs with the GIL released:

- :func:`split` — ``lnc_splitter`` (order 8)
- :func:`expand_replication` — order 7, in place
- :func:`verify_symbolic` / :func:`verify_concretized` — ``lnc_verifier`` (4 / 14)
- :func:`verify_bir` — ``birverifier`` (3 / 13)
- :func:`verify_bir_serdes` — save → load → save gives the same bytes

The wrappers of the later passes mirror ``rust/src/passes/``, one module each:
:mod:`lncsplit.passes.tail` (orders 80, 81), :mod:`lncsplit.passes.racecheck`
(``lnc_barriercheck``, order 92) and :mod:`lncsplit.passes.linker`
(``bir_linker``, order 100). This module does not import them.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Sequence
from typing import Literal

from lncsplit import _core
from lncsplit._atomic import PathEscapeError, make_dirs, remove_dirs, resolve_under
from lncsplit._core import Module
from lncsplit.errors import NeuronAssertion

CloneMethod = Literal["structural", "json"]


def _check_lnc(lnc: int) -> int:
    """N is an integer >= 1: a ``ValueError`` naming it otherwise (a
    ``TypeError`` when it is not an integer at all)."""
    if isinstance(lnc, bool):
        raise TypeError(f"lnc must be an integer, got {lnc!r}")
    n = operator.index(lnc)
    if n < 1:
        raise ValueError(f"lnc must be an integer >= 1, got {lnc!r}")
    return n


#: The code of a linked module given where symbolic modules are expected (contract §4).
LINKED_INPUT = 9008


def check_modules(modules: object, what: str) -> list[Module]:
    """The argument checks of ``split`` and ``run_pipeline`` (contract §4), before any work:
    ``modules`` is a list (any iterable) of :class:`Module` (``TypeError`` naming ``modules[i]``
    otherwise), no Module object appears twice (``ValueError`` naming both indices: the
    split takes each module's object apart in place, so a second occurrence would be an
    empty module), and none is a linked module (``NeuronAssertion`` 9008: ``link`` made it;
    it is no symbolic module). Returns the modules as a list."""
    if isinstance(modules, (str, bytes, os.PathLike)) or not isinstance(modules, Iterable):
        raise TypeError(f"modules must be a list of lncsplit.Module, got {type(modules).__name__}")
    mods = list(modules)
    seen: dict[int, int] = {}
    for i, m in enumerate(mods):
        if not isinstance(m, Module):
            how = " (read files with lncsplit.load)" if isinstance(m, (str, os.PathLike)) else ""
            raise TypeError(f"modules[{i}] must be a lncsplit.Module, got {type(m).__name__}{how}")
        if id(m) in seen:
            raise ValueError(
                f"modules[{seen[id(m)]}] and modules[{i}] are the same Module object "
                f"({m.name}): {what} takes each module once (clone() it to give a copy)"
            )
        seen[id(m)] = i
        if _core.is_linked(m):
            raise NeuronAssertion(
                LINKED_INPUT,
                "a linked module (made by link): unlink it first",
                f"lncsplit/{what}",
                f"modules[{i}] ({m.name}) is a linked module; {what} takes symbolic modules "
                "(lncsplit.unlink(module) gives its cores back)",
            )
    return mods


def split(
    modules: Sequence[Module] | Module,
    lnc: int,
    *,
    clone: CloneMethod = "structural",
    parallel: bool = True,
    create_artifact_dirs: bool = False,
    artifact_root: str | os.PathLike[str] | None = None,
) -> list[Module]:
    """``LncSplitter::run(vector<Module>)``: M symbolic modules → M·N per-core modules.

    Module ``m`` core ``c`` is at index ``c + m*lnc``. Cores 0…N−2 are clones;
    the original module object is concretized in place as core N−1, so
    ``split(mods, n)[n-1] is mods[0]``. With ``lnc == 1`` the modules pass
    through untouched. Passing a single :class:`Module` instead of a list is
    the compiler's abort shim: ``NeuronAssertion`` 738 at
    ``lnc_splitter.cpp:162``. The arguments are checked first
    (:func:`check_modules`: one object twice is a ``ValueError``, a linked
    module 9008).

    ``clone="json"`` clones by serde JSON round trip, as the compiler does
    (same output bytes). ``parallel`` concretizes cores on a thread pool
    (same output). ``create_artifact_dirs`` creates each core's
    ``artifact_path`` directory once the split succeeded, under
    ``artifact_root`` (default: the current directory; see
    :func:`create_artifact_dirs`; errors 1648/1649/1650). With ``lnc == 1``
    nothing is created.
    """
    if isinstance(modules, Module):
        raise NeuronAssertion(
            738,
            "false",
            "lnc_splitter.cpp:162",
            "lnc_splitter must run on the module list, not on a single module",
        )
    mods = check_modules(modules, "split")
    n = _check_lnc(lnc)
    out = _core.split(mods, n, clone, parallel)
    if create_artifact_dirs and n > 1:
        create_artifact_dirs_under(out, artifact_root)
    return out


def artifact_dir(module: Module, root: str | os.PathLike[str] | None = None) -> str | None:
    """Where a core's ``artifact_path`` directory goes: under ``root`` (default: ``.``).

    A relative path goes under ``root``, an absolute one is re-rooted there
    (``/a/b`` → ``<root>/a/b``); one whose ``..`` leaves ``root``, or that
    leads out of it through an existing symbolic link, is ``NeuronAssertion``
    1648 (contract §3.1, §6). The module keeps its own ``artifact_path``.
    None when the module has none.
    """
    path = module.artifact_path
    if path is None:
        return None
    base = os.fspath(root) if root is not None else os.curdir
    try:
        return resolve_under(base, path)
    except PathEscapeError as e:
        raise NeuronAssertion(
            1648,
            "std::filesystem::exists(path)",
            "lnc_splitter.cpp",
            f"module {module.name}: artifact_path {e}",
        ) from e


def create_artifact_dirs_under(
    modules: Sequence[Module], root: str | os.PathLike[str] | None = None
) -> list[str]:
    """Create every core's artifact directory under ``root``; all or nothing.

    Every path is resolved first (:func:`artifact_dir`), so a refused one
    creates nothing; a directory that cannot be made removes those made
    before it. Returns the directories this call created (outermost first),
    so a caller whose later step fails can remove them
    (:func:`lncsplit._atomic.remove_dirs`).
    """
    targets = [d for d in (artifact_dir(m, root) for m in modules) if d is not None]
    created: list[str] = []
    try:
        for path in targets:
            created.extend(create_artifact_dir(path))
    except BaseException:
        remove_dirs(created)
        raise
    return created


def create_artifact_dir(path: str) -> list[str]:
    """Create one artifact directory (``mkdir -p``) with the compiler's checks.

    1649: it exists but is not a directory; 1650: ``create_directory``
    failed. Returns the directories created, outermost first.
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise NeuronAssertion(
            1649,
            "std::filesystem::is_directory(path)",
            "lnc_splitter.cpp",
            f"{path} exists and is not a directory",
        )
    try:
        return make_dirs(path)
    except (OSError, ValueError) as e:
        raise NeuronAssertion(
            1650, "std::filesystem::create_directory(path)", "lnc_splitter.cpp", f"{path}: {e}"
        ) from e


def expand_replication(module: Module) -> None:
    """``ExpandReplication::run``: make replication explicit, in place (order 7)."""
    _core.expand_replication(module)


def verify_symbolic(module: Module, lnc: int) -> None:
    """The symbolic ``lnc_verifier`` (1200, 1201, 1202); no-op when ``lnc == 1``."""
    _core.verify_symbolic(module, _check_lnc(lnc))


def verify_concretized(modules: Sequence[Module], lnc: int) -> None:
    """The concretized ``lnc_verifier`` over N split modules (core 0 is the reference).

    A list of M·N modules in ``[module][core]`` order is checked N at a time.
    """
    _core.verify_concretized(list(modules), _check_lnc(lnc))


def verify_bir(module: Module, lnc: int = 1) -> None:
    """``birverifier``: unique instruction names, names that resolve, ShardId
    ub equal to ``lnc`` on a symbolic module, sane loop bounds (codes 9010+)."""
    _core.verify_bir(module, _check_lnc(lnc))


def verify_bir_serdes(module: Module) -> None:
    """verifyBirSerDes: save → load → save must give the same bytes."""
    first = module.to_bytes()
    second = Module.from_json(first).to_bytes()
    if first != second:
        at = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
            min(len(first), len(second)),
        )
        raise NeuronAssertion(
            9030,
            "saveJson(loadJson(saveJson(m))) == saveJson(m)",
            "verify_bir_serdes",
            f"module {module.name}: bytes differ from offset {at}",
        )


__all__ = [
    "LINKED_INPUT",
    "artifact_dir",
    "check_modules",
    "create_artifact_dir",
    "create_artifact_dirs_under",
    "expand_replication",
    "split",
    "verify_bir",
    "verify_bir_serdes",
    "verify_concretized",
    "verify_symbolic",
]
