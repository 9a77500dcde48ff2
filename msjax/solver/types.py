"""The solver's static options and the values its stages pass around: the config, the
proved cells (``Forced``), the player's view and the number constraints, the layer codes.

Arrays of the view and the constraints are cell-major, ``[H, W, *b]`` (see
``msjax.solver.grid``): one game when ``b == ()``, a batch on the minor axes otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

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


MAX_ENDGAME_LAYOUTS = 128  # the endgame's sets of layouts are bitmasks of four uint32 words at most
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
      exact_lookahead: with exact probabilities, how many of the safest cells get the
        exact one-move lookahead (``msjax.solver.lookahead``: P(progress), then P(zero)),
        as ``msjax.exact``'s player breaks ties; 0 breaks them by the zero chance of
        independent neighbours (cheaper: one analysis per guess instead of ``1 + 9 K``).
      lookahead_score: what the lookahead ranks its candidates by: ``"progress"`` (the
        default: P(progress), then P(zero), among the safest cells, as ``msjax.exact``'s
        player) or ``"survival"`` (the chance to survive this guess and the next one, then
        progress and zero; ``msjax.solver.lookahead``'s docstring).
      lookahead_tolerance: with ``"survival"``, the candidates are the cells whose chance
        of being safe is at least ``1 - lookahead_tolerance`` times the best one's (0: the
        safest cells only); must be 0 with ``"progress"``.
      lookahead_depth: with ``"survival"``, the guesses past this one it looks at: 1 (this
        guess and the next) or 2 (and the one after: each view the candidate can lead to
        is worth its own best survival score, its candidates chosen by the same rule;
        about ``9 K`` times the analyses of depth 1).
      lookahead_expand: with ``lookahead_depth=2``, only this many of the ``K``
        candidates, those of highest depth-1 score, look the second guess further and can
        be chosen (about ``9 lookahead_expand`` times the analyses of depth 1); 0 (the
        default): all of them. In ``[0, exact_lookahead]``.
      endgame_layouts: with exact probabilities, a guess in a view that at most this many
        layouts fit (2..128) is the exhaustive endgame's click (``msjax.solver.endgame``:
        the highest chance of winning over the whole remaining game tree) instead of the
        lookahead's; 0 (the default) turns it off. Cost grows with the sets of layouts the
        player can come to know (``msjax.solver.endgame``).

    Raises:
      ValueError: a field of another type or out of its range; or an option set away from
        its default that the rest of the config switches off, naming what it needs: the
        guess's options (ties, safety, the frontier limit, information gain, the lookahead,
        the endgame) need ``max_layer=4``; ``exact_limits``, ``exact_lookahead`` and
        ``endgame_layouts`` need ``probabilities="exact"``; ``lookahead_score="survival"``
        needs ``exact_lookahead >= 1``; ``lookahead_tolerance`` and ``lookahead_depth=2`` need
        the survival score; ``lookahead_expand`` needs ``lookahead_depth=2``.
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
    exact_lookahead: int = 0
    lookahead_score: str = "progress"
    lookahead_tolerance: float = 0.0
    lookahead_depth: int = 1
    lookahead_expand: int = 0
    endgame_layouts: int = 0

    def __post_init__(self):
        check_fields(self, _SOLVER_FIELDS)
        check_value("SolverConfig", "first_click", self.first_click, _FIRST_CLICK)
        check_value("SolverConfig", "lookahead_expand", self.lookahead_expand,
                    ints(0, self.exact_lookahead).noted("at most exact_lookahead"))
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for name, works, needs, holds in _effect_rules(self):
            if getattr(self, name) != defaults[name]:
                check_effect("SolverConfig", name, getattr(self, name), works, needs, holds)

    def deduction(self, max_layer: int) -> SolverConfig:
        """This config at ``max_layer`` (1..3, for its deduction alone): the layer-4 guess's
        options (its ties, its lookahead, its endgame) back at their defaults, which is
        what they mean below layer 4; the probabilities, their limits and the layers'
        options kept."""
        guess = {field.name: field.default for field in dataclasses.fields(self) if field.name in _GUESS_FIELDS}
        return dataclasses.replace(self, max_layer=max_layer, **guess)


_SOLVER_FIELDS = (
    (int_in(1, 2, 3, 4), ("max_layer",)),
    (ints(0), ("contradiction_cells", "exact_lookahead")),
    (ints(1), ("contradiction_rounds", "bp_iterations")),
    (numbers(0, 1), ("safety_threshold", "frontier_risk_limit", "tie_tolerance")),
    (BOOL, ("use_information_gain", "flag_mines")),
    (numbers(0, 1, low_open=True), ("bp_damping",)),
    (one_of("bp", "exact"), ("probabilities",)),
    (instance_of(ExactLimits), ("exact_limits",)),
    (one_of("progress", "survival"), ("lookahead_score",)),
    (numbers(0, 1, high_open=True), ("lookahead_tolerance",)),
    (int_in(1, 2), ("lookahead_depth",)),
    (Allowed(f"0 (off) or an int in [2, {MAX_ENDGAME_LAYOUTS}]",
             lambda v: is_int(v) and (v == 0 or 2 <= v <= MAX_ENDGAME_LAYOUTS)), ("endgame_layouts",)),
)
_FIRST_CLICK = optional(Allowed(
    "a (row, col) tuple of two ints >= 0",
    lambda v: isinstance(v, tuple) and len(v) == 2 and all(is_int(x) and x >= 0 for x in v),
))
# The options of the layer-4 guess: below max_layer=4 the solver guesses uniformly.
_GUESS_FIELDS = (
    "safety_threshold", "frontier_risk_limit", "use_information_gain", "tie_tolerance", "exact_lookahead",
    "lookahead_score", "lookahead_tolerance", "lookahead_depth", "lookahead_expand", "endgame_layouts",
)


def _effect_rules(cfg: SolverConfig) -> list[tuple[str, bool, str, str]]:
    """``(field, whether it takes effect, what it needs, what holds instead)``: what each
    option needs from the rest of ``cfg``, those that switch others off first (so the
    first refused is the one to change)."""
    guessing = ("max_layer=4", f"max_layer={cfg.max_layer}")
    exact = ("probabilities='exact'", f"probabilities={cfg.probabilities!r}")
    survival = ("lookahead_score='survival'", f"lookahead_score={cfg.lookahead_score!r}")
    return [
        *((name, cfg.max_layer == GUESS_LAYER, *guessing) for name in _GUESS_FIELDS),
        *((name, cfg.probabilities == "exact", *exact) for name in ("exact_limits", "exact_lookahead", "endgame_layouts")),
        ("lookahead_score", cfg.exact_lookahead >= 1, "exact_lookahead >= 1", f"exact_lookahead={cfg.exact_lookahead}"),
        ("lookahead_tolerance", cfg.lookahead_score == "survival", *survival),
        ("lookahead_depth", cfg.lookahead_score == "survival", *survival),
        ("lookahead_expand", cfg.lookahead_depth == 2, "lookahead_depth=2", f"lookahead_depth={cfg.lookahead_depth}"),
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
