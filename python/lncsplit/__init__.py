"""lncsplit — the multi-core (LNC) graph split of the Neuron compiler, fast and open."""

from __future__ import annotations

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
    "NeuronAssertion",
    "PelicanAssertion",
    "PelicanWireError",
]
