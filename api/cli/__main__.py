"""``python -m api.cli``: the ``hivemem`` command (what ``hivemem setup`` writes when no script is on PATH)."""

import sys

from api.cli import main

sys.exit(main())
