"""The NumPy references (CPU, float64): exact mine probabilities, the player that uses them,
and the game itself in NumPy.

These are the yardsticks the JAX code is checked against: ``analyse`` for the device's exact
analysis (``msjax.solver.exact_analysis``) and the agents, ``play_board`` as the strongest
baseline player, ``Board`` and ``NumpyMinesweeper`` for ``msjax.env``'s rules. They read only
what a player sees: ``revealed``, the numbers on revealed cells, and the total mine count.

How the probabilities are computed. Every revealed number with hidden neighbours is a
constraint "these hidden cells hold exactly ``n`` mines". Hidden cells touched by the same
set of constraints are interchangeable, so they are grouped into *classes* and enumerated by
how many mines each class holds (a class of ``s`` cells holding ``k`` mines stands for
``C(s, k)`` layouts). Constraints that share cells form connected *components*; each
component is enumerated on its own by backtracking with forward checking, tallying per mine
count ``m`` the number of layouts and, per class, the layouts weighted by its mines. The
components are then combined through their mine-count distributions, each global combination
weighted by ``C(F, M - m_total)``, the ways to put the remaining mines on the ``F`` hidden
cells off the frontier; those cells get their exact probability from the same sum. All
weights are Python integers (exact: ``C(381, 99)`` is no trouble), so "probability exactly
0 or 1" is an integer comparison, never a float threshold.

Huge components: plain backtracking (fast per node) stops after ``max_nodes`` search nodes
(``ExactConfig.max_nodes``); the component is then enumerated again with memoised subtrees
(exact, slower per node but polynomial on long frontier chains) under the same budget. Only
if that fails too is the component replaced by a local estimate: each class gets the mean
density ``n / |cells|`` of its constraints, and the component a single mine count (the
rounded expected total). The result is flagged ``approximate`` and never used for deduction
(nothing is called certain while a fallback is in play). ``Analysis.fallbacks`` and
``PlayStats.fallbacks`` let benchmarks report how often it happens.

The reference player (``play_board``) reveals every cell whose mine probability is exactly 0, and
otherwise guesses (``choose_guess``, with a one-move ``lookahead`` to break ties); its first
click is ``first_click_cell``. Its games run in NumPy (``Board``) with exactly
``msjax.env``'s rules, because a per-move jitted call would cost more than the analysis
itself; ``tests/test_conformance.py`` checks that both play the same games.

The NumPy env (``NumpyMinesweeper``) steps ``N`` boards together with every rule of
``msjax.env`` (flags, rewards, the move cap, auto-reset): the seed's original design, the
tests' oracle for the JAX env and the baseline of ``benchmarks.env_throughput``.

Modules, in the order data flows: ``grid`` (neighbour lists), ``enumeration`` (one
component's layouts, the node budget, the fallback), ``analysis`` (constraints of a view,
components, their combination: ``analyse``), ``board`` (one NumPy game), ``player`` (the
guess, the lookahead, a whole game), ``numpy_env`` (a batch of NumPy games, every rule).
"""

from msjax.reference.analysis import Analysis, analyse, by_mines, combine, components, constraints_of_view
from msjax.reference.board import Board
from msjax.reference.enumeration import (
    ComponentClasses,
    ComponentResult,
    TooLarge,
    cached_solve,
    comb,
    component_classes,
    enumerate_component,
    enumerate_memoised,
    solve_component,
)
from msjax.reference.grid import neighbour_lists
from msjax.reference.numpy_env import NumpyMinesweeper, random_hidden_cells
from msjax.reference.player import ExactConfig, PlayStats, choose_guess, first_click_cell, lookahead, play_board

__all__ = [
    "Analysis",
    "Board",
    "ComponentClasses",
    "ComponentResult",
    "ExactConfig",
    "NumpyMinesweeper",
    "PlayStats",
    "TooLarge",
    "analyse",
    "by_mines",
    "cached_solve",
    "choose_guess",
    "comb",
    "combine",
    "component_classes",
    "components",
    "constraints_of_view",
    "enumerate_component",
    "enumerate_memoised",
    "first_click_cell",
    "lookahead",
    "neighbour_lists",
    "play_board",
    "random_hidden_cells",
    "solve_component",
]
