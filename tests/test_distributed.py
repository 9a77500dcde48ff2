"""Data parallelism: 4 simulated CPU devices against 1, checkpoints across device
counts, clear errors for batches that do not split, and a two-process run on localhost.

This process keeps its single CPU device (the other tests assume it), so the
multi-device runs happen in subprocesses: one ``distributed_worker.py`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` records everything the 4-device
tests check, and two ``python -m msjax.train`` processes with two devices each form one
4-device mesh through ``jax.distributed.initialize`` (gloo collectives). Each runs once
per session, even when pytest-xdist spreads these tests over workers.
"""

import fcntl
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest


from msjax.run import agents as agents_lib
from msjax import distributed, losses
from msjax.stages import ppo
from msjax.run.config import RunConfig

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
TIMEOUT_S = 600


def subprocess_env(devices: int) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("JAX_COORDINATOR")}
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(TESTS), env.get("PYTHONPATH")]))
    return env


def once_per_session(request, tmp_path_factory, name, compute):
    """``compute(directory)`` (JSON-ready) run once per test session and shared by the
    xdist workers through a file lock in the session's common temporary directory."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if hasattr(request.config, "workerinput") else base
    result = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            directory = root / name
            directory.mkdir(exist_ok=True)
            result.write_text(json.dumps(compute(directory)))
    return json.loads(result.read_text())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(args, env):
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
    stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, f"{process.args} failed:\n{stderr[-4000:]}"
    return stdout


def run_subprocesses(directory):
    """The 4-device worker and a two-process training run (two devices each), started
    together so that their compilations overlap; returns both results."""
    worker = start([sys.executable, str(TESTS / "distributed_worker.py"), str(directory)], subprocess_env(4))
    config = directory / "tiny_config.py"
    config.write_text("from distributed_worker import CFG\n\n\ndef get_config():\n    return CFG\n")
    run_dir = directory / "run"
    common = [sys.executable, "-m", "msjax.train", "--config", str(config), "--workdir", str(run_dir)]
    common += ["--config.run.tensorboard=false", "--coordinator", f"127.0.0.1:{free_port()}"]
    common += ["--num-processes", "2"]
    trainers = [start(common + ["--process-id", str(i)], subprocess_env(2)) for i in range(2)]
    four_devices = json.loads(finish(worker).splitlines()[-1])
    stdout = [finish(trainer) for trainer in trainers]
    return {"four_devices": four_devices, "two_processes": {"run_dir": str(run_dir), "stdout": stdout}}


@pytest.fixture(scope="module")
def four_devices(request, tmp_path_factory):
    """What ``distributed_worker.py`` records with 4 simulated devices."""
    return once_per_session(request, tmp_path_factory, "subprocesses", run_subprocesses)["four_devices"]


@pytest.fixture(scope="module")
def two_processes(request, tmp_path_factory):
    """Two processes of two devices each train the worker's config for one chunk."""
    return once_per_session(request, tmp_path_factory, "subprocesses", run_subprocesses)["two_processes"]


def arrays(tree):
    """A JSON tree of nested lists back as numpy arrays."""
    return jax.tree.map(np.asarray, tree, is_leaf=lambda x: isinstance(x, list))


def assert_trees_close(a, b, atol):
    a, b = arrays(a), arrays(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol)


def assert_trees_equal(a, b):
    for x, y in zip(jax.tree.leaves(arrays(a)), jax.tree.leaves(arrays(b)), strict=True):
        np.testing.assert_array_equal(x, y)


# ----------------------------------------------------------------------------- one process, 4 devices


def test_boards_are_split_over_four_devices_and_parameters_replicated(four_devices):
    assert four_devices["devices"] == 4
    assert four_devices["sharding"] == {
        "boards_devices": 4, "boards_replicated": False, "params_replicated": True
    }


def test_a_fresh_state_is_the_same_on_one_and_on_four_devices(four_devices):
    assert four_devices["fresh_states_equal"]


def test_ppo_on_four_devices_matches_one_device(four_devices):
    one, four = four_devices["ppo"]["1"], four_devices["ppo"]["4"]
    assert_trees_close(four["metrics"], one["metrics"], atol=1e-5)
    assert_trees_close(four["params"], one["params"], atol=1e-5)
    assert np.any(np.asarray(one["metrics"]["grad_norm"]) > 0)  # the parameters did move


def test_imitation_on_four_devices_matches_one_device(four_devices):
    one, four = four_devices["imitation"]["1"], four_devices["imitation"]["4"]
    assert_trees_close(four["metrics"], one["metrics"], atol=1e-5)
    assert_trees_close(four["params"], one["params"], atol=1e-5)


