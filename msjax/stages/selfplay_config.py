"""The self-play stage's settings (``SelfPlayConfig``) and their checks: the ``selfplay``
section of an ``ExperimentConfig``. The stage itself is ``msjax.stages.selfplay``, which
exports both."""

from __future__ import annotations

import dataclasses

from msjax import losses
from msjax.checks import Allowed, check_fields, ints, numbers, one_of
from msjax.optimizers import TRAINABLE
from msjax.search.endgame import MAX_ENDGAME_LAYOUTS
from msjax.search.network_search import LEAVES, MAX_SIMULATIONS
from msjax.solver import ExactLimits
from msjax.stages.spec import StageConfig, check_stage_fields


EXACT_STATES = Allowed(
    "0 (the analysis' own limits) or an int in [2, 32767]",
    lambda v: ints(0, 0).test(v) or ints(2, 32_767).test(v),
)
"""What ``exact_states`` may be (``solver.ExactLimits.max_states``' range, or 0)."""


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig(StageConfig):
    """Self-play with search targets. The shared fields of a stage are ``StageConfig``'s;
    what they mean here:

    Attributes:
      enabled: play the stage (False, the default): after imitation (from its network, or
        from ``run.init_from``'s), before PPO.
      num_updates: gradient steps of the stage, one per rollout (the cosine-decay horizon).
      num_envs: games played in parallel by the network with search.
      steps_per_update: the rollout's length ``T``: every update plays ``T`` moves of each
        game and learns from those ``num_envs * T`` states. A game that goes on past the
        rollout's end takes the value head's estimate there as its outcome, so a ``T``
        above a game's usual length leaves fewer targets bootstrapped.
      simulations: the search's root budget, the clicks considered per guess (1..32;
        ``search.network_search``).
      samples: layouts drawn per guess view that every considered click is played on, >= 1.
      leaf: what a view after a click is worth to the search: ``"safe"`` (the default), 1,
        so a click is worth its exact chance to be safe (the search without the value
        head), ``"survival"``, its best chance of a safe cell (a click worth its exact
        chance to survive this guess and the next), or ``"value"``, the value head, which
        this stage trains: the imitation leaves it untrained, so it can guide the search
        only from a network whose value head self-play (or PPO) has trained.
      endgame: the guess views that at most this many layouts fit play the exhaustive
        endgame's best click, unsearched (0, the default: none; at most
        ``search.MAX_ENDGAME_LAYOUTS``).
      tolerance: the search's clicks are the legal reveals at least ``1 - tolerance`` times
        as safe as the safest (the search player's candidates), in (0, 1]; 1 (the
        default): every legal reveal.
      gumbel_scale: the Gumbel noise of the root's choice, >= 0: 1 (the default) is Gumbel
        AlphaZero's self-play, sampling the move played among the considered clicks; 0 plays
        the search's best.
      value_scale: ``c_scale`` of the completed Q's transform (the weight of the values
        against the prior's logits in the improved policy), > 0.
      exact_states: the most states per step of the exact analysis' one pass
        (``solver.ExactLimits`` with ``max_states = first_states = exact_states``; 2 to
        32767), a smaller program (a view beyond it is played by the policy alone); 0 (the
        default): the analysis' own limits.
      policy_weight: weight of the cross-entropy of the policy to the search's improved
        policy, a mean over the searched states (the guesses), >= 0.
      move_weight: weight of the cross-entropy of the policy to the move played, a mean
        over the other states (a proved-safe reveal where there is one; the policy's own
        move at the opening and beyond the exact analysis' limits), >= 0: it keeps the
        policy on the proved cells while the shared layers learn the guesses.
      value_weight: weight of the value head's squared error (halved) to the game's
        outcome (1 won, 0 lost), a mean over every state, >= 0.
      buffer_size: the searched guesses of past rollouts kept with their targets to be
        learned from again (``selfplay_buffer``), 0 (the default: none, each update learns
        from its own rollout alone) to 1,000,000.
      buffer_batch: the states drawn from that buffer each update and learned from beside
        the rollout's own (> 0 exactly when ``buffer_size`` is); a micro-batched update
        needs ``microbatch_size`` to divide ``num_envs * steps_per_update + buffer_batch``.
      trainable: the parameters the stage changes: ``"all"`` (the default) or ``"value"``
        (the value head alone, ``optimizers.VALUE_HEAD``: the policy, the mine head and the
        trunk stay bit-identical, so the network plays as before while its value head
        learns the chance that the search's games are won: value leaves for a later search).
      microbatch_size: states that pass through the network together in the gradient
        step (the same gradient in less memory): a divisor of ``num_envs *
        steps_per_update``; 0, or that many or more: all at once. Below ``num_envs`` it
        also divides ``num_envs``, and the bootstrap value's forward pass takes the games
        this many at a time.
    """

    enabled: bool = False
    num_updates: int = 100
    num_envs: int = 64
    steps_per_update: int = 32
    lr: float = 1e-4
    simulations: int = 8
    samples: int = 16
    leaf: str = "safe"
    endgame: int = 0
    tolerance: float = 1.0
    gumbel_scale: float = 1.0
    value_scale: float = 0.1
    exact_states: int = 0
    policy_weight: float = 1.0
    move_weight: float = 0.1
    value_weight: float = 1.0
    buffer_size: int = 0
    buffer_batch: int = 0
    trainable: str = "all"

    def __post_init__(self):
        validate_config(self)

    @property
    def exact_limits(self) -> ExactLimits:
        """The search's ``solver.ExactLimits`` (``exact_states``)."""
        if not self.exact_states:
            return ExactLimits()
        return ExactLimits(max_states=self.exact_states, first_states=self.exact_states, middle_states=0)


def validate_config(cfg: SelfPlayConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    check_stage_fields(cfg)
    check_fields(cfg, (
        (ints(1, MAX_SIMULATIONS), ("simulations",)),
        (ints(0, MAX_ENDGAME_LAYOUTS), ("endgame",)),
        (numbers(0, 1, low_open=True), ("tolerance",)),
        (EXACT_STATES, ("exact_states",)),
        ("an int >= 1", ("samples",)),
        (one_of(*LEAVES), ("leaf",)),
        (one_of(*TRAINABLE), ("trainable",)),
        (numbers(0), ("gumbel_scale",)),
        ("> 0", ("value_scale",)),
        (">= 0", ("policy_weight", "move_weight", "value_weight")),
        (ints(0, 1_000_000), ("buffer_size",)),
        (ints(0, 1_000_000), ("buffer_batch",)),
    ))
    if (cfg.buffer_size > 0) != (cfg.buffer_batch > 0):
        raise ValueError(
            f"SelfPlayConfig.buffer_batch={cfg.buffer_batch} and buffer_size={cfg.buffer_size} must be both 0 "
            "(no buffer) or both > 0"
        )
    batch_name = "num_envs*steps_per_update"
    field = "SelfPlayConfig.microbatch_size"
    losses.check_microbatch_size(field, cfg.microbatch_size, cfg.env_steps_per_update, batch_name)
    losses.check_microbatch_size(field, cfg.microbatch_size, cfg.num_envs, "num_envs")
    if cfg.buffer_batch:
        losses.check_microbatch_size(field, cfg.microbatch_size, cfg.env_steps_per_update + cfg.buffer_batch,
                                     f"{batch_name}+buffer_batch")
