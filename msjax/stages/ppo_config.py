"""PPO's settings (``PPOConfig``) and their checks: the ``ppo`` section of an
``ExperimentConfig``. The stage itself is ``msjax.stages.ppo``, which exports both."""

from __future__ import annotations

import dataclasses

from msjax import losses
from msjax.checks import check_fields


TRAINABLE = ("all", "value")
VALUE_HEAD = ("value_hidden", "value_out")
"""The network's modules that ``trainable="value"`` trains (``models``' value head)."""


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyper-parameters; the defaults are the seed's.

    Attributes:
      enabled: play the stage (after imitation, from its parameters); False ends the run
        with the imitation stage, which must then be enabled (and no curriculum, which
        only PPO plays).
      num_envs: games played in parallel.
      steps_per_env: rollout length; ``num_envs * steps_per_env`` transitions per update.
      mini_batches: minibatches per epoch; must divide ``steps_per_env`` (a minibatch
        takes ``steps_per_env / mini_batches`` steps of every game).
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
      random_first_click_share: share of new games opened at a random cell, in [0, 1] (0: measured worse).
      total_updates: horizon of the cosine learning-rate decay, in updates, >= 1.
      anneal_lr: cosine-decay the learning rate to 0 over ``total_updates``; else constant.
      normalize_advantages: standardise advantages within each minibatch (not in the
        seed's sketch; standard in PPO implementations and makes the loss scale-free).
      microbatch_size: a divisor of the minibatch, whose gradient is then accumulated over
        micro-batches of this size (the same gradient in less memory; 0 or >= the
        minibatch: off). Advantages are normalised over the whole minibatch. Below
        ``num_envs`` it also divides ``num_envs``, and the rollout's forward passes (the
        policy's, the bootstrap value's) take the games this many at a time.
      trainable: the parameters the stage changes: ``"all"`` (the default) or ``"value"``
        (the value head alone, ``VALUE_HEAD``: the policy, the mine head and the trunk stay
        as they are, so the agent plays exactly as before while its value head learns the
        return of its own games; with rewards on wins only and ``gamma = gae_lambda = 1``
        that return is the game's outcome, so the head learns the chance to win).
    """

    enabled: bool = True
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
    random_first_click_share: float = 0.0
    total_updates: int = 1000
    anneal_lr: bool = True
    normalize_advantages: bool = True
    microbatch_size: int = 0
    trainable: str = "all"

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
    check_fields(cfg, (
        ("a bool", ("enabled", "anneal_lr", "normalize_advantages")),
        ("an int >= 1", ("num_envs", "steps_per_env", "mini_batches", "ppo_epochs", "total_updates")),
    ))
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
            f"{cfg.steps_per_env} (each minibatch takes the same number of steps of every game)"
        )
    batch_name = "num_envs*steps_per_env/mini_batches"
    losses.check_microbatch_size("PPOConfig.microbatch_size", cfg.microbatch_size, cfg.minibatch_size, batch_name)
    losses.check_microbatch_size("PPOConfig.microbatch_size", cfg.microbatch_size, cfg.num_envs, "num_envs")
    if cfg.trainable not in TRAINABLE:
        raise ValueError(f"PPOConfig.trainable={cfg.trainable!r} must be one of {TRAINABLE}")
    check_fields(cfg, (
        ("in [0, 1]", ("gamma", "gae_lambda", "random_first_click_share")),
        ("> 0", ("clip_eps", "clip_eps_v", "lr", "max_grad_norm")),
        (">= 0", ("vf_coef", "ent_coef", "weight_decay", "aux_mine_weight")),
    ))
