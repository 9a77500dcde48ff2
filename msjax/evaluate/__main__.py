"""``python -m msjax.evaluate``: the command line lives in ``msjax.cli.evaluate``."""

import sys

from msjax.cli.evaluate import main

sys.exit(main())
