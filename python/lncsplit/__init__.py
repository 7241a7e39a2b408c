"""lncsplit — the multi-core (LNC) graph split of the Neuron compiler, fast and open."""

from __future__ import annotations

from lncsplit._core import Module, dump, load
from lncsplit.errors import (
    BirJsonError,
    LncsplitError,
    NeuronAssertion,
    PelicanAssertion,
    PelicanWireError,
)

__all__ = [
    "BirJsonError",
    "LncsplitError",
    "Module",
    "NeuronAssertion",
    "PelicanAssertion",
    "PelicanWireError",
    "dump",
    "load",
]
