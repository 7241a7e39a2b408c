"""``lncsplit.explain``: why an instruction survives or is pruned on each core (contract §4, §5).

The decision is recomputed with the same primitives the splitter uses (contract §3.1, seed 000
§4): every predicate is bound to the core with ``Expr.update_shard_id`` and evaluated with the
shard bound; an instruction is pruned iff some predicate is false (undecided counts as may-fire);
a ``Loop`` is pruned iff it has children and every child is pruned (its own predicates never
prune it); on a kept instruction the predicates that became constant-true are dropped. A property
test checks that this is exactly what ``lncsplit.split`` does.

A collective the split keeps may not survive the LNC tail: lower_local_collectives (order 80)
replaces it by DMA copies, GPSIMDSB2SB exchanges and barriers. The explanation then says
"lowered by lower_local_collectives into …" with the names it became on that core
(``CoreExplanation.lowered_into``), found by running the split and that pass on a clone.

Nothing here mutates the caller's module: the work happens on a clone (binding interns new
expressions into the module's arena).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lncsplit import _core
from lncsplit._core import Expr, InstructionView, Module, Predicate
from lncsplit.errors import InstructionNotFoundError, LncsplitError

__all__ = [
    "AddressBinding",
    "AmbiguousInstructionError",
    "ChildVerdict",
    "CoreExplanation",
    "Explanation",
    "InstructionNotFoundError",
    "InstructionRef",
    "PredicateVerdict",
    "explain",
    "explain_all",
    "find_instruction",
    "lowerings",
    "walk_instructions",
]

#: Op-specific fields the splitter binds besides the arguments (contract §3.1).
BOUND_OP_FIELDS = (
    "recv_from_rank",
    "send_to_rank",
    "queue",
    "replication_resolution",
    "replication_shift_amnt",
    "replication_num_rows",
)


class AmbiguousInstructionError(LncsplitError, LookupError):
    """The name is used in several functions; ``.candidates`` are ``function:name`` forms."""

    def __init__(self, name: str, module: str, candidates: Sequence[str]) -> None:
        self.name = name
        self.module = module
        self.candidates = list(candidates)
        super().__init__(
            f"instruction name {name!r} is ambiguous in module {module}: it is in "
            f"{len(self.candidates)} functions ({', '.join(self.candidates)}); "
            "name it as function:name"
        )

    def __str__(self) -> str:
        return str(self.args[0])


# --------------------------------------------------------------------------- finding


@dataclass(frozen=True)
class InstructionRef:
    """Where an instruction sits: function, block path (``entry/tiles_body``), view."""

    function: str
    block: str
    view: InstructionView

    @property
    def name(self) -> str:
        """The instruction's name."""
        return self.view.name

    @property
    def qualified(self) -> str:
        """``function:name``."""
        return f"{self.function}:{self.view.name}"


def _walk_blocks(fn: str, prefix: str, blocks: Sequence[Any]) -> Iterator[InstructionRef]:
    for b in blocks:
        path = f"{prefix}/{b.name}" if prefix else b.name
        for inst in b.instructions:
            yield InstructionRef(fn, path, inst)
            nested = inst.blocks
            if nested:
                yield from _walk_blocks(fn, f"{path}/{inst.name}", nested)


def walk_instructions(module: Module) -> Iterator[InstructionRef]:
    """Every instruction of ``module`` (loop bodies included), functions and blocks in order."""
    for f in module.functions:
        yield from _walk_blocks(f.name, "", f.blocks)


def find_instruction(module: Module, instruction: str) -> InstructionRef:
    """Resolve ``name`` or ``function:name``.

    A name used in several functions is an :class:`AmbiguousInstructionError` listing the
    ``function:name`` candidates; an unknown name an :class:`InstructionNotFoundError` listing
    close names.
    """
    refs = list(walk_instructions(module))
    fn, sep, rest = instruction.partition(":")
    if sep:
        qualified = [r for r in refs if r.function == fn and r.name == rest]
        if qualified:
            return qualified[0]
    exact = [r for r in refs if r.name == instruction]
    if len(exact) == 1:
        return exact[0]
    if exact:
        raise AmbiguousInstructionError(instruction, module.name, [r.qualified for r in exact])
    # Close names in the form the user wrote: function:name when they qualified it.
    names = sorted({r.qualified if sep else r.name for r in refs})
    close = difflib.get_close_matches(instruction, names, n=5, cutoff=0.6)
    raise InstructionNotFoundError(instruction, module.name, close)


