"""The training entry point: ``python -m msjax.train --config configs/small.py``.

A run is two stages on the device: imitation of the rule solver (when enabled), then
PPO initialised from its parameters. Each stage runs as jitted chunks of
``run.chunk_updates`` updates; this module sees only the chunk boundaries, where it
logs the per-update metrics (``metrics.jsonl`` and TensorBoard), evaluates the greedy
policy on fresh boards (every board of a board mix, and promotes a curriculum:
``msjax.curriculum``), saves Orbax checkpoints and updates the progress bar. It is the
only module that touches files, logging and the command line.

Command line (the Flax examples' override convention)::

    python -m msjax.train --config configs/small.py [--workdir runs/NAME] [--resume]
        [--config.ppo.lr=1e-4 --config.env.H=16 ...]
        [--coordinator HOST:PORT --num-processes N --process-id I]

Training runs data-parallel on every visible device (``run.num_devices``, 0 = all;
``msjax.distributed``). The three last flags start one process of a multi-host run
(``jax.distributed.initialize``; ``--coordinator auto`` alone lets JAX detect a Slurm,
Open MPI or Kubernetes cluster): every process runs the same command with its own
``--process-id``, all take part in the computation and in writing checkpoints, and only
process 0 logs, prints and writes the run's other files.

The run directory holds ``config.json``, ``metrics.jsonl``, ``tb/`` (TensorBoard),
``checkpoints/`` and ``final_eval.json``. ``--resume`` continues from the latest
checkpoint exactly as the run would have gone on; Ctrl-C saves a checkpoint first.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from msjax import agent as agent_lib
from msjax import checkpoint as checkpoint_lib
from msjax import config as config_lib
from msjax import curriculum as curriculum_lib
from msjax import distributed
from msjax import evaluate as evaluate_lib
from msjax import imitation, ppo
from msjax.config import ExperimentConfig

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains as the command line says; returns the final evaluation."""
    args = parse_args(argv)
    distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    cfg = resolve_config(args)
    run_dir = prepare_run_dir(Path(cfg.run.workdir), cfg, args.resume)
    try:
        checkpoint_path, final = train(cfg, run_dir, args.resume)
    except KeyboardInterrupt:
        print(f"\ninterrupted; continue with: python -m msjax.train --workdir {run_dir} --resume")
        raise SystemExit(EXIT_INTERRUPTED)
    if distributed.is_main_process():
        report(run_dir, checkpoint_path, final)
    return final


# ----------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """``--config``, ``--workdir``, ``--resume``; every ``--config.section.field=value`` is
    collected into ``args.overrides``."""
    parser = argparse.ArgumentParser(prog="python -m msjax.train", description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="config file (configs/small.py) or a name in configs/ (small)")
    parser.add_argument("--workdir", help="run directory (default: the config's run.workdir)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --workdir")
    parser.add_argument(
        "--coordinator", help="HOST:PORT of process 0 in a multi-process run ('auto': JAX detects the cluster)"
    )
    parser.add_argument("--num-processes", type=int, help="processes in a multi-process run")
    parser.add_argument("--process-id", type=int, help="this process's index, 0..num-processes-1")
    args, rest = parser.parse_known_args(argv)
    args.overrides = _collect_overrides(rest, parser)
    if args.config is None and not (args.resume and args.workdir):
        parser.error("--config is required (or --workdir with --resume, to reuse the run's config)")
    return args


def _collect_overrides(rest: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--config.a.b=v`` or ``--config.a.b v`` -> ``["a.b=v", ...]``."""
    overrides, i = [], 0
    while i < len(rest):
        item = rest[i]
        if not item.startswith("--config."):
            parser.error(f"unrecognised argument {item!r} (overrides look like --config.ppo.lr=1e-4)")
        if "=" in item:
            overrides.append(item[len("--config.") :])
            i += 1
        elif i + 1 < len(rest):
            overrides.append(f"{item[len('--config.'):]}={rest[i + 1]}")
            i += 2
        else:
            parser.error(f"{item} needs a value")
    return overrides


