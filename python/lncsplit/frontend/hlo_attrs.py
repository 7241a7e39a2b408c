"""The values of HLO instruction attributes, as XLA prints them (notes xla-hlo-text §5).

:class:`~lncsplit.frontend.hlo.HloInstruction` keeps every attribute's text verbatim; these
functions read the forms the lowering needs: integer lists (``dimensions={0,2,1}``), nested
integer lists (``source_target_pairs={{0,1},{1,2}}``), slice specs (``slice={[0:8:1], [1:7]}``),
padding configs (``padding=0_0_0x1_1_0x1_2_1``) and computation references
(``to_apply=%region_0.0``). A text that is not of the form is an :class:`HloAttributeError`
naming the attribute and the text.
"""

from __future__ import annotations

import re

from lncsplit.errors import LncsplitError

__all__ = [
    "HloAttributeError",
    "computation_ref",
    "int_list",
    "int_lists",
    "padding_config",
    "slice_spec",
]


class HloAttributeError(LncsplitError, ValueError):
    """An attribute value that is not of the form XLA prints for it."""


def _bad(what: str, text: str) -> HloAttributeError:
    return HloAttributeError(f"cannot read {what} from {text!r}")


def int_list(text: str, what: str = "an integer list") -> list[int]:
    """``{1,0}`` / ``{}`` → ``[1, 0]`` / ``[]``."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise _bad(what, text)
    body = t[1:-1].strip()
    if not body:
        return []
    try:
        return [int(x) for x in body.split(",")]
    except ValueError:
        raise _bad(what, text) from None


def int_lists(text: str, what: str = "a list of integer lists") -> list[list[int]]:
    """``{{0,1},{2,3}}`` → ``[[0, 1], [2, 3]]``; ``{}`` → ``[]``."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise _bad(what, text)
    body = t[1:-1].strip()
    if not body:
        return []
    groups = re.findall(r"\{[^{}]*\}", body)
    if re.sub(r"\{[^{}]*\}|[\s,]", "", body):
        raise _bad(what, text)
    return [int_list(g, what) for g in groups]


def slice_spec(text: str) -> list[tuple[int, int, int]]:
    """``{[0:8:1], [1:7]}`` → ``[(0, 8, 1), (1, 7, 1)]`` (start, limit, stride per dim)."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise _bad("a slice spec", text)
    out: list[tuple[int, int, int]] = []
    body = t[1:-1].strip()
    for part in re.findall(r"\[[^\]]*\]", body):
        nums = part[1:-1].split(":")
        if len(nums) not in (2, 3):
            raise _bad("a slice spec", text)
        try:
            start, limit = int(nums[0]), int(nums[1])
            stride = int(nums[2]) if len(nums) == 3 else 1
        except ValueError:
            raise _bad("a slice spec", text) from None
        out.append((start, limit, stride))
    if re.sub(r"\[[^\]]*\]|[\s,]", "", body):
        raise _bad("a slice spec", text)
    return out


def padding_config(text: str) -> list[tuple[int, int, int]]:
    """``0_0_0x1_1_0x-1_2`` → ``[(0, 0, 0), (1, 1, 0), (-1, 2, 0)]`` (lo, hi, interior per dim;
    interior optional; lo/hi may be negative)."""
    t = text.strip()
    if not t:
        return []
    out: list[tuple[int, int, int]] = []
    for dim in t.split("x"):
        nums = dim.split("_")
        if len(nums) not in (2, 3):
            raise _bad("a padding config", text)
        try:
            lo, hi = int(nums[0]), int(nums[1])
            interior = int(nums[2]) if len(nums) == 3 else 0
        except ValueError:
            raise _bad("a padding config", text) from None
        out.append((lo, hi, interior))
    return out


def computation_ref(text: str) -> str:
    """``%region_0.0`` → ``region_0.0``."""
    t = text.strip()
    if not t or any(c in t for c in " ,{}()"):
        raise _bad("a computation name", text)
    return t[1:] if t.startswith("%") else t
