"""The curriculum: levels over a board mix, traced board weights, promotion and resume."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from msjax.run import checkpoint as checkpoint_lib
from msjax.run import config as config_lib
from msjax import distributed, env, evaluate, losses
from msjax.run import loop as train
from msjax.stages import curriculum, imitation, ppo
from msjax.run.config import ExperimentConfig, RunConfig
from msjax.stages.curriculum import CurriculumConfig
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig

BOARDS = ((4, 4, 2, 2), (4, 5, 2, 4))  # 4x4x2 padded to 4x5, then 4x5 with 2-4 mines
MIXED = ExperimentConfig(
    env=EnvConfig(H=4, W=5, boards=BOARDS),
    curriculum=CurriculumConfig(enabled=True, promote_at=(0.4,), replay_fraction=0.0, preview_fraction=0.0),
    model=ModelConfig(channels=(8,), value_hidden=8),
    ppo=PPOConfig(num_envs=16, steps_per_update=8, mini_batches=2, ppo_epochs=1, num_updates=6),
    imitation=ImitationConfig(enabled=False),
    run=RunConfig(
        chunk_updates=2,
        eval_every_updates=2,
        eval_episodes=8,
        final_eval_episodes=8,
        eval_batch_size=8,
        progress_bar=False,
        tensorboard=False,
    ),
)
NAMES = [env.board_name(board) for board in BOARDS]


def test_mixture_weights_follow_the_level():
    cfg = CurriculumConfig(enabled=True, promote_at=(0.3, 0.3), replay_fraction=0.2, preview_fraction=0.1)
    np.testing.assert_allclose(curriculum.mixture_weights(0, 3, cfg), [0.9, 0.1, 0.0])
    np.testing.assert_allclose(curriculum.mixture_weights(1, 3, cfg), [0.2, 0.7, 0.1])
    np.testing.assert_allclose(curriculum.mixture_weights(2, 3, cfg), [0.1, 0.1, 0.8])
    np.testing.assert_allclose(curriculum.mixture_weights(1, 3, CurriculumConfig()), [1 / 3] * 3)


def test_promotion_needs_the_current_boards_win_rate_above_its_threshold():
    cfg = CurriculumConfig(enabled=True, promote_at=(0.3, 0.5))
    state = curriculum.init_state(EnvConfig(H=4, W=5, boards=BOARDS + ((3, 5, 2, 2),)), cfg)
    same, promoted = curriculum.promote(state, [0.3, 0.9, 0.9], update=10, cfg=cfg)
    assert not promoted and int(same.level) == 0  # "passes" means strictly above
    state, promoted = curriculum.promote(state, [0.31, 0.0, 0.0], update=10, cfg=cfg)
    assert promoted and int(state.level) == 1
    np.testing.assert_array_equal(state.entered_at, [0, 10, -1])
    state, promoted = curriculum.promote(state, [1.0, 0.4, 1.0], update=20, cfg=cfg)
    assert not promoted  # board 1 needs 0.5
    state, promoted = curriculum.promote(state, [1.0, 0.6, 1.0], update=30, cfg=cfg)
    assert promoted and int(state.level) == 2
    state, promoted = curriculum.promote(state, [1.0, 1.0, 1.0], update=40, cfg=cfg)
    assert not promoted and int(state.level) == 2  # the last level stays


@pytest.mark.parametrize(
    "changes, match",
    [
        (
            {"curriculum": CurriculumConfig(enabled=True, promote_at=(0.3, 0.3))},
            r"one threshold per board but the last: 1",
        ),
        ({"env": EnvConfig(H=4, W=5)}, r"at least 2 boards"),
        (
            {"curriculum": CurriculumConfig(enabled=True, promote_at=(0.3,), eval_mines=(2, 5))},
            r"eval_mines\[1\]=5 is outside",
        ),
    ],
)
def test_a_curriculum_that_does_not_fit_the_boards_raises(changes, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(MIXED, **changes)
    with pytest.raises(ValueError, match=r"replay_fraction \+ preview_fraction"):
        CurriculumConfig(replay_fraction=0.6, preview_fraction=0.5)


def test_promotion_changes_the_boards_dealt_without_recompiling(monkeypatch):
    """A tiny mixed-size PPO run: level 0 deals only 4x4 games; after a promotion the same
    compiled chunk deals 4x5 games, and it still trains (finite losses)."""
    traces = []
    real_gae = losses.gae
    monkeypatch.setattr(losses, "gae", lambda *args: traces.append(1) or real_gae(*args))
    stage = train.make_stages(MIXED, distributed.make_mesh(1))[-1]
    chunk = stage.make_chunk(2)  # the runner's chunk, shared with the scripted run below
    state, metrics = chunk(stage.init(None))
    assert np.all(metrics[f"games_share/{NAMES[0]}"] == 1.0)
    promoted, changed = curriculum.promote(state.curriculum, [0.5, 0.0], int(state.update), MIXED.curriculum)
    assert changed
    state, metrics = chunk(state.replace(curriculum=distributed.put_like(promoted, state.curriculum)))
    state, metrics = chunk(state)  # by now every game has started on the new level's board
    assert len(traces) <= 1  # traced at most once (never, if an earlier test compiled it)
    assert np.all(metrics["curriculum_level"] == 1.0)
    assert metrics[f"games_share/{NAMES[1]}"][-1] == 1.0
    assert np.all(np.isfinite(metrics["loss"]))
    assert np.all(np.asarray(state.env_states.board) == 1)


def scripted_evaluation(win_rates_per_call):
    """A stand-in for ``train.evaluate_params`` reporting, at its ``i``-th call, the per-board
    win rates ``win_rates_per_call[i]``."""
    script = iter(win_rates_per_call)

    def evaluate(params, cfg, episodes, on_batch=None):
        rates = next(script)
        results = {
            "episodes": episodes,
            "win_rate": rates[-1],
            "win_rate_ci95": (0.0, 1.0),
            "revealed_fraction": 0.5,
        }
        results.update({f"win_rate/{name}": rate for name, rate in zip(NAMES, rates)})
        return results

    return evaluate


def interrupt_after_update(update):
    """``train.after_chunk`` followed by a Ctrl-C once the run has done ``update`` updates."""
    after_chunk = train.after_chunk

    def after_chunk_then_interrupt(stage, state, *args):
        result = after_chunk(stage, state, *args)
        if int(state.update) >= update:
            raise KeyboardInterrupt
        return result

    return after_chunk_then_interrupt


def test_scripted_promotion_is_logged_checkpointed_and_survives_resume(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # Evaluations at updates 2 and 4: board 0 passes its 0.4 threshold at update 4 only;
    # then Ctrl-C stops the run.
    monkeypatch.setattr(train, "evaluate_params", scripted_evaluation([[0.4, 0.0], [0.5, 0.0]]))
    monkeypatch.setattr(train, "after_chunk", interrupt_after_update(4))
    with pytest.raises(KeyboardInterrupt):
        train.train(MIXED, run_dir, resume=False)
    monkeypatch.undo()

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    promotions = [row for row in rows if row["kind"] == "promotion"]
    assert [(row["update"], row["promoted_to"], row["board"]) for row in promotions] == [(4, 1.0, NAMES[1])]
    checkpoints = checkpoint_lib.Checkpoints(run_dir / "checkpoints", read_only=True)
    saved = checkpoints.restore(4, ppo.STAGE.abstract_state(MIXED))
    checkpoints.close()
    assert int(saved.curriculum.level) == 1
    np.testing.assert_array_equal(saved.curriculum.entered_at, [0, 4])
    np.testing.assert_allclose(saved.curriculum.board_weights, [0.0, 1.0])

    # Resume: the last two updates run at level 1 (a poor evaluation never demotes).
    monkeypatch.setattr(train, "evaluate_params", scripted_evaluation([[0.0, 0.0]]))
    train.train(MIXED, run_dir, resume=True)
    checkpoints = checkpoint_lib.Checkpoints(run_dir / "checkpoints", read_only=True)
    resumed = checkpoints.restore(6, ppo.STAGE.abstract_state(MIXED))
    checkpoints.close()
    assert int(resumed.curriculum.level) == 1
    np.testing.assert_array_equal(resumed.curriculum.entered_at, [0, 4])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    level_by_update = {row["update"]: row["curriculum_level"] for row in rows if row["kind"] == "train"}
    assert level_by_update == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0, 5: 1.0, 6: 1.0}


def test_imitation_plays_the_first_board_unpadded_with_the_same_channels():
    env_cfg = MIXED.env
    first = imitation.imitation_env(env_cfg)
    assert (first.H, first.W, first.boards) == (4, 4, (BOARDS[0],))
    assert env.num_channels(first) == env.num_channels(env_cfg)
    assert imitation.imitation_env(EnvConfig()) == EnvConfig()


def test_boards_and_curriculum_round_trip_through_json_and_overrides():
    cfg = config_lib.apply_overrides(
        ExperimentConfig(),
        [
            "env.H=4",
            "env.W=5",
            "env.boards=((4,4,2,2),(4,5,2,4))",
            "curriculum.enabled=true",
            "curriculum.promote_at=0.4",
        ],
    )
    assert cfg.env.boards == BOARDS and cfg.curriculum.promote_at == (0.4,)
    assert config_lib.from_dict(config_lib.to_dict(cfg)) == cfg


def test_evaluation_reports_every_board_and_density():
    from msjax import agent as agent_lib

    params = ppo.init_ppo_state(jax.random.key(0), MIXED.env, MIXED.model, MIXED.ppo).params
    agent = agent_lib.from_params(params, MIXED)
    results = evaluate.evaluate_boards(agent, MIXED.env, 12, seed=3, batch_size=12, eval_mines=(None, None))
    for name in NAMES:
        assert 0.0 <= results[f"win_rate/{name}"] <= 1.0
        assert 0.0 < results[f"revealed_fraction/{name}"] <= 1.0
    assert results["win_rate"] == results[f"win_rate/{NAMES[1]}"]  # the last board is the headline
    assert f"win_rate/{NAMES[1]}/dense" in results and f"win_rate/{NAMES[0]}/dense" not in results


def test_checkpoints_written_before_board_mixes_still_restore(tmp_path):
    """States saved before ``EnvState.board`` and ``PPOState.curriculum`` existed (an
    unpadded run) restore into today's states, those fields None."""
    from flax import struct

    from tiny_runs import TINY, fresh_ppo_state

    old_env_fields = [f.name for f in dataclasses.fields(env.EnvState) if f.name != "board"]
    old_train_fields = [f.name for f in dataclasses.fields(ppo.PPOState) if f.name != "curriculum"]
    OldEnvState = struct.dataclass(
        type("EnvState", (), {"__annotations__": dict.fromkeys(old_env_fields, object)})
    )
    OldTrainState = struct.dataclass(
        type("PPOState", (), {"__annotations__": dict.fromkeys(old_train_fields, object)})
    )
    state = fresh_ppo_state(TINY, seed=3)
    old_envs = OldEnvState(**{name: getattr(state.env_states, name) for name in old_env_fields})
    old = OldTrainState(**{name: getattr(state, name) for name in old_train_fields}).replace(env_states=old_envs)

    checkpoints = checkpoint_lib.Checkpoints(tmp_path / "checkpoints")
    checkpoints.save(1, old, stage="ppo", update=0, cfg=TINY)
    restored = checkpoints.restore(1, ppo.STAGE.abstract_state(TINY))
    checkpoints.close()
    assert restored.curriculum is None and restored.env_states.board is None
    data = checkpoint_lib.keys_to_data
    for got, want in zip(jax.tree.leaves(data(restored)), jax.tree.leaves(data(state))):
        np.testing.assert_array_equal(got, want)