def resolve_config(args: argparse.Namespace) -> ExperimentConfig:
    """The config file (or, resuming without one, the run's saved config), the overrides,
    and ``--workdir``."""
    if args.config is not None:
        cfg = config_lib.load_config(args.config)
    else:
        saved = Path(args.workdir) / "config.json"
        if not saved.is_file():
            raise SystemExit(f"error: {saved} not found; pass --config to say what to train")
        cfg = config_lib.load_json(saved)
    cfg = config_lib.apply_overrides(cfg, args.overrides)
    if args.workdir is not None:
        cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, workdir=str(args.workdir)))
    return cfg


def prepare_run_dir(run_dir: Path, cfg: ExperimentConfig, resume: bool) -> Path:
    """Creates the run directory.

    A new run refuses a directory that already holds checkpoints (resume it or pick
    another); a resumed run needs them.
    """
    has_checkpoints = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    if resume and not has_checkpoints:
        raise SystemExit(f"error: --resume, but {run_dir} holds no checkpoints to resume from")
    if not resume and has_checkpoints:
        raise SystemExit(
            f"error: {run_dir} already holds a run; pass --resume to continue it or --workdir for a new one"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def report(run_dir: Path, checkpoint_path: Path, final: dict[str, Any]) -> None:
    low, high = final["win_rate_ci95"]
    print(
        f"final evaluation ({final['episodes']} games): win rate {final['win_rate']:.1%} "
        f"[95% CI {low:.1%}-{high:.1%}], safe cells revealed {final['revealed_fraction']:.1%}, "
        f"invalid actions {final['invalid_action_rate']:.2%}"
    )
    print(f"checkpoint: {checkpoint_path}")
    print(f"load it with: msjax.load_agent({str(run_dir)!r})")


# ----------------------------------------------------------------------------- stages


@dataclasses.dataclass(frozen=True)
class Stage:
    """One training stage as the loop sees it.

    Attributes:
      name: ``"imitation"`` or ``"ppo"`` (the checkpoint's stage).
      total_updates: updates the stage runs.
      first_step: checkpoint step of the stage's update 0 (steps count across stages).
      first_env_step: environment steps taken before the stage.
      env_steps_per_update: boards x steps per update.
      init: ``params or None -> state``, the stage's fresh state.
      make_chunk: ``num_updates -> jitted state -> (state, metrics)``.
    """

    name: str
    total_updates: int
    first_step: int
    first_env_step: int
    env_steps_per_update: int
    init: Callable[[Any], Any]
    make_chunk: Callable[[int], Callable]


@functools.lru_cache(maxsize=None)
def _ppo_chunk(env_cfg, model_cfg, ppo_cfg, num_updates, mesh=None):
    return ppo.make_train_chunk(env_cfg, model_cfg, ppo_cfg, num_updates, mesh=mesh)


@functools.lru_cache(maxsize=None)
def _imitation_chunk(env_cfg, model_cfg, il_cfg, num_updates, mesh=None):
    return imitation.make_imitation_chunk(env_cfg, model_cfg, il_cfg, num_updates, mesh=mesh)


def make_stages(cfg: ExperimentConfig, mesh: Mesh) -> list[Stage]:
    """The run's stages in order, each with its own PRNG stream from ``run.seed``, their
    boards split over ``mesh``'s devices (a ``ValueError`` if they do not split evenly)."""
    if cfg.imitation.enabled:
        distributed.check_divides("imitation.num_envs", cfg.imitation.num_envs, mesh)
    distributed.check_divides("ppo.num_envs", cfg.ppo.num_envs, mesh)
    il_key, ppo_key = jax.random.split(jax.random.key(cfg.run.seed))
    stages = []
    if cfg.imitation.enabled:
        il = cfg.imitation
        il_env = curriculum_lib.imitation_env(cfg.env)  # a board mix imitates on its first board
        stages.append(
            Stage(
                name="imitation",
                total_updates=il.num_updates,
                first_step=0,
                first_env_step=0,
                env_steps_per_update=il.num_envs * il.steps_per_update,
                init=lambda params: imitation.init_imitation_state(il_key, il_env, cfg.model, il, mesh=mesh),
                make_chunk=lambda n: _imitation_chunk(il_env, cfg.model, il, n, mesh),
            )
        )
    done_updates = sum(stage.total_updates for stage in stages)
    done_env_steps = sum(stage.total_updates * stage.env_steps_per_update for stage in stages)
    stages.append(
        Stage(
            name="ppo",
            total_updates=cfg.ppo.total_updates,
            first_step=done_updates,
            first_env_step=done_env_steps,
            env_steps_per_update=cfg.ppo.num_envs * cfg.ppo.steps_per_env,
            init=lambda params: ppo.init_train_state(
                ppo_key, cfg.env, cfg.model, cfg.ppo, params=params, mesh=mesh, curriculum_cfg=cfg.curriculum
            ),
            make_chunk=lambda n: _ppo_chunk(cfg.env, cfg.model, cfg.ppo, n, mesh),
        )
    )
    return stages


def restore_latest(
    checkpoints: checkpoint_lib.Checkpoints, stages: list[Stage], cfg: ExperimentConfig, mesh: Mesh
) -> tuple[int, Any]:
    """``(stage index, state)`` of the latest checkpoint, checked against ``cfg`` and placed
    on ``mesh`` (whatever the devices it was saved from)."""
    step = checkpoints.latest_step
    if step is None:
        raise checkpoint_lib.CheckpointError(f"no checkpoint in {checkpoints.directory} to resume from")
    info = checkpoints.info(step)
    changed = checkpoint_lib.check_compatible(info.config, cfg)
    if changed and distributed.is_main_process():
        print("resuming with changed settings: " + "; ".join(changed))
    names = [stage.name for stage in stages]
    if info.stage not in names:
        raise checkpoint_lib.CheckpointError(
            f"checkpoint {info.path} is from the {info.stage} stage, which this config does not run ({names})"
        )
    try:
        template = checkpoint_lib.abstract_state(info.stage, cfg)
        state = checkpoints.restore(step, template, distributed.state_shardings(template, mesh))
    except checkpoint_lib.CheckpointError as err:
        earlier = [s for s in checkpoints.steps if s < step]
        if not earlier:
            raise
        raise checkpoint_lib.CheckpointError(
            f"{err}\n(to resume from the previous checkpoint, step {earlier[-1]}, remove {info.path})"
        ) from err
    return names.index(info.stage), state


# ----------------------------------------------------------------------------- logging


class MetricsWriter:
    """Writes metrics rows to ``metrics.jsonl`` and, optionally, TensorBoard (``tb/``)."""

    def __init__(self, run_dir: Path, tensorboard: bool, resume_step: int | None):
        self.path = run_dir / "metrics.jsonl"
        if resume_step is not None:
            _drop_rows_after(self.path, resume_step)
        self._file = open(self.path, "a")
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(run_dir / "tb"))

    def write_updates(self, stage: Stage, first_update: int, metrics: dict[str, np.ndarray]) -> None:
        """One row per update of a chunk; ``metrics`` maps names to arrays ``[updates]``."""
        count = len(next(iter(metrics.values())))
        for i in range(count):
            update = first_update + i + 1
            values = {name: float(values[i]) for name, values in metrics.items()}
            self._write("train", stage, update, values)

    def write_eval(self, stage: Stage, update: int, results: dict[str, Any]) -> None:
        low, high = results["win_rate_ci95"]
        values = {}
        for name, value in results.items():
            if isinstance(value, dict):  # reward_components: one column each
                values.update({f"{name}/{part}": v for part, v in value.items()})
            elif name != "win_rate_ci95":
                values[name] = value
        self._write("eval", stage, update, {**values, "win_rate_low": low, "win_rate_high": high})

    def write_promotion(self, stage: Stage, update: int, to_stage: int, board: str, win_rate: float) -> None:
        """A curriculum promotion: the stage (board index) entered and the win rate that earned it."""
        values = {"promoted_to": float(to_stage), "win_rate": win_rate}
        self._write("promotion", stage, update, values, labels={"board": board})

    def _write(
        self, kind: str, stage: Stage, update: int, values: dict[str, float], labels: dict[str, str] | None = None
    ) -> None:
        step = stage.first_step + update
        row = {
            "kind": kind,
            "stage": stage.name,
            "step": step,
            "update": update,
            "env_steps": stage.first_env_step + update * stage.env_steps_per_update,
            "time": time.time(),
            **(labels or {}),
            **{name: _finite_or_none(value) for name, value in values.items()},
        }
        self._file.write(json.dumps(row) + "\n")
        if self._tb is not None:
            prefix = "eval" if kind == "eval" else stage.name
            for name, value in values.items():
                if value is not None and math.isfinite(value):
                    self._tb.add_scalar(f"{prefix}/{name}", value, step)

    def flush(self) -> None:
        self._file.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def _finite_or_none(value: float) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _drop_rows_after(path: Path, step: int) -> None:
    """Removes metrics rows past ``step`` (written after the checkpoint a resume starts from)."""
    if not path.is_file():
        return
    rows = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in rows if json.loads(line)["step"] <= step]
    path.write_text("".join(line + "\n" for line in kept))