# --------------------------------------------------------------------------- results


def expr_text(e: Expr) -> str:
    """The pelican display form of ``e``."""
    return str(_core.expr_str(e))


def _relation(ge: bool) -> str:
    return ">=" if ge else "=="


@dataclass(frozen=True)
class PredicateVerdict:
    """One predicate on one core.

    ``expr`` is the expression as written (pelican display form), ``bound`` the same after
    the shard is bound and constants folded; ``value`` is true, false or None (undecided),
    ``undecided_axes`` the loop axes it still depends on, ``runtime`` whether it reads a
    runtime value; ``dropped`` says the split removes it from the kept instruction (it became
    constant-true).
    """

    expr: str
    ge: bool
    bound: str
    value: bool | None
    undecided_axes: tuple[str, ...] = ()
    runtime: bool = False
    dropped: bool = False

    @property
    def text(self) -> str:
        """``expr >= 0`` or ``expr == 0``."""
        return f"{self.expr} {_relation(self.ge)} 0"

    @property
    def bound_text(self) -> str:
        """The bound predicate, ``bound >= 0`` or ``bound == 0``."""
        return f"{self.bound} {_relation(self.ge)} 0"

    @property
    def value_text(self) -> str:
        """``true``, ``false`` or ``undecided (axes t, u)``."""
        if self.value is not None:
            return "true" if self.value else "false"
        what = []
        if self.undecided_axes:
            what.append("axes " + ", ".join(self.undecided_axes))
        if self.runtime:
            what.append("a runtime value")
        return "undecided" + (f" ({'; '.join(what)})" if what else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``explain --json``'s ``predicates`` entries)."""
        return {
            "expr": self.expr,
            "ge": self.ge,
            "predicate": self.text,
            "bound": self.bound_text,
            "value": self.value,
            "undecided_axes": list(self.undecided_axes),
            "runtime": self.runtime,
            "dropped": self.dropped,
        }


@dataclass(frozen=True)
class AddressBinding:
    """One address expression (or shard-dependent op field) before and after binding.

    ``argument`` is ``ins[0]``/``outs[1]``/``indirection_ins[0]`` (``op`` for op fields),
    ``field`` is ``addrs[d]``, ``tile_addrs``, ``block_addrs`` or the op field's name; ``value``
    is the constant after binding, None while it depends on loop axes or runtime values.
    """

    argument: str
    memsetref: str | None
    field: str
    before: str
    after: str
    value: int | None

    @property
    def changed(self) -> bool:
        """Whether binding changed the expression."""
        return self.before != self.after

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "argument": self.argument,
            "memsetref": self.memsetref,
            "field": self.field,
            "before": self.before,
            "after": self.after,
            "value": self.value,
        }


@dataclass(frozen=True)
class ChildVerdict:
    """A Loop child on one core."""

    name: str
    opcode: str
    kept: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"name": self.name, "opcode": self.opcode, "kept": self.kept}


