"""The search's static options (``SearchConfig``), what they need from the rule solver
they search with (``check_solver``), and the names they had as ``SolverConfig`` fields
(``from_solver_fields``: saved options and command lines written before search had a home
of its own still read).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from msjax.checks import Allowed, check_effect, check_fields, check_value, int_in, ints, is_int, numbers, one_of
from msjax.search.layout_sets import MAX_ENDGAME_LAYOUTS
from msjax.solver import GUESS_LAYER, SolverConfig


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static options of the search player's guess (frozen and hashable: a static jit
    argument). It searches on the rule solver's exact probabilities: a
    ``SolverConfig(probabilities="exact")`` at ``max_layer=4`` (``check_solver``).

    Attributes:
      lookahead_candidates: how many of the safest cells get the exact one-move lookahead
        (``msjax.search.lookahead``: P(progress), then P(zero)), as the reference
        player breaks ties; 0 (the default) leaves the rule solver's tie-break, by the zero
        chance of independent neighbours (one analysis per guess instead of ``1 + 9 K``).
      lookahead_score: what the lookahead ranks its candidates by: ``"progress"`` (the
        default: P(progress), then P(zero), among the safest cells, as the reference
        player) or ``"survival"`` (the chance to survive this guess and the next one, then
        progress and zero; ``msjax.search.lookahead``'s docstring).
      lookahead_tolerance: with ``"survival"``, the candidates are the cells whose chance
        of being safe is at least ``1 - lookahead_tolerance`` times the best one's (0: the
        safest cells only).
      lookahead_depth: with ``"survival"``, the guesses past this one it looks at: 1 (this
        guess and the next) or 2 (and the one after; about ``9 K`` times the analyses of
        depth 1).
      lookahead_expand: with ``lookahead_depth=2``, only this many of the ``K``
        candidates, those of highest depth-1 score, look the second guess further and can
        be chosen; 0 (the default): all of them. In ``[0, lookahead_candidates]``.
      endgame_layouts: a guess in a view that at most this many layouts fit (2..128) is
        the exhaustive endgame's click (``msjax.search.endgame``: the highest chance of
        winning over the whole remaining game tree) instead of the lookahead's; 0 (the
        default) turns it off.

    Raises:
      ValueError: a field of another type or out of its range; or an option set away from
        its default that another switches off: ``lookahead_score="survival"`` needs
        ``lookahead_candidates >= 1``; ``lookahead_tolerance`` and ``lookahead_depth=2``
        need the survival score; ``lookahead_expand`` needs ``lookahead_depth=2``.
    """

    lookahead_candidates: int = 0
    lookahead_score: str = "progress"
    lookahead_tolerance: float = 0.0
    lookahead_depth: int = 1
    lookahead_expand: int = 0
    endgame_layouts: int = 0

    def __post_init__(self):
        check_fields(self, _SEARCH_FIELDS)
        check_value("SearchConfig", "lookahead_expand", self.lookahead_expand,
                    ints(0, self.lookahead_candidates).noted("at most lookahead_candidates"))
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for name, works, needs, holds in _effect_rules(self):
            if getattr(self, name) != defaults[name]:
                check_effect("SearchConfig", name, getattr(self, name), works, needs, holds)

    @property
    def searches(self) -> bool:
        """Whether any search runs (a lookahead or the endgame); else the guess is the rule
        solver's own."""
        return bool(self.lookahead_candidates or self.endgame_layouts)


_SEARCH_FIELDS = (
    (ints(0), ("lookahead_candidates",)),
    (one_of("progress", "survival"), ("lookahead_score",)),
    (numbers(0, 1, high_open=True), ("lookahead_tolerance",)),
    (int_in(1, 2), ("lookahead_depth",)),
    (Allowed(f"0 (off) or an int in [2, {MAX_ENDGAME_LAYOUTS}]",
             lambda v: is_int(v) and (v == 0 or 2 <= v <= MAX_ENDGAME_LAYOUTS)), ("endgame_layouts",)),
)


