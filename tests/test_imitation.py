"""Imitation of the solver: the loss on fixed batches, config errors, and that it learns."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from msjax import agent as agent_lib
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import exact as exact_lib
from msjax import losses, models, optimizers, solver
from msjax.stages import gradient_states, imitation

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


def test_loss_shares_sum_to_the_loss_and_hardest_keeps_the_states_that_carry_most_of_it():
    cfg = imitation.ImitationConfig(aux_mine_weight=0.5, guess_weight=0.3, hardest_states=2)
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
    # the guess state (its cell-2 move, weighted 0.3) and the forced state on cell 2 carry the most
    chosen, batch_metrics = gradient_states.hardest(batch, (outputs[0], outputs[2]), cfg)
    np.testing.assert_array_equal(chosen.forced_safe, batch.forced_safe[jnp.array([1, 2])])
    np.testing.assert_allclose(batch_metrics["loss"], loss, rtol=1e-6)
    np.testing.assert_allclose(batch_metrics["hardest_loss_share"], (shares[1] + shares[2]) / loss, rtol=1e-5)
    assert batch_metrics["policy_accuracy"] == metrics["policy_accuracy"]  # the whole batch's


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
        ({"label_max_layer": 4}, "label_max_layer=4 must be 1, 2 or 3"),
        ({"play_max_layer": 5}, "play_max_layer"),
        ({"learner_fraction": 1.5}, r"learner_fraction=1.5 must be in \[0, 1\]"),
        ({"num_envs": 4, "steps_per_update": 2, "microbatch_size": 3}, "microbatch_size=3 must be 0 \\(off\\)"),
        ({"random_first_click_share": -0.5}, "random_first_click_share"),
        ({"num_envs": 4, "hardest_states": 5}, r"hardest_states=5 must be 0 \(off\) or an int in \[1, num_envs"),
        ({"hardest_states": -1}, "hardest_states=-1"),
        ({"solver_moves_per_label": 0}, "solver_moves_per_label=0 must be an int >= 1"),
        ({"num_envs": 8, "hardest_states": 4, "microbatch_size": 3}, "microbatch_size=3 must be .* hardest_states=4"),
        ({"solver_probabilities": "loopy"}, "solver_probabilities='loopy' must be 'bp' or 'exact'"),
        ({"mine_targets": "soft"}, "mine_targets=.soft. must be .sampled. or .exact."),
        ({"guess_targets": "exact"}, "guess_targets=.exact. must be .solver. or .safest."),
        ({"augment_symmetries": 1}, "augment_symmetries=1 must be a bool"),
        ({"optimizer": "sgd"}, r"optimizer='sgd' must be one of \('adamw', 'muon'\)"),
        ({"play_lookahead": -1}, "play_lookahead=-1 must be an int >= 0"),
        ({"play_lookahead": 6}, "play_lookahead=6 needs solver_probabilities='exact'"),
        ({"play_lookahead_depth": 3}, "play_lookahead_depth=3 must be 0, 1 or 2"),
        ({"solver_probabilities": "exact", "play_lookahead_depth": 1}, "play_lookahead_depth=1 needs play_lookahead"),
        ({"solver_probabilities": "exact", "play_endgame_layouts": 129}, r"play_endgame_layouts=129 must be 0 \(off\)"),
        ({"play_endgame_layouts": 8}, "play_endgame_layouts=8 needs solver_probabilities='exact'"),
    ],
)
def test_bad_imitation_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        imitation.ImitationConfig(**overrides)


def test_muon_orthogonalises_the_kernels_and_leaves_every_other_leaf_to_adamw():
    params = models.init_params(jax.random.key(0), models.ModelConfig(channels=(8, 8), value_hidden=4),
                                ms_env.EnvConfig(H=5, W=5, mine_count=4))
    # gradients near one direction (a large rank-one part): far from orthogonal as they come
    grads = jax.tree.map(lambda leaf: 1.0 + 0.1 * jax.random.normal(jax.random.key(leaf.size), leaf.shape), params)
    raw = np.linalg.svd(np.asarray(grads["params"]["ConvBlock_1"]["Conv3x3_0"]["kernel"]).reshape(-1, 8), compute_uv=False)
    assert raw.min() < 0.1 * raw.max()
    schedule = optimizers.lr_schedule(1e-2, 10, anneal=False)
    muon = optimizers.clipped_optimizer("muon", schedule, max_grad_norm=1e9, weight_decay=0.0)
    adamw = optax.adamw(schedule, weight_decay=0.0, nesterov=True)  # optax's muon's own, for the rest
    by_muon, _ = muon.update(grads, muon.init(params), params)
    by_adamw, _ = adamw.update(grads, adamw.init(params), params)
    for (path, update), adamw_update in zip(jax.tree.leaves_with_path(by_muon), jax.tree.leaves(by_adamw)):
        name = jax.tree_util.keystr(path)
        if update.ndim == 4:  # [3, 3, C, F] as the [9C, F] matrix: its singular values all alike
            singular = np.linalg.svd(np.asarray(update).reshape(-1, update.shape[-1]), compute_uv=False)
            assert singular.min() > 0.5 * singular.max(), (name, singular)
        else:  # (Nesterov) AdamW's first step on the same gradient
            chex.assert_trees_all_close(update, adamw_update, atol=1e-7, custom_message=name)


def test_the_search_player_can_be_the_teacher():
    cfg = imitation.ImitationConfig(solver_probabilities="exact", play_lookahead=6, play_lookahead_depth=2,
                                    play_endgame_layouts=8)
    teacher = cfg.play_guess.config
    assert (teacher.lookahead_candidates, teacher.lookahead_score, teacher.lookahead_depth) == (6, "survival", 2)
    assert teacher.lookahead_tolerance == imitation.SURVIVAL_TOLERANCE and teacher.endgame_layouts == 8
    assert cfg.play_solver.probabilities == "exact"
    assert imitation.ImitationConfig(solver_probabilities="exact").play_guess is None  # the rule solver's own guess
    progress = imitation.ImitationConfig(solver_probabilities="exact", play_lookahead=6).play_search
    assert (progress.lookahead_score, progress.lookahead_tolerance) == ("progress", 0.0)


def test_the_solver_games_move_unlabelled_between_labels_and_the_learner_games_do_not():
    env_cfg = ms_env.EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=True)
    il_cfg = imitation.ImitationConfig(num_envs=8, play_max_layer=1, label_max_layer=1, solver_moves_per_label=3)
    state = imitation.init_imitation_state(jax.random.key(0), env_cfg, models.ModelConfig(channels=(4,)), il_cfg)
    by_learner = jnp.arange(8) < il_cfg.num_learner_games  # the first 4
    advance = jax.jit(imitation.advance_solver_games, static_argnums=(3, 4))
    games, key, (finished, won) = advance(state.env_states, state.key, by_learner, env_cfg, il_cfg)
    assert not np.array_equal(key, state.key)
    chex.assert_trees_all_equal(jax.tree.map(lambda x: x[:4], games), jax.tree.map(lambda x: x[:4], state.env_states))
    opened = np.asarray(games.revealed[4:].sum(axis=(1, 2)))
    unfinished = ~np.asarray(games.done[4:]) & (np.asarray(games.step_count[4:]) > 0)
    assert (opened > 0).all()  # every solver game made its first click (a safe opening) at least
    assert (np.asarray(games.step_count[4:])[unfinished] == 2).all()  # two moves each, where none restarted
    assert int(finished[1]) == int(won[1]) == 0 and 0 <= int(won[0]) <= int(finished[0]) <= 4
    once = dataclasses.replace(il_cfg, solver_moves_per_label=1)
    same, same_key, _ = imitation.advance_solver_games(state.env_states, state.key, by_learner, env_cfg, once)
    assert same is state.env_states and same_key is state.key


@pytest.mark.parametrize(  # all states, or the gradient on the hardest half; Muon on the kernels; carried beliefs
    ("hardest_states", "optimizer", "carry_beliefs"),
    [(0, "adamw", False), (16, "adamw", False), (0, "muon", False), (0, "adamw", True)],
)
def test_imitation_learns_the_forced_moves_and_the_first_click_of_a_small_board(hardest_states, optimizer, carry_beliefs):
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=True)
    model_cfg = models.ModelConfig(channels=(16, 16), value_hidden=8, flag_actions=False, carry_beliefs=carry_beliefs)
    il_cfg = imitation.ImitationConfig(  # layer 1: quick to compile
        num_envs=32, num_updates=240, lr=3e-3, play_max_layer=1, label_max_layer=1, opening_weight=1.0,
        hardest_states=hardest_states, optimizer=optimizer,
    )
    assert il_cfg.forward_is_shared or not carry_beliefs
    state = imitation.init_imitation_state(jax.random.key(0), env_cfg, model_cfg, il_cfg)
    chunk = imitation.make_imitation_chunk(env_cfg, model_cfg, il_cfg, num_updates=240)
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
    if hardest_states:  # the chosen half carries more than half of the loss
        assert (metrics["hardest_loss_share"] > 0.5).all() and (metrics["hardest_loss_share"] <= 1 + 1e-6).all()
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
    _, _, labelled, _, _ = play(state.env_states, state.key, state.params, apply_fn, env_cfg, il_cfg)
    # every labelled state comes after its first click: its hidden cells carry mine labels
    assert np.asarray(labelled.mine_label_mask).any(axis=(1, 2)).all()


def test_exact_solver_probabilities_reach_the_labelling_and_the_playing_solver():
    il_cfg = imitation.ImitationConfig(solver_probabilities="exact", label_max_layer=3)
    assert il_cfg.label_solver.probabilities == "exact" and il_cfg.play_solver.probabilities == "exact"
    assert imitation.ImitationConfig().label_solver.probabilities == "bp"


def test_safest_cells_are_the_hidden_cells_within_the_tolerance_of_the_lowest_probability():
    mine_prob = jnp.array([[[0.0, 0.2, 0.2 + 5e-5], [0.2 + 2e-4, 0.5, 0.1]]])
    hidden = jnp.array([[[False, True, True], [True, True, False]]])  # the 0 and the 0.1 are revealed
    expected = [[[False, True, True], [False, False, False]]]
    np.testing.assert_array_equal(imitation.safest_cells(mine_prob, hidden), expected)


@pytest.mark.parametrize("height, width", [(3, 3), (2, 3)])
def test_symmetry_augmentation_moves_each_state_and_its_labels_together(height, width):
    batch_size, cells = 64, height * width
    keys = jax.random.split(jax.random.key(0), 5)
    masks = [jax.random.bernoulli(k, 0.5, (batch_size, cells)) for k in keys[:4]]
    as_board = lambda x: x.reshape(batch_size, height, width)
    mine_target = jax.random.uniform(keys[4], (batch_size, height, width))
    channels = [mine_target] + [as_board(m).astype(jnp.float32) for m in masks]
    no_flags = jnp.zeros((batch_size, cells), bool)
    batch = losses.Labelled(
        obs=jnp.stack(channels, axis=1),
        action_mask=jnp.concatenate([masks[0], no_flags], axis=1),
        forced_safe=jnp.concatenate([masks[1], no_flags], axis=1),
        forced_mines=jnp.concatenate([masks[1] & masks[2], no_flags], axis=1),
        teacher_moves=jnp.concatenate([masks[2], no_flags], axis=1),
        has_guess_label=jnp.ones(batch_size, bool),
        is_opening=jnp.zeros(batch_size, bool),
        mine_target=mine_target,
        mine_label_mask=as_board(masks[3]),
    )
    moved = gradient_states.augment_with_symmetries(batch, jax.random.key(1), height, width)
    chex.assert_trees_all_equal_shapes(moved, batch)
    reveals = lambda x: np.asarray(x)[:, :cells].reshape(batch_size, height, width)
    labels = [moved.mine_target, reveals(moved.action_mask), reveals(moved.forced_safe),
              reveals(moved.teacher_moves), moved.mine_label_mask]
    for channel, label in enumerate(labels):  # the labels went where their planes went
        np.testing.assert_array_equal(np.asarray(moved.obs)[:, channel], np.asarray(label, np.float32))
    both = np.asarray(moved.obs)[:, 2] * np.asarray(moved.obs)[:, 3]  # forced_mines: forced_safe & teacher_moves
    np.testing.assert_array_equal(reveals(moved.forced_mines), both.astype(bool))
    assert not np.asarray(moved.action_mask)[:, cells:].any()
    group = models.board_symmetries(height, width)
    used = set()
    for i in range(batch_size):
        found = [g for g in group if np.array_equal(models.transform_board(batch.obs[i], g), moved.obs[i])]
        assert found, i
        used.add(found[0])
    assert len(used) == len(group)  # 64 draws reach every symmetry


@pytest.mark.parametrize("mine_targets", ["exact", "sampled"])
def test_exact_targets_are_the_exact_probabilities_and_the_safest_cells(mine_targets):
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=5)
    model_cfg = models.ModelConfig(channels=(8,), value_hidden=8, flag_actions=False)
    il_cfg = imitation.ImitationConfig(
        num_envs=16, play_max_layer=1, label_max_layer=1, learner_fraction=0.0,
        mine_targets=mine_targets, guess_targets="safest",
    )
    state = imitation.init_imitation_state(jax.random.key(0), env_cfg, model_cfg, il_cfg)
    play = jax.jit(imitation.play_and_label, static_argnums=(3, 4, 5))
    apply_fn = models.make_model(model_cfg).apply
    env_states, key = state.env_states, state.key
    first = solver.first_click(env_cfg)
    seen = {"forced": 0, "guess": 0, "mines": 0}
    for _ in range(5):
        before = env_states
        env_states, key, labelled, _, _ = play(env_states, key, state.params, apply_fn, env_cfg, il_cfg)
        before, labelled = jax.device_get((before, labelled))
        for g in range(il_cfg.num_envs):
            hidden = ~before.revealed[g]
            moves = labelled.teacher_moves[g].reshape(2, 5, 5)
            mines = labelled.forced_mines[g].reshape(2, 5, 5)
            assert not moves[1].any() and not mines[1].any()
            if before.done[g] or not before.first_click_done[g]:
                assert not mines.any()
            if before.done[g]:
                continue
            if not before.first_click_done[g]:  # the opening: the solver's first click alone
                assert labelled.is_opening[g] and moves[0][first] and moves[0].sum() == 1
                continue
            forced = labelled.forced_safe[g].any()
            seen["forced" if forced else "guess"] += 1
            counts = np.where(before.revealed[g], before.counts[g], 0)
            prob = exact_lib.analyse(before.revealed[g], counts, int(before.mine_count[g])).mine_prob
            target = labelled.mine_target[g][hidden]
            assert (prob[mines[0]] > 1 - 1e-5).all() and not (mines[0] & ~hidden).any()  # the layers' proofs
            seen["mines"] += int(mines[0].any())
            if mine_targets == "exact":  # 5x5 views are within the device analysis' limits
                np.testing.assert_allclose(target, prob[hidden], atol=1e-5)
            else:
                np.testing.assert_array_equal(target, before.mine_mask[g][hidden])
            if forced and mine_targets == "sampled":  # not analysed: the solver's move
                assert moves[0].sum() == 1
                continue
            assert moves[0].any() and not (moves[0] & ~hidden).any()
            np.testing.assert_allclose(prob[moves[0]], prob[hidden].min(), atol=1e-4)
            outside = hidden & ~moves[0]
            assert (prob[outside] > prob[hidden].min() + 1e-5).all()
            if prob[hidden].min() == 0.0:  # a proof: no safest cell is a mine
                assert not (moves[0] & before.mine_mask[g]).any()
    assert seen["forced"] >= 10 and seen["guess"] >= 5 and seen["mines"] >= 5, seen


def test_the_shared_forward_pass_is_the_update_of_the_separate_one():
    """With one labelled step an update, the learner plays with the gradient pass's logits
    (``forward_is_shared``); ``share_forward=False`` gives its games a network pass of their
    own, then the gradient pass: the same update."""
    env_cfg = ms_env.EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=True)
    model_cfg = models.ModelConfig(channels=(8, 8), value_hidden=8, flag_actions=False)
    shared = imitation.ImitationConfig(num_envs=16, play_max_layer=2, label_max_layer=2, proven_mine_weight=1.0)
    separate = dataclasses.replace(shared, share_forward=False)
    assert shared.forward_is_shared and not separate.forward_is_shared
    for overrides in ({"steps_per_update": 2}, {"learner_fraction": 0.0}, {"microbatch_size": 8},
                      {"hardest_states": 8}, {"augment_symmetries": True}):
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


def test_the_throughput_benchmark_times_both_passes_where_the_config_can_share_them():
    from benchmarks.imitation_throughput import variants

    from msjax import config as config_lib

    small = config_lib.load_config("small")
    assert [(share, impl) for share, impl, _ in variants(small)] == [(True, "auto"), (False, "auto")]
    assert not variants(small)[1][2].imitation.forward_is_shared
    both = variants(small, ["patches", "xla"], two_pass=False)
    assert [(share, cfg.model.conv_impl) for share, _, cfg in both] == [(True, "patches"), (True, "xla")]
    beginner = config_lib.load_config("beginner")  # 16 labelled steps an update: nothing to share
    assert [share for share, _, _ in variants(beginner)] == [True]


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
    with pytest.raises(ValueError, match="carry_beliefs=True needs imitation.solver_moves_per_label=1"):
        imitation.imitation_chunk_fn(env_cfg, model_cfg, dataclasses.replace(il_cfg, solver_moves_per_label=2), 2)
