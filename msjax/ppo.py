"""PPO with action masking, as one compiled program per chunk of updates.

``make_train_chunk`` builds a jitted function that runs ``num_updates`` PPO updates in
an outer ``lax.scan``. Each update reads like the PPO paper's loop:

1. COLLECT TRAJECTORIES: ``steps_per_env`` steps (a ``lax.scan``) of ``num_envs``
   boards, actions sampled from the masked policy, finished boards restarted by
   ``env.batch_step``.
2. CALCULATE ADVANTAGE: GAE(gamma, lambda) backwards over the rollout.
3. UPDATE NETWORK: ``ppo_epochs`` passes over the rollout in ``mini_batches`` shuffled
   minibatches: clipped policy loss, clipped value loss, entropy bonus, and the mine
   head's binary cross-entropy on the true mines of hidden cells. Each minibatch holds
   ``steps_per_env / mini_batches`` steps of every board (each board's steps shuffled
   on their own), so a minibatch is spread evenly over the devices that hold the boards.

Given a ``Mesh`` (``msjax.distributed``), the chunk runs data-parallel: boards split
over the devices, parameters replicated, gradients averaged over the global minibatch
by the all-reduce XLA inserts; the numbers are those of one device.

Python sees only chunk boundaries; the per-update metrics come back as arrays of
``num_updates`` scalars. The frontier-only reveal mask (the seed's early curriculum) is
chosen from the traced update counter, so it switches off without a recompile.

Hidden mines are read only for rewards (inside the env), the mine head's labels and
metrics; the policy sees ``observe`` and ``action_mask``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import chex
import distrax
import flax
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, PartitionSpec

from msjax import curriculum as curriculum_lib
from msjax import distributed
from msjax import env as ms_env
from msjax import models
from msjax.models import masked_logits, policy_action  # noqa: F401  (re-exported)


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyper-parameters; the defaults are the seed's.

    Attributes:
      num_envs: boards stepped in parallel.
      steps_per_env: rollout length; ``num_envs * steps_per_env`` transitions per update.
      mini_batches: minibatches per epoch; must divide ``steps_per_env`` (a minibatch
        takes ``steps_per_env / mini_batches`` steps of every board).
      ppo_epochs: passes over each rollout.
      gamma, gae_lambda: discount and GAE lambda, in [0, 1].
      clip_eps: policy ratio clip, > 0.
      clip_eps_v: value clip around the rollout's value estimate, > 0.
      vf_coef, ent_coef: weights of the value loss and of the entropy bonus, >= 0.
      lr: peak AdamW learning rate, > 0.
      weight_decay: AdamW weight decay, >= 0.
      max_grad_norm: global gradient-norm clip, > 0.
      aux_mine_weight: weight of the mine head's BCE, >= 0.
      frontier_mask_until_updates: restrict reveals to the frontier while the update
        counter is below this (0 = never).
      total_updates: horizon of the cosine learning-rate decay, in updates, >= 1.
      anneal_lr: cosine-decay the learning rate to 0 over ``total_updates``; else constant.
      normalize_advantages: standardise advantages within each minibatch (not in the
        seed's sketch; standard in PPO implementations and makes the loss scale-free).
    """

    num_envs: int = 256
    steps_per_env: int = 128
    mini_batches: int = 8
    ppo_epochs: int = 3
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    clip_eps_v: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.003
    lr: float = 3e-4
    weight_decay: float = 1e-4
    max_grad_norm: float = 0.5
    aux_mine_weight: float = 0.1
    frontier_mask_until_updates: int = 200
    total_updates: int = 1000
    anneal_lr: bool = True
    normalize_advantages: bool = True

    def __post_init__(self):
        validate_config(self)

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.steps_per_env

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.mini_batches


