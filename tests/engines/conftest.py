"""The engine-check tests import their builders and brute-force reference from this directory."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
