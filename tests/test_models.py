"""The network: shapes, action layout, board-size independence, bf16, config errors."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env as ms_env
from msjax import models

TINY = models.ModelConfig(channels=(8, 8), value_hidden=8)


@functools.partial(jax.jit, static_argnums=0)
def apply(cfg, params, obs):
    """The network's outputs, compiled as one program (op by op, each op compiles alone: slower)."""
    return models.make_model(cfg).apply(params, obs)


_observe_games = jax.jit(jax.vmap(ms_env.observe, in_axes=(0, None)), static_argnums=1)


def _obs(env_cfg, batch=3, seed=0):
    states = ms_env.batch_reset(jax.random.key(seed), env_cfg, batch)
    states, *_ = ms_env.batch_step(states, jnp.zeros(batch, jnp.int32), env_cfg)
    return _observe_games(states, env_cfg)


def test_heads_have_the_documented_shapes():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3)
    params = models.init_params(jax.random.key(0), TINY, env_cfg)
    logits, value, mine_logits = apply(TINY, params, _obs(env_cfg))
    assert logits.shape == (3, 2 * 25) and logits.dtype == jnp.float32
    assert value.shape == (3,) and value.dtype == jnp.float32
    assert mine_logits.shape == (3, 5, 5) and mine_logits.dtype == jnp.float32


def test_one_set_of_weights_runs_on_any_board_size():
    params = models.init_params(jax.random.key(0), TINY, ms_env.EnvConfig(H=5, W=5, mine_count=3))
    wide = ms_env.EnvConfig(H=4, W=7, mine_count=3)
    logits, value, mine_logits = apply(TINY, params, _obs(wide, batch=2))
    assert logits.shape == (2, 2 * 28) and value.shape == (2,) and mine_logits.shape == (2, 4, 7)


def test_logits_list_all_reveals_then_all_flags_in_row_major_order():
    env_cfg = ms_env.EnvConfig(H=3, W=4, mine_count=2)
    params = models.init_params(jax.random.key(0), TINY, env_cfg)
    model = models.make_model(TINY)
    (logits, _, _), state = model.apply(params, _obs(env_cfg, batch=2), capture_intermediates=True)
    per_cell = state["intermediates"]["policy_head"]["__call__"][0]  # [B, H, W, (reveal, flag)]
    np.testing.assert_array_equal(logits[:, :12], per_cell[..., 0].reshape(2, 12))
    np.testing.assert_array_equal(logits[:, 12:], per_cell[..., 1].reshape(2, 12))
    # cell (r, c) = (1, 2) is reveal action 1*4 + 2 and flag action 12 + 6
    assert logits[0, 6] == per_cell[0, 1, 2, 0] and logits[0, 18] == per_cell[0, 1, 2, 1]


def test_a_reveal_only_policy_gives_every_flag_the_lowest_logit():
    env_cfg = ms_env.EnvConfig(H=4, W=5, mine_count=3)
    cfg = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
    params = models.init_params(jax.random.key(0), cfg, env_cfg)
    logits, _, _ = apply(cfg, params, _obs(env_cfg))
    assert logits.shape == (3, 40)
    assert (logits[:, 20:] == jnp.finfo(jnp.float32).min).all()
    assert np.isfinite(np.asarray(logits)).all() and (logits[:, :20] > -100).all()


def test_residual_variant_has_the_same_interface():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3)
    cfg = models.ModelConfig(residual=True, num_res_blocks=2, res_channels=8, value_hidden=8)
    params = models.init_params(jax.random.key(0), cfg, env_cfg)
    logits, value, mine_logits = apply(cfg, params, _obs(env_cfg))
    assert logits.shape == (3, 50) and value.shape == (3,) and mine_logits.shape == (3, 5, 5)
    assert "ResidualBlock_1" in params["params"]


def test_patch_convolution_matches_xla_convolution_with_the_same_params():
    env_cfg = ms_env.EnvConfig(H=5, W=6, mine_count=3)
    patches = models.ModelConfig(channels=(8, 12), value_hidden=8, conv_impl="patches")
    xla = models.ModelConfig(channels=(8, 12), value_hidden=8, conv_impl="xla")
    params = models.init_params(jax.random.key(0), patches, env_cfg)
    assert jax.tree.structure(params) == jax.tree.structure(models.init_params(jax.random.key(0), xla, env_cfg))
    obs = _obs(env_cfg)
    for a, b in zip(apply(patches, params, obs), apply(xla, params, obs)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_remat_keeps_the_parameters_and_the_gradient():
    env_cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)
    plain = models.ModelConfig(residual=True, num_res_blocks=1, res_channels=8, value_hidden=8)
    remat = models.ModelConfig(residual=True, num_res_blocks=1, res_channels=8, value_hidden=8, remat=True)
    params = models.init_params(jax.random.key(0), plain, env_cfg)
    assert jax.tree.structure(params) == jax.tree.structure(models.init_params(jax.random.key(0), remat, env_cfg))
    obs = _obs(env_cfg)

    def gradient(cfg):
        return jax.jit(jax.grad(lambda p: sum(jnp.sum(out) for out in models.make_model(cfg).apply(p, obs))))(params)

    for a, b in zip(jax.tree.leaves(gradient(plain)), jax.tree.leaves(gradient(remat))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bfloat16_computes_in_bf16_but_keeps_float32_params_and_outputs():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3)
    bf16 = models.ModelConfig(channels=(8, 8), value_hidden=8, dtype="bfloat16")
    params = models.init_params(jax.random.key(0), bf16, env_cfg)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(params))
    obs = _obs(env_cfg)
    low = apply(bf16, params, obs)
    full = apply(TINY, params, obs)
    for low_out, full_out in zip(low, full):
        assert low_out.dtype == jnp.float32
        np.testing.assert_allclose(low_out, full_out, atol=0.1, rtol=0.1)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("channels", (), "channels"),
        ("channels", (8, 6), "multiple of 4"),
        ("num_res_blocks", 0, "num_res_blocks"),
        ("res_channels", 10, "res_channels"),
        ("value_hidden", 0, "value_hidden"),
        ("dtype", "float16", "dtype"),
        ("flag_actions", 1, "flag_actions"),
        ("conv_impl", "cudnn", "conv_impl"),
        ("recycles", 5, "recycles"),
        ("recycles", True, "recycles"),
        ("carry_beliefs", 1, "carry_beliefs"),
    ],
)
def test_bad_model_configs_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        models.ModelConfig(**{field: value})