def validate_config(cfg: PPOConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    for name in ("num_envs", "steps_per_env", "mini_batches", "ppo_epochs", "total_updates"):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"PPOConfig.{name}={value!r} must be an int >= 1")
    if not isinstance(cfg.frontier_mask_until_updates, int) or cfg.frontier_mask_until_updates < 0:
        raise ValueError(
            f"PPOConfig.frontier_mask_until_updates={cfg.frontier_mask_until_updates!r} must be an int >= 0"
        )
    if cfg.batch_size % cfg.mini_batches:
        raise ValueError(
            f"PPOConfig.mini_batches={cfg.mini_batches} must divide num_envs*steps_per_env="
            f"{cfg.batch_size}"
        )
    if cfg.steps_per_env % cfg.mini_batches:
        raise ValueError(
            f"PPOConfig.mini_batches={cfg.mini_batches} must divide steps_per_env="
            f"{cfg.steps_per_env} (each minibatch takes the same number of steps of every board)"
        )
    for name in ("gamma", "gae_lambda"):
        value = getattr(cfg, name)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"PPOConfig.{name}={value!r} must be in [0, 1]")
    for name in ("clip_eps", "clip_eps_v", "lr", "max_grad_norm"):
        value = getattr(cfg, name)
        if not value > 0.0:
            raise ValueError(f"PPOConfig.{name}={value!r} must be > 0")
    for name in ("vf_coef", "ent_coef", "weight_decay", "aux_mine_weight"):
        value = getattr(cfg, name)
        if not value >= 0.0:
            raise ValueError(f"PPOConfig.{name}={value!r} must be >= 0")


@flax.struct.dataclass
class TrainState:
    """Everything a PPO run carries between updates; exactly what a checkpoint holds.

    Attributes:
      params: network parameters (float32).
      opt_state: optimizer state.
      env_states: ``EnvState`` batched ``[num_envs]``, the boards in play.
      key: PRNG key for sampling and shuffling.
      update: int32[], PPO updates done so far.
      curriculum: with a board mix (``env.boards``), the stage and the traced board
        weights that new games are dealt from (``msjax.curriculum``); None otherwise.
    """

    params: Any
    opt_state: Any
    env_states: ms_env.EnvState
    key: jax.Array
    update: jax.Array
    curriculum: curriculum_lib.CurriculumState | None = None


@flax.struct.dataclass
class Transition:
    """One rollout step of ``N`` boards (a rollout stacks ``T`` of them: ``[T, N, ...]``).

    Attributes:
      obs: float32[N, C, H, W]; action_mask: bool[N, 2HW]; action: int32[N];
      log_prob: float32[N] of the action under the rollout policy; value: float32[N];
      reward: float32[N]; done: bool[N] (the game ended at this step);
      mine_mask: bool[N, H, W], the true mines (labels only);
      mine_label_mask: bool[N, H, W], hidden cells of boards whose mines are placed;
      won: bool[N] (a game was won at this step); invalid: bool[N];
      off_frontier: bool[N], a reveal off the frontier while a frontier existed;
      board: int32[N], each game's board in a board mix (None without one).
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array
    won: jax.Array
    invalid: jax.Array
    off_frontier: jax.Array
    board: jax.Array | None = None


@flax.struct.dataclass
class Batch:
    """A (mini)batch for ``ppo_loss``, flat over ``B`` = steps x boards.

    Attributes:
      obs: float32[B, C, H, W]; action_mask: bool[B, 2HW]; action: int32[B];
      log_prob: float32[B] (rollout policy); value: float32[B] (rollout value);
      advantage: float32[B]; target: float32[B] (the GAE return);
      mine_mask: bool[B, H, W]; mine_label_mask: bool[B, H, W].
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array


# ----------------------------------------------------------------------------- pieces


