"""``python -m msjax.serve``: the command line lives in ``msjax.cli.serve``."""

import sys

from msjax.cli.serve import main

if __name__ == "__main__":
    sys.exit(main())