class NoWriter:
    """``MetricsWriter``'s interface, writing nothing (processes other than 0)."""

    def write_updates(self, *args: Any) -> None:
        pass

    def write_eval(self, *args: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """A tqdm bar over all updates of all stages, with live figures after each chunk.

    ``printing=False`` (processes other than 0) also silences the evaluation lines.
    """

    def __init__(self, stages: list[Stage], done: int, enabled: bool, printing: bool = True):
        from tqdm.auto import tqdm

        self._printing = printing
        total = sum(stage.total_updates for stage in stages)
        self._bar = tqdm(total=total, initial=done, unit="upd", disable=not enabled, dynamic_ncols=True)
        self._win_rate = None

    def chunk_done(self, stage: Stage, update: int, updates: int, seconds: float) -> None:
        self._bar.update(updates)
        env_steps = stage.first_env_step + update * stage.env_steps_per_update
        figures = {
            "stage": stage.name,
            "env_steps": f"{env_steps:.3g}",
            "steps/s": f"{updates * stage.env_steps_per_update / max(seconds, 1e-9):.3g}",
        }
        if self._win_rate is not None:
            figures["eval_win"] = f"{self._win_rate:.1%}"
        self._bar.set_postfix(figures, refresh=True)

    def evaluated(self, stage: Stage, update: int, results: dict[str, Any]) -> None:
        """Shows the evaluation on the bar and as a line above it."""
        self._win_rate = results["win_rate"]
        low, high = results["win_rate_ci95"]
        if not self._printing:
            return
        self._bar.write(
            f"{stage.name} update {update}: win rate {results['win_rate']:.1%} [{low:.1%}-{high:.1%}] "
            f"over {results['episodes']} games, safe cells revealed {results['revealed_fraction']:.1%}"
        )
        per_board = {
            key.split("/")[1]: value
            for key, value in results.items()
            if key.startswith("win_rate/") and key.count("/") == 1
        }
        if per_board:
            self._bar.write("  win rate per board: " + ", ".join(f"{b} {v:.1%}" for b, v in per_board.items()))

    def promoted(self, stage: Stage, update: int, board: str) -> None:
        if self._printing:
            self._bar.write(f"{stage.name} update {update}: curriculum promoted to {board}")

    def close(self) -> None:
        self._bar.close()


# ----------------------------------------------------------------------------- the loop


@dataclasses.dataclass
class RunContext:
    """What the stage loop writes to: config, checkpoints, metrics and the progress bar."""

    cfg: ExperimentConfig
    checkpoints: checkpoint_lib.Checkpoints
    writer: MetricsWriter | NoWriter
    progress: Progress


def evaluate_params(params: Any, cfg: ExperimentConfig, episodes: int) -> dict[str, Any]:
    """The greedy policy of ``params`` on ``episodes`` fresh boards (the same boards at every
    evaluation of a run, so evaluations compare like with like); with a board mix,
    ``episodes`` games on each board (``evaluate_boards``).

    Every process plays the same boards on its own default device (so all agree on the
    checkpoint's win rate); the parameters are copied there from their mesh.
    """
    agent = agent_lib.from_params(distributed.host_value(params), cfg)
    seed = cfg.run.seed + 1_000_003  # boards never drawn by training's keys
    batch_size = cfg.run.eval_batch_size
    if cfg.env.boards:
        eval_mines = cfg.curriculum.eval_mines or (None,) * len(cfg.env.boards)
        return evaluate_boards(agent, cfg.env, episodes, seed, batch_size, eval_mines)
    return evaluate_lib.evaluate(agent, cfg.env, episodes=episodes, seed=seed, batch_size=batch_size)


def evaluate_boards(
    agent: agent_lib.Agent,
    env_cfg: Any,
    episodes: int,
    seed: int,
    batch_size: int,
    eval_mines: Sequence[int | None],
) -> dict[str, Any]:
    """``episodes`` games on each board of a board mix, padded as in training, board ``i``
    with ``eval_mines[i]`` mines (None: over its range).

    Returns the last board's figures (the curriculum's target: its win rate is the run's
    headline and picks the best checkpoint) plus, per board NAME, ``win_rate/NAME`` and
    ``revealed_fraction/NAME``, and for a board with a mine range ``win_rate/NAME/sparse``
    and ``win_rate/NAME/dense`` (games with at most / more than the range's midpoint).
    """
    results: dict[str, Any] = {}
    for index, (board, mines) in enumerate(zip(env_cfg.boards, eval_mines)):
        board_cfg = curriculum_lib.board_env(env_cfg, index, mines)
        games = evaluate_lib.play_games(agent.for_board(board_cfg), board_cfg, episodes, seed, batch_size)
        summary = evaluate_lib.summarize(games)
        name = curriculum_lib.board_name(board)
        results.update(summary)  # the last board's figures stay
        results[f"win_rate/{name}"] = summary["win_rate"]
        results[f"revealed_fraction/{name}"] = summary["revealed_fraction"]
        fewest, most = board_cfg.boards[0][2:]
        if fewest < most:
            sparse = games["mine_count"] <= (fewest + most) / 2
            for label, games_here in (("sparse", sparse), ("dense", ~sparse)):
                won = games["won"][games_here]
                results[f"win_rate/{name}/{label}"] = float(won.mean()) if won.size else float("nan")
    return results


def _board_win_rates(results: dict[str, Any], env_cfg: Any) -> list[float]:
    return [results[f"win_rate/{curriculum_lib.board_name(board)}"] for board in env_cfg.boards]


def _crossed(before: int, after: int, every: int) -> bool:
    return every > 0 and after // every > before // every


def run_stage(
    stage: Stage, state: Any, ctx: RunContext, eval_episodes_at_end: int
) -> tuple[Any, dict | None]:
    """Runs ``stage`` from ``state`` to its last update; returns the state and its last
    evaluation (None when the stage had nothing left to do).

    Ctrl-C anywhere in the loop saves the newest state before the interrupt goes on.
    """
    update, results = int(distributed.host_value(state.update)), None
    while update < stage.total_updates:
        try:
            num_updates = min(ctx.cfg.run.chunk_updates, stage.total_updates - update)
            started = time.perf_counter()
            # Rebind at once: the chunk donates its input, so the old state is gone.
            state, metrics = stage.make_chunk(num_updates)(state)
            metrics = distributed.host_value(metrics)
            update_after = int(distributed.host_value(state.update))
            ctx.progress.chunk_done(stage, update_after, num_updates, time.perf_counter() - started)
            state, results = after_chunk(stage, state, update, metrics, ctx, eval_episodes_at_end)
            update = update_after
        except KeyboardInterrupt:
            _save_on_interrupt(stage, state, ctx)
            raise
    return state, results


def after_chunk(
    stage: Stage,
    state: Any,
    previous: int,
    metrics: dict[str, np.ndarray],
    ctx: RunContext,
    eval_episodes_at_end: int,
) -> tuple[Any, dict | None]:
    """Logs a finished chunk, then evaluates (and, with a curriculum, promotes) and
    checkpoints when due: at the first chunk boundary past each interval and at the end of
    the stage. Returns the state (its curriculum advanced by a promotion) and the
    evaluation, if any."""
    run_cfg, update = ctx.cfg.run, int(distributed.host_value(state.update))
    ctx.writer.write_updates(stage, previous, metrics)
    at_end = update == stage.total_updates
    results = None
    if at_end or _crossed(previous, update, run_cfg.eval_every_updates):
        episodes = eval_episodes_at_end if at_end else run_cfg.eval_episodes
        results = evaluate_params(state.params, ctx.cfg, episodes)
        ctx.writer.write_eval(stage, update, results)
        ctx.progress.evaluated(stage, update, results)
        state = maybe_promote(stage, state, update, results, ctx)
    if results is not None or _crossed(previous, update, run_cfg.checkpoint_every_updates):
        step = stage.first_step + update
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg, metrics=results)
    ctx.writer.flush()
    return state, results


