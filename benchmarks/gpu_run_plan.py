"""How the GPU run (``benchmarks/gpu_run.py``) sizes a shipped config to one device call.

The shipped accelerator configs train for hours; ``plan_run`` keeps their recipe (boards,
network, batch sizes, learning rates, labels) and returns the ``--config.*`` overrides
that fit the run in a budget of seconds: the updates of each stage (imitation gets
``imitation_share`` of the training seconds, PPO the rest; each stage's learning rate
still decays over its own updates, and each count is a whole number of chunks, so no
shorter last chunk compiles again), the updates per chunk (at most ``CHUNK_S`` of work:
the guard's stop waits for the chunk in flight), the evaluation cadence
(``EVALS_PER_STAGE`` over the first stage; checkpoints with the evaluations only, since a
config's own cadence, set for its full length, would add saves the plan does not count)
and the final evaluation's games; and when the
guard must stop training so that what follows still fits (``Plan.stop_at_s``).

The seconds: each stage's env steps/s and compile time on an H100 (``H100_RATES``, from
docs/results/gpu-runs.md, measured with one pass of the network: divided by the network's
passes, ``1 + model.recycles``, unless measured figures are given), a fixed start, and
greedy play for the evaluations (``eval_seconds``). Of the seconds left after the start,
the compiles and the guard's reserve, ``SAFETY`` is planned.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from msjax import stages as stages_lib
from msjax.run.config import ExperimentConfig


@dataclasses.dataclass(frozen=True)
class StageRate:
    """A stage's figures on one card: env steps/s of a steady chunk, compile seconds."""

    env_steps_per_s: float
    compile_s: float


# docs/experiments/006-* and 009-*, the H100 sessions of 2026-11-26 ("Acceptance run", the second
# and third): `gpu_acceptance.py` chunks of 2 updates of the shipped configs, bf16, one pass
# of the network (model.recycles=0). Keyed by board (H, W, mines).
H100_RATES: dict[tuple[int, int, int], dict[str, StageRate]] = {
    (8, 8, 10): {"imitation": StageRate(486_058, 34.0), "ppo": StageRate(710_965, 6.8)},
    (16, 16, 40): {"imitation": StageRate(113_389, 31.5), "ppo": StageRate(71_243, 10.7)},
    (16, 30, 99): {"imitation": StageRate(56_564, 32.6), "ppo": StageRate(27_407, 18.2)},
}
RECYCLE_COMPILE_FACTOR = 0.5  # each extra pass of the network: compile time x 1.5 (a guess)
UNKNOWN_COMPILE_S = 60.0  # a stage whose board has no figures
STARTUP_S = 20.0  # the training process: Python, JAX, the device client, the config
EVAL_COMPILE_S = 20.0  # the greedy-play program, once
# Greedy play's board-steps/s as a multiple of PPO's env steps/s: PPO spends about ten
# forward passes per step (the rollout's, then 3 epochs of forward and backward);
# half that leaves room for the smaller batches of evaluation.
EVAL_SPEEDUP = 5.0
# A batch plays until its longest game ends: about half the safe cells (a game needs one
# reveal per opening and per numbered cell outside them; the longest of thousands).
LONGEST_GAME_FRACTION = 0.5
FINISH_S = 25.0  # this script after training: JAX start, loading, the export, two figures
CHUNK_S = 10.0  # the longest chunk wanted: the stop waits for the chunk in flight
SAVE_S = 5.0  # a checkpoint's save
SAFETY = 0.85  # training seconds planned per second estimated free
EVALS_PER_STAGE = 3  # evaluations over the first stage, its last included (the curve's points)


@dataclasses.dataclass(frozen=True)
class Plan:
    """How the run is sized: the overrides it adds to the config, the seconds after
    which the guard stops training (``stop_at_s``, from the script's start) and the
    arithmetic behind them (``estimate``: seconds per item)."""

    overrides: tuple[str, ...]
    stop_at_s: float
    estimate: dict[str, Any]


def stage_rates(
    cfg: ExperimentConfig, measured: dict[str, float | None] | None = None
) -> dict[str, StageRate]:
    """Each stage's ``StageRate`` under ``cfg`` on an H100: ``measured`` env steps/s where
    given (a stage name -> steps/s), else ``H100_RATES`` for ``cfg``'s board divided by
    the network's passes (``1 + model.recycles``), compile times raised by
    ``RECYCLE_COMPILE_FACTOR`` a pass.

    Raises:
      ValueError: a stage has neither a measured rate nor figures for the board.
    """
    measured = measured or {}
    board = (cfg.env.H, cfg.env.W, cfg.env.mine_count)
    passes = 1 + cfg.model.recycles
    rates = {}
    for spec in stages_lib.run_stages(cfg):
        known = H100_RATES.get(board, {}).get(spec.name)
        compile_s = known.compile_s * (1 + RECYCLE_COMPILE_FACTOR * cfg.model.recycles) if known else UNKNOWN_COMPILE_S
        if measured.get(spec.name):
            rates[spec.name] = StageRate(measured[spec.name], compile_s)
        elif known:
            rates[spec.name] = StageRate(known.env_steps_per_s / passes, compile_s)
        else:
            raise ValueError(
                f"no H100 figures for stage {spec.name!r} on a {board[0]}x{board[1]}x{board[2]} board; "
                f"pass --{spec.name}-steps-per-s (or --no-sizing)"
            )
    return rates


