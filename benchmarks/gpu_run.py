"""The GPU run: one command that trains an accelerator config to completion inside one
device call, evaluates its agent on 10,000 boards and writes what should come back.

    python -m benchmarks.gpu_run --config intermediate --out OUT             # ~8 minutes on an H100
    python -m benchmarks.gpu_run --config expert --out OUT
    python -m benchmarks.gpu_run --config intermediate --out OUT --plan-only  # the sizing alone, as JSON

The shipped configs train for hours: the run keeps their recipe and sizes it to
``--budget-s`` (default 500) with ``--config.*`` overrides (``gpu_run_plan.plan_run``:
the updates of each stage, the chunk length, the evaluation cadence, 10,000 final
games); ``--imitation-steps-per-s`` / ``--ppo-steps-per-s`` give the sizing measured
rates (a run's ``summary.json`` says what it ran at), ``--no-sizing`` trains the config
as given, and further ``--config.SECTION.FIELD=VALUE`` overrides win over the plan's.

Training is ``python -m msjax.train`` in a process of its own, which has the
accelerator to itself until it ends (this process starts JAX only afterwards). A budget
guard sends it SIGTERM at the plan's stop time (once it has written its first metrics
row: a signal before that would kill it before any checkpoint; ``--start-wait-s`` past
the stop at the latest): it finishes the chunk in flight, saves a checkpoint and exits;
a second SIGTERM, then SIGKILL, follow if it does not. A run that was cut is evaluated
here, its latest checkpoint on the boards its own final evaluation would have played
(``msjax.run.loop.evaluate_params``), and its summary says ``cut``.

``--out`` receives 8 files, none in a sub-folder (the device tool brings back at most 8,
two folders deep): ``agent.msgpack`` (the network's parameters, float32, a few MB:
``load_returned_agent`` makes it an ``msjax.agent.Agent`` again), ``config.json`` (the
config as trained), ``metrics.jsonl``, ``final_eval.json`` (win rate, ``win_rate_ci95``,
games, who evaluated), ``training_curves.png`` and ``win_rate_vs_compute.png``
(``msjax.viz``), ``log.txt`` (the training's output and this script's lines) and
``summary.json`` (one JSON line, also printed last: device, status ``complete`` /
``cut`` / ``failed``, seconds, env steps, updates, win rate, the env steps/s each stage
ran at, the plan). Each is written as soon as it exists, the summary first and again at
the end, so a call killed at its limit still brings back what there was. The run
directory (``--workdir``, default ``runs/gpu_run/CONFIG-TIME``) stays behind.

On the device machine, whose image lacks distrax, tfp-nightly and mctx (their wheels and
those of decorator, dm-tree and gast carried in ``.whl``, fetched here with ``pip download
--no-deps -d .whl distrax tfp-nightly mctx decorator dm-tree gast``; tensorboardX is not
needed: the plan turns TensorBoard off)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 python3 -m benchmarks.gpu_run --config intermediate --out $OUT
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks import gpu_run_plan
from msjax.distributed import device_name
from msjax.run import config as config_lib
from msjax.run import files as runfiles
from msjax.cli.args import config_overrides, positive_float, positive_int
from msjax.run.config import ExperimentConfig

# Nothing here may start a JAX backend before training ends: on a GPU that would take
# three quarters of the card's memory from the training process.

REPO = Path(__file__).resolve().parents[1]


SECOND_SIGNAL_AFTER_S = 45.0  # after the first SIGTERM (a chunk, a final evaluation): a second one
KILL_AFTER_S = 15.0  # after the second: SIGKILL
OUT_FILES = (
    "agent.msgpack", "config.json", "metrics.jsonl", "final_eval.json",
    "training_curves.png", "win_rate_vs_compute.png", "log.txt", "summary.json",
)  # fmt: skip


# ----------------------------------------------------------------------------- training


class Log:
    """``log.txt`` in the output folder: every line is also printed; the last few are
    kept (``tail``) for the summary of a run that failed."""

    def __init__(self, path: Path):
        self._file = open(path, "a", buffering=1)
        self._lock = threading.Lock()
        self.tail: collections.deque[str] = collections.deque(maxlen=5)

    def line(self, text: str) -> None:
        text = text.rstrip("\n")
        with self._lock:
            self._file.write(text + "\n")
            self.tail.append(text)
            print(text, flush=True)

    def close(self) -> None:
        self._file.close()


@dataclasses.dataclass(frozen=True)
class TrainingEnd:
    """How the training process ended: its exit status (negative: killed by that
    signal), whether the guard signalled it, and its seconds."""

    returncode: int
    cut: bool
    seconds: float


def run_guarded(
    command: list[str], stop_at: float, training_started: Callable[[], bool], log: Log, start_wait_s: float
) -> TrainingEnd:
    """Runs ``command`` (its output into ``log``) until it ends, and stops it at
    ``stop_at`` (a ``time.monotonic()`` instant): SIGTERM once ``training_started()``
    (before that a signal would kill it before its first checkpoint), or
    ``start_wait_s`` past ``stop_at`` at the latest; a second SIGTERM
    ``SECOND_SIGNAL_AFTER_S`` later, SIGKILL ``KILL_AFTER_S`` after that."""
    started = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # every line into the log as it comes, even if killed
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    copier = threading.Thread(target=copy_lines, args=(process.stdout, log), daemon=True)
    copier.start()
    signals: list[tuple[float, signal.Signals]] = []  # still to send, once stopping began
    cut = False
    while process.poll() is None:
        now = time.monotonic()
        if not cut and now >= stop_at and (training_started() or now >= stop_at + start_wait_s):
            cut = True
            second = now + SECOND_SIGNAL_AFTER_S
            signals = [(now, signal.SIGTERM), (second, signal.SIGTERM), (second + KILL_AFTER_S, signal.SIGKILL)]
        while signals and now >= signals[0][0]:
            signum = signals.pop(0)[1]
            log.line(f"gpu_run: budget guard: {signum.name} to the training process")
            process.send_signal(signum)
        time.sleep(0.2)
    copier.join(timeout=10)
    return TrainingEnd(process.returncode, cut, time.monotonic() - started)


def copy_lines(stream: Any, log: Log) -> None:
    """Every line of ``stream`` into ``log``, until the stream ends."""
    for line in stream:
        log.line(line)


def has_rows(path: Path) -> Callable[[], bool]:
    """Whether ``path`` (a run's ``metrics.jsonl``) holds something yet."""
    return lambda: path.is_file() and path.stat().st_size > 0


def train_command(config: str, workdir: Path, overrides: Sequence[str]) -> list[str]:
    """``python -m msjax.train`` for ``config`` in ``workdir`` with ``overrides``."""
    return [sys.executable, "-m", "msjax.train", "--config", config, "--workdir", str(workdir)] + [
        f"--config.{override}" for override in overrides
    ]


# ----------------------------------------------------------------------------- what comes back


def load_returned_agent(directory: str | Path, greedy: bool = True):
    """The agent a GPU run brought back: ``directory`` holds its ``config.json`` and
    ``agent.msgpack``; returns an ``msjax.agent.Agent`` (``config`` set) that plays
    ``config.json``'s board."""
    from msjax import agent as agent_lib
    from msjax.shipped import files as shipped_files

    directory = Path(directory)
    cfg = config_lib.load_json(directory / "config.json")
    params = shipped_files.read_params(directory / "agent.msgpack")
    return agent_lib.from_params(params, cfg, greedy).replace(config=cfg)


def stage_rates_measured(rows: list[dict[str, Any]], chunk_updates: int) -> dict[str, float]:
    """Each stage's median env steps/s over its chunks (``metrics.jsonl`` rows), leaving
    out its first chunk (compilation on some backends) and the chunks after an
    evaluation (whose seconds include it)."""
    rates = {}
    for stage in dict.fromkeys(row["stage"] for row in rows if row.get("kind") == "train"):
        train = [row for row in rows if row.get("kind") == "train" and row["stage"] == stage]
        evaluated = {row["update"] for row in rows if row.get("kind") == "eval" and row["stage"] == stage}
        ends = [row for i, row in enumerate(train) if row["update"] % chunk_updates == 0 or i == len(train) - 1]
        figures = sorted(
            (b["env_steps"] - a["env_steps"]) / (b["wall_s"] - a["wall_s"])
            for a, b in zip(ends, ends[1:])
            if a["update"] not in evaluated and b["wall_s"] > a["wall_s"]
        )
        if figures:
            rates[stage] = round(figures[len(figures) // 2])
    return rates


def bring_back_evaluation(run_dir: Path, out: Path, agent: Any, games: int, log: Log) -> dict[str, Any]:
    """Writes ``out/final_eval.json`` and returns it: the run's own final evaluation when
    it finished; else ``agent`` (its latest checkpoint) on the boards that evaluation would
    have played (``msjax.run.loop.evaluate_params``), written as the run writes its own."""
    from msjax.run import loop as train_lib

    if (run_dir / "final_eval.json").is_file():
        final = {**runfiles.read_json(run_dir / "final_eval.json"), "evaluated_by": "msjax.train"}
        runfiles.write_json_atomic(out / "final_eval.json", final)
        return final
    log.line(f"gpu_run: evaluating the latest checkpoint on {games} boards")
    results = train_lib.evaluate_params(agent.params, agent.config, games)
    latest = max(int(path.name) for path in (run_dir / "checkpoints").iterdir() if path.name.isdigit())
    evaluated = {**results, "evaluated_by": "gpu_run (training was cut)"}
    train_lib.write_final_eval(out / "final_eval.json", evaluated, run_dir / "checkpoints" / str(latest))
    return runfiles.read_json(out / "final_eval.json")


def write_curves(run_dir: Path, out: Path, errors: list[str], final: dict[str, Any] | None = None) -> None:
    """``training_curves.png``, and ``win_rate_vs_compute.png`` from the run's evaluations; a
    run cut before it evaluated gets the one point ``final`` (the evaluation of its latest
    checkpoint, at its last training row)."""
    from msjax import viz

    try:
        if final is None:
            viz.plot_training_curves(run_dir, out / "training_curves.png")
            return
        rows = viz.read_metrics(run_dir)
        if any(row.get("kind") == "eval" for row in rows):
            viz.plot_win_rate_vs_compute(run_dir, out / "win_rate_vs_compute.png")
            return
        train_rows = [row for row in rows if row.get("kind") == "train"]
        if train_rows:
            last, (low, high) = train_rows[-1], final["win_rate_ci95"]
            viz.plot_compute_curve([last["env_steps"]], [last.get("wall_s", 0.0)], [final["win_rate"]], [low],
                                   [high], out / "win_rate_vs_compute.png",
                                   title=f"{run_dir.name}: its latest checkpoint, evaluated after the cut")
    except (ValueError, FileNotFoundError, ImportError) as err:
        errors.append(f"curves: {err}")


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """``out/summary.json``: ``summary`` as one JSON line, replaced in one step."""
    runfiles.write_text_atomic(out / "summary.json", json.dumps(summary) + "\n")


# ----------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu_run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", required=True, help="a config name in configs/ (intermediate) or a file")
    parser.add_argument("--out", required=True, help="folder for what comes back (at most 8 files)")
    parser.add_argument("--workdir", help="run directory (default runs/gpu_run/CONFIG-TIME); not under --out")
    parser.add_argument("--budget-s", type=positive_float, default=500.0, help="seconds for everything (default 500)")
    parser.add_argument("--eval-games", type=positive_int, default=10_000, help="final evaluation's games (10000)")
    parser.add_argument("--imitation-share", type=float, default=0.67, help="imitation's share of training seconds")
    parser.add_argument("--imitation-steps-per-s", type=positive_float, help="measured imitation env steps/s")
    parser.add_argument("--ppo-steps-per-s", type=positive_float, help="measured PPO env steps/s")
    parser.add_argument("--no-sizing", action="store_true", help="train the config as given (after the overrides)")
    parser.add_argument("--reserve-s", type=positive_float, help="seconds kept after the stop (default: the plan's)")
    parser.add_argument(
        "--start-wait-s", type=positive_float, default=30.0,
        help="how long past the stop the guard waits for training's first row before stopping it anyway (30)",
    )  # fmt: skip
    parser.add_argument("--plan-only", action="store_true", help="print the plan as JSON and exit")
    args, rest = parser.parse_known_args(argv)
    args.overrides = config_overrides(rest, parser)
    if not 0.0 < args.imitation_share < 1.0:
        parser.error(f"--imitation-share {args.imitation_share}: must be in (0, 1)")
    return args


def make_plan(args: argparse.Namespace, cfg: ExperimentConfig) -> gpu_run_plan.Plan:
    """The plan the command line asks for (``cfg``: the config with its overrides)."""
    if args.no_sizing:
        return gpu_run_plan.fixed_plan(args.budget_s, args.eval_games, args.reserve_s or 60.0)
    measured = {"imitation": args.imitation_steps_per_s, "ppo": args.ppo_steps_per_s}
    plan = gpu_run_plan.plan_run(cfg, args.budget_s, args.eval_games, gpu_run_plan.stage_rates(cfg, measured), args.imitation_share)
    if args.reserve_s is not None:
        plan = dataclasses.replace(plan, stop_at_s=args.budget_s - args.reserve_s)
    return plan


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Sizes, trains, evaluates and writes ``--out`` (see the module's docstring);
    returns the summary."""
    started = time.monotonic()
    args = parse_args(argv)
    try:  # a config, an override or a budget that cannot be used: one line, before anything runs
        cfg = config_lib.apply_overrides(config_lib.load_config(args.config), args.overrides)
        plan = make_plan(args, cfg)
        overrides = [*plan.overrides, *args.overrides]  # the command line's own win
        trained_cfg = config_lib.apply_overrides(config_lib.load_config(args.config), overrides)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    if args.plan_only:
        print(json.dumps({"overrides": overrides, "stop_at_s": round(plan.stop_at_s, 1), **plan.estimate}))
        return {"status": "planned", "plan": plan}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = Path(args.config).stem
    workdir = Path(args.workdir or f"runs/gpu_run/{stem}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if out.resolve() in workdir.parents or out.resolve() == workdir:
        raise SystemExit(f"error: --workdir {workdir} is inside --out {out}: the run's files would come back too")
    config = str(Path(args.config).resolve()) if Path(args.config).is_file() else args.config  # the child's cwd: REPO
    command = train_command(config, workdir, overrides)
    summary: dict[str, Any] = {
        "config": stem, "status": "training", "budget_s": args.budget_s, "command": " ".join(command),
        "plan": plan.estimate, "stop_at_s": round(plan.stop_at_s, 1), "errors": [],
    }  # fmt: skip
    write_summary(out, summary)
    log = Log(out / "log.txt")
    log.line(f"gpu_run: {' '.join(command)}")
    log.line(f"gpu_run: stop at {plan.stop_at_s:.0f} s of {args.budget_s:.0f}; plan {json.dumps(plan.estimate)}")
    training_started = has_rows(workdir / "metrics.jsonl")
    end = run_guarded(command, started + plan.stop_at_s, training_started, log, args.start_wait_s)
    summary.update(train_s=round(end.seconds, 1), train_returncode=end.returncode, cut=end.cut)
    try:
        finish(workdir, out, trained_cfg, args.eval_games, end, summary, log)
    except Exception as err:
        summary.update(status="failed", errors=summary["errors"] + [f"{type(err).__name__}: {err}"])
        raise
    finally:
        summary["wall_s"] = round(time.monotonic() - started, 1)
        write_summary(out, summary)
        log.line(json.dumps(summary))
        log.close()
    return summary


def finish(
    workdir: Path, out: Path, cfg: ExperimentConfig, games: int, end: TrainingEnd, summary: dict, log: Log
) -> None:
    """After training: copies the run's files, draws the curves, exports the agent,
    evaluates it when training was cut, and fills ``summary`` (its ``status``:
    ``complete`` when the run made its own final evaluation, else ``cut`` when the guard
    stopped it, else ``failed``, with the training's last lines)."""
    import shutil

    from msjax.run import checkpoint as checkpoint_lib

    from msjax.run import agents as agents_lib
    from msjax.shipped import files as shipped_files

    finished = (workdir / "final_eval.json").is_file()  # written once the last stage has ended
    summary["status"] = "complete" if finished else "cut" if end.cut else "failed"
    if summary["status"] == "failed":
        summary["errors"].append("training failed: " + " | ".join(log.tail))
    for name in ("config.json", "metrics.jsonl"):
        if (workdir / name).is_file():
            shutil.copyfile(workdir / name, out / name)
    summary["device"] = device_name()
    metrics = workdir / "metrics.jsonl"
    rows = runfiles.read_jsonl(metrics, say=log.line)[1] if metrics.is_file() else []
    train_rows = [row for row in rows if row.get("kind") == "train"]
    summary["env_steps"] = train_rows[-1]["env_steps"] if train_rows else 0
    summary["updates"] = {row["stage"]: row["update"] for row in train_rows}
    summary["env_steps_per_s"] = stage_rates_measured(rows, cfg.run.chunk_updates)
    if rows:
        write_curves(workdir, out, summary["errors"])
    try:
        agent = agents_lib.load_agent(workdir)
    except (checkpoint_lib.CheckpointError, OSError) as err:
        summary["errors"].append(f"no agent: {str(err).splitlines()[0]}")
        return
    (out / "agent.msgpack").write_bytes(shipped_files.params_bytes(agent.params))
    summary["agent_bytes"] = (out / "agent.msgpack").stat().st_size
    write_summary(out, {**summary, "status": "evaluating"})
    final = bring_back_evaluation(workdir, out, agent, games, log)
    write_curves(workdir, out, summary["errors"], final)
    summary.update(win_rate=final["win_rate"], win_rate_ci95=final["win_rate_ci95"], eval_games=final["episodes"])


if __name__ == "__main__":
    sys.exit(0 if main()["status"] in ("planned", "complete", "cut") else 1)
