"""``python -m msjax.train``: the command line lives in ``msjax.cli.train``."""

import sys

from msjax.cli.train import command

sys.exit(command())