def test_recycling_reruns_the_same_tower_with_the_mine_beliefs_as_one_more_plane():
    env_cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)
    recycled = models.ModelConfig(channels=(8, 8), value_hidden=8, recycles=1)
    plain_params = models.init_params(jax.random.key(0), TINY, env_cfg)
    params = models.init_params(jax.random.key(0), recycled, env_cfg)
    assert jax.tree.structure(params) == jax.tree.structure(plain_params)  # the same weights, no new ones
    first_kernel = params["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"]
    plain_kernel = plain_params["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"]
    assert first_kernel.shape[2] == plain_kernel.shape[2] + 1  # the belief plane

    # A plain network's weights with a zero belief slot (with_belief_plane): the first pass
    # sees zero beliefs and the second repeats it, so it plays exactly as the plain one.
    widened = models.with_belief_plane(plain_params)
    chex.assert_trees_all_equal_shapes(widened, params)
    np.testing.assert_array_equal(widened["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"][:, :, :-1], plain_kernel)
    obs = _obs(env_cfg)
    for a, b in zip(apply(recycled, widened, obs), apply(TINY, plain_params, obs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # With its own weights the second pass reads the beliefs: the outputs change.
    zeroed = jax.tree.map(lambda x: x, params)
    zeroed["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"] = first_kernel.at[:, :, -1, :].set(0.0)
    moved = apply(recycled, params, obs)[2] - apply(recycled, zeroed, obs)[2]
    assert float(jnp.max(jnp.abs(moved))) > 1e-4


def test_the_carried_prior_keeps_the_beliefs_on_hidden_cells_of_a_started_game():
    beliefs = jnp.array([[[0.9, 0.2], [0.4, 0.7]], [[0.3, 0.3], [0.6, 0.1]]])
    revealed = jnp.array([[[False, True], [False, False]], [[False, False], [False, False]]])  # game 2: new
    prior = models.carried_prior(beliefs, revealed)
    np.testing.assert_allclose(prior, [[[0.9, 0.0], [0.4, 0.7]], [[0.0, 0.0], [0.0, 0.0]]])
    assert prior.dtype == jnp.float32


def test_a_carrying_network_reads_its_prior_through_the_belief_plane():
    env_cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)
    carrying = models.ModelConfig(channels=(8, 8), value_hidden=8, carry_beliefs=True)
    assert carrying.has_belief_plane and not TINY.has_belief_plane
    params = models.init_params(jax.random.key(0), carrying, env_cfg)
    obs = _obs(env_cfg)
    prior = jax.random.uniform(jax.random.key(2), (3, 4, 4))
    run = jax.jit(lambda p, o, b: models.make_model(carrying).apply(p, o, b))
    for a, b in zip(run(params, obs, None), run(params, obs, jnp.zeros((3, 4, 4)))):  # no prior: zeros
        np.testing.assert_array_equal(a, b)
    moved = run(params, obs, prior)[2] - run(params, obs, None)[2]
    assert float(jnp.max(jnp.abs(moved))) > 1e-4
    # A plain network's weights with a zero belief slot ignore the prior: it plays as the plain one.
    plain_params = models.init_params(jax.random.key(0), TINY, env_cfg)
    for a, b in zip(run(models.with_belief_plane(plain_params), obs, prior), apply(TINY, plain_params, obs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="prior belief plane needs ModelConfig.carry_beliefs"):
        models.make_model(TINY).apply(plain_params, obs, prior)
    # Averaged over the symmetries, each view reads its prior turned with it.
    symmetric = models.apply_network(params, carrying, obs, symmetric=True, prior=prior)
    flipped = models.apply_network(params, carrying, obs[..., ::-1], symmetric=True, prior=prior[..., ::-1])
    np.testing.assert_allclose(flipped[2], symmetric[2][..., ::-1], rtol=1e-4, atol=1e-5)
