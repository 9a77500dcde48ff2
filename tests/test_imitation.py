"""Imitation of the solver: the loss on fixed batches, config errors, and that it learns."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import agent as agent_lib
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import losses, models, solver
from msjax.stages import imitation

NUM_ACTIONS = 8  # a fake 2x2 board: 4 reveals, 4 flags


def _fake_apply(params, obs):
    """A 'network' whose outputs are its parameters, broadcast over the batch."""
    batch = obs.shape[0]
    return (
        jnp.broadcast_to(params["logits"], (batch, NUM_ACTIONS)),
        jnp.zeros(batch),
        jnp.broadcast_to(params["mine"], (batch, 2, 2)),
    )


PARAMS = {
    "logits": jnp.array([0.5, 1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 0.0]),
    "mine": jnp.array([[1.0, -1.0], [0.0, 2.0]]),
}


def _batch(forced_safe_rows, solver_actions, has_guess_label, label_mask=None, is_opening=None, forced_mine_rows=None):
    batch_size = len(forced_safe_rows)
    legal = jnp.array([True, True, True, False, True, True, True, False])  # cell 3 revealed
    return losses.Labelled(
        obs=jnp.zeros((batch_size, 11, 2, 2)),
        action_mask=jnp.broadcast_to(legal, (batch_size, NUM_ACTIONS)),
        forced_safe=jnp.array(forced_safe_rows),
        forced_mines=jnp.zeros((batch_size, NUM_ACTIONS), bool) if forced_mine_rows is None else jnp.array(forced_mine_rows),
        teacher_moves=jax.nn.one_hot(jnp.array(solver_actions), NUM_ACTIONS, dtype=bool),
        has_guess_label=jnp.array(has_guess_label),
        is_opening=jnp.zeros(batch_size, bool) if is_opening is None else jnp.array(is_opening),
        mine_target=jnp.broadcast_to(jnp.array([[1.0, 0.0], [0.0, 0.0]]), (batch_size, 2, 2)),
        mine_label_mask=(
            jnp.broadcast_to(jnp.array([[True, True], [True, False]]), (batch_size, 2, 2))
            if label_mask is None
            else label_mask
        ),
    )


NO_SET = [False] * NUM_ACTIONS
SAFE_0_1 = [True, True] + [False] * 6


def _probs():
    legal = jnp.array([True, True, True, False, True, True, True, False])
    return jax.nn.softmax(jnp.where(legal, PARAMS["logits"], -jnp.inf))


def test_forced_states_score_the_probability_of_playing_any_safe_cell():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0)
    batch = _batch([SAFE_0_1, NO_SET], [0, 2], [True, True])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    probs = _probs()
    np.testing.assert_allclose(metrics["policy_ce"], -np.log(probs[0] + probs[1]), rtol=1e-5)
    np.testing.assert_allclose(loss, metrics["policy_ce"], rtol=1e-6)  # guess state ignored
    np.testing.assert_allclose(metrics["forced_fraction"], 0.5)
    assert metrics["policy_accuracy"] == 1.0  # greedy move: cell 1 (cell 3 is revealed)


def test_guess_weight_adds_the_solver_moves_cross_entropy_on_guess_states():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0, guess_weight=0.5)
    batch = _batch([SAFE_0_1, NO_SET, NO_SET], [0, 2, 5], [True, True, False])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    probs = _probs()
    np.testing.assert_allclose(metrics["guess_ce"], -np.log(probs[2]), rtol=1e-5)  # state 3 unlabelled
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 0.5 * metrics["guess_ce"], rtol=1e-6)


def test_opening_weight_adds_the_solver_first_click_cross_entropy_on_opening_states_only():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0, opening_weight=2.0)
    batch = _batch([SAFE_0_1, NO_SET, NO_SET], [0, 4, 5], [True, True, True], is_opening=[False, True, False])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    probs = _probs()
    np.testing.assert_allclose(metrics["opening_ce"], -np.log(probs[4]), rtol=1e-5)  # state 2 alone
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 2.0 * metrics["opening_ce"], rtol=1e-6)
    assert metrics["guess_ce"] > 0  # measured on both guess states, weighted 0


def test_proven_mine_weight_keeps_the_policy_off_proven_mines_on_the_states_with_one():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0, proven_mine_weight=3.0)
    mines_2_5 = [False, False, True, False, False, True, False, False]  # cell 2, and a flag
    mine_3 = [False, False, False, True, False, False, False, False]  # revealed: not a legal move
    batch = _batch([SAFE_0_1, NO_SET, NO_SET], [0, 4, 4], [True, True, True], forced_mine_rows=[mines_2_5, mine_3, NO_SET])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    probs = _probs()
    np.testing.assert_allclose(metrics["proven_mine_ce"], -np.log(1 - probs[2] - probs[5]), rtol=1e-5)  # state 1 alone
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 3.0 * metrics["proven_mine_ce"], rtol=1e-6)
    unweighted, _ = losses.imitation_loss(PARAMS, _fake_apply, batch, imitation.ImitationConfig(aux_mine_weight=0.0))
    np.testing.assert_allclose(unweighted, metrics["policy_ce"], rtol=1e-6)
    grads = jax.grad(lambda p: losses.imitation_loss(p, _fake_apply, batch, cfg)[0])(PARAMS)["logits"]
    assert grads[2] > 0 and grads[1] < 0  # mass moves off the proven mine, onto the rest


def test_few_proofs_weight_adds_the_policy_term_again_on_forced_states_with_few_safe_cells():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0, few_proofs_weight=2.0, few_proofs_cells=2)
    safe_0_1_2_4 = [True, True, True, False, True, False, False, False]  # four proved cells
    safe_2 = [False, False, True] + [False] * 5
    batch = _batch([SAFE_0_1, safe_0_1_2_4, safe_2, NO_SET], [0, 0, 2, 5], [True] * 4)
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    probs = _probs()
    few = [-np.log(probs[0] + probs[1]), -np.log(probs[2])]  # states 0 and 2: 2 and 1 cells
    forced = few + [-np.log(probs[0] + probs[1] + probs[2] + probs[4])]
    np.testing.assert_allclose(metrics["few_proofs_ce"], np.mean(few), rtol=1e-5)
    np.testing.assert_allclose(metrics["policy_ce"], np.mean(forced), rtol=1e-5)
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 2.0 * metrics["few_proofs_ce"], rtol=1e-6)
    np.testing.assert_array_equal(losses.has_few_proofs(batch, 2), [True, False, True, False])
    np.testing.assert_array_equal(losses.has_few_proofs(batch, 1), [False, False, True, False])
    off, off_metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, dataclasses.replace(cfg, few_proofs_weight=0.0))
    np.testing.assert_allclose(off, metrics["policy_ce"], rtol=1e-6)  # measured, weighted 0
    np.testing.assert_allclose(off_metrics["few_proofs_ce"], metrics["few_proofs_ce"], rtol=1e-6)


def test_proof_bce_weight_reads_every_reveal_logit_as_proven_safe_or_not_on_forced_states():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.0, proof_bce_weight=2.0)
    batch = _batch([SAFE_0_1, NO_SET], [0, 2], [True, True])  # the guess state does not count
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    bce = lambda x, y: -y * np.log(1 / (1 + np.exp(-x))) - (1 - y) * np.log(1 / (1 + np.exp(x)))
    # reveal logits 0.5, 1.0, -1.0 (cell 3 revealed): cells 0, 1 proved; cell 2 the one unproved legal reveal
    expected = 0.5 * ((bce(0.5, 1) + bce(1.0, 1)) / 2 + bce(-1.0, 0))
    np.testing.assert_allclose(metrics["proof_bce"], expected, rtol=1e-5)
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 2.0 * metrics["proof_bce"], rtol=1e-6)
    off, _ = losses.imitation_loss(PARAMS, _fake_apply, batch, dataclasses.replace(cfg, proof_bce_weight=0.0))
    np.testing.assert_allclose(off, metrics["policy_ce"], rtol=1e-6)
    # the set cross-entropy ignores a shift of every logit; this term does not
    shifted = {**PARAMS, "logits": PARAMS["logits"] + 3.0}
    _, shifted_metrics = losses.imitation_loss(shifted, _fake_apply, batch, cfg)
    np.testing.assert_allclose(shifted_metrics["policy_ce"], metrics["policy_ce"], rtol=1e-5)
    assert shifted_metrics["proof_bce"] > metrics["proof_bce"]  # the unproved cell 2 now reads as safe
    grads = jax.grad(lambda p: losses.imitation_loss(p, _fake_apply, batch, cfg)[0])(PARAMS)["logits"]
    off_grads = jax.grad(lambda p: losses.imitation_loss(p, _fake_apply, batch, dataclasses.replace(cfg, proof_bce_weight=0.0))[0])(PARAMS)["logits"]
    assert grads[0] < off_grads[0] and grads[2] > off_grads[2]  # the proved cell up, the unproved down
    np.testing.assert_allclose(grads[3], 0.0)  # a revealed cell is no label


def test_proof_bce_weight_learns_to_tell_every_proved_cell_from_the_rest():
    batch = _batch([SAFE_0_1], [0], [True])
    # proved cell 0 already holds the policy's mass, proved cell 1 reads as unproved
    start = {"logits": jnp.array([4.0, -2.0, 0.0, 0.0, -3.0, -3.0, -3.0, 0.0]), "mine": PARAMS["mine"]}

    def trained(weight):
        cfg = imitation.ImitationConfig(aux_mine_weight=0.0, proof_bce_weight=weight)
        grad_fn = jax.jit(jax.grad(lambda p: losses.imitation_loss(p, _fake_apply, batch, cfg)[0]))
        params = start
        for _ in range(200):
            params = jax.tree.map(lambda x, g: x - 0.5 * g, params, grad_fn(params))
        return jax.nn.sigmoid(params["logits"])

    with_term, without = trained(1.0), trained(0.0)
    assert with_term[0] > 0.8 and with_term[1] > 0.8 and with_term[2] < 0.2  # every proved cell, and no other
    assert without[1] < 0.5  # the set cross-entropy alone is content with cell 0


def test_mine_bce_counts_only_labelled_cells():
    cfg = imitation.ImitationConfig(aux_mine_weight=2.0)
    batch = _batch([SAFE_0_1], [0], [True])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    # labelled cells (0,0) mine logit 1, (0,1) safe logit -1, (1,0) safe logit 0
    expected = np.mean([np.log1p(np.exp(-1.0)), np.log1p(np.exp(-1.0)), np.log(2.0)])
    np.testing.assert_allclose(metrics["mine_bce"], expected, rtol=1e-5)
    np.testing.assert_allclose(loss, metrics["policy_ce"] + 2.0 * expected, rtol=1e-5)
    grads = jax.grad(lambda p: losses.imitation_loss(p, _fake_apply, batch, cfg)[0])(PARAMS)
    assert grads["mine"][1, 1] == 0.0 and np.isfinite(np.asarray(grads["logits"])).all()


def test_loss_shares_sum_to_the_loss_state_by_state():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.5, guess_weight=0.3)
    safe_2 = [False, False, True] + [False] * 5  # logit -1: the least likely legal reveal
    batch = _batch([SAFE_0_1, safe_2, NO_SET, SAFE_0_1], [0, 2, 2, 1], [True, True, True, True])
    loss, metrics = losses.imitation_loss(PARAMS, _fake_apply, batch, cfg)
    outputs = _fake_apply(PARAMS, batch.obs)
    shares, share_metrics = losses.imitation_loss_shares(outputs[0], outputs[2], batch, cfg)
    chex.assert_shape(shares, (4,))
    np.testing.assert_allclose(jnp.sum(shares), loss, rtol=1e-6)
    chex.assert_trees_all_close(share_metrics, metrics, rtol=1e-6)
    probs = _probs()
    forced_ce = -np.log([probs[0] + probs[1], probs[2], probs[0] + probs[1]]) / 3  # three forced states
    forced_shares = np.asarray(shares)[[0, 1, 3]]  # their mine terms are equal: they differ by the set CE
    np.testing.assert_allclose(forced_shares - forced_shares[0], forced_ce - forced_ce[0], atol=1e-6)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_envs": 0}, "num_envs"),
        ({"lr": 0.0}, "lr"),
        ({"guess_weight": -1.0}, "guess_weight"),
        ({"proven_mine_weight": -0.5}, "proven_mine_weight"),
        ({"few_proofs_weight": -1.0}, "few_proofs_weight"),
        ({"few_proofs_cells": 0}, "few_proofs_cells"),
        ({"proof_bce_weight": -1.0}, "proof_bce_weight"),
        ({"label_max_layer": 4}, r"label_max_layer=4 must be an int in \{1, 2, 3\}"),
        ({"play_max_layer": 5}, "play_max_layer"),
        ({"learner_fraction": 1.5}, r"learner_fraction=1.5 must be in \[0, 1\]"),
        ({"num_envs": 4, "steps_per_update": 2, "microbatch_size": 3}, "microbatch_size=3 must be 0 \\(off\\)"),
        ({"random_first_click_share": -0.5}, "random_first_click_share"),
    ],
)
def test_bad_imitation_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        imitation.ImitationConfig(**overrides)


@pytest.mark.parametrize("carry_beliefs", [False, True])
def test_imitation_learns_the_forced_moves_and_the_first_click_of_a_small_board(carry_beliefs):
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=True)
    model_cfg = models.ModelConfig(channels=(16, 16), value_hidden=8, flag_actions=False, carry_beliefs=carry_beliefs)
    il_cfg = imitation.ImitationConfig(  # layer 1: quick to compile
        num_envs=32, num_updates=240, lr=3e-3, play_max_layer=1, label_max_layer=1, opening_weight=1.0,
    )
    assert il_cfg.forward_is_shared or not carry_beliefs
    state = imitation.init_imitation_state(jax.random.key(0), env_cfg, model_cfg, il_cfg)
    chunk = imitation.make_imitation_chunk(env_cfg, model_cfg, il_cfg, chunk_updates=240)
    state, metrics = chunk(state)
    metrics = jax.device_get(metrics)
    for name, values in metrics.items():
        assert values.shape == (240,) and np.isfinite(values).all(), name
    assert int(state.update) == 240
    if carry_beliefs:  # each game's mine beliefs, handed on to its next update
        chex.assert_shape(state.beliefs, (32, 5, 5))
        assert 0.0 <= float(state.beliefs.min()) and float(state.beliefs.max()) <= 1.0
    else:
        assert state.beliefs is None
    early, late = metrics["loss"][5:35].mean(), metrics["loss"][-30:].mean()
    assert late < 0.7 * early, (early, late)
    assert metrics["policy_accuracy"][-30:].mean() > metrics["policy_accuracy"][5:35].mean() + 0.1
    assert (metrics["learner_win_rate"] <= 1.0).all() and (metrics["learner_win_rate"] >= 0).any()
    # the opening term: its loss falls and the greedy network opens where the solver does
    assert metrics["opening_ce"][-30:].mean() < 0.5 * metrics["opening_ce"][:10].mean()
    trained = agent_lib.Agent(params=state.params, model_cfg=model_cfg, env_cfg=env_cfg)
    assert trained.carries_beliefs == carry_beliefs
    row, col = solver.first_click(env_cfg)
    assert int(trained.act(ms_env.reset(jax.random.key(1), env_cfg))) == row * env_cfg.W + col
    # and it wins more than a random player on the same boards
    trained = evaluate_lib.evaluate(trained, env_cfg, 200, seed=3)
    random = evaluate_lib.evaluate(agent_lib.RandomAgent(env_cfg), env_cfg, 200, seed=3)
    assert trained["win_rate"] > random["win_rate"] + 0.1, (trained["win_rate"], random["win_rate"])


def test_random_first_clicks_open_the_games_before_the_solver_or_learner_plays():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=10)  # dense: no first click wins at once
    model_cfg = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
    il_cfg = imitation.ImitationConfig(
        num_envs=16, play_max_layer=1, label_max_layer=1, random_first_click_share=1.0
    )
    state = imitation.init_imitation_state(jax.random.key(0), env_cfg, model_cfg, il_cfg)
    play = jax.jit(imitation.play_and_label, static_argnums=(3, 4, 5))
    apply_fn = models.make_model(model_cfg).apply
    _, _, labelled, _ = play(state.env_states, state.key, state.params, apply_fn, env_cfg, il_cfg)
    # every labelled state comes after its first click: its hidden cells carry mine labels
    assert np.asarray(labelled.mine_label_mask).any(axis=(1, 2)).all()


def test_the_shared_forward_pass_is_the_update_of_the_separate_one():
    """With one labelled step an update, the learner plays with the gradient pass's logits
    (``forward_is_shared``); ``share_forward=False`` gives its games a network pass of their
    own, then the gradient pass: the same update."""
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=True)
    model_cfg = models.ModelConfig(channels=(8, 8), value_hidden=8, flag_actions=False)
    shared = imitation.ImitationConfig(num_envs=16, play_max_layer=2, label_max_layer=2, proven_mine_weight=1.0)
    separate = dataclasses.replace(shared, share_forward=False)
    assert shared.forward_is_shared and not separate.forward_is_shared
    for overrides in ({"steps_per_update": 2}, {"learner_fraction": 0.0}, {"microbatch_size": 8}):
        assert not dataclasses.replace(shared, **overrides).forward_is_shared, overrides
    ends = []
    for il_cfg in (shared, separate):
        state = imitation.init_imitation_state(jax.random.key(3), env_cfg, model_cfg, il_cfg)
        state, metrics = jax.jit(imitation.imitation_chunk_fn(env_cfg, model_cfg, il_cfg, 30))(state)
        ends.append((state, metrics))
    (one, one_metrics), (two, two_metrics) = ends
    np.testing.assert_array_equal(one.env_states.revealed, two.env_states.revealed)  # the same moves
    # the policy head's bias shifts every reveal logit alike: the softmax losses give it no
    # gradient but float noise, which Adam scales up, so it is the one leaf left out
    without_shift = lambda params: {**params["params"], "policy_head": params["params"]["policy_head"]["kernel"]}  # noqa: E731
    chex.assert_trees_all_close(without_shift(one.params), without_shift(two.params), atol=1e-5, rtol=1e-4)
    for name in ("loss", "policy_ce", "mine_bce", "learner_win_rate", "solver_win_rate"):
        np.testing.assert_allclose(one_metrics[name], two_metrics[name], atol=1e-5, rtol=1e-4, err_msg=name)
    assert int(np.sum(np.asarray(one_metrics["learner_win_rate"]) >= 0)) > 0  # learner games finished


def test_the_beliefs_handed_on_are_the_gradient_passs_on_each_games_state():
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=True)
    model_cfg = models.ModelConfig(channels=(8, 8), value_hidden=8, flag_actions=False, carry_beliefs=True)
    il_cfg = imitation.ImitationConfig(num_envs=8, play_max_layer=1, label_max_layer=1)
    state = imitation.init_imitation_state(jax.random.key(4), env_cfg, model_cfg, il_cfg)
    state, _ = jax.jit(imitation.imitation_chunk_fn(env_cfg, model_cfg, il_cfg, 2))(state)  # games under way
    state = state.replace(beliefs=jax.random.uniform(jax.random.key(5), (8, 5, 5)))
    apply_fn = models.make_model(model_cfg).apply
    optimizer = imitation.make_optimizer(il_cfg)
    learn = jax.jit(imitation.learn_and_play, static_argnums=(1, 2, 3, 4))
    *_, beliefs = learn(state, apply_fn, optimizer, env_cfg, il_cfg)
    # the same labelled states (the same key), the network before the step, each game's prior
    step = jax.jit(imitation.label_states, static_argnums=(2, 3))(state.env_states, state.key, env_cfg, il_cfg)
    prior = models.carried_prior(state.beliefs, step.env_states.revealed)
    _, _, mine_logits = apply_fn(state.params, step.labelled.obs, prior)
    np.testing.assert_allclose(beliefs, jax.nn.sigmoid(mine_logits), rtol=1e-5, atol=1e-6)
    without = apply_fn(state.params, step.labelled.obs, None)[2]
    assert float(jnp.max(jnp.abs(without - mine_logits))) > 1e-4  # the prior was read
    with pytest.raises(ValueError, match="carry_beliefs=True needs imitation.forward_is_shared"):
        imitation.imitation_chunk_fn(env_cfg, model_cfg, dataclasses.replace(il_cfg, steps_per_update=2), 2)
    with pytest.raises(ValueError, match="carry_beliefs=True needs imitation.random_first_click_share=0"):
        imitation.imitation_chunk_fn(env_cfg, model_cfg, dataclasses.replace(il_cfg, random_first_click_share=0.5), 2)
