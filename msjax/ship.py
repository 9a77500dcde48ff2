"""``python -m msjax.ship``: the command line lives in ``msjax.cli.ship``."""

import sys

from msjax.cli.ship import main

if __name__ == "__main__":
    sys.exit(main())
