"""Seeing the split: ``explain``, ``diff``, memory maps and the HTML report (docs/inspect.md).

- :mod:`lncsplit.views.explain` — :func:`lncsplit.explain`: per core, kept or pruned and why.
- :mod:`lncsplit.views.diff` — :func:`lncsplit.diff`: what differs between the cores.
- :mod:`lncsplit.views.splitdir` — reading one split output directory.
- :mod:`lncsplit.views.html` — the self-contained HTML report (jinja2, the ``report`` extra).
- :mod:`lncsplit.views.races` — the race section, from ``lncsplit.racecheck`` when it exists.

The functions are exported by :mod:`lncsplit` itself; this package's modules keep the
functions' names (``lncsplit.explain`` is the function, ``lncsplit.views.explain`` its module).
"""
