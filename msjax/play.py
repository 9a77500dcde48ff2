"""``python -m msjax.play``: the command line lives in ``msjax.cli.play``."""

import sys

from msjax.cli.play import main

if __name__ == "__main__":
    sys.exit(main())