def maybe_promote(stage: Stage, state: Any, update: int, results: dict[str, Any], ctx: RunContext) -> Any:
    """``state`` moved on to the curriculum's next stage when this evaluation earns it
    (``curriculum.promote``); the promotion is logged. Only the traced weights change, so
    the compiled chunk is reused."""
    current = getattr(state, "curriculum", None)
    if current is None:
        return state
    win_rates = _board_win_rates(results, ctx.cfg.env)
    promoted, changed = curriculum_lib.promote(distributed.host_value(current), win_rates, update, ctx.cfg.curriculum)
    if not changed:
        return state
    to_stage = int(promoted.stage)
    board = curriculum_lib.board_name(ctx.cfg.env.boards[to_stage])
    ctx.writer.write_promotion(stage, update, to_stage, board, win_rates[to_stage - 1])
    ctx.progress.promoted(stage, update, board)
    return state.replace(curriculum=distributed.put_like(promoted, current))


def _save_on_interrupt(stage: Stage, state: Any, ctx: RunContext) -> None:
    """Saves ``state`` unless it is already saved (or its buffers were donated away)."""
    if any(getattr(leaf, "is_deleted", lambda: False)() for leaf in jax.tree.leaves(state)):
        print("\ninterrupted while a chunk was starting; the last saved checkpoint stands")
        return
    update = int(distributed.host_value(state.update))
    step = stage.first_step + update
    if step not in ctx.checkpoints.steps:
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg)
    ctx.writer.flush()
    print(f"\ninterrupted at {stage.name} update {update}; checkpoint saved to {ctx.checkpoints.path(step)}")


