"""What a player is: anything with ``act(state, key) -> action`` on one board.

``Player`` is that protocol. Three kinds of player live here: ``Agent`` (a trained policy
network with its game), ``SolverAgent`` (the JAX rule solver) and ``RandomAgent`` (uniform
random reveals, the weakest baseline); ``FirstClickAt`` makes any of them open every game
at one given cell. A player may also offer
``mine_probabilities(state) -> f32[H, W]``, its belief that each cell holds a mine;
calibration diagnostics need it.

``Agent`` is a pytree (the parameters are its leaves; the network and game configs are
static), so its methods are pure functions of an ``EnvState`` that jit and vmap over
boards, and ``evaluate`` can take new parameters without recompiling. The other players
are frozen, hashable dataclasses, compiled as static arguments. Every player reads only
what a player sees (``observe``, ``action_mask``, the revealed counts), never the hidden
mines. The network is fully convolutional, so ``agent.for_board(env_cfg)`` plays another
board size with the same weights.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from msjax import env as ms_env
from msjax import models
from msjax import solver as solver_lib
from msjax.solver.grid import in_chunks


@runtime_checkable
class Player(Protocol):
    """A player of one board: ``act(state, key) -> int32[]`` action (``key`` for its
    random draws). It may also have ``mine_probabilities(state) -> f32[H, W]``."""

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array: ...


@dataclasses.dataclass(frozen=True)
class ActFunction:
    """A plain ``act(state, key) -> action`` function as a ``Player`` (static, hashable)."""

    function: Callable[[ms_env.EnvState, jax.Array], jax.Array]

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        return self.function(state, key)


def as_player(player: Any) -> Player:
    """``player`` itself when it has ``act``; a plain function wrapped in ``ActFunction``."""
    if hasattr(player, "act"):
        return player
    if callable(player):
        return ActFunction(player)
    raise TypeError(f"{type(player).__name__} is not a player: it needs act(state, key) -> action")


def has_mine_beliefs(player: Any) -> bool:
    """Whether ``player`` offers ``mine_probabilities(state)``."""
    return hasattr(player, "mine_probabilities")


def is_array_pytree(player: Any) -> bool:
    """Whether every leaf of ``player`` is an array: such a player is passed to compiled
    code as a traced argument (new values, no recompile); any other is a static one."""
    leaves = jax.tree.leaves(player)
    return bool(leaves) and all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves)


PROOF_SOLVERS = {
    "layers": solver_lib.SolverConfig(),
    "exact": solver_lib.SolverConfig(probabilities="exact"),
}
"""The deduction behind ``Agent.proofs``."""

LOOKAHEAD_LEAVES = ("value", "safe")
"""What ``Agent.lookahead_leaf`` may value a view by."""


@struct.dataclass
class Agent:
    """A policy network with the game it plays.

    Attributes:
      params: the network's parameters.
      model_cfg: the network (static).
      env_cfg: the game it plays (static); observations and legal moves follow it.
      greedy: play the most likely legal action (default) instead of sampling one.
      symmetric: average the network's outputs over the board's symmetries (8 on a square
        board, 4 otherwise: ``models.apply_network``), at that many times the compute.
      config: the training run's full ``ExperimentConfig``, when loaded from a run (static).
      proofs: play with proofs (``solver.forced_moves``): ``"layers"``, the rule layers' (1-3);
        ``"exact"``, the exact analysis' (every cell safe or a mine in all consistent layouts,
        an analysis per move); ``"off"`` (the default), none. While some hidden cell is proved
        safe the network chooses among those cells only (no flag), and it never reveals a
        proved mine: a hybrid player, not the network alone.
      lookahead: play with a look past the move (``lookahead_actions``): of the ``lookahead``
        reveals the policy likes best, a proved-safe one, else the one of best exact chance
        to be safe times the mean leaf value of the views it leads to; 0 (the default):
        the policy alone.
      lookahead_samples: the layouts drawn per view to play each candidate on (the
        same layouts for every candidate).
      lookahead_leaf: the value of a view a candidate leads to: ``"value"``, the network's
        value head (1 where the click wins the game); ``"safe"``, 1 (so the score is the
        exact chance to be safe alone: the look-ahead's control).
      lookahead_limits: the static sizes of the look-ahead's exact analysis and draws.
    """

    params: Any
    model_cfg: models.ModelConfig = struct.field(pytree_node=False)
    env_cfg: ms_env.EnvConfig = struct.field(pytree_node=False)
    greedy: bool = struct.field(pytree_node=False, default=True)
    config: Any = struct.field(pytree_node=False, default=None)
    symmetric: bool = struct.field(pytree_node=False, default=False)
    proofs: str = struct.field(pytree_node=False, default="off")
    lookahead: int = struct.field(pytree_node=False, default=0)
    lookahead_samples: int = struct.field(pytree_node=False, default=16)
    lookahead_leaf: str = struct.field(pytree_node=False, default="value")
    lookahead_limits: solver_lib.ExactLimits = struct.field(pytree_node=False, default=solver_lib.ExactLimits())

    def act(self, state: ms_env.EnvState, key: jax.Array | None = None) -> jax.Array:
        """int32[]: the move on one board (``key`` is needed only when sampling or looking
        ahead). A ``carry_beliefs`` network plays it from a zero prior (``act_carry``
        carries its beliefs over a game's moves)."""
        key = jax.random.key(0) if key is None else key
        if self.lookahead:
            return lookahead_actions(self, jax.tree.map(lambda x: x[None], state), key[None])[0]
        return self.action_from_logits(state, self.outputs(state)[0], key)

    def action_from_logits(self, state: ms_env.EnvState, logits: jax.Array, key: jax.Array) -> jax.Array:
        """int32[]: the move on one board given the network's policy ``logits`` (f32[2HW])
        on it: the legal move the policy likes best (or a draw), with ``proofs`` among
        the proved cells while there are any, never on a proved mine."""
        legal = ms_env.action_mask(state, self.env_cfg)
        if self.proofs == "off":
            return models.choose_action(logits, legal, key, self.greedy)
        forced = solver_lib.forced_moves(state, self.env_cfg, PROOF_SOLVERS[self.proofs])
        safe = (forced.safe & ~state.revealed).reshape(-1)
        num_cells = self.env_cfg.num_cells
        proved = jnp.concatenate([safe, jnp.zeros(legal.shape[0] - num_cells, bool)])  # reveals of proofs only
        unproved = legal.at[:num_cells].set(legal[:num_cells] & ~forced.mines.reshape(-1))
        return models.choose_action(logits, jnp.where(jnp.any(safe), legal & proved, unproved), key, self.greedy)

    def act_batch(self, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
        """int32[B]: the moves on a batch of boards (``states`` and ``keys`` with a leading
        ``[B]``): ``act`` on each, except that the look-ahead (``lookahead`` > 0) works on
        the whole batch, searching only the views that need it (``lookahead_actions``)."""
        if self.lookahead:
            return lookahead_actions(self, states, keys)
        return jax.vmap(lambda state, key: self.act(state, key))(states, keys)

    @property
    def carries_beliefs(self) -> bool:
        """Whether the network reads its own beliefs of the game's previous move
        (``ModelConfig.carry_beliefs``): ``evaluate.play_games`` then plays through
        ``initial_beliefs`` and ``act_carry``."""
        return self.model_cfg.carry_beliefs

    def initial_beliefs(self, states: ms_env.EnvState) -> jax.Array:
        """float32[B, H, W]: the beliefs ``act_carry`` starts a batch of games from (zeros)."""
        return jnp.zeros(states.revealed.shape, jnp.float32)

    def act_carry(
        self, states: ms_env.EnvState, keys: jax.Array, beliefs: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """``(int32[B] moves, float32[B, H, W] beliefs)`` on a batch of boards: the network
        reads ``beliefs``, its mine beliefs from each game's previous move (as
        ``models.carried_prior`` masks them), and hands on its mine beliefs on these
        positions for the next move. ``initial_beliefs`` starts the games.

        Raises:
          ValueError: with ``lookahead`` (its searched leaves have no previous move).
        """
        if self.lookahead:
            raise ValueError("Agent.lookahead does not carry beliefs over moves (model.carry_beliefs)")
        obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, self.env_cfg)
        prior = models.carried_prior(beliefs, states.revealed) if self.carries_beliefs else None
        logits, _, mine_logits = models.apply_network(self.params, self.model_cfg, obs, self.symmetric, prior)
        actions = jax.vmap(self.action_from_logits)(states, logits, keys)
        return actions, jax.nn.sigmoid(mine_logits)

    def outputs(self, state: ms_env.EnvState) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The network on one board: ``(logits f32[2HW], value f32[], mine_logits f32[H, W])``."""
        obs = ms_env.observe(state, self.env_cfg)[None]
        logits, value, mine_logits = models.apply_network(self.params, self.model_cfg, obs, self.symmetric)
        return logits[0], value[0], mine_logits[0]

    def action_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[2HW]: the policy over legal actions (reveals first, then flags)."""
        logits, _, _ = self.outputs(state)
        legal = ms_env.action_mask(state, self.env_cfg)
        return jax.nn.softmax(models.masked_logits(logits, legal)) * legal

    def mine_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[H, W]: the mine head's belief that each cell holds a mine."""
        _, _, mine_logits = self.outputs(state)
        return jax.nn.sigmoid(mine_logits)

    def value(self, state: ms_env.EnvState) -> jax.Array:
        """f32[]: the value head's estimate of the return from ``state``."""
        return self.outputs(state)[1]

    def for_board(self, env_cfg: ms_env.EnvConfig) -> "Agent":
        """The same weights playing ``env_cfg`` (any board size with the same observation channels)."""
        if ms_env.num_channels(env_cfg) != ms_env.num_channels(self.env_cfg):
            raise ValueError(
                f"env_cfg gives {ms_env.num_channels(env_cfg)} observation channels, the network "
                f"was trained on {ms_env.num_channels(self.env_cfg)} "
                f"({', '.join(ms_env.OBSERVATION_FIELDS)}, and whether boards is set, must match)"
            )
        return self.replace(env_cfg=env_cfg)

    def sampling(self) -> "Agent":
        """This agent sampling from its policy instead of playing greedily."""
        return self.replace(greedy=False)

    def symmetrised(self) -> "Agent":
        """This agent with its outputs averaged over the board's symmetries (``symmetric``)."""
        return self.replace(symmetric=True)

    def with_proofs(self, proofs: str = "layers") -> "Agent":
        """This agent playing proofs first (``proofs``: ``"layers"`` or ``"exact"``).

        Raises:
          ValueError: another ``proofs``.
        """
        if proofs not in PROOF_SOLVERS:
            raise ValueError(f"proofs={proofs!r} must be one of {tuple(PROOF_SOLVERS)}")
        return self.replace(proofs=proofs)

    def with_lookahead(
        self, candidates: int = 4, samples: int = 16, leaf: str = "value",
        limits: solver_lib.ExactLimits = solver_lib.ExactLimits(),
    ) -> "Agent":
        """This agent looking past its move (``lookahead_actions``): ``candidates`` of the
        policy's reveals scored on ``samples`` drawn layouts, leaves valued by ``leaf``
        (``"value"`` or ``"safe"``), the views analysed within ``limits``. Greedy, without proofs.

        Raises:
          ValueError: ``candidates`` or ``samples`` below 1, another ``leaf``, or an agent
            with proofs, sampling or a board mix.
        """
        if not isinstance(candidates, int) or not 1 <= candidates <= self.env_cfg.num_cells:
            raise ValueError(f"candidates={candidates!r} must be an int in [1, {self.env_cfg.num_cells}]")
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples={samples!r} must be an int >= 1")
        if leaf not in LOOKAHEAD_LEAVES:
            raise ValueError(f"leaf={leaf!r} must be one of {LOOKAHEAD_LEAVES}")
        if self.proofs != "off" or not self.greedy or self.env_cfg.boards:
            raise ValueError("the look-ahead plays a greedy agent without proofs on one board size")
        return self.replace(lookahead=candidates, lookahead_samples=samples, lookahead_leaf=leaf, lookahead_limits=limits)


def lookahead_actions(agent: Agent, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
    """int32[B]: ``agent``'s moves with its look-ahead, on a batch of boards.

    The policy's ``K = agent.lookahead`` most likely legal reveals of each view are its
    candidates, and the view is analysed exactly (``solver.exact_analysis``). Where a
    candidate is proved safe, the first such in the policy's order is played. Elsewhere (a
    guess) each candidate's score is its exact chance to be safe times, with
    ``lookahead_leaf="value"``, the mean value of the views it leads to: ``N =
    agent.lookahead_samples`` layouts that fit the view are drawn uniformly
    (``solver.sample_layouts``), each candidate is clicked on each of them by the env's own
    rules (cascades included), and a view reached is worth the network's value head there
    (1 where the click wins; the mean over the layouts where the candidate is safe, 1 where
    no draw has it safe). The best score is played, ties to the policy's order. Before the
    first click and beyond the exact analysis' limits, the policy plays alone.

    Only the guess views are searched, gathered in chunks of a sixteenth of the batch
    (``solver.grid.in_chunks``): ``K * N`` network evaluations each. Reads only the views
    (the drawn layouts stand in for the hidden mines); each board's key draws its layouts,
    so a board's move does not depend on the rest of the batch.
    """
    env_cfg, num_cells, num_boards = agent.env_cfg, agent.env_cfg.num_cells, keys.shape[0]
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, env_cfg)
    logits, _, _ = models.apply_network(agent.params, agent.model_cfg, obs, agent.symmetric)
    legal = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, env_cfg)
    _, cells = jax.lax.top_k(models.masked_logits(logits[:, :num_cells], legal[:, :num_cells]), agent.lookahead)
    at_candidates = lambda x: jnp.take_along_axis(x.reshape(num_boards, -1), cells, axis=1)  # [B, K]
    analysis = solver_lib.exact_analysis(states.revealed, states.counts, states.mine_count, agent.lookahead_limits)
    candidate = at_candidates(legal[:, :num_cells])
    proved = candidate & at_candidates(analysis.safe)
    score = 1.0 - at_candidates(analysis.mine_prob)
    searched = analysis.exact & states.first_click_done
    if agent.lookahead_leaf == "value":
        guess = searched & ~jnp.any(proved, axis=1)
        leaves = functools.partial(_mean_leaf_values, agent)
        chunk = max(1, num_boards // 16)
        score = score * in_chunks(guess, chunk, leaves, (states, cells, keys), jnp.ones(cells.shape), axis=0)
    best = jnp.where(jnp.any(proved, axis=1), jnp.argmax(proved, axis=1), jnp.argmax(jnp.where(candidate, score, -jnp.inf), axis=1))
    chosen = jnp.take_along_axis(cells, best[:, None], axis=1)[:, 0]
    policy = jax.vmap(models.choose_action, in_axes=(0, 0, 0, None))(logits, legal, keys, True)
    return jnp.where(searched, chosen, policy).astype(jnp.int32)


def _mean_leaf_values(agent: Agent, inputs) -> jax.Array:
    """f32[C, K]: each candidate's mean leaf value over drawn layouts where it is safe
    (``lookahead_actions``), for a chunk of ``C`` views."""
    states, cells, keys = inputs
    env_cfg = agent.env_cfg
    draw = lambda key, *view: solver_lib.sample_layouts(
        key, *(x[None] for x in view), agent.lookahead_samples, agent.lookahead_limits
    )
    layouts = jax.tree.map(lambda x: x[:, 0], jax.vmap(draw)(keys, states.revealed, states.counts, states.mine_count))

    def click(state, mine_mask, cell):
        placed = ms_env.from_mines(mine_mask, env_cfg)
        child = state.replace(mine_mask=placed.mine_mask, counts=placed.counts)
        child, _, _, info = ms_env.step(child, ms_env.encode_action(cell, False, env_cfg), env_cfg)
        return ms_env.observe(child, env_cfg), info["lost"], info["won"]

    on_layouts = jax.vmap(click, in_axes=(None, 0, None))  # [N]
    on_candidates = jax.vmap(on_layouts, in_axes=(None, None, 0))  # [K, N]
    obs, lost, won = jax.vmap(on_candidates)(states, layouts.mines, cells)  # [C, K, N, ...]
    _, values, _ = models.apply_network(agent.params, agent.model_cfg, obs.reshape((-1,) + obs.shape[3:]), agent.symmetric)
    leaf = jnp.where(won, 1.0, values.reshape(won.shape))
    safe_draws = jnp.sum(~lost, axis=2)
    mean = jnp.sum(jnp.where(lost, 0.0, leaf), axis=2) / jnp.maximum(safe_draws, 1)
    return jnp.where((safe_draws > 0) & layouts.exact[:, None], mean, 1.0)


@dataclasses.dataclass(frozen=True)
class SolverAgent:
    """The JAX rule solver as a player (hashable: ``evaluate`` compiles it as a static).

    Attributes:
      env_cfg: the game it plays.
      solver_cfg: the solver's layers and guess options.
    """

    env_cfg: ms_env.EnvConfig
    solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig()

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        """int32[]: the solver's move on one board."""
        return solver_lib.solver_action(state, key, self.env_cfg, self.solver_cfg)[0]

    def mine_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[H, W]: the solver's mine estimates (proved cells 0/1, layer-4 elsewhere), with
        what the rules make certain at 0 (``env.with_rule_certainties``: before the first
        click, every cell)."""
        probabilities = solver_lib.mine_probabilities(state, self.env_cfg, self.solver_cfg)
        return ms_env.with_rule_certainties(probabilities, state)


@dataclasses.dataclass(frozen=True)
class RandomAgent:
    """A baseline that reveals a hidden (playable) cell uniformly at random, never flags
    (hashable: equal configs share one compiled game loop).

    Attributes:
      env_cfg: the game it plays.
    """

    env_cfg: ms_env.EnvConfig

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        """int32[]: a uniformly random reveal of a hidden cell."""
        hidden = ~state.revealed
        if self.env_cfg.boards:
            hidden = hidden & ms_env.playable(state, self.env_cfg)
        hidden = hidden.reshape(-1)
        logits = jnp.where(hidden, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32)


@struct.dataclass
class FirstClickAt:
    """``player`` with its first reveal of every game made at ``cell`` instead of its own
    choice; every later move is the player's. Its leaves are the player's, so a wrapped
    ``Agent`` is still passed to compiled games as a traced argument.

    Attributes:
      player: any ``Player``.
      cell: ``(row, col)`` on the board of ``env_cfg`` (static).
      env_cfg: the game it plays (static).
    """

    player: Any
    cell: tuple[int, int] = struct.field(pytree_node=False)
    env_cfg: ms_env.EnvConfig = struct.field(pytree_node=False)

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        """int32[]: the reveal of ``cell`` before the first reveal, else the player's move.

        Raises:
          ValueError: ``cell`` is off the board (when traced).
        """
        row, col = self.cell
        if not (0 <= row < self.env_cfg.H and 0 <= col < self.env_cfg.W):
            raise ValueError(
                f"FirstClickAt.cell={self.cell!r} is off the {self.env_cfg.H}x{self.env_cfg.W} board"
            )
        opening = jnp.int32(ms_env.encode_action(row * self.env_cfg.W + col, False, self.env_cfg))
        return jnp.where(state.first_click_done, jnp.asarray(self.player.act(state, key), jnp.int32), opening)


def from_params(params: Any, cfg: Any, greedy: bool = True) -> Agent:
    """An agent playing ``cfg.env`` with ``params`` (``cfg`` an ``ExperimentConfig``; the
    config itself is not kept, so agents of runs that differ only outside env/model share
    compiled code)."""
    return Agent(params=params, model_cfg=cfg.model, env_cfg=cfg.env, greedy=greedy)