def gae(
    rewards: jax.Array,
    values: jax.Array,
    dones: jax.Array,
    last_value: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation, time-major.

    ``dones[t]`` means the game ended at step ``t`` (the board then restarted), so
    neither the bootstrap value nor the later advantages cross that boundary.

    Args:
      rewards, values: float32[T, N]; dones: bool[T, N]; last_value: float32[N], the
        value of the state after the last step.

    Returns:
      ``(advantages, returns)``, both float32[T, N], ``returns = advantages + values``.
    """

    def backward_step(carry, step):
        next_advantage, next_value = carry
        reward, value, done = step
        continues = 1.0 - done.astype(jnp.float32)
        delta = reward + gamma * next_value * continues - value
        advantage = delta + gamma * lam * continues * next_advantage
        return (advantage, value), advantage

    init = (jnp.zeros_like(last_value), last_value)
    _, advantages = jax.lax.scan(backward_step, init, (rewards, values, dones), reverse=True)
    return advantages, advantages + values


def mine_bce(mine_logits: jax.Array, mine_mask: jax.Array, label_mask: jax.Array) -> jax.Array:
    """Mean binary cross-entropy of the mine head over the labelled cells.

    Args:
      mine_logits: float32[B, H, W]; mine_mask: bool[B, H, W], the true mines;
      label_mask: bool[B, H, W], the cells that count (hidden cells of placed boards).
    """
    per_cell = optax.sigmoid_binary_cross_entropy(mine_logits, mine_mask.astype(jnp.float32))
    weight = label_mask.astype(jnp.float32)
    return jnp.sum(per_cell * weight) / jnp.maximum(jnp.sum(weight), 1.0)


def ppo_loss(
    params: Any, apply_fn: Callable, batch: Batch, ppo_cfg: PPOConfig
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The clipped PPO objective (to minimise) on one minibatch.

    ``loss = policy_loss + vf_coef * value_loss - ent_coef * entropy + aux_mine_weight * mine_bce``.

    Returns:
      ``(loss, metrics)`` with metrics ``policy_loss``, ``value_loss``, ``entropy``,
      ``mine_bce``, ``approx_kl`` and ``clip_frac`` (scalars).
    """
    logits, value, mine_logits = apply_fn(params, batch.obs)
    pi = distrax.Categorical(logits=masked_logits(logits, batch.action_mask))
    log_prob = pi.log_prob(batch.action)

    advantage = batch.advantage
    if ppo_cfg.normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - ppo_cfg.clip_eps, 1.0 + ppo_cfg.clip_eps)
    policy_loss = -jnp.mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))

    value_clipped = batch.value + jnp.clip(value - batch.value, -ppo_cfg.clip_eps_v, ppo_cfg.clip_eps_v)
    value_loss = 0.5 * jnp.mean(
        jnp.maximum(jnp.square(value - batch.target), jnp.square(value_clipped - batch.target))
    )
    entropy = jnp.mean(pi.entropy())
    bce = mine_bce(mine_logits, batch.mine_mask, batch.mine_label_mask)

    loss = (
        policy_loss
        + ppo_cfg.vf_coef * value_loss
        - ppo_cfg.ent_coef * entropy
        + ppo_cfg.aux_mine_weight * bce
    )
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "mine_bce": bce,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "clip_frac": jnp.mean((jnp.abs(ratio - 1.0) > ppo_cfg.clip_eps).astype(jnp.float32)),
    }
    return loss, metrics


def global_norm(tree: Any) -> jax.Array:
    """float32[]: the L2 norm of all leaves of ``tree`` together."""
    return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree)))


def make_lr_schedule(ppo_cfg: PPOConfig) -> optax.Schedule:
    """Learning rate per optimizer step: cosine decay to 0 over ``total_updates`` updates."""
    if not ppo_cfg.anneal_lr:
        return optax.constant_schedule(ppo_cfg.lr)
    steps_per_update = ppo_cfg.ppo_epochs * ppo_cfg.mini_batches
    return optax.cosine_decay_schedule(ppo_cfg.lr, ppo_cfg.total_updates * steps_per_update)


def make_optimizer(ppo_cfg: PPOConfig) -> optax.GradientTransformation:
    """Global-norm clipping then AdamW on the (cosine-decayed) learning rate."""
    return optax.chain(
        optax.clip_by_global_norm(ppo_cfg.max_grad_norm),
        optax.adamw(make_lr_schedule(ppo_cfg), weight_decay=ppo_cfg.weight_decay),
    )