def train(cfg: ExperimentConfig, run_dir: Path, resume: bool) -> tuple[Path, dict[str, Any]]:
    """Runs every stage (from the latest checkpoint when resuming); returns the last
    checkpoint's path and the final evaluation, also written to ``final_eval.json``."""
    mesh = distributed.make_mesh(cfg.run.num_devices)
    stages = make_stages(cfg, mesh)
    main_process = distributed.is_main_process()
    keep = cfg.run.keep_checkpoints
    with contextlib.closing(checkpoint_lib.Checkpoints(run_dir / "checkpoints", keep=keep)) as checkpoints:
        start_index, state = restore_latest(checkpoints, stages, cfg, mesh) if resume else (0, None)
        done = stages[start_index].first_step
        done += int(distributed.host_value(state.update)) if state is not None else 0
        if main_process:
            config_lib.save_json(cfg, run_dir / "config.json")
            writer = MetricsWriter(run_dir, cfg.run.tensorboard, resume_step=done if resume else None)
        else:
            writer = NoWriter()
        progress = Progress(stages, done, cfg.run.progress_bar and main_process, printing=main_process)
        with contextlib.closing(writer), contextlib.closing(progress):
            final = run_stages(stages, start_index, state, RunContext(cfg, checkpoints, writer, progress))
        checkpoint_path = checkpoints.path(checkpoints.latest_step)
    if main_process:
        write_final_eval(run_dir / "final_eval.json", final, checkpoint_path)
    return checkpoint_path, final


def run_stages(stages: list[Stage], start_index: int, state: Any, ctx: RunContext) -> dict[str, Any]:
    """Runs ``stages[start_index:]``, the first from ``state`` (None: fresh), each later
    one from its predecessor's parameters; returns the final evaluation."""
    final = None
    for index in range(start_index, len(stages)):
        stage = stages[index]
        if state is None or index != start_index:
            state = stage.init(state.params if state is not None else None)
        last = index == len(stages) - 1
        episodes = ctx.cfg.run.final_eval_episodes if last else ctx.cfg.run.eval_episodes
        state, final = run_stage(stage, state, ctx, episodes)
    if final is None:  # resumed a finished run: nothing ran, so evaluate what is there
        final = evaluate_params(state.params, ctx.cfg, ctx.cfg.run.final_eval_episodes)
    return final


def write_final_eval(path: Path, final: dict[str, Any], checkpoint_path: Path) -> None:
    summary = {k: _finite_or_none(v) if isinstance(v, float) else v for k, v in final.items()}
    path.write_text(json.dumps({**summary, "checkpoint": str(checkpoint_path)}, indent=2) + "\n")


if __name__ == "__main__":
    try:
        main()
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
