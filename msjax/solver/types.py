"""The solver's static options and the values its stages pass around: the config, the
proved cells (``Forced``), the player's view and the number constraints, the layer codes.

Arrays of the view and the constraints are cell-major, ``[H, W, *b]`` (see
``msjax.solver.grid``): one game when ``b == ()``, a batch on the minor axes otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Protocol

import jax

from msjax.checks import (
    BOOL, Allowed, check_array, check_effect, check_fields, check_value, instance_of, int_in, ints, is_int, numbers,
    one_of, optional,
)

GUESS_LAYER = 4
NO_LAYER = 0  # first click, random guesses (max_layer < 4), finished games


@dataclasses.dataclass(frozen=True)
class ExactLimits:
    """Static sizes of the exact analysis (frozen: a static jit argument).

    Attributes:
      max_frontier: DP steps, the most frontier cells a view may have; 0 picks
        ``default_max_frontier`` of the board.
      max_open: numbers open at once (slots of the packed key), at most 32.
      max_states: states kept per step, at most.
      first_states: the table size of a first pass over every view; only views that
        overflow it are analysed again with ``middle_states``, and those that overflow
        that with ``max_states`` (sizes not below the next are skipped).
      middle_states: the table size of the second pass (0: none).

    Raises:
      ValueError: a field that is not an int in its range.
    """

    max_frontier: int = 0
    max_open: int = 24
    max_states: int = 1024
    first_states: int = 32
    middle_states: int = 256

    def __post_init__(self):
        check_fields(self, (
            (ints(0).noted("0: from the board"), ("max_frontier",)),
            (ints(1, 32), ("max_open",)),
            (ints(2, 32_767), ("max_states",)),
            (ints(2), ("first_states",)),
            (ints(0).noted("0: no middle pass"), ("middle_states",)),
        ))

    def tiers(self) -> tuple[int, ...]:
        """The table sizes of the passes, increasing, the last ``max_states``."""
        sizes = (self.first_states, self.middle_states, self.max_states)
        return tuple(sorted({min(size, self.max_states) for size in sizes if size}))

    def steps(self, height: int, width: int) -> int:
        """The DP's static step count on a ``height`` x ``width`` board."""
        return self.max_frontier or default_max_frontier(height, width)


EXACT_TIES = 2e-6  # float32 rounding between equal exact probabilities reached by different sums


