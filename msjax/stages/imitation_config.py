"""The imitation stage's settings (``ImitationConfig``) and their checks: the ``imitation``
section of an ``ExperimentConfig``. The stage itself is ``msjax.stages.imitation``, which
exports both."""

from __future__ import annotations

import dataclasses

from msjax import losses, solver
from msjax.checks import check_fields, int_in
from msjax.stages.spec import StageConfig, check_stage_fields


@dataclasses.dataclass(frozen=True)
class ImitationConfig(StageConfig):
    """The imitation stage. The shared fields of a stage are ``StageConfig``'s; what they
    mean here:

    Attributes:
      enabled: run the stage before PPO.
      num_envs: games played in parallel.
      steps_per_update: solver steps per gradient step; each update trains on
        ``num_envs * steps_per_update`` states.
      num_updates: gradient steps of the whole stage (also the cosine-decay horizon).
      proven_mine_weight: weight of ``-log(1 - P(reveal a proven mine))`` on the states
        where the label layers (``label_max_layer``) prove some hidden cell a mine, >= 0
        (0, the default: nothing keeps the policy off them but the other labels).
      few_proofs_weight: weight of the policy term again over the forced states with 1 to
        ``few_proofs_cells`` forced-safe cells (``losses.has_few_proofs``: their own mean,
        ``few_proofs_ce``), >= 0; 0 (the default) leaves them to the policy term's mean
        over all forced states. On 16x30 they are ~5% of the forced states and hold over
        half the proofs the agent passes over (benchmarks/missed_proofs.py). 0.5 on the
        16x30 stage: a third fewer of them passed over, no more games won
        (docs/experiments/058-a-deeper-network-six-layers.md, "Weighting ...").
      few_proofs_cells: the most forced-safe cells a state of ``few_proofs_ce`` has, >= 1.
      proof_bce_weight: weight of ``proof_bce`` on the forced states (``losses.proof_bce_sums``:
        each reveal logit read alone as the belief that its cell is proven safe, a balanced
        binary cross-entropy against the forced-safe labels), >= 0. The set cross-entropy
        is content once any one proved cell holds the policy's mass; this term asks the
        policy to tell every proved cell from every unproved one. 0 (the default): off.
      guess_weight: weight of the cross-entropy of the solver's move on states without
        a forced-safe label (0 = the seed: no policy loss there), >= 0.
      opening_weight: weight of the cross-entropy of the solver's first click on the
        states before a game's first click, >= 0. Without it (and ``guess_weight`` 0)
        nothing teaches the network where to open.
      label_max_layer: the solver layers (1..3) whose proofs are the policy labels.
      play_max_layer: the layers (1..4) of the solver that plays the games; 4 guesses
        by belief propagation, below 4 it guesses uniformly.
      learner_fraction: fraction of the games (rounded down) that the network plays,
        sampling its own masked policy, in [0, 1]; the solver plays the rest.
      microbatch_size: states that pass through the network together in the gradient
        step: its gradient is accumulated over micro-batches of this size (the same
        gradient up to float rounding), so the activations kept for the backward pass
        shrink by ``num_envs * steps_per_update / microbatch_size``. A divisor of
        ``num_envs * steps_per_update``; 0, or that many or more: all at once.
      random_first_click_share: share of new games opened at a uniformly random cell
        before anyone plays them; the rest open where their player clicks (the solver at
        ``solver.first_click``).
      share_forward: where it can (``forward_is_shared``), the learner's games play with
        the logits of the gradient step's own forward pass on their states, not a pass of
        their own: the same update, one network pass fewer (0.85 to 0.93 times the time per
        update of the CPU configs: docs/experiments/022-one-network-pass-fewer.md).
        False: the learner's pass of its own, as before (for timing the two).
    """

    num_updates: int = 2000
    proven_mine_weight: float = 0.0
    few_proofs_weight: float = 0.0
    few_proofs_cells: int = 3
    proof_bce_weight: float = 0.0
    guess_weight: float = 0.0
    opening_weight: float = 0.0
    label_max_layer: int = 2
    play_max_layer: int = 4
    learner_fraction: float = 0.5
    share_forward: bool = True

    def __post_init__(self):
        validate_config(self)

    @property
    def label_solver(self) -> solver.SolverConfig:
        return solver.SolverConfig(max_layer=self.label_max_layer)

    @property
    def num_learner_games(self) -> int:
        return int(self.learner_fraction * self.num_envs)

    @property
    def forward_is_shared(self) -> bool:
        """Whether each update's gradient pass also gives the learner's moves (one network
        pass where two ran before): ``share_forward``, learner games, one labelled step an
        update and one micro-batch."""
        return (
            self.share_forward and self.num_learner_games > 0 and self.steps_per_update == 1
            and losses.num_microbatches(self.num_envs, self.microbatch_size) == 1
        )

    def belief_carry_problem(self) -> str:
        """What keeps this stage from carrying a ``model.carry_beliefs`` network's beliefs
        over each game's moves ("" where nothing does): the beliefs handed on are the
        gradient pass's (``forward_is_shared``) on each game's previous labelled move, and a
        new game starts from none (no random first clicks)."""
        if not self.forward_is_shared:
            return (
                "imitation.forward_is_shared (share_forward=True, learner games, steps_per_update=1, one "
                "micro-batch): the beliefs handed on are those of the gradient pass"
            )
        if self.random_first_click_share:
            return (
                f"imitation.random_first_click_share=0 (got {self.random_first_click_share}): each game's "
                "beliefs are those of its previous labelled move, and a new game starts from none"
            )
        return ""

    @property
    def play_solver(self) -> solver.SolverConfig:
        """The rule solver that plays the solver's games."""
        return solver.SolverConfig(max_layer=self.play_max_layer)


def validate_config(cfg: ImitationConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    check_stage_fields(cfg)
    check_fields(cfg, (
        ("a bool", ("share_forward",)),
        ("an int >= 1", ("few_proofs_cells",)),
        (">= 0", ("guess_weight", "opening_weight", "proven_mine_weight", "few_proofs_weight", "proof_bce_weight")),
        ("in [0, 1]", ("learner_fraction",)),
        (int_in(1, 2, 3), ("label_max_layer",)),
        (int_in(1, 2, 3, 4), ("play_max_layer",)),
    ))
    losses.check_microbatch_size(
        "ImitationConfig.microbatch_size", cfg.microbatch_size, cfg.env_steps_per_update, "num_envs*steps_per_update"
    )