def eval_seconds(cfg: ExperimentConfig, games: int, ppo_steps_per_s: float) -> float:
    """Estimated seconds of greedy play of ``games`` games in batches of
    ``run.eval_batch_size`` (each batch as long as its longest game)."""
    batch = min(cfg.run.eval_batch_size, games)
    safe_cells = cfg.env.H * cfg.env.W - cfg.env.mine_count
    board_steps = math.ceil(games / batch) * batch * LONGEST_GAME_FRACTION * safe_cells
    return board_steps / (EVAL_SPEEDUP * ppo_steps_per_s)


def _chunk_floor(updates: float, chunk: int) -> int:
    return max(chunk, int(updates // chunk) * chunk)


def planned_seconds(
    updates: dict[str, int], update_s: dict[str, float], eval_every: int, periodic_s: float, final_s: float
) -> float:
    """Seconds of updates and evaluations of a run: a stage of ``n`` updates evaluates
    ``ceil(n / eval_every)`` times (its end included); the run's last is the final one."""
    evaluations = sum(math.ceil(n / eval_every) for n in updates.values())
    return sum(updates[name] * update_s[name] for name in updates) + (evaluations - 1) * periodic_s + final_s


def plan_run(
    cfg: ExperimentConfig, budget_s: float, eval_games: int, rates: dict[str, StageRate], imitation_share: float
) -> Plan:
    """The overrides that size ``cfg``'s run to ``budget_s`` seconds (see the module's
    docstring) and when to stop it; ``cfg`` is left as it is apart from them.

    The guard's reserve (``reserve_s``: the chunk in flight and a save, this script's
    finish, the final evaluation in case it must run here) comes off the budget; of what
    remains after the start and the compiles, ``SAFETY`` is planned for updates and
    evaluations, split between the stages by ``imitation_share``.

    Raises:
      ValueError: the budget leaves no room for one chunk of each stage, or the config
        has a stage other than imitation and PPO.
    """
    specs = stages_lib.run_stages(cfg)
    if any(spec.name not in ("imitation", "ppo") for spec in specs):
        raise ValueError(f"stages {[spec.name for spec in specs]}: the sizing knows imitation and ppo (use --no-sizing)")
    ppo_rate = rates["ppo"].env_steps_per_s if "ppo" in rates else min(r.env_steps_per_s for r in rates.values())
    update_s = {spec.name: spec.config(cfg).env_steps_per_update / rates[spec.name].env_steps_per_s for spec in specs}
    chunk = max(1, int(CHUNK_S // max(update_s.values())))
    periodic_s, final_s = eval_seconds(cfg, cfg.run.eval_episodes, ppo_rate), eval_seconds(cfg, eval_games, ppo_rate)
    reserve_s = chunk * max(update_s.values()) + SAVE_S + FINISH_S + EVAL_COMPILE_S + final_s
    fixed_s = STARTUP_S + EVAL_COMPILE_S + sum(rate.compile_s for rate in rates.values())
    allowed_s = SAFETY * (budget_s - reserve_s - fixed_s)
    shares = {"imitation": imitation_share, "ppo": 1.0 - imitation_share} if len(specs) == 2 else {specs[0].name: 1.0}
    room_s = allowed_s
    while True:
        updates = {name: _chunk_floor(shares[name] * room_s / update_s[name], chunk) for name in update_s}
        eval_every = _chunk_floor(updates[specs[0].name] / EVALS_PER_STAGE, chunk)
        planned_s = planned_seconds(updates, update_s, eval_every, periodic_s, final_s)
        if planned_s <= allowed_s:
            break
        if all(n == chunk for n in updates.values()):
            raise ValueError(
                f"--budget-s {budget_s:g} is too small: {fixed_s:.0f} s of start and compiles and {reserve_s:.0f} s "
                f"of reserve leave {allowed_s:.0f} s, under the {planned_s:.0f} s of one chunk of each stage"
            )
        room_s *= 0.97
    overrides = [spec.setting("num_updates") + f"={updates[spec.name]}" for spec in specs]
    overrides += [
        f"run.chunk_updates={chunk}", f"run.eval_every_updates={eval_every}",
        f"run.checkpoint_every_updates={eval_every}",
        f"run.final_eval_episodes={eval_games}", "run.tensorboard=false",
    ]  # fmt: skip
    estimate = {
        "env_steps_per_s": {name: round(rate.env_steps_per_s) for name, rate in rates.items()},
        "update_s": {name: round(s, 3) for name, s in update_s.items()},
        "updates": updates, "startup_s": STARTUP_S, "compile_s": round(fixed_s - STARTUP_S, 1),
        "eval_s": {"periodic": round(periodic_s, 1), "final": round(final_s, 1)},
        "updates_and_evals_s": round(planned_s, 1), "reserve_s": round(reserve_s, 1),
    }  # fmt: skip
    return Plan(tuple(overrides), budget_s - reserve_s, estimate)


def fixed_plan(budget_s: float, eval_games: int, reserve_s: float) -> Plan:
    """``--no-sizing``: the config as given, evaluated on ``eval_games`` at the end,
    stopped ``reserve_s`` before the budget ends."""
    overrides = (f"run.final_eval_episodes={eval_games}", "run.tensorboard=false")
    return Plan(overrides, budget_s - reserve_s, {"reserve_s": reserve_s})
