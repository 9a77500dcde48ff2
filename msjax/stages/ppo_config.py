"""PPO's settings (``PPOConfig``) and their checks: the ``ppo`` section of an
``ExperimentConfig``. The stage itself is ``msjax.stages.ppo``, which exports both."""

from __future__ import annotations

import dataclasses

from msjax import losses
from msjax.checks import check_fields, ints, one_of
from msjax.optimizers import TRAINABLE
from msjax.stages.spec import StageConfig, check_stage_fields


@dataclasses.dataclass(frozen=True)
class PPOConfig(StageConfig):
    """PPO hyper-parameters; the defaults are the seed's. The shared fields of a stage are
    ``StageConfig``'s; what they mean here:

    Attributes:
      enabled: play the stage (after imitation, from its parameters); False ends the run
        with the imitation stage, which must then be enabled (and no curriculum, which
        only PPO plays).
      num_updates: PPO updates of the stage; the horizon of the cosine learning-rate decay.
      num_envs: games played in parallel.
      steps_per_update: rollout length; ``num_envs * steps_per_update`` transitions per update.
      mini_batches: minibatches per epoch; must divide ``steps_per_update`` (a minibatch
        takes ``steps_per_update / mini_batches`` steps of every game).
      ppo_epochs: passes over each rollout.
      gamma, gae_lambda: discount and GAE lambda, in [0, 1].
      clip_eps: policy ratio clip, > 0.
      clip_eps_v: value clip around the rollout's value estimate, > 0.
      vf_coef, ent_coef: weights of the value loss and of the entropy bonus, >= 0.
      frontier_mask_until_updates: restrict reveals to the frontier while the update
        counter is below this (0 = never).
      normalize_advantages: standardise advantages within each minibatch (not in the
        seed's sketch; standard in PPO implementations and makes the loss scale-free).
      microbatch_size: a divisor of the minibatch, whose gradient is then accumulated over
        micro-batches of this size (the same gradient in less memory; 0 or >= the
        minibatch: off). Advantages are normalised over the whole minibatch. Below
        ``num_envs`` it also divides ``num_envs``, and the rollout's forward passes (the
        policy's, the bootstrap value's) take the games this many at a time.
      trainable: the parameters the stage changes: ``"all"`` (the default) or ``"value"``
        (the value head alone, ``optimizers.VALUE_HEAD``: the policy, the mine head and the trunk stay
        as they are, so the agent plays exactly as before while its value head learns the
        return of its own games; with rewards on wins only and ``gamma = gae_lambda = 1``
        that return is the game's outcome, so the head learns the chance to win).
    """

    steps_per_update: int = 128
    lr: float = 3e-4
    max_grad_norm: float = 0.5
    mini_batches: int = 8
    ppo_epochs: int = 3
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    clip_eps_v: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.003
    frontier_mask_until_updates: int = 200
    normalize_advantages: bool = True
    trainable: str = "all"

    def __post_init__(self):
        validate_config(self)

    @property
    def batch_size(self) -> int:
        return self.env_steps_per_update

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.mini_batches


def validate_config(cfg: PPOConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    check_stage_fields(cfg)
    check_fields(cfg, (
        ("a bool", ("normalize_advantages",)),
        ("an int >= 1", ("mini_batches", "ppo_epochs")),
        (ints(0), ("frontier_mask_until_updates",)),
        (one_of(*TRAINABLE), ("trainable",)),
        ("in [0, 1]", ("gamma", "gae_lambda")),
        ("> 0", ("clip_eps", "clip_eps_v")),
        (">= 0", ("vf_coef", "ent_coef")),
    ))
    if cfg.steps_per_update % cfg.mini_batches:
        raise ValueError(
            f"PPOConfig.mini_batches={cfg.mini_batches} must divide steps_per_update="
            f"{cfg.steps_per_update} (each minibatch takes the same number of steps of every game)"
        )
    batch_name = "num_envs*steps_per_update/mini_batches"
    losses.check_microbatch_size("PPOConfig.microbatch_size", cfg.microbatch_size, cfg.minibatch_size, batch_name)
    losses.check_microbatch_size("PPOConfig.microbatch_size", cfg.microbatch_size, cfg.num_envs, "num_envs")