@dataclass
class CoreExplanation:
    """The decision for one core: ``kept`` (by the split), a one-line ``reason`` and the
    evidence. ``lowered_into`` names what lower_local_collectives made of a collective the
    split keeps (empty when it stays as it is): then the instruction itself is not in the
    core's output, and the reason says so."""

    core: int
    kept: bool
    reason: str
    predicates: list[PredicateVerdict] = field(default_factory=list)
    children: list[ChildVerdict] = field(default_factory=list)
    addresses: list[AddressBinding] = field(default_factory=list)
    lowered_into: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``kept``, ``pruned`` or ``lowered`` (kept by the split, replaced by the tail)."""
        if self.lowered_into:
            return "lowered"
        return "kept" if self.kept else "pruned"

    @property
    def dropped_predicates(self) -> list[str]:
        """Predicates the split drops from the kept instruction (constant-true)."""
        return [p.text for p in self.predicates if p.dropped]

    @property
    def pruned_children(self) -> list[str]:
        """A Loop's children pruned on this core."""
        return [c.name for c in self.children if not c.kept]

    @property
    def deciding(self) -> PredicateVerdict | None:
        """The first false predicate (what pruned a non-Loop instruction), else None."""
        return next((p for p in self.predicates if p.value is False), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (contract §5 ``cores`` entries, with more keys)."""
        return {
            "core": self.core,
            "kept": self.kept,
            "reason": self.reason,
            "predicates": [p.to_dict() for p in self.predicates],
            "dropped_predicates": self.dropped_predicates,
            "children": [c.to_dict() for c in self.children],
            "pruned_children": self.pruned_children,
            "addresses": [a.to_dict() for a in self.addresses],
            "lowered_into": list(self.lowered_into),
        }


@dataclass
class Explanation:
    """``lncsplit.explain``'s answer: one :class:`CoreExplanation` per core, in core order."""

    instruction: str
    function: str
    block: str
    opcode: str
    module: str
    lnc: int
    cores: list[CoreExplanation] = field(default_factory=list)

    @property
    def kept_on(self) -> list[int]:
        """The cores whose split keeps the instruction."""
        return [c.core for c in self.cores if c.kept]

    @property
    def lowered_on(self) -> list[int]:
        """The cores where lower_local_collectives replaces it."""
        return [c.core for c in self.cores if c.lowered_into]

    def to_dict(self) -> dict[str, Any]:
        """The ``explain --json`` document (contract §5 shape, more keys allowed)."""
        return {
            "instruction": self.instruction,
            "function": self.function,
            "block": self.block,
            "opcode": self.opcode,
            "module": self.module,
            "lnc": self.lnc,
            "cores": [c.to_dict() for c in self.cores],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        from lncsplit.views.text import render_explanation

        return render_explanation(self)


# --------------------------------------------------------------------------- deciding


def _predicate_verdict(p: Predicate, core: int) -> PredicateVerdict:
    bound = p.expr.update_shard_id(core)
    value = Predicate(bound, p.ge).eval({"shard": core})
    axes, runtime, _shard = _core.expr_free_vars(bound)
    return PredicateVerdict(
        expr=expr_text(p.expr),
        ge=p.ge,
        bound=expr_text(bound),
        value=value,
        undecided_axes=tuple(axes) if value is None else (),
        runtime=bool(runtime) if value is None else False,
    )


def _with_dropped(verdicts: list[PredicateVerdict]) -> list[PredicateVerdict]:
    return [
        PredicateVerdict(v.expr, v.ge, v.bound, v.value, v.undecided_axes, v.runtime, True)
        if v.value is True
        else v
        for v in verdicts
    ]


def _bind_text(e: Expr, core: int) -> tuple[str, str, int | None]:
    after = e.update_shard_id(core)
    return expr_text(e), expr_text(after), after.eval({"shard": core})


AddressExpr = tuple[str, str | None, str, Expr]
"""(argument, memsetref, field, expression as written)."""

#: Opcodes whose op-specific fields the splitter binds (contract §3.1).
_OPS_WITH_BOUND_FIELDS = frozenset({"CollectiveCompute", "Matmult", "MatmultMx", "MatmultSparse"})


def _op_field_exprs(inst: InstructionView) -> list[AddressExpr]:
    """Shard-dependent op fields (collective ranks, replication), read from the instruction's
    JSON into a fresh context; bound below like the splitter binds them."""
    if inst.opcode not in _OPS_WITH_BOUND_FIELDS:
        return []
    from lncsplit.pelican import Context

    out: list[AddressExpr] = []
    fields = inst.fields
    for key in BOUND_OP_FIELDS:
        v = fields.get(key)
        if not isinstance(v, dict):
            continue
        try:
            out.append(("op", None, key, Context.from_json(v)))
        except LncsplitError:
            continue
    return out


def _address_exprs(inst: InstructionView) -> list[AddressExpr]:
    """Every expression the splitter binds in ``inst``, once per instruction."""
    out = _op_field_exprs(inst)
    for side, args in (
        ("ins", inst.ins),
        ("outs", inst.outs),
        ("indirection_ins", inst.indirection_ins),
    ):
        for k, a in enumerate(args):
            if a.kind != "symbolic_ap":
                continue
            label, ms = f"{side}[{k}]", a.memsetref
            out.extend((label, ms, f"addrs[{d}]", e) for d, e in enumerate(a.addrs))
            for key, e2 in (("tile_addrs", a.tile_addrs), ("block_addrs", a.block_addrs)):
                if e2 is not None:
                    out.append((label, ms, key, e2))
    return out


def _addresses(exprs: list[AddressExpr], core: int) -> list[AddressBinding]:
    out = []
    for label, ms, key, e in exprs:
        before, after, value = _bind_text(e, core)
        out.append(AddressBinding(label, ms, key, before, after, value))
    return out


def _children(inst: InstructionView) -> list[InstructionView]:
    return [c for b in inst.blocks for c in b.instructions]


def _kept(inst: InstructionView, core: int) -> bool:
    """The splitter's keep bit for ``inst`` on ``core`` (no evidence collected)."""
    if inst.opcode == "Loop":
        kids = _children(inst)
        return not kids or any(_kept(k, core) for k in kids)
    return all(
        Predicate(p.expr.update_shard_id(core), p.ge).eval({"shard": core}) is not False
        for p in inst.predicates
    )


def _loop_reason(core: int, children: list[ChildVerdict], preds: list[PredicateVerdict]) -> str:
    if not children:
        return "kept: a Loop with no children is never deleted"
    pruned = [c.name for c in children if not c.kept]
    note = ""
    if any(p.value is False for p in preds):
        note = " (its own false predicate does not prune a Loop: only its children decide)"
    if len(pruned) == len(children):
        return f"pruned: all {len(children)} children are pruned on core {core}" + note
    if pruned:
        return (
            f"kept: {len(children) - len(pruned)} of {len(children)} children kept "
            f"(pruned: {', '.join(pruned)})" + note
        )
    return f"kept: all {len(children)} children kept" + note


def _leaf_reason(core: int, preds: list[PredicateVerdict]) -> str:
    false = next((p for p in preds if p.value is False), None)
    if false is not None:
        return f"pruned: {false.text} is false with shard = {core} ({false.bound_text})"
    if not preds:
        return "kept: no predicate"
    undecided = [p for p in preds if p.value is None]
    if not undecided:
        return f"kept: every predicate is true with shard = {core} (all dropped)"
    axes = sorted({a for p in undecided for a in p.undecided_axes})
    where = f" on loop axes {', '.join(axes)}" if axes else ""
    if any(p.runtime for p in undecided):
        where += (", and" if where else "") + " on runtime values"
    return (
        f"kept: {len(undecided)} predicate(s) undecided{where}, kept on the instruction "
        "(undecided counts as may-fire)"
    )


Key = tuple[str, str]
"""``(function, instruction name)``."""


def _opcodes(module: Module) -> dict[Key, str]:
    return {(r.function, r.name): r.view.opcode for r in walk_instructions(module)}


def _owner(name: str, lowered: Sequence[str]) -> str | None:
    """The collective a created instruction belongs to: its name starts with the
    collective's (``<x>_send``, ``<x>_fence``…; the longest such name wins)."""
    hits = [x for x in lowered if name == x or name.startswith(x + "_")]
    return max(hits, key=len) if hits else None


def lowerings(module: Module, lnc: int) -> dict[Key, list[list[str]]]:
    """What lower_local_collectives (order 80) makes of each collective of ``module`` (the
    symbolic module as the split takes it; not modified): ``(function, name)`` → per core,
    the names of the instructions it became, in program order (empty on a core where it
    is pruned). A module the pass refuses gets no entry: the pipeline stops there."""
    if lnc < 2 or "CollectiveCompute" not in _opcodes(module).values():
        return {}
    from lncsplit.passes import split
    from lncsplit.passes.tail import lower_local_collectives

    cores = split([module.clone()], lnc)
    before = [_opcodes(c) for c in cores]
    try:
        lower_local_collectives(cores)
    except LncsplitError:
        return {}
    out: dict[Key, list[list[str]]] = {}
    for c, core in enumerate(cores):
        after = _opcodes(core)
        gone = [
            k for k, op in before[c].items() if op == "CollectiveCompute" and after.get(k) != op
        ]
        by_fn: dict[str, list[str]] = {}
        for fn, name in gone:
            by_fn.setdefault(fn, []).append(name)
        for fn, name in after:
            if (fn, name) in before[c] and (fn, name) not in gone:
                continue  # there before the pass, and not a collective it replaced
            owner = _owner(name, by_fn.get(fn, []))
            if owner is not None:
                out.setdefault((fn, owner), [[] for _ in range(lnc)])[c].append(name)
    return out


class _Explainer:
    """Explains instructions of one (cloned) symbolic module."""

    def __init__(self, module: Module, lnc: int) -> None:
        self.module = module
        self.lnc = lnc
        self.lowered = lowerings(module, lnc)

    def core(self, inst: InstructionView, core: int, exprs: list[AddressExpr]) -> CoreExplanation:
        preds = [_predicate_verdict(p, core) for p in inst.predicates]
        addresses = _addresses(exprs, core)
        if inst.opcode == "Loop":
            children = [ChildVerdict(k.name, k.opcode, _kept(k, core)) for k in _children(inst)]
            kept = not children or any(c.kept for c in children)
            preds = _with_dropped(preds)
            return CoreExplanation(
                core, kept, _loop_reason(core, children, preds), preds, children, addresses
            )
        kept = all(p.value is not False for p in preds)
        if kept:
            preds = _with_dropped(preds)
        return CoreExplanation(core, kept, _leaf_reason(core, preds), preds, [], addresses)

    def passthrough(self, inst: InstructionView) -> CoreExplanation:
        """lnc 1: the module passes through untouched (contract §3.1)."""
        preds = [
            PredicateVerdict(expr_text(p.expr), p.ge, expr_text(p.expr), None)
            for p in inst.predicates
        ]
        return CoreExplanation(
            0, True, "kept: with lnc 1 the module passes through untouched", preds
        )

    def explain(self, ref: InstructionRef) -> Explanation:
        inst = ref.view
        if self.lnc == 1:
            cores = [self.passthrough(inst)]
        else:
            exprs = _address_exprs(inst)
            cores = [self.core(inst, c, exprs) for c in range(self.lnc)]
            for c, names in enumerate(self.lowered.get((ref.function, inst.name), [])):
                if names and cores[c].kept:
                    why = cores[c].reason.partition(": ")[2]
                    cores[c].lowered_into = names
                    cores[c].reason = (
                        f"lowered by lower_local_collectives into {', '.join(names)} "
                        f"(the split keeps it: {why})"
                    )
        return Explanation(
            inst.name, ref.function, ref.block, inst.opcode, self.module.name, self.lnc, cores
        )


def _prepare(module: Module, lnc: int, expand: bool) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"module must be a lncsplit.Module, got {type(module).__name__}")
    if isinstance(lnc, bool) or not isinstance(lnc, int):
        raise TypeError(f"lnc must be a positive integer, got {type(lnc).__name__} {lnc!r}")
    if lnc < 1:
        raise ValueError(f"lnc must be a positive integer, got {lnc!r}")
    if module.neuron_core_id is not None and lnc > 1:
        raise LncsplitError(
            f"module {module.name} is already concretized (neuron_core_id "
            f"{module.neuron_core_id}): explain needs the symbolic module the split started from"
        )
    work = module.clone()
    if expand:
        _core.expand_replication(work)
    return work


def explain(module: Module, lnc: int, instruction: str, *, expand: bool = False) -> Explanation:
    """Why ``instruction`` survives or is pruned on each of the ``lnc`` cores.

    ``instruction`` is a name, or ``function:name`` when the name is used in several
    functions. ``module`` is the symbolic module (it is not modified). With
    ``expand=True`` the explanation is for the module after ``expand_replication`` (what the
    pipeline splits), so the ``<writer>_replicate`` copies can be explained too.
    """
    if not isinstance(instruction, str):
        raise TypeError(
            f"instruction must be a str (a name, or function:name), got "
            f"{type(instruction).__name__} {instruction!r:.40}"
        )
    work = _prepare(module, lnc, expand)
    ref = find_instruction(work, instruction)
    return _Explainer(work, lnc).explain(ref)


def explain_all(
    module: Module,
    lnc: int,
    *,
    expand: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Explanation]:
    """:func:`explain` for every instruction of ``module``, in program order.

    ``progress(done, total)`` is called as instructions are explained (for a progress bar).
    """
    work = _prepare(module, lnc, expand)
    ex = _Explainer(work, lnc)
    refs = list(walk_instructions(work))
    out = []
    for k, ref in enumerate(refs):
        out.append(ex.explain(ref))
        if progress is not None and (k % 256 == 255 or k + 1 == len(refs)):
            progress(k + 1, len(refs))
    return out
