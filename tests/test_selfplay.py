"""Self-play with search targets: the targets on hand-made views and outcomes, the loss, the
stage in the registry and the runner (losses fall, resume bit-exact, the memory check).

One tiny self-play run (5x5x4, a one-layer network, 4 clicks searched on 4 layouts) is
shared by the runner's tests; its interrupted twin and the memory check reuse its compiled
chunk, so the module pays for that compilation once.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import position, stack
from tiny_runs import TINY, config_file, run_main, train_rows

from msjax import env as ms_env
from msjax import models, optimizers, search
from msjax.run import checkpoint as checkpoint_lib
from msjax.run import config as config_lib
from msjax.run import log as runlog
from msjax.run import loop as train
from msjax.run import memory
from msjax.run.checkpoint import Checkpoints
from msjax.stages import registry, selfplay
from msjax.stages.selfplay_targets import SearchTargets, outcomes, selfplay_loss

# ----------------------------------------------------------------------------- targets


def test_a_states_value_target_is_its_games_outcome_or_the_value_at_the_rollouts_end():
    # three games, four steps; a finished game restarts at once
    won = jnp.array([[False, False, False], [True, False, False], [False, False, False], [False, False, False]])
    done = jnp.array([[False, True, False], [True, False, False], [False, False, False], [True, False, False]])
    last_value = jnp.array([0.3, 0.7, 1.5])
    # game 0: won at step 1, its next game lost at step 3; game 1: lost at step 0, the next
    # still in play (its value at the end, 0.7); game 2: in play throughout (1.5 clipped to 1)
    expected = [[1.0, 0.0, 1.0], [1.0, 0.7, 1.0], [0.0, 0.7, 1.0], [0.0, 0.7, 1.0]]
    np.testing.assert_allclose(outcomes(won, done, last_value), expected, rtol=1e-6)
    np.testing.assert_allclose(outcomes(won[:1], jnp.zeros_like(done[:1]), jnp.array([-0.2, 0.0, 0.4])), [[0.0, 0.0, 0.4]])


NUM_ACTIONS = 8  # a fake 2x2 board: 4 reveals, 4 flags


def _fake_apply(params, obs):
    """A 'network' whose outputs are its parameters, broadcast over the batch."""
    batch = obs.shape[0]
    return (
        jnp.broadcast_to(params["logits"], (batch, NUM_ACTIONS)),
        jnp.broadcast_to(params["value"], (batch,)),
        jnp.broadcast_to(params["mine"], (batch, 2, 2)),
    )


def test_the_loss_is_the_cross_entropy_to_the_improved_policy_where_searched_and_to_the_move_elsewhere():
    params = {"logits": jnp.array([0.5, 1.0, -1.0, 2.0, 0, 0, 0, 0]), "value": jnp.float32(0.4),
              "mine": jnp.zeros((2, 2))}
    legal = jnp.array([True, True, True, False, False, False, False, False])  # cell 3 revealed, no flags
    improved = jnp.array([0.2, 0.5, 0.3, 0, 0, 0, 0, 0])
    batch = SearchTargets(
        obs=jnp.zeros((3, 11, 2, 2)),
        action_mask=jnp.broadcast_to(legal, (3, NUM_ACTIONS)),
        action=jnp.array([2, 1, 0]),
        action_weights=jnp.stack([improved, jax.nn.one_hot(1, NUM_ACTIONS), jax.nn.one_hot(0, NUM_ACTIONS)]),
        searched=jnp.array([True, False, False]),
        outcome=jnp.array([1.0, 0.0, 1.0]),
        mine_mask=jnp.zeros((3, 2, 2), bool),
        mine_label_mask=jnp.zeros((3, 2, 2), bool),
        valid=jnp.ones(3, bool),
    )
    cfg = selfplay.SelfPlayConfig(policy_weight=1.0, move_weight=0.5, value_weight=2.0, aux_mine_weight=0.0)
    loss, metrics = selfplay_loss(params, _fake_apply, batch, cfg)
    log_pi = np.log(np.asarray(jax.nn.softmax(jnp.array([0.5, 1.0, -1.0]))))
    policy_ce = -(0.2 * log_pi[0] + 0.5 * log_pi[1] + 0.3 * log_pi[2])
    move_ce = -(log_pi[1] + log_pi[0]) / 2  # a mean over the two states not searched
    value_loss = 0.5 * (0.6**2 + 0.4**2 + 0.6**2) / 3
    np.testing.assert_allclose(metrics["policy_ce"], policy_ce, rtol=1e-5)
    np.testing.assert_allclose(metrics["move_ce"], move_ce, rtol=1e-5)
    np.testing.assert_allclose(metrics["value_loss"], value_loss, rtol=1e-5)
    np.testing.assert_allclose(loss, policy_ce + 0.5 * move_ce + 2.0 * value_loss, rtol=1e-5)
    assert float(metrics["search_changed"]) == 1.0  # the search played cell 2, the policy likes cell 1


def test_a_states_marked_invalid_weighs_nothing_in_the_loss():
    """The empty slots a draw from the buffer may return (``valid`` False) change no term."""
    params = {"logits": jnp.arange(NUM_ACTIONS, dtype=jnp.float32) / 4, "value": jnp.float32(0.3),
              "mine": jnp.array([[0.5, -1.0], [2.0, 0.0]])}
    cfg = selfplay.SelfPlayConfig(aux_mine_weight=0.5)

    def batch(searched, valid, outcome):
        num = len(searched)
        return SearchTargets(
            obs=jnp.zeros((num, 11, 2, 2)), action_mask=jnp.ones((num, NUM_ACTIONS), bool),
            action=jnp.arange(num, dtype=jnp.int32), action_weights=jnp.full((num, NUM_ACTIONS), 0.125),
            searched=jnp.array(searched), outcome=jnp.array(outcome),
            mine_mask=jnp.broadcast_to(jnp.array([[True, False], [False, False]]), (num, 2, 2)),
            mine_label_mask=jnp.ones((num, 2, 2), bool), valid=jnp.array(valid),
        )

    loss, metrics = selfplay_loss(params, _fake_apply, batch([True, False, False], [True] * 3, [1.0, 0.0, 1.0]), cfg)
    padded = batch([True, False, False, True, False], [True] * 3 + [False] * 2, [1.0, 0.0, 1.0, 0.5, 0.2])
    loss_padded, metrics_padded = selfplay_loss(params, _fake_apply, padded, cfg)
    np.testing.assert_allclose(loss_padded, loss, rtol=1e-6)
    for name in metrics:
        np.testing.assert_allclose(metrics_padded[name], metrics[name], rtol=1e-6, err_msg=name)
    assert float(metrics["value_loss"]) > 0 and float(metrics["mine_bce"]) > 0


VIEW_ENV = ms_env.EnvConfig(H=4, W=4, mine_count=6, guarantee_safe_neighborhood=False)
VIEWS = (  # a guess (no cell proved safe), a view with a proof, a game before its first click
    """
    # # 1 0
    * * 2 0
    * * 3 1
    * # # *
    """,
    """
    0 # * *
    # # * *
    # * * #
    # # # #
    """,
    """
    # # # #
    # * * *
    * * * #
    # # # #
    """,
)
VIEW_CFG = selfplay.SelfPlayConfig(num_envs=3, simulations=4, samples=8, exact_states=64)


def test_a_guess_views_policy_target_is_the_search_improved_policy_and_a_proofs_the_move():
    states = stack([position(text, VIEW_ENV) for text in VIEWS])
    states = states.replace(first_click_done=jnp.array([True, True, False]))
    model_cfg = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
    params = models.init_params(jax.random.key(0), model_cfg, VIEW_ENV)
    key = jax.random.key(3)

    @jax.jit
    def step_and_search(params, states, key):
        _, _, step = selfplay.search_and_step(states, key, params, VIEW_ENV, model_cfg, VIEW_CFG)
        search_keys = jax.random.split(jax.random.split(key)[1], VIEW_CFG.num_envs)  # the keys the step draws
        player = selfplay.searcher(params, VIEW_ENV, model_cfg, VIEW_CFG)
        return step, search.search_policy(player, states, search_keys)

    step, (actions, weights, searched, network_action) = step_and_search(params, states, key)
    np.testing.assert_array_equal(step.searched, [True, False, False])
    np.testing.assert_array_equal(step.corrected, actions != network_action)
    np.testing.assert_array_equal(step.action, actions)
    np.testing.assert_array_equal(step.action_weights, weights)
    improved = np.asarray(step.action_weights[0])
    hidden = ~np.asarray(states.revealed[0]).reshape(-1)
    assert improved[:16][hidden].min() > 0 and improved[16:].max() == 0  # over the hidden cells' reveals
    np.testing.assert_allclose(improved.sum(), 1.0, rtol=1e-5)
    proved = np.zeros(2 * 16)
    proved[int(step.action[1])] = 1.0  # the move played on the view with a proof
    np.testing.assert_array_equal(step.action_weights[1], proved)
    assert int(step.action[1]) in (1, 4, 5)  # the cells the 0 proves safe
    assert np.asarray(step.mine_label_mask[2]).sum() == 0  # no mines placed before the first click


# ----------------------------------------------------------------------------- config and registry


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"simulations": 0}, r"SelfPlayConfig\.simulations=0 must be an int in \[1, 32\]"),
        ({"simulations": 33}, r"SelfPlayConfig\.simulations=33"),
        ({"samples": 0}, r"SelfPlayConfig\.samples=0 must be an int >= 1"),
        ({"leaf": "oracle"}, r"SelfPlayConfig\.leaf='oracle' must be one of 'value', 'safe', 'survival'"),
        ({"endgame": 129}, r"SelfPlayConfig\.endgame=129 must be an int in \[0, 128\]"),
        ({"tolerance": 1.5}, r"SelfPlayConfig\.tolerance=1.5 must be a number in \(0, 1\]"),
        ({"gumbel_scale": -1.0}, r"SelfPlayConfig\.gumbel_scale=-1.0 must be a number >= 0"),
        ({"value_scale": 0.0}, r"SelfPlayConfig\.value_scale=0.0 must be > 0"),
        ({"policy_weight": -1.0}, r"SelfPlayConfig\.policy_weight=-1.0 must be >= 0"),
        ({"move_weight": -0.1}, r"SelfPlayConfig\.move_weight"),
        ({"value_weight": -1.0}, r"SelfPlayConfig\.value_weight"),
        ({"exact_states": 1}, r"SelfPlayConfig\.exact_states=1 must be 0 .* or an int in \[2, 32767\]"),
        ({"num_envs": 6, "steps_per_update": 2, "microbatch_size": 4}, r"microbatch_size=4 .* divisor of num_envs=6"),
        ({"num_envs": 0}, r"SelfPlayConfig\.num_envs=0"),
        ({"trainable": "policy"}, r"SelfPlayConfig\.trainable='policy' must be one of 'all', 'value'"),
        ({"buffer_size": -1}, r"SelfPlayConfig\.buffer_size=-1 must be an int in \[0, 1000000\]"),
        ({"buffer_size": 64}, r"buffer_batch=0 and buffer_size=64 must be both 0 \(no buffer\) or both > 0"),
        ({"buffer_batch": 8}, r"buffer_batch=8 and buffer_size=0"),
        ({"num_envs": 8, "steps_per_update": 2, "microbatch_size": 4, "buffer_size": 16, "buffer_batch": 6},
         r"microbatch_size=4 .* divisor of num_envs\*steps_per_update\+buffer_batch=22"),
    ],
)
def test_bad_selfplay_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        selfplay.SelfPlayConfig(**overrides)


def test_the_stage_plays_after_imitation_and_before_ppo_and_is_off_by_default():
    cfg = config_lib.ExperimentConfig()
    assert not cfg.selfplay.enabled
    cfg = config_lib.apply_overrides(cfg, ["imitation.enabled=true", "selfplay.enabled=true"])
    assert [stage.name for stage in registry.run_stages(cfg)] == ["imitation", "selfplay", "ppo"]
    only = config_lib.apply_overrides(TINY, ["ppo.enabled=false", "selfplay.enabled=true"])
    assert [stage.name for stage in registry.run_stages(only)] == ["selfplay"]


def test_adding_the_stage_left_the_keys_of_imitation_and_ppo_as_they_were():
    keys = registry.stage_keys(7)
    before = jax.random.split(jax.random.key(7), 2)  # the split of the registry of two stages
    for name, old in zip(("imitation", "ppo"), before):
        np.testing.assert_array_equal(jax.random.key_data(keys[name]), jax.random.key_data(old))
    others = [jax.random.key_data(keys[name]) for name in ("imitation", "ppo")]
    assert not any(np.array_equal(jax.random.key_data(keys["selfplay"]), other) for other in others)


def test_a_selfplay_run_needs_one_board_size_and_no_carried_beliefs():
    with pytest.raises(ValueError, match=r"selfplay\.enabled=True needs env\.boards=\(\)"):
        config_lib.apply_overrides(TINY, ["selfplay.enabled=true", "env.boards=((4,4,2,2),(4,4,3,3))"])
    with pytest.raises(ValueError, match=r"model\.carry_beliefs=True needs selfplay\.enabled=False"):
        config_lib.apply_overrides(
            TINY, ["ppo.enabled=false", "imitation.enabled=true", "selfplay.enabled=true", "model.carry_beliefs=true"]
        )


# ----------------------------------------------------------------------------- the stage in a run

SELFPLAY_RUN = config_lib.apply_overrides(
    TINY,
    [
        "env.H=5", "env.W=5", "env.mine_count=4", "model.flag_actions=false",
        "ppo.enabled=false", "selfplay.enabled=true", "selfplay.num_envs=16", "selfplay.steps_per_update=4",
        "selfplay.num_updates=12", "selfplay.lr=3e-3", "selfplay.simulations=4", "selfplay.samples=4",
        "selfplay.exact_states=64", "run.chunk_updates=4", "run.eval_every_updates=12",
        "selfplay.buffer_size=24", "selfplay.buffer_batch=8",
        "run.checkpoint_every_updates=0", "run.tensorboard=false",
    ],
)  # fmt: skip
UPDATES = SELFPLAY_RUN.selfplay.num_updates


def final_state(run_dir):
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    return checkpoint_lib.keys_to_data(checkpoints.restore(UPDATES, selfplay.STAGE.abstract_state(SELFPLAY_RUN)))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """The run directory of one uninterrupted tiny self-play run."""
    tmp_path = tmp_path_factory.mktemp("selfplay")
    run_main(["--config", config_file(tmp_path, SELFPLAY_RUN), "--workdir", tmp_path / "run"])
    return tmp_path / "run"


def test_a_run_of_the_stage_logs_every_update_with_its_search_figures(finished_run):
    rows = train_rows(finished_run)
    assert [(row["stage"], row["update"]) for row in rows] == [("selfplay", u) for u in range(1, UPDATES + 1)]
    assert all(0 < row["searched_fraction"] < 1 and 0 <= row["search_changed"] <= 1 for row in rows)
    # the buffer holds every searched state of the rollouts so far, up to its 24 slots
    searched = np.cumsum([round(row["searched_fraction"] * 16 * 4) for row in rows])
    np.testing.assert_array_equal([row["buffer_states"] for row in rows], np.minimum(searched, 24))
    assert searched[-1] > 24 and all(0 <= row["corrected_fraction"] < 1 for row in rows)
    names = ("loss", "policy_ce", "policy_kl", "move_ce", "value_loss", "mine_bce", "grad_norm", "win_rate_train")
    assert all(np.isfinite(row[name]) for row in rows for name in names)


TRAIN_ENV = ms_env.EnvConfig(H=5, W=5, mine_count=5)
TRAIN_MODEL = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
TRAIN_CFG = selfplay.SelfPlayConfig(
    enabled=True, num_envs=32, steps_per_update=8, num_updates=24, lr=1e-2, simulations=4, samples=4, exact_states=64,
)


def test_a_few_updates_make_the_losses_fall():
    """From a value head that says 2 everywhere, 24 updates: the value head learns the
    outcomes and the policy the moves played. (``policy_ce`` falls less clearly: its target
    is the policy itself improved by the search, so it moves with the policy.)"""
    state = selfplay.init_selfplay_state(jax.random.key(0), TRAIN_ENV, TRAIN_MODEL, TRAIN_CFG)
    value_out = state.params["params"]["value_out"]
    params = {"params": {**state.params["params"], "value_out": {**value_out, "bias": jnp.full((1,), 2.0)}}}
    state = state.replace(params=params)
    chunk = selfplay.make_selfplay_chunk(TRAIN_ENV, TRAIN_MODEL, TRAIN_CFG, chunk_updates=8)
    history = []
    for _ in range(3):
        state, metrics = chunk(state)
        history.append(jax.device_get(metrics))
    metrics = {name: np.concatenate([part[name] for part in history]) for name in history[0]}
    assert metrics["value_loss"][-4:].mean() < 0.2 * metrics["value_loss"][:2].mean(), metrics["value_loss"]
    for name in ("loss", "move_ce"):
        assert metrics[name][-4:].mean() < metrics[name][:4].mean(), (name, metrics[name])
    assert int(state.update) == 24 and metrics["lr"][0] > metrics["lr"][-1] > 0


def test_value_only_self_play_changes_the_value_head_alone_and_fits_the_outcomes():
    """``trainable="value"``: every parameter outside the value head stays bit-identical (the
    network plays and searches as before) while the value loss falls."""
    cfg = dataclasses.replace(TRAIN_CFG, trainable="value", lr=1e-2)
    state = selfplay.init_selfplay_state(jax.random.key(0), TRAIN_ENV, TRAIN_MODEL, cfg)
    value_out = state.params["params"]["value_out"]
    params = {"params": {**state.params["params"], "value_out": {**value_out, "bias": jnp.full((1,), 2.0)}}}
    state = state.replace(params=params)
    before = jax.device_get(state.params)
    state, metrics = selfplay.make_selfplay_chunk(TRAIN_ENV, TRAIN_MODEL, cfg, chunk_updates=16)(state)
    labels = optimizers.value_head_labels(before)
    moved = jax.tree.map(lambda a, b: bool(np.any(a != b)), before, jax.device_get(state.params))
    for (path, label), (_, changed) in zip(jax.tree_util.tree_leaves_with_path(labels),
                                          jax.tree_util.tree_leaves_with_path(moved)):
        assert changed == (label == "train"), jax.tree_util.keystr(path)
    value_loss = np.asarray(metrics["value_loss"])  # from (2 - outcome)^2 / 2 >= 0.5 to about the outcomes' variance
    assert value_loss[-4:].mean() < 0.3 * value_loss[:2].mean(), value_loss


def test_ctrl_c_mid_stage_and_resume_continue_bit_exactly(finished_run, tmp_path, monkeypatch):
    flushes = []
    real_flush = runlog.MetricsWriter.flush

    def interrupt_after_first_chunk(self):
        flushes.append(1)
        if len(flushes) == 1:
            raise KeyboardInterrupt
        real_flush(self)

    monkeypatch.setattr(runlog.MetricsWriter, "flush", interrupt_after_first_chunk)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit):
        run_main(["--config", config_file(tmp_path, SELFPLAY_RUN), "--workdir", run_dir])
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    assert [(step, checkpoints.info(step).stage) for step in checkpoints.steps] == [(4, "selfplay")]
    monkeypatch.undo()

    _, printed = run_main(["--workdir", run_dir, "--resume"])

    assert "selfplay update 4/12" in printed
    assert train_rows(run_dir) == train_rows(finished_run)
    resumed, reference = final_state(run_dir), final_state(finished_run)
    assert jax.tree.structure(resumed) == jax.tree.structure(reference)
    for got, want in zip(jax.tree.leaves(resumed), jax.tree.leaves(reference)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_selfplay_chunk_that_cannot_fit_stops_before_its_first_update_naming_the_setting(finished_run, tmp_path):
    cfg = config_lib.apply_overrides(SELFPLAY_RUN, ["run.device_memory_gib=1e-6"])
    match = r"the selfplay chunk needs .* GiB .* set selfplay\.microbatch_size \(now off\)"
    with pytest.raises(memory.DoesNotFit, match=match):
        train.train(cfg, tmp_path, resume=False)
    assert not (tmp_path / "metrics.jsonl").exists()


def test_micro_batches_give_the_update_of_the_whole_batch():
    # with the buffer on, its drawn states are split with the rollout's (the split without it
    # is the same code on the rollout's states alone, and each pair of self-play chunks costs
    # 10 to 20 s of compile)
    cfg = selfplay.SelfPlayConfig(enabled=True, num_envs=8, steps_per_update=2, simulations=2, samples=2,
                                  exact_states=64, buffer_size=32, buffer_batch=8)
    whole_chunk = selfplay.make_selfplay_chunk(TRAIN_ENV, TRAIN_MODEL, cfg, 1)
    # a first update fills the buffer, so that the next draws from it
    state, _ = whole_chunk(selfplay.init_selfplay_state(jax.random.key(1), TRAIN_ENV, TRAIN_MODEL, cfg))
    assert int(state.buffer.count) > 0
    filled = jax.tree.map(jnp.copy, state)  # each chunk donates the state it is handed
    results = [jax.device_get(whole_chunk(state))]
    # 4 also divides num_envs: the bootstrap pass in micro-batches too
    parts_chunk = selfplay.make_selfplay_chunk(TRAIN_ENV, TRAIN_MODEL, dataclasses.replace(cfg, microbatch_size=4), 1)
    results.append(jax.device_get(parts_chunk(filled)))
    (whole, whole_metrics), (parts, parts_metrics) = results
    for (path, got), want in zip(jax.tree_util.tree_leaves_with_path(parts.params), jax.tree.leaves(whole.params)):
        if "policy_head" in jax.tree_util.keystr(path) and got.shape == (1,):
            continue  # the policy's one bias: its gradient is 0 (a softmax ignores a shift), Adam's step is rounding's sign
        np.testing.assert_allclose(got, want, atol=0.1 * cfg.lr)  # Adam's steps agree to a tenth of one
    for name in ("loss", "policy_ce", "move_ce", "value_loss", "mine_bce", "grad_norm"):
        np.testing.assert_allclose(parts_metrics[name], whole_metrics[name], rtol=1e-4, err_msg=name)