def init_train_state(
    key: jax.Array,
    env_cfg: ms_env.EnvConfig,
    model_cfg: models.ModelConfig,
    ppo_cfg: PPOConfig,
    params: Any = None,
    mesh: Mesh | None = None,
    curriculum_cfg: curriculum_lib.CurriculumConfig | None = None,
) -> TrainState:
    """A fresh run: new boards, new optimizer, and ``params`` (from imitation) or fresh ones.

    With a ``mesh`` the state is built in place on it, boards split over its devices. With
    a board mix the boards are dealt by the curriculum's stage-0 weights (uniform without
    ``curriculum_cfg``).
    """
    if mesh is not None:
        distributed.check_divides("ppo.num_envs", ppo_cfg.num_envs, mesh)
        fresh = init_train_state(key, env_cfg, model_cfg, ppo_cfg, params=params, curriculum_cfg=curriculum_cfg)
        return distributed.place(fresh, mesh)
    param_key, env_key, train_key = jax.random.split(key, 3)
    if params is None:
        params = models.init_params(param_key, model_cfg, env_cfg)
    curriculum = curriculum_lib.init_state(env_cfg, curriculum_cfg)
    weights = None if curriculum is None else curriculum.board_weights
    return TrainState(
        params=params,
        opt_state=make_optimizer(ppo_cfg).init(params),
        env_states=ms_env.batch_reset(env_key, env_cfg, ppo_cfg.num_envs, weights),
        key=train_key,
        update=jnp.int32(0),
        curriculum=curriculum,
    )


# ----------------------------------------------------------------------------- training


def shuffled_minibatches(rollout: Batch, key: jax.Array, mini_batches: int) -> Batch:
    """The rollout cut into ``mini_batches`` shuffled minibatches, each spread over all boards.

    Every board's ``T`` steps are shuffled on their own (a permutation drawn for that
    board), and minibatch ``m`` takes the steps in places ``[m*T/M, (m+1)*T/M)`` of every
    board, boards in order. A board's samples never leave the device that holds it, and
    the draw is the same whatever the number of devices.

    Args:
      rollout: ``Batch`` of time-major leaves ``[T, N, ...]``.
      key: PRNG key of this epoch's shuffle.
      mini_batches: ``M``, a divisor of ``T``.

    Returns:
      ``Batch`` of leaves ``[M, N*T/M, ...]``, board-major within a minibatch.
    """
    num_steps, num_boards = rollout.action.shape
    steps_per_minibatch = num_steps // mini_batches
    board_keys = jax.random.split(key, num_boards)
    order = jax.vmap(lambda k: jax.random.permutation(k, num_steps))(board_keys)  # int32[N, T]

    def arrange(x: jax.Array) -> jax.Array:
        by_board = jax.vmap(lambda steps, board_order: steps[board_order])(jnp.swapaxes(x, 0, 1), order)
        split = by_board.reshape((num_boards, mini_batches, steps_per_minibatch) + x.shape[2:])
        return jnp.swapaxes(split, 0, 1).reshape(
            (mini_batches, num_boards * steps_per_minibatch) + x.shape[2:]
        )

    return jax.tree.map(arrange, rollout)