def test_the_command_line_plays_one_board_of_a_mix_unpadded():
    cfg = env.board_config("3x4x2", safe_first_click=False, base=MIXED.env)
    assert (cfg.H, cfg.W, cfg.boards) == (3, 4, ((3, 4, 2, 2),))
    assert env.num_channels(cfg) == env.num_channels(MIXED.env)
    default = env.board_config(None, safe_first_click=False, base=MIXED.env)
    assert (default.H, default.W, default.boards) == (4, 5, ((4, 5, 2, 2),))


def test_a_promotion_on_a_process_that_writes_nothing_works():
    """Processes other than 0 log through ``NoWriter``; a promotion calls the writer on
    every process."""
    from msjax.run import log as runlog

    stage = train.make_stages(MIXED, distributed.make_mesh(1))[-1]
    state = ppo.PPOState(
        params=None, opt_state=None, env_states=None, key=None, update=jax.numpy.int32(4),
        curriculum=curriculum.init_state(MIXED.env, MIXED.curriculum),
    )
    progress = runlog.Progress([stage], 0, enabled=False, printing=False)
    ctx = train.RunContext(MIXED, None, runlog.NoWriter(), progress)
    results = {f"win_rate/{name}": rate for name, rate in zip(NAMES, [0.9, 0.0])}
    promoted = train.maybe_promote(stage, state, 4, results, ctx)
    assert int(promoted.curriculum.level) == 1