def default_max_frontier(height: int, width: int) -> int:
    """Frontier cells allowed by default: 3/8 of the board, at least 32 (real positions
    reach 27 / 76 / 143 cells on 8x8 / 16x16 / 16x30: ``benchmarks/RESULTS.md``)."""
    return min(height * width, max(32, (3 * height * width) // 8))


@dataclasses.dataclass(frozen=True)
class SolverConfig:
    """Static options of the rule solver (frozen and hashable: a static jit argument).

    Attributes:
      max_layer: highest layer used, 1..4. 1 = single-cell rules, 2 = + subset
        reasoning, 3 = + global mine count and proof by contradiction, 4 = + probability
        guess. Below 4 the
        solver guesses uniformly among the unknown cells (layer 0).
      contradiction_cells: frontier cells layer 3's proof by contradiction tries per
        pass (each assumed a mine and, separately, safe); passes repeat over the next
        cells of the frontier until one proves something or the frontier is done.
        0 (the default) disables it.
      contradiction_rounds: at most this many layer-1 rounds follow each assumption.
      safety_threshold: a guess whose estimated mine probability is at most this is
        "safe enough": every such cell joins the near-ties and the most informative
        one is taken. 0 disables it (only near-ties of the lowest probability count).
      frontier_risk_limit: seed 001's layer-4 fallback: when every frontier cell (an
        unknown cell next to a revealed number) has an estimated mine probability above
        this, the guess is an unknown cell off the frontier instead (the most likely
        zero), if there is one. 1.0 (the default) disables it; the seed's value is 0.35,
        which won no more games on any standard board (``docs/experiments/043-*``).
      use_information_gain: among candidate guesses take the one most likely to be a
        zero (the product of its unknown neighbours' safe probabilities, 0 next to a
        proved mine); otherwise a uniformly random candidate.
      tie_tolerance: probabilities within this of the lowest count as ties. 0 counts
        exact ties only (e.g. the cells off the frontier, which share one estimate).
      flag_mines: when True, ``solver_action`` flags a proved, unflagged mine before it
        guesses; by default it never spends a move on flags.
      first_click: ``(row, col)`` of the opening click; ``None`` picks (3, 3) (clipped
        to the board) with a safe first-click neighbourhood, else the corner (0, 0).
      bp_iterations: belief-propagation sweeps of layer 4.
      bp_damping: weight of the new message in each sweep, in (0, 1]; without damping
        (1.0) the estimate can oscillate.
      probabilities: where layer 4's mine probabilities come from: ``"bp"``, belief
        propagation (an estimate); ``"exact"``, the exact analysis of
        ``msjax.solver.exact`` (belief propagation only on views past its limits), which
        also proves every cell that is safe or a mine in all consistent layouts (chains
        and mine-count endgames the layers miss): reported as layer 3, and added to
        ``forced_moves`` when ``max_layer >= 3``.
      exact_limits: the exact analysis' static sizes (``ExactLimits``).
    Raises:
      ValueError: a field of another type or out of its range; or an option set away from
        its default that the rest of the config switches off, naming what it needs: the
        guess's options (ties, safety, the frontier limit, information gain) need
        ``max_layer=4``; ``exact_limits`` needs ``probabilities="exact"``.
    """

    max_layer: int = 4
    contradiction_cells: int = 0
    contradiction_rounds: int = 8
    safety_threshold: float = 0.0
    frontier_risk_limit: float = 1.0
    use_information_gain: bool = True
    tie_tolerance: float = 0.0
    flag_mines: bool = False
    first_click: tuple[int, int] | None = None
    bp_iterations: int = 8
    bp_damping: float = 0.8
    probabilities: str = "bp"
    exact_limits: ExactLimits = ExactLimits()

    def __post_init__(self):
        check_fields(self, _SOLVER_FIELDS)
        check_value("SolverConfig", "first_click", self.first_click, _FIRST_CLICK)
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for name, works, needs, holds in _effect_rules(self):
            if getattr(self, name) != defaults[name]:
                check_effect("SolverConfig", name, getattr(self, name), works, needs, holds)

    def deduction(self, max_layer: int) -> SolverConfig:
        """This config at ``max_layer`` (1..3, for its deduction alone): the layer-4 guess's
        options (its ties, its safety, its fallback) back at their defaults, which is
        what they mean below layer 4; the probabilities, their limits and the layers'
        options kept."""
        guess = {field.name: field.default for field in dataclasses.fields(self) if field.name in _GUESS_FIELDS}
        return dataclasses.replace(self, max_layer=max_layer, **guess)


_SOLVER_FIELDS = (
    (int_in(1, 2, 3, 4), ("max_layer",)),
    (ints(0), ("contradiction_cells",)),
    (ints(1), ("contradiction_rounds", "bp_iterations")),
    (numbers(0, 1), ("safety_threshold", "frontier_risk_limit", "tie_tolerance")),
    (BOOL, ("use_information_gain", "flag_mines")),
    (numbers(0, 1, low_open=True), ("bp_damping",)),
    (one_of("bp", "exact"), ("probabilities",)),
    (instance_of(ExactLimits), ("exact_limits",)),
)
_FIRST_CLICK = optional(Allowed(
    "a (row, col) tuple of two ints >= 0",
    lambda v: isinstance(v, tuple) and len(v) == 2 and all(is_int(x) and x >= 0 for x in v),
))
# The options of the layer-4 guess: below max_layer=4 the solver guesses uniformly.
_GUESS_FIELDS = ("safety_threshold", "frontier_risk_limit", "use_information_gain", "tie_tolerance")


def _effect_rules(cfg: SolverConfig) -> list[tuple[str, bool, str, str]]:
    """``(field, whether it takes effect, what it needs, what holds instead)``: what each
    option needs from the rest of ``cfg``, those that switch others off first (so the
    first refused is the one to change)."""
    guessing = ("max_layer=4", f"max_layer={cfg.max_layer}")
    exact = ("probabilities='exact'", f"probabilities={cfg.probabilities!r}")
    return [
        *((name, cfg.max_layer == GUESS_LAYER, *guessing) for name in _GUESS_FIELDS),
        ("exact_limits", cfg.probabilities == "exact", *exact),
    ]


class Forced(NamedTuple):
    """What the deduction layers prove about the hidden cells of one game.

    Attributes:
      safe: bool[H, W], hidden cells proved safe.
      mines: bool[H, W], hidden cells proved to be mines.
      layer: int8[H, W], the layer that proved each cell (1..3), 0 where nothing is proved.
    """

    safe: jax.Array
    mines: jax.Array
    layer: jax.Array


class View(NamedTuple):
    """What the player sees, cell-major.

    Attributes:
      revealed: bool[H, W, *b].
      counts: int32[H, W, *b], the numbers on revealed cells (0 where hidden).
      mine_count: int32[*b], the mines of the game.
    """

    revealed: jax.Array
    counts: jax.Array
    mine_count: jax.Array


class Constraints(NamedTuple):
    """The number constraints left once the proved cells are taken out.

    Attributes:
      unknown: bool[H, W, *b], hidden cells neither proved safe nor proved mines.
      need: int32[H, W, *b], mines still missing around each revealed cell (0 elsewhere).
      unk: int32[H, W, *b], unknown neighbours of each revealed cell (0 elsewhere).
      active: bool[H, W, *b], revealed cells with at least one unknown neighbour.
      remaining: int32[*b], mines not yet proved.
    """

    unknown: jax.Array
    need: jax.Array
    unk: jax.Array
    active: jax.Array
    remaining: jax.Array


class GuessSituation(NamedTuple):
    """What the rule solver knows when it guesses with exact probabilities: what a guess
    function (``Guess``) chooses from. Cell-major, ``[H, W, *b]``; ``[*b]`` per game.

    Attributes:
      view: the player's view (``View``).
      probability: float32[H, W, *b], layer 4's mine probabilities of the unknown cells
        (exact where ``exact``).
      unknown: bool[H, W, *b], the hidden cells neither proved safe nor proved mines.
      candidates: bool[H, W, *b], the cells a guess may take (``unknown``, or every hidden
        cell where all are proved mines).
      good: bool[H, W, *b], the rule solver's near-ties: the candidates it chooses among.
      lowest: float32[*b], the lowest mine probability of an unknown cell.
      cell: int32[*b], the rule solver's own guess (row-major).
      exact: bool[*b], the view was analysed exactly (``probability`` is exact).
      log_layouts: float32[*b], the log of the number of layouts that fit the view.
      guessing: bool[*b], the games whose move is this guess (exact, and no cell proved
        safe): a guess function needs to search only these.
      keys: typed PRNG keys [*b], the games' keys for this move.
    """

    view: View
    probability: jax.Array
    unknown: jax.Array
    candidates: jax.Array
    good: jax.Array
    lowest: jax.Array
    cell: jax.Array
    exact: jax.Array
    log_layouts: jax.Array
    guessing: jax.Array
    keys: jax.Array


class Guess(Protocol):
    """The seam between the rule solver and a search: ``guess(situation, solver_cfg) ->
    int32[*b]``, the cell (row-major) to reveal in each game of a ``GuessSituation``
    where ``situation.guessing`` (elsewhere its answer is not played). The solver asks it
    on views with exact probabilities (``SolverConfig(probabilities="exact")``); its
    default is the rule solver's own guess (``situation.cell``).

    Jitted callers (``batch_solver_play``) take it as a traced pytree argument: a
    ``flax.struct.dataclass`` whose options are static fields (``pytree_node=False``) and
    whose arrays (a network's parameters) are leaves, so new parameters need no
    recompilation. ``msjax.search.SearchGuess`` is one.
    """

    def __call__(self, situation: GuessSituation, solver_cfg: SolverConfig) -> jax.Array: ...


def check_views(owner: str, revealed, counts, mine_count, limits: ExactLimits) -> None:
    """Raises ``ValueError`` naming the argument of ``owner`` (a function of a batch of
    views) that is not what it takes: ``revealed`` bool[B, H, W] (0/1 ints are refused, not
    guessed at), ``counts`` int[B, H, W], ``mine_count`` int[B] (a float would be
    truncated), ``limits`` an ``ExactLimits``. Shapes and dtypes only, so it runs while a
    jitted caller traces and costs nothing after."""
    check_array(owner, "revealed", revealed, "bool[B, H, W]: a batch of views (one view: revealed[None]; "
                "0/1 ints: revealed.astype(bool))", 3, "b")
    shape = tuple(revealed.shape)
    check_array(owner, "counts", counts, f"int[B, H, W] of revealed's shape {shape}", 3, "iu", shape)
    check_array(owner, "mine_count", mine_count, f"int[B] (B={shape[0]}: one per view)", 1, "iu", shape[:1])
    check_value(owner, "limits", limits, instance_of(ExactLimits))
