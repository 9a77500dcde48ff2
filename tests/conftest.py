"""pytest's settings for the suite. The board drawings' helpers are in ``drawings.py``,
the tiny runs' in ``tiny_runs.py``: test modules import them from there."""

import os

# The suite's time is mostly XLA compiling small programs once each; LLVM's lowest
# optimisation level compiles them about a third faster and changes nothing a test checks
# (the programs' results, not their speed). Set before the first computation, and passed
# on to the subprocesses that tests start.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_backend_optimization_level=0".strip()
# The two test workers and the commands that tests start compile many of the same programs
# (a module's fixtures on both workers, a CLI's evaluation beside the in-process one): JAX's
# persistent compilation cache, in the checkout's .xla-cache/ (ignored by git, so a clean
# clone starts empty), compiles each once per run. Environment variables, so that the
# subprocesses share it too.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(CHECKOUT, ".xla-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
