"""Dict-style access to a report object's JSON form, shared by the three race reports.

Every object of the cross-core, engine and symbolic race reports reads both ways:
attributes (``race.a.core``) and, like the JSON, keys (``race["a"]["band"]``).
"""

from __future__ import annotations

from typing import Any


class Keyed:
    """Dict-style access to the JSON form (``to_dict()``) of a report object."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]
