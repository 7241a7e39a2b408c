"""``python -m lncsplit`` — the same as the ``lncsplit`` command."""

from lncsplit.cli import main

raise SystemExit(main())
