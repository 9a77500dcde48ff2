"""msjax.evaluate.diagnostics.proof_beliefs (benchmarks.missed_proofs' second table): what an
agent's two heads said on a state it passed over."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from drawings import config_for, position

from msjax import solver
from msjax.evaluate.diagnostics import proof_beliefs

BOARD = """
    . . . .
    . . . .
    . . . .
    # # * #
"""  # the 0 and the 1s prove (3, 0), (3, 1) and (3, 3) safe; (3, 2) is the mine
MINE_CELL = 14
LABEL_SOLVER = solver.SolverConfig(max_layer=2)  # benchmarks.missed_proofs' deduction


@dataclasses.dataclass(frozen=True)
class FixedHeads:
    """An agent whose outputs are the same on every board: policy logits and mine logits."""

    logits: jax.Array
    mine_logits: jax.Array

    def outputs(self, state):
        return self.logits, jnp.float32(0.0), self.mine_logits


def beliefs_about_revealing_the_mine(mine_logits: np.ndarray) -> dict[str, bool]:
    cfg = config_for(BOARD)
    states = jax.tree.map(lambda x: x[None], position(BOARD, cfg))
    safe = solver.batch_forced_moves(states, cfg, LABEL_SOLVER).safe & ~states.revealed
    assert np.flatnonzero(np.asarray(safe[0]).reshape(-1)).tolist() == [12, 13, 15]
    logits = jnp.zeros(2 * cfg.num_cells).at[MINE_CELL].set(10.0)  # nearly all its mass on the mine
    agent = FixedHeads(logits, jnp.asarray(mine_logits, jnp.float32).reshape(4, 4))
    found = proof_beliefs(agent, states, jnp.array([MINE_CELL]), cfg, safe)
    return {name: bool(value[0]) for name, value in found.items()}


def test_a_mine_head_that_shares_the_misreading_agrees_with_the_move():
    mine_logits = np.zeros(16)
    mine_logits[MINE_CELL] = -10.0  # believes the mine the safest cell
    assert beliefs_about_revealing_the_mine(mine_logits) == {
        "policy_below_10pct": True, "policy_majority": False, "head_agreed": True, "head_sure": False}


def test_a_mine_head_that_saw_the_proof_is_sure_of_a_proved_cell():
    mine_logits = np.full(16, 5.0)
    mine_logits[[12, 13, 15]] = [-10.0, 0.0, 0.0]  # (3, 0) safe beyond doubt; the mine believed one
    assert beliefs_about_revealing_the_mine(mine_logits) == {
        "policy_below_10pct": True, "policy_majority": False, "head_agreed": False, "head_sure": True}
