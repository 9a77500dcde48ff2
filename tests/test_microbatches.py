"""Gradient accumulation over micro-batches: the same loss, metrics and gradient as the
whole batch (up to float rounding), and the same parameters after a gradient step."""

import functools

import chex
import jax
import jax.numpy as jnp
import pytest

from msjax import env as ms_env
from msjax import losses, models
from msjax.stages import batchplay, imitation, ppo

ENV = ms_env.EnvConfig(H=3, W=3, mine_count=2, guarantee_safe_neighborhood=False)
MODEL = models.ModelConfig(channels=(8,), value_hidden=8)
APPLY = models.make_model(MODEL).apply
PARAMS = models.init_params(jax.random.key(0), MODEL, ENV)
BATCH_SIZE, NUM_CELLS = 16, 9


def _random_masks(key, shape, p=0.5):
    return jax.random.bernoulli(key, p, shape)


def _ppo_batch(key) -> losses.Batch:
    """Samples whose advantages, legal moves and labelled cells all differ, so that any
    statistic taken per micro-batch instead of per batch changes the result."""
    keys = jax.random.split(key, 8)
    action_mask = _random_masks(keys[0], (BATCH_SIZE, 2 * NUM_CELLS)).at[:, 0].set(True)
    action = jax.random.categorical(keys[1], jnp.where(action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
    return losses.Batch(
        obs=jax.random.uniform(keys[2], (BATCH_SIZE, ms_env.num_channels(ENV), 3, 3)),
        action_mask=action_mask,
        action=action,
        log_prob=-jax.random.uniform(keys[3], (BATCH_SIZE,), minval=0.5, maxval=3.0),
        value=jax.random.normal(keys[4], (BATCH_SIZE,)),
        advantage=3.0 * jax.random.normal(keys[5], (BATCH_SIZE,)) + 1.0,
        target=jax.random.normal(keys[6], (BATCH_SIZE,)),
        mine_mask=_random_masks(keys[7], (BATCH_SIZE, 3, 3), 0.3),
        mine_label_mask=_random_masks(keys[0], (BATCH_SIZE, 3, 3), 0.4),
    )


def _labelled_batch(key) -> losses.Labelled:
    keys = jax.random.split(key, 8)
    action_mask = _random_masks(keys[0], (BATCH_SIZE, 2 * NUM_CELLS)).at[:, 0].set(True)
    forced = _random_masks(keys[1], (BATCH_SIZE, 2 * NUM_CELLS), 0.1) & action_mask
    return losses.Labelled(
        obs=jax.random.uniform(keys[2], (BATCH_SIZE, ms_env.num_channels(ENV), 3, 3)),
        action_mask=action_mask,
        forced_safe=forced.at[:, NUM_CELLS:].set(False),
        forced_mines=(action_mask & ~forced).at[:, NUM_CELLS:].set(False) & _random_masks(keys[7], (BATCH_SIZE, 2 * NUM_CELLS), 0.1),
        teacher_moves=jnp.zeros((BATCH_SIZE, 2 * NUM_CELLS), bool).at[:, 0].set(True),
        has_guess_label=_random_masks(keys[3], (BATCH_SIZE,), 0.7),
        is_opening=_random_masks(keys[6], (BATCH_SIZE,), 0.2),
        mine_target=jax.random.uniform(keys[4], (BATCH_SIZE, 3, 3)),
        mine_label_mask=_random_masks(keys[5], (BATCH_SIZE, 3, 3), 0.4),
    )


def _whole_and_microbatched(loss_fn, totals_fn, batch, microbatch_size=4):
    @jax.jit
    def both(params, batch):
        whole = losses.microbatched_value_and_grad(loss_fn, totals_fn, params, batch, 0)
        return whole, losses.microbatched_value_and_grad(loss_fn, totals_fn, params, batch, microbatch_size)

    return both(PARAMS, batch)


def test_accumulated_ppo_gradient_equals_the_whole_minibatch_gradient():
    cfg = ppo.PPOConfig(ent_coef=0.01, aux_mine_weight=0.5)
    whole, parts = _whole_and_microbatched(
        lambda p, b, totals: losses.ppo_loss(p, APPLY, b, cfg, totals), losses.ppo_totals, _ppo_batch(jax.random.key(1))
    )
    chex.assert_trees_all_close(parts, whole, rtol=1e-5, atol=1e-6)


def test_accumulated_imitation_gradient_equals_the_whole_batch_gradient():
    cfg = imitation.ImitationConfig(
        guess_weight=0.3, opening_weight=0.7, aux_mine_weight=0.5, proven_mine_weight=0.4, few_proofs_weight=0.6,
        proof_bce_weight=0.8,
    )
    whole, parts = _whole_and_microbatched(
        lambda p, b, totals: losses.imitation_loss(p, APPLY, b, cfg, totals),
        functools.partial(losses.imitation_totals, few_proofs_cells=cfg.few_proofs_cells),
        _labelled_batch(jax.random.key(2)),
    )
    chex.assert_trees_all_close(parts, whole, rtol=1e-5, atol=1e-6)


def test_a_ppo_gradient_step_with_micro_batches_gives_the_same_parameters():
    batch = _ppo_batch(jax.random.key(3))
    params = {}
    for microbatch_size in (0, 4):
        cfg = ppo.PPOConfig(num_envs=8, steps_per_update=4, mini_batches=2, microbatch_size=microbatch_size)
        optimizer = ppo.make_optimizer(cfg)
        step = jax.jit(lambda p, b: ppo.update_minibatch((p, optimizer.init(p)), b, APPLY, optimizer, cfg)[0][0])
        params[microbatch_size] = step(PARAMS, batch)
    chex.assert_trees_all_close(params[4], params[0], rtol=1e-5, atol=1e-7)


def test_a_forward_pass_in_micro_batches_gives_each_game_its_own_outputs():
    recycled = models.ModelConfig(channels=(8,), value_hidden=8, recycles=1)
    obs = jax.random.uniform(jax.random.key(4), (BATCH_SIZE, ms_env.num_channels(ENV), 3, 3))
    for model_cfg in (MODEL, recycled):
        apply = models.make_model(model_cfg).apply
        params = models.init_params(jax.random.key(0), model_cfg, ENV)
        forward = jax.jit(batchplay.forward_in_microbatches, static_argnums=(0, 3))
        whole = apply(params, obs)
        parts = forward(apply, params, obs, 4)
        chex.assert_trees_all_equal_shapes(parts, whole)
        chex.assert_trees_all_close(parts, whole, rtol=1e-5, atol=1e-6)


def test_a_ppo_update_with_micro_batches_gives_the_same_parameters():
    """The rollout's forward passes and the gradient steps all in micro-batches of 4 of 8 games."""
    params = {}
    for microbatch_size in (0, 4):
        cfg = ppo.PPOConfig(num_envs=8, steps_per_update=4, mini_batches=2, microbatch_size=microbatch_size,
                            frontier_mask_until_updates=0)
        state = ppo.init_ppo_state(jax.random.key(5), ENV, MODEL, cfg, params=jax.tree.map(jnp.copy, PARAMS))
        # (the chunk donates its input state)
        state, _ = ppo.make_ppo_chunk(ENV, MODEL, cfg, 1)(state)
        params[microbatch_size] = state.params
    chex.assert_trees_all_close(params[4], params[0], rtol=1e-4, atol=1e-6)


def test_a_forward_micro_batch_that_does_not_divide_the_games_is_refused():
    obs = jnp.zeros((12, ms_env.num_channels(ENV), 3, 3))
    with pytest.raises(ValueError, match="microbatch_size=5 must be 0 .off., a divisor of the number of games=12"):
        batchplay.forward_in_microbatches(APPLY, PARAMS, obs, 5)  # 12 // 5 = 2 parts would divide 12
