"""PPO: masking, GAE, the clipped loss and its gradients, and short training runs."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env as ms_env
from msjax import losses, models, optimizers
from msjax.stages import ppo

NUM_ACTIONS = 8  # a fake 2x2 board: 4 reveals, 4 flags


# ----------------------------------------------------------------------------- masking


def test_a_masked_action_is_never_sampled():
    logits = jax.random.normal(jax.random.key(0), (4, 10)) * 3.0
    mask = jax.random.bernoulli(jax.random.key(1), 0.4, (4, 10)).at[:, 0].set(True)
    pi = distrax.Categorical(logits=models.masked_logits(logits, mask))
    draws = pi.sample(seed=jax.random.key(2), sample_shape=(5000,))  # [5000, 4]
    legal = np.take_along_axis(np.asarray(mask)[None], np.asarray(draws)[..., None], axis=-1)
    assert legal.all()


def test_masked_logits_use_the_dtype_minimum_not_infinity():
    logits = jnp.array([1.0, 2.0, 3.0])
    masked = models.masked_logits(logits, jnp.array([True, False, True]))
    assert masked[1] == jnp.finfo(jnp.float32).min
    assert np.isfinite(np.asarray(masked)).all()


def test_a_row_with_one_legal_action_has_finite_log_probs_and_gradients():
    logits = jnp.array([[0.3, -1.0, 2.0, 0.5]])
    mask = jnp.array([[False, False, True, False]])

    def log_prob_and_entropy(logits):
        pi = distrax.Categorical(logits=models.masked_logits(logits, mask))
        return pi.log_prob(jnp.array([2]))[0] + pi.entropy()[0]

    value, grads = jax.value_and_grad(log_prob_and_entropy)(logits)
    pi = distrax.Categorical(logits=models.masked_logits(logits, mask))
    np.testing.assert_allclose(pi.log_prob(jnp.array([2])), 0.0, atol=1e-6)
    np.testing.assert_allclose(pi.entropy(), 0.0, atol=1e-6)
    assert np.isfinite(value) and np.isfinite(np.asarray(grads)).all()
    assert np.isfinite(np.asarray(pi.log_prob(jnp.array([0])))).all()  # masked: tiny but finite


def test_policy_action_plays_only_legal_moves():
    env_cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)
    model_cfg = models.ModelConfig(channels=(8,), value_hidden=8)
    params = models.init_params(jax.random.key(0), model_cfg, env_cfg)
    states = ms_env.batch_reset(jax.random.key(1), env_cfg, 64)
    states, *_ = ms_env.batch_step(states, jnp.full(64, 5, jnp.int32), env_cfg)
    act = jax.jit(
        jax.vmap(models.policy_action, in_axes=(None, None, None, 0, 0, None)), static_argnums=(1, 2, 5)
    )
    keys = jax.random.split(jax.random.key(2), 64)
    for greedy in (False, True):
        actions = act(params, model_cfg, env_cfg, states, keys, greedy)
        masks = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, env_cfg)
        assert actions.dtype == jnp.int32
        assert np.take_along_axis(np.asarray(masks), np.asarray(actions)[:, None], axis=1).all()


# ----------------------------------------------------------------------------- GAE


def test_gae_matches_a_hand_computed_example_with_a_done():
    # one board, three steps; the game ends at t=1, so t=1 does not bootstrap from t=2
    rewards = jnp.array([[1.0], [0.0], [2.0]])
    values = jnp.array([[0.5], [1.0], [0.0]])
    dones = jnp.array([[False], [True], [False]])
    advantages, returns = losses.gae(rewards, values, dones, jnp.array([3.0]), gamma=0.9, lam=0.8)
    # t=2: 2 + 0.9*3 - 0 = 4.7;  t=1: 0 - 1 = -1;  t=0: (1 + 0.9*1 - 0.5) + 0.9*0.8*(-1) = 0.68
    np.testing.assert_allclose(advantages[:, 0], [0.68, -1.0, 4.7], rtol=1e-6)
    np.testing.assert_allclose(returns[:, 0], [1.18, 0.0, 4.7], rtol=1e-6)


def test_gae_with_lambda_one_and_no_dones_is_the_discounted_return():
    rewards = jnp.array([[1.0, 0.0], [1.0, 1.0]])
    values = jnp.zeros((2, 2))
    _, returns = losses.gae(rewards, values, jnp.zeros((2, 2), bool), jnp.array([10.0, 0.0]), 0.5, 1.0)
    np.testing.assert_allclose(returns, [[1 + 0.5 + 2.5, 0.5], [1 + 5.0, 1.0]], rtol=1e-6)


# ----------------------------------------------------------------------------- loss


def _fake_apply(params, obs):
    """A 'network' whose outputs are its parameters, broadcast over the batch."""
    batch = obs.shape[0]
    return (
        jnp.broadcast_to(params["logits"], (batch, NUM_ACTIONS)),
        jnp.broadcast_to(params["value"], (batch,)),
        jnp.broadcast_to(params["mine"], (batch, 2, 2)),
    )


def _fixed_batch(params, advantage, log_prob_shift=0.0, value=None, target=None):
    batch_size = advantage.shape[0]
    mask = jnp.array([True, False, True, True, True, False, True, True])
    action = jnp.array([0, 2, 3, 6])[:batch_size]
    log_probs = jax.nn.log_softmax(models.masked_logits(params["logits"], mask))
    return losses.Batch(
        obs=jnp.zeros((batch_size, 11, 2, 2)),
        action_mask=jnp.broadcast_to(mask, (batch_size, NUM_ACTIONS)),
        action=action,
        log_prob=log_probs[action] - log_prob_shift,
        value=jnp.zeros(batch_size) if value is None else value,
        advantage=advantage,
        target=jnp.ones(batch_size) if target is None else target,
        mine_mask=jnp.broadcast_to(jnp.array([[True, False], [False, False]]), (batch_size, 2, 2)),
        mine_label_mask=jnp.broadcast_to(jnp.array([[True, True], [False, True]]), (batch_size, 2, 2)),
    )


PARAMS = {
    "logits": jnp.array([0.1, 0.5, -0.3, 0.2, 0.0, 1.0, -0.5, 0.4]),
    "value": jnp.array(0.1),
    "mine": jnp.array([[0.5, -0.5], [0.0, -1.0]]),
}


def test_ppo_loss_at_ratio_one_is_minus_mean_advantage_plus_weighted_terms():
    cfg = ppo.PPOConfig(normalize_advantages=False, vf_coef=0.5, ent_coef=0.01, aux_mine_weight=0.1)
    advantage = jnp.array([1.0, -2.0, 0.5, 3.0])
    batch = _fixed_batch(PARAMS, advantage)
    loss, metrics = losses.ppo_loss(PARAMS, _fake_apply, batch, cfg)

    np.testing.assert_allclose(metrics["policy_loss"], -advantage.mean(), rtol=1e-6)
    np.testing.assert_allclose(metrics["value_loss"], 0.5 * (0.1 - 1.0) ** 2, rtol=1e-6)
    probs = jax.nn.softmax(models.masked_logits(PARAMS["logits"], batch.action_mask[0]))
    entropy = -jnp.sum(jnp.where(probs > 0, probs * jnp.log(probs), 0.0))
    np.testing.assert_allclose(metrics["entropy"], entropy, rtol=1e-5)
    labels, labelled = np.array([1.0, 0, 0]), np.array([0.5, -0.5, -1.0])  # the 3 labelled cells
    bce = np.mean(np.log1p(np.exp(-labelled)) * labels + np.log1p(np.exp(labelled)) * (1 - labels))
    np.testing.assert_allclose(metrics["mine_bce"], bce, rtol=1e-5)
    expected = -advantage.mean() + 0.5 * metrics["value_loss"] - 0.01 * entropy + 0.1 * bce
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert metrics["clip_frac"] == 0.0 and abs(metrics["approx_kl"]) < 1e-6


def test_ppo_loss_gradients_are_finite_and_nonzero_and_skip_masked_logits():
    cfg = ppo.PPOConfig()
    batch = _fixed_batch(PARAMS, jnp.array([1.0, -2.0, 0.5, 3.0]))
    grads = jax.grad(lambda p: losses.ppo_loss(p, _fake_apply, batch, cfg)[0])(PARAMS)
    for name, grad in grads.items():
        assert np.isfinite(np.asarray(grad)).all(), name
        assert np.abs(np.asarray(grad)).sum() > 0, name
    np.testing.assert_array_equal(grads["logits"][jnp.array([1, 5])], 0.0)  # masked actions


def _policy_grad(batch):
    cfg = ppo.PPOConfig(normalize_advantages=False, vf_coef=0.0, ent_coef=0.0, aux_mine_weight=0.0)
    return jax.grad(lambda p: losses.ppo_loss(p, _fake_apply, batch, cfg)[0])(PARAMS)["logits"]


def test_policy_loss_is_clipped_when_the_ratio_overshoots_a_positive_advantage():
    # ratio = e^0.5 ~ 1.65 > 1 + clip_eps: no further push in the advantage's direction
    batch = _fixed_batch(PARAMS, jnp.ones(4), log_prob_shift=0.5)
    cfg = ppo.PPOConfig(normalize_advantages=False)
    _, metrics = losses.ppo_loss(PARAMS, _fake_apply, batch, cfg)
    assert metrics["clip_frac"] == 1.0
    np.testing.assert_allclose(metrics["policy_loss"], -1.2, rtol=1e-6)
    np.testing.assert_array_equal(_policy_grad(batch), 0.0)


def test_policy_loss_is_not_clipped_when_a_large_ratio_meets_a_negative_advantage():
    batch = _fixed_batch(PARAMS, -jnp.ones(4), log_prob_shift=0.5)
    assert np.abs(np.asarray(_policy_grad(batch))).sum() > 0


def test_value_loss_takes_the_clipped_branch_when_it_is_worse():
    cfg = ppo.PPOConfig(clip_eps_v=0.2)
    params = {**PARAMS, "value": jnp.array(1.0)}  # moved 1.0 from the rollout value 0
    batch = _fixed_batch(params, jnp.ones(4), value=jnp.zeros(4), target=jnp.full(4, 2.0))
    _, metrics = losses.ppo_loss(params, _fake_apply, batch, cfg)
    np.testing.assert_allclose(metrics["value_loss"], 0.5 * (0.2 - 2.0) ** 2, rtol=1e-6)
    value_grad = jax.grad(lambda p: losses.ppo_loss(p, _fake_apply, batch, cfg)[1]["value_loss"])(params)
    assert value_grad["value"] == 0.0


# ----------------------------------------------------------------------------- configs


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_envs": 3, "steps_per_update": 3, "mini_batches": 2}, "mini_batches=2 must divide"),
        ({"num_envs": 0}, "num_envs"),
        ({"gamma": 1.5}, r"gamma=1.5 must be in \[0, 1\]"),
        ({"clip_eps": 0.0}, "clip_eps"),
        ({"lr": -1e-3}, "lr"),
        ({"ent_coef": -0.1}, "ent_coef"),
        ({"frontier_mask_until_updates": -1}, "frontier_mask_until_updates"),
        ({"num_envs": 4, "steps_per_update": 4, "mini_batches": 2, "microbatch_size": 3}, "microbatch_size=3"),
        ({"num_envs": 12, "steps_per_update": 4, "mini_batches": 1, "microbatch_size": 8}, "divisor of num_envs=12"),
        ({"random_first_click_share": 2.0}, "random_first_click_share"),
    ],
)
def test_bad_ppo_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        ppo.PPOConfig(**overrides)


def test_cosine_schedule_decays_to_zero_over_total_updates():
    cfg = ppo.PPOConfig(lr=1e-3, num_updates=10, ppo_epochs=2, mini_batches=4)
    schedule = ppo.make_lr_schedule(cfg)
    assert schedule(0) == pytest.approx(1e-3)
    assert schedule(10 * 2 * 4) == pytest.approx(0.0, abs=1e-9)
    assert ppo.make_lr_schedule(ppo.PPOConfig(anneal_lr=False, lr=1e-3))(10**6) == pytest.approx(1e-3)


# ----------------------------------------------------------------------------- training

TRAIN_ENV = ms_env.EnvConfig(H=5, W=5, mine_count=3)
TRAIN_MODEL = models.ModelConfig(channels=(16, 16), value_hidden=16, flag_actions=False)
TRAIN_PPO = ppo.PPOConfig(
    num_envs=32, steps_per_update=16, mini_batches=2, ppo_epochs=2, lr=3e-3,
    ent_coef=0.0, frontier_mask_until_updates=2, num_updates=40,
)
NUM_CALLS = 40


@pytest.fixture(scope="module")
def training_run():
    """40 calls of a one-update chunk on 5x5x3, counting how often the update is traced."""
    traces = []
    real_gae = losses.gae

    def counting_gae(*args, **kwargs):
        traces.append(1)
        return real_gae(*args, **kwargs)

    losses.gae = counting_gae
    try:
        chunk = ppo.make_ppo_chunk(TRAIN_ENV, TRAIN_MODEL, TRAIN_PPO, chunk_updates=1)
        state = ppo.init_ppo_state(jax.random.key(0), TRAIN_ENV, TRAIN_MODEL, TRAIN_PPO)
        history = []
        for _ in range(NUM_CALLS):
            state, metrics = chunk(state)
            history.append(jax.device_get(metrics))
    finally:
        losses.gae = real_gae
    metrics = {name: np.concatenate([m[name] for m in history]) for name in history[0]}
    return state, metrics, len(traces)


def test_training_metrics_are_finite_scalars_per_update(training_run):
    state, metrics, _ = training_run
    expected = {
        "loss", "policy_loss", "value_loss", "entropy", "mine_bce", "approx_kl", "clip_frac",
        "mean_reward", "episodes_finished", "win_rate_train", "invalid_rate", "grad_norm", "lr",
    }
    assert expected <= set(metrics)
    for name, values in metrics.items():
        assert values.shape == (NUM_CALLS,), name
        assert np.isfinite(values).all(), name
    assert int(state.update) == NUM_CALLS
    assert (metrics["invalid_rate"] == 0).all()  # masked sampling never plays an illegal move
    assert metrics["lr"][0] > metrics["lr"][-1] > 0


def test_frontier_mask_switches_off_at_the_configured_update_without_retracing(training_run):
    _, metrics, num_traces = training_run
    np.testing.assert_array_equal(metrics["frontier_only"][:3], [1.0, 1.0, 0.0])
    assert (metrics["off_frontier_rate"][:2] == 0).all()
    assert metrics["off_frontier_rate"][2:].max() > 0
    assert num_traces == 1


def test_train_win_rate_rises_above_the_random_start(training_run):
    _, metrics, _ = training_run
    start = metrics["win_rate_train"][2:6].mean()  # after the frontier phase, still near random
    end = metrics["win_rate_train"][-5:].mean()
    assert end > start + 0.1, (start, end)


def test_random_first_clicks_are_never_transitions_of_the_policy():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=10)  # dense: no first click wins at once
    ppo_cfg = ppo.PPOConfig(num_envs=16, steps_per_update=8, mini_batches=2, random_first_click_share=1.0)
    model_cfg = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
    state = ppo.init_ppo_state(jax.random.key(0), env_cfg, model_cfg, ppo_cfg)
    apply_fn = models.make_model(model_cfg).apply
    collect = jax.jit(ppo.collect_trajectories, static_argnums=(1, 2, 3))
    _, _, trajectory = collect(state, apply_fn, env_cfg, ppo_cfg, jnp.bool_(False))
    # a state before its first click has no mines placed, so no mine labels; 8 steps of 16
    # games start many new games, and every one was opened before the policy saw it
    assert int(trajectory.done.sum()) > 0
    assert np.asarray(trajectory.mine_label_mask).any(axis=(2, 3)).all()


def test_value_only_training_changes_the_value_head_alone_and_fits_the_outcome():
    """``trainable="value"``: every parameter outside the value head stays bit-identical
    (the agent plays as before) while the value loss falls; a bad value names the field."""
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3, progress_reward=0.0, loss_reward=0.0, step_penalty=0.0)
    ppo_cfg = ppo.PPOConfig(
        num_envs=32, steps_per_update=16, mini_batches=2, ppo_epochs=2, lr=3e-3, gamma=1.0, gae_lambda=1.0,
        frontier_mask_until_updates=0, anneal_lr=False, trainable="value",
    )
    chunk = ppo.make_ppo_chunk(env_cfg, TRAIN_MODEL, ppo_cfg, chunk_updates=30)
    state = ppo.init_ppo_state(jax.random.key(1), env_cfg, TRAIN_MODEL, ppo_cfg)
    before = jax.device_get(state.params)
    state, metrics = chunk(state)
    after = jax.device_get(state.params)
    labels = optimizers.value_head_labels(before)
    changed = jax.tree.map(lambda a, b: bool(np.any(a != b)), before, after)
    trained = [path for path, label in jax.tree_util.tree_leaves_with_path(labels) if label == "train"]
    assert len(trained) == 4  # value_hidden and value_out: kernel and bias each
    for (path, label), (_, moved) in zip(jax.tree_util.tree_leaves_with_path(labels),
                                        jax.tree_util.tree_leaves_with_path(changed)):
        assert moved == (label == "train"), jax.tree_util.keystr(path)
    value_loss = np.asarray(metrics["value_loss"])
    assert value_loss[-5:].mean() < 0.5 * value_loss[:3].mean(), value_loss
    with pytest.raises(ValueError, match="trainable"):
        ppo.PPOConfig(trainable="policy")