@pytest.mark.parametrize("saved_on, restored_on", [(4, 1), (1, 4)])
def test_a_checkpoint_restores_and_trains_on_another_device_count(four_devices, saved_on, restored_on):
    restored = four_devices["restored"][f"{saved_on}->{restored_on}"]
    assert restored["sharding"]["boards_devices"] == restored_on
    # Training the restored state on `restored_on` devices is exactly that device count's run.
    reference = four_devices["ppo"][str(restored_on)]
    assert_trees_equal(restored["params"], reference["params"])
    assert_trees_equal(restored["metrics"], reference["metrics"])


def test_a_batch_that_does_not_split_over_the_devices_fails_naming_the_field(four_devices):
    errors = four_devices["errors"]
    for where in ("make_stages_ppo", "jit_chunk"):
        assert "ppo.num_envs=18 does not split evenly over 4 devices" in errors[where]
    assert "imitation.num_envs=6 does not split evenly over 4 devices" in errors["make_stages_imitation"]
    assert "run.num_devices=5 but only 4 cpu device(s)" in errors["too_many_devices"]


# ----------------------------------------------------------------------------- two processes


def test_two_processes_train_like_one_process_on_four_devices(two_processes, four_devices):
    params = agents_lib.load_agent(two_processes["run_dir"]).params
    assert_trees_close(jax.tree.map(np.asarray, params), four_devices["ppo"]["4"]["params"], atol=1e-5)


def test_only_process_zero_logs_and_prints(two_processes):
    run_dir = Path(two_processes["run_dir"])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(row["kind"], row["update"]) for row in rows] == [("train", 1), ("train", 2), ("eval", 2)]
    main_output, other_output = two_processes["stdout"]
    assert "final evaluation" in main_output and "win rate" in main_output
    assert "win rate" not in other_output and "checkpoint" not in other_output  # gloo's own lines only
    assert (run_dir / "final_eval.json").is_file()


# ----------------------------------------------------------------------------- this process


def test_num_devices_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match=r"RunConfig\.num_devices=-1 must be an int >= 0"):
        RunConfig(num_devices=-1)


def test_asking_for_more_devices_than_visible_fails():
    visible = jax.device_count()
    with pytest.raises(ValueError, match=rf"run\.num_devices={visible + 1} but only {visible} cpu device"):
        distributed.make_mesh(visible + 1)


def test_a_single_device_mesh_is_the_default_here():
    assert distributed.make_mesh().devices.tolist() == jax.devices()


@pytest.mark.parametrize(
    "flags, message",
    [
        (("127.0.0.1:1234", None, 0), "go together"),
        (("127.0.0.1:1234", 2, 2), r"process_id=2 must be in \[0, 2\)"),
        (("127.0.0.1:1234", 0, 0), "num_processes=0 must be >= 1"),
    ],
)
def test_multi_process_flags_are_checked_before_joining(flags, message):
    with pytest.raises(ValueError, match=message):
        distributed.initialize(*flags)


def test_without_flags_or_environment_no_cluster_is_joined(monkeypatch):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    assert distributed.initialize() is False


# ----------------------------------------------------------------------------- minibatches


def test_minibatches_hold_every_sample_once_and_the_same_steps_of_every_board():
    num_steps, num_boards, mini_batches = 6, 4, 3
    step_index = np.arange(num_steps)[:, None].repeat(num_boards, axis=1)  # [T, N]
    board_index = np.arange(num_boards)[None, :].repeat(num_steps, axis=0)
    fields = {name: None for name in losses.Batch.__dataclass_fields__}
    rollout = losses.Batch(**{**fields, "action": jnp.asarray(step_index), "value": jnp.asarray(board_index)})
    minibatches = ppo.shuffled_minibatches(rollout, jax.random.key(0), mini_batches)
    steps, boards = np.asarray(minibatches.action), np.asarray(minibatches.value)
    assert steps.shape == (mini_batches, num_boards * num_steps // mini_batches)
    for m in range(mini_batches):  # every board contributes T/M steps to every minibatch
        assert np.all(np.bincount(boards[m], minlength=num_boards) == num_steps // mini_batches)
    pairs = {(int(s), int(b)) for s, b in zip(steps.ravel(), boards.ravel())}
    assert len(pairs) == num_steps * num_boards  # each (step, board) sample exactly once
    unshuffled = np.tile(np.arange(num_steps // mini_batches), num_boards)
    assert not np.array_equal(steps[0], unshuffled)


def test_mini_batches_must_divide_the_rollout_length():
    with pytest.raises(ValueError, match=r"mini_batches=3 must divide steps_per_update=8"):
        ppo.PPOConfig(num_envs=6, steps_per_update=8, mini_batches=3)


def test_a_process_whose_coordinator_never_comes_says_so_and_gives_up(tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "msjax.train", "--config", "small", "--workdir", str(tmp_path / "run")]
    command += ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "1"]
    result = subprocess.run(
        command + ["--init-timeout", "2"], env=subprocess_env(1), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert f"waiting for the coordinator at 127.0.0.1:{port}, process 1 of 2" in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"127.0.0.1:{port} within 2 s" in errors[0]
