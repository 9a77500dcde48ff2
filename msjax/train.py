"""``python -m msjax.train``: ``msjax train``'s alias (the command line lives in ``msjax.cli.train``)."""

import sys

from msjax.cli.train import command

if __name__ == "__main__":
    sys.exit(command())