def _effect_rules(cfg: SearchConfig) -> list[tuple[str, bool, str, str]]:
    """``(field, whether it takes effect, what it needs, what holds instead)``, those that
    switch others off first (so the first refused is the one to change)."""
    survival = ("lookahead_score='survival'", f"lookahead_score={cfg.lookahead_score!r}")
    return [
        ("lookahead_score", cfg.lookahead_candidates >= 1, "lookahead_candidates >= 1",
         f"lookahead_candidates={cfg.lookahead_candidates}"),
        ("lookahead_tolerance", cfg.lookahead_score == "survival", *survival),
        ("lookahead_depth", cfg.lookahead_score == "survival", *survival),
        ("lookahead_expand", cfg.lookahead_depth == 2, "lookahead_depth=2", f"lookahead_depth={cfg.lookahead_depth}"),
    ]


def check_solver(search_cfg: SearchConfig, solver_cfg: SolverConfig) -> None:
    """Raises ``ValueError`` (``"SearchConfig.endgame_layouts=8 has no effect unless
    SolverConfig.probabilities='exact' (probabilities='bp')"``) where ``search_cfg``
    searches and ``solver_cfg`` does not guess on exact probabilities: the search runs on
    the exact analysis of the rule solver's layer-4 guess."""
    for name in ("lookahead_candidates", "endgame_layouts"):
        value = getattr(search_cfg, name)
        if value:
            check_effect("SearchConfig", name, value, solver_cfg.max_layer == GUESS_LAYER,
                         f"SolverConfig.max_layer={GUESS_LAYER}", f"max_layer={solver_cfg.max_layer}")
            check_effect("SearchConfig", name, value, solver_cfg.probabilities == "exact",
                         "SolverConfig.probabilities='exact'", f"probabilities={solver_cfg.probabilities!r}")


PUBLISHED_ENDGAME_LAYOUTS = {(8, 8): 128, (16, 16): 32, (16, 30): 64}
"""The endgame bound of the search player's published figure on each standard board's shape
(90.37 / 89.14 / 53.51% on 8x8x10 / 16x16x40 / 16x30x99: docs/results/solvers.md)."""


def published_search(H: int, W: int) -> SearchConfig:
    """The search player as its published figures played it on an ``H x W`` board: the
    survival look-ahead (6 candidates, tolerance 0.1, depth 1) and the exhaustive endgame of
    ``PUBLISHED_ENDGAME_LAYOUTS`` (32 layouts on any other shape), on the rule solver's exact
    probabilities (``SolverConfig(probabilities="exact")``)."""
    return SearchConfig(lookahead_candidates=6, lookahead_score="survival", lookahead_tolerance=0.1,
                        lookahead_depth=1, endgame_layouts=PUBLISHED_ENDGAME_LAYOUTS.get((H, W), 32))


OLD_SOLVER_FIELDS = {
    "exact_lookahead": "lookahead_candidates",
    "lookahead_score": "lookahead_score",
    "lookahead_tolerance": "lookahead_tolerance",
    "lookahead_depth": "lookahead_depth",
    "lookahead_expand": "lookahead_expand",
    "endgame_layouts": "endgame_layouts",
}
"""The search's options as ``SolverConfig`` held them before ``msjax.search`` (old name:
``SearchConfig`` field)."""


def from_solver_fields(fields: dict[str, Any]) -> tuple[dict[str, Any], SearchConfig]:
    """``(solver fields, SearchConfig)``: ``fields`` (``SolverConfig`` field names as they
    were before the search had its own config, ``SearchConfig``'s own names also read)
    split into the rule solver's and the search's, e.g. a saved ``--solver
    exact_lookahead=6,probabilities='exact'``.

    Raises:
      ValueError: a search field out of its range (``SearchConfig``'s message, in its names).
    """
    search_names = set(OLD_SOLVER_FIELDS) | set(OLD_SOLVER_FIELDS.values())
    search = {OLD_SOLVER_FIELDS.get(name, name): value for name, value in fields.items() if name in search_names}
    rest = {name: value for name, value in fields.items() if name not in search_names}
    return rest, SearchConfig(**search)
