"""``python -m msjax.memory``: the command line lives in ``msjax.cli.memory``."""

import sys

from msjax.cli.memory import main

sys.exit(main())
