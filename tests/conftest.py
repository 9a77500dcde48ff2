"""pytest's settings for the suite. The board drawings' helpers are in ``drawings.py``,
the tiny runs' in ``tiny_runs.py``: test modules import them from there."""

import os

# The suite's time is mostly XLA compiling small programs once each. Two settings of XLA's
# CPU compiler cut that and change nothing a test checks (the programs' results, not their
# speed): LLVM's lowest optimisation level (about a third faster) and the older elemental
# emitters instead of the fusion emitters (a third again: 16 s -> 10.6 s for the solver's
# batched move on 6x6). Set before the first computation, and passed on to the
# subprocesses that tests start.
for flag in ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false"):
    if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
# No persistent compilation cache: on clean clones it gained nothing measurable (pytest 7:40
# and 8:10 without it, 8:05 with it in .xla-cache/, 2026-11-26).
