"""``python -m msjax.viz``: the command line lives in ``msjax.cli.viz``."""

import sys

from msjax.cli.viz import main

sys.exit(main())
