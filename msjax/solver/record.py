"""A whole game played by the solver on the host, move by move, and its record: every
move with the layer that chose it, totals by layer and the seed-001 printout.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from msjax import env
from msjax.env import EnvConfig, EnvState
from msjax.solver.policy import reveal_action, solver_action, typed_key
from msjax.solver.types import NO_LAYER, SolverConfig


@dataclasses.dataclass(frozen=True)
class ActionRecord:
    """One move of a recorded game: ``action_type`` "REVEAL" or "FLAG", the cell, the layer."""

    action_type: str
    row: int
    col: int
    layer: int


@dataclasses.dataclass
class GameRecord:
    """A whole game played by the solver.

    Attributes:
      actions: every move in order.
      solved: the game was won.
      final_status: "Won", "Lost" or "Playing" (step limit reached).
      action_summary: ``{layer: {"REVEAL": n, "FLAG": n, "total": n}}`` for the layers used.
      final_state: the last ``EnvState``.
    """

    actions: list[ActionRecord]
    solved: bool
    final_status: str
    action_summary: dict[int, dict[str, int]]
    final_state: EnvState

    def history(self, detailed: bool = False) -> str:
        """The seed-001 printout: status, totals by layer, and with ``detailed`` every move
        as ``Layer L: REVEAL (row, col)`` (layer 0 = opening click or random guess)."""
        rule = "=" * 60
        lines = [rule, "HYBRID SOLVER RESULTS", rule, f"Final Status: {self.final_status}"]
        lines += [f"Total Actions: {len(self.actions)}", "", "Action Summary by Layer:"]
        for layer in sorted(self.action_summary):
            s = self.action_summary[layer]
            lines.append(f"  Layer {layer}: {s['REVEAL']} reveals, {s['FLAG']} flags, {s['total']} total")
        if detailed:
            lines += ["", "Detailed Action Sequence:", rule]
            for i, a in enumerate(self.actions, start=1):
                lines.append(f"{i:5d}. Layer {a.layer}: {a.action_type} ({a.row}, {a.col})")
            lines.append(rule)
        return "\n".join(lines)


def layer_summary(actions: list[ActionRecord]) -> dict[int, dict[str, int]]:
    """``{layer: {"REVEAL": n, "FLAG": n, "total": n}}``: the moves of each layer."""
    summary: dict[int, dict[str, int]] = {}
    for a in actions:
        s = summary.setdefault(a.layer, {"REVEAL": 0, "FLAG": 0, "total": 0})
        s[a.action_type] += 1
        s["total"] += 1
    return summary


@functools.partial(jax.jit, static_argnums=(2, 3))
def jit_solver_action(state, key, cfg, solver_cfg):
    """``solver_action`` jitted, the step ``record_game`` calls: one compilation per
    ``(cfg, solver_cfg)`` and key kind, whatever the game and move."""
    return solver_action(state, key, cfg, solver_cfg)


@functools.partial(jax.jit, static_argnums=(2,))
def _jit_step(state, action, cfg):
    return env.step(state, action, cfg)


def record_game(
    key: jax.Array,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    first_click: tuple[int, int] | None = None,
) -> GameRecord:
    """Plays one game to its end with a host-side loop over the jitted solver step.

    Args:
      key: PRNG key of the game and the solver's tie-breaks, typed (``jax.random.key``) or
        legacy (``jax.random.PRNGKey``; the same game for the same seed).
      cfg: the env config.
      solver_cfg: the solver config.
      first_click: ``(row, col)`` that overrides the solver's opening click.

    Returns:
      The ``GameRecord``; the game stops at ``env.move_limit(cfg)`` moves.
    """
    game_key, solver_key = jax.random.split(typed_key(key))
    state = env.reset(game_key, cfg)
    actions: list[ActionRecord] = []
    for move in range(env.move_limit(cfg)):
        if bool(state.done):
            break
        action, layer = jit_solver_action(state, jax.random.fold_in(solver_key, move), cfg, solver_cfg)
        action, layer = int(action), int(layer)
        if move == 0 and first_click is not None:
            action, layer = reveal_action(*first_click, cfg), NO_LAYER
        cell, is_flag = env.decode_action(action, cfg)
        row, col = divmod(cell, cfg.W)
        actions.append(ActionRecord("FLAG" if is_flag else "REVEAL", row, col, layer))
        state, _, _, _ = _jit_step(state, jnp.int32(action), cfg)
    won = bool(state.won)
    status = "Won" if won else ("Lost" if bool(state.done) else "Playing")
    return GameRecord(actions, won, status, layer_summary(actions), state)