def make_train_chunk(
    env_cfg: ms_env.EnvConfig,
    model_cfg: models.ModelConfig,
    ppo_cfg: PPOConfig,
    num_updates: int,
    mesh: Mesh | None = None,
) -> Callable[[TrainState], tuple[TrainState, dict[str, jax.Array]]]:
    """A jitted ``TrainState -> (TrainState, metrics)`` running ``num_updates`` PPO updates.

    The input state is donated. With a ``mesh``, the state must be placed as
    ``distributed.state_shardings`` says (``init_train_state(..., mesh=mesh)`` does), and
    ``num_envs`` must split evenly over the mesh's devices.

    ``metrics`` maps each name to float32[num_updates]: loss, policy_loss, value_loss,
    entropy, mine_bce, approx_kl, clip_frac, grad_norm and lr (means over the update's
    minibatches), and from the rollout mean_reward,
    episodes_finished, win_rate_train (games won / games finished), invalid_rate,
    frontier_only (1 while the frontier mask is on) and off_frontier_rate (reveals off
    the frontier while one existed, per step). With a board mix (``env_cfg.boards``)
    also curriculum_stage and, per board NAME (``curriculum.board_name``),
    games_share/NAME (its share of the finished games) and win_rate_train/NAME.
    """
    if not isinstance(num_updates, int) or num_updates < 1:
        raise ValueError(f"num_updates={num_updates!r} must be an int >= 1")
    if mesh is not None:
        distributed.check_divides("ppo.num_envs", ppo_cfg.num_envs, mesh)
    model = models.make_model(model_cfg)
    optimizer = make_optimizer(ppo_cfg)
    # The env step gates work on its whole batch (any board finished, pending cascades);
    # each device runs it on its own boards.
    step_boards = distributed.per_device(lambda states, actions: ms_env.batch_step(states, actions, env_cfg), mesh)
    # with a board mix, new games are dealt from the traced weights, passed per board so
    # that every argument of the per-device step is split over the boards
    step_mixed = distributed.per_device(
        lambda states, actions, weights: ms_env.batch_step(states, actions, env_cfg, weights[0]), mesh
    )
    lr_schedule = make_lr_schedule(ppo_cfg)
    observe_boards = jax.vmap(ms_env.observe, in_axes=(0, None))
    mask_boards = jax.vmap(ms_env.action_mask, in_axes=(0, None, None))
    frontier_boards = jax.vmap(ms_env.frontier, in_axes=(0, None))
    board_names = [curriculum_lib.board_name(board) for board in env_cfg.boards]
    steps_per_update = ppo_cfg.ppo_epochs * ppo_cfg.mini_batches

    def ppo_update(train_state: TrainState, _):
        params = train_state.params
        frontier_only = train_state.update < ppo_cfg.frontier_mask_until_updates
        curriculum = train_state.curriculum
        board_weights = None if curriculum is None else curriculum.board_weights

        # COLLECT TRAJECTORIES
        def env_step(carry, _):
            env_states, key = carry
            key, action_key = jax.random.split(key)
            obs = observe_boards(env_states, env_cfg)
            action_mask = mask_boards(env_states, env_cfg, frontier_only)
            logits, value, _ = model.apply(params, obs)
            pi = distrax.Categorical(logits=masked_logits(logits, action_mask))
            action = pi.sample(seed=action_key).astype(jnp.int32)
            log_prob = pi.log_prob(action)

            near = frontier_boards(env_states, env_cfg).reshape(ppo_cfg.num_envs, -1)
            is_reveal = action < env_cfg.num_cells
            cell = action % env_cfg.num_cells
            on_frontier = jnp.take_along_axis(near, cell[:, None], axis=1)[:, 0]
            off_frontier = is_reveal & ~on_frontier & jnp.any(near, axis=1)

            if board_weights is None:
                next_states, reward, done, info = step_boards(env_states, action)
            else:
                per_board = jnp.broadcast_to(board_weights, (ppo_cfg.num_envs,) + board_weights.shape)
                next_states, reward, done, info = step_mixed(env_states, action, per_board)
            label_mask = ~env_states.revealed & env_states.first_click_done[:, None, None]
            if env_cfg.boards:
                label_mask = label_mask & jax.vmap(ms_env.playable, in_axes=(0, None))(env_states, env_cfg)
            transition = Transition(
                obs=obs,
                action_mask=action_mask,
                action=action,
                log_prob=log_prob,
                value=value,
                reward=reward,
                done=done,
                mine_mask=env_states.mine_mask,
                mine_label_mask=label_mask,
                won=done & info["won"],
                invalid=info["invalid"],
                off_frontier=off_frontier,
                board=env_states.board,
            )
            return (next_states, key), transition

        (env_states, key), trajectory = jax.lax.scan(
            env_step, (train_state.env_states, train_state.key), None, ppo_cfg.steps_per_env
        )

        # CALCULATE ADVANTAGE
        _, last_value, _ = model.apply(params, observe_boards(env_states, env_cfg))
        advantages, targets = gae(
            trajectory.reward, trajectory.value, trajectory.done, last_value,
            ppo_cfg.gamma, ppo_cfg.gae_lambda,
        )

        # UPDATE NETWORK
        rollout = Batch(
            obs=trajectory.obs,
            action_mask=trajectory.action_mask,
            action=trajectory.action,
            log_prob=trajectory.log_prob,
            value=trajectory.value,
            advantage=advantages,
            target=targets,
            mine_mask=trajectory.mine_mask,
            mine_label_mask=trajectory.mine_label_mask,
        )

        def update_minibatch(carry, minibatch: Batch):
            params, opt_state = carry
            grad_fn = jax.value_and_grad(ppo_loss, has_aux=True)
            (loss, metrics), grads = grad_fn(params, model.apply, minibatch, ppo_cfg)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            return (params, opt_state), {**metrics, "loss": loss, "grad_norm": global_norm(grads)}

        def update_epoch(carry, _):
            params, opt_state, key = carry
            key, shuffle_key = jax.random.split(key)
            minibatches = shuffled_minibatches(rollout, shuffle_key, ppo_cfg.mini_batches)
            minibatches = distributed.constrain(minibatches, mesh, PartitionSpec(None, distributed.DATA_AXIS))
            (params, opt_state), metrics = jax.lax.scan(update_minibatch, (params, opt_state), minibatches)
            return (params, opt_state, key), metrics

        (params, opt_state, key), loss_metrics = jax.lax.scan(
            update_epoch, (params, train_state.opt_state, key), None, ppo_cfg.ppo_epochs
        )

        # METRICS (scalars per update)
        finished = jnp.sum(trajectory.done, dtype=jnp.float32)
        metrics = {name: jnp.mean(value) for name, value in loss_metrics.items()}
        metrics.update(
            lr=jnp.asarray(lr_schedule(train_state.update * steps_per_update), jnp.float32),
            mean_reward=jnp.mean(trajectory.reward),
            episodes_finished=finished,
            win_rate_train=jnp.sum(trajectory.won, dtype=jnp.float32) / jnp.maximum(finished, 1.0),
            invalid_rate=jnp.mean(trajectory.invalid.astype(jnp.float32)),
            frontier_only=frontier_only.astype(jnp.float32),
            off_frontier_rate=jnp.mean(trajectory.off_frontier.astype(jnp.float32)),
        )
        if curriculum is not None:
            metrics["curriculum_stage"] = curriculum.stage.astype(jnp.float32)
            for index, name in enumerate(board_names):
                ends_here = trajectory.done & (trajectory.board == index)
                games = jnp.sum(ends_here, dtype=jnp.float32)
                metrics[f"games_share/{name}"] = games / jnp.maximum(finished, 1.0)
                won_here = jnp.sum(trajectory.won & ends_here, dtype=jnp.float32)
                metrics[f"win_rate_train/{name}"] = won_here / jnp.maximum(games, 1.0)
        next_state = TrainState(
            params=params,
            opt_state=opt_state,
            env_states=env_states,
            key=key,
            update=train_state.update + 1,
            curriculum=curriculum,
        )
        return next_state, metrics

    def train_chunk(train_state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        chex.assert_shape(train_state.env_states.done, (ppo_cfg.num_envs,))
        return jax.lax.scan(ppo_update, train_state, None, num_updates)

    if mesh is None:
        return jax.jit(train_chunk, donate_argnums=0)
    abstract = jax.eval_shape(lambda k: init_train_state(k, env_cfg, model_cfg, ppo_cfg), jax.random.key(0))
    shardings = distributed.state_shardings(abstract, mesh)
    return jax.jit(
        train_chunk,
        in_shardings=(shardings,),
        out_shardings=(shardings, distributed.replicated(mesh)),
        donate_argnums=0,
    )
