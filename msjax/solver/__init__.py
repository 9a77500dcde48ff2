"""The rule solver: layered deduction and best-risk guessing, as pure JAX on one game.

The solver reads only what a player sees: ``revealed``, the numbers on revealed cells
and the total ``mine_count`` (never ``mine_mask``, and never the player's flags, which may
be wrong: deduction uses the mines it has proved itself). Every function works on one
game with fixed shapes, so ``jax.jit`` and ``jax.vmap`` apply unchanged.

The four layers follow seed 001's hybrid solver, done with whole-board array ops:

1. **Single-cell rules**: a number whose missing mines equal its unknown neighbours
   makes them all mines; a number with no missing mines makes them all safe.
2. **Subset (pair) reasoning** between every two numbers up to two cells apart (the 24
   offsets with Chebyshev distance <= 2): with ``S`` the unknown cells they share and
   ``XA``/``XB`` the cells only one of them sees, the mines in ``S`` lie in
   ``[max(0, nA-|XA|, nB-|XB|), min(|S|, nA, nB)]``, which can force ``XA`` or ``S``
   to all-safe or all-mines. This is the general form of the 1-1, 1-2, 1-2-1 and
   1-2-2-1 patterns and their rotations.
3. **Global mine count**: no mines left makes every unknown safe, as many mines as
   unknowns makes them all mines; and for each of the nine 3-spaced lattices of
   numbers (whose neighbourhoods are disjoint, so their missing mines add up exactly),
   the unknown cells outside their neighbourhoods hold exactly the rest of the mines,
   which forces them when that rest is 0 or all of them. When neither pairs nor the
   count prove anything, layer 3 ends with **proof by contradiction**: each frontier cell
   (``contradiction_cells`` at a time) is assumed a mine, and separately safe, layer 1
   runs from the assumption, and an assumption that leads to an impossible view (a
   number with more proved mines than its value or fewer unknown cells than its missing
   mines, or a broken mine count) proves the opposite. It finds chains that no pair of
   numbers sees. It is off by default (``contradiction_cells=0``).
4. **Probability guess**: loopy belief propagation over the number constraints with a
   global mine-density prior; the guess is the unknown cell with the lowest estimated
   probability, near-ties going to the cell most likely to be a zero.
   With ``SolverConfig(probabilities="exact")`` the probabilities are exact instead
   (``exact``: a transfer-matrix DP along the frontier, for a batch of views at once),
   every cell they prove is played (as layer 3), and the guess may be a search's: the
   moves take a ``guess`` function (``Guess``, asked with a ``GuessSituation``), and
   ``msjax.search`` builds them (its lookahead and exhaustive endgame).

Modules, in the order data flows: ``types`` (config, proved cells, view), ``grid`` (the
cell-major array plumbing), ``layers`` (one pass of each deduction layer), ``deduce`` (the
fixpoint loops: ``forced_moves``), ``frontier``, ``forward`` and ``exact`` (exact
probabilities: ``exact_analysis``), ``beliefs`` (layer 4: ``mine_probabilities``),
``policy`` (the move on one game: ``solver_action``), ``batch`` (whole batches, with a
memory of proofs: ``batch_solver_play``), ``record`` (a recorded game on the host:
``record_game``).

Batches: ``jax.vmap`` of the per-game functions works; ``batch_solver_action`` and
``batch_forced_moves`` give the same results several times faster by laying the games
on the minor axis; ``batch_solver_action`` also sends only the games that need the
costly layers to them, in fixed-size chunks.

Keys: every function that takes a PRNG key accepts typed keys (``jax.random.key``) and
legacy ones (``jax.random.PRNGKey``), with the same moves for the same seed.
"""

from msjax.solver.batch import SolverMemory, batch_solver_action, batch_solver_play, empty_memory
from msjax.solver.beliefs import mine_probabilities
from msjax.solver.deduce import batch_forced_moves, forced_moves
from msjax.solver.exact import ExactAnalysis, exact_analysis
from msjax.solver.policy import first_click, solver_action, typed_key
from msjax.solver.record import ActionRecord, GameRecord, jit_solver_action, layer_summary, record_game
from msjax.solver.types import GUESS_LAYER, NO_LAYER, ExactLimits, Forced, Guess, GuessSituation, SolverConfig

__all__ = [
    "ActionRecord",
    "ExactAnalysis",
    "ExactLimits",
    "Forced",
    "GUESS_LAYER",
    "GameRecord",
    "Guess",
    "GuessSituation",
    "NO_LAYER",
    "SolverConfig",
    "SolverMemory",
    "batch_forced_moves",
    "batch_solver_action",
    "batch_solver_play",
    "empty_memory",
    "exact_analysis",
    "first_click",
    "forced_moves",
    "jit_solver_action",
    "layer_summary",
    "mine_probabilities",
    "record_game",
    "solver_action",
    "typed_key",
]
