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
from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from msjax import env as ms_env
from msjax import models
from msjax import solver as solver_lib


@runtime_checkable
class Player(Protocol):
    """A player of one board: ``act(state, key) -> int32[]`` action (``key`` for its
    random draws). It may also have ``mine_probabilities(state) -> f32[H, W]``."""

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array: ...


def player_actions(player: Any, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
    """int32[B]: ``player.act`` vmapped over a batch of games (``keys`` ``[B]``), or the
    player's own ``act_batch(states, keys)`` where it has one."""
    if hasattr(player, "act_batch"):
        return jnp.asarray(player.act_batch(states, keys), jnp.int32)
    actions = jax.vmap(lambda p, s, k: p.act(s, k), in_axes=(None, 0, 0))(player, states, keys)
    return jnp.asarray(actions, jnp.int32)


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
    """

    params: Any
    model_cfg: models.ModelConfig = struct.field(pytree_node=False)
    env_cfg: ms_env.EnvConfig = struct.field(pytree_node=False)
    greedy: bool = struct.field(pytree_node=False, default=True)
    config: Any = struct.field(pytree_node=False, default=None)
    symmetric: bool = struct.field(pytree_node=False, default=False)
    proofs: str = struct.field(pytree_node=False, default="off")

    def act(self, state: ms_env.EnvState, key: jax.Array | None = None) -> jax.Array:
        """int32[]: the move on one board (``key`` is needed only when sampling). A
        ``carry_beliefs`` network plays it from a zero prior (``act_carry`` carries its
        beliefs over a game's moves)."""
        key = jax.random.key(0) if key is None else key
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
        """int32[B]: ``act`` on each of a batch of boards (``states`` and ``keys`` with a
        leading ``[B]``)."""
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
        """
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


@dataclasses.dataclass(frozen=True)
class SolverAgent:
    """The JAX rule solver as a player (hashable: ``evaluate`` compiles it as a static).

    Attributes:
      env_cfg: the game it plays.
      solver_cfg: the solver's layers and guess options.
      guess: how it guesses on exact probabilities (a hashable ``solver.Guess``, e.g.
        ``msjax.search.SearchGuess``: the search player); None: the rule solver's own guess.
    """

    env_cfg: ms_env.EnvConfig
    solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig()
    guess: Any = None

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        """int32[]: the solver's move on one board."""
        return solver_lib.solver_action(state, key, self.env_cfg, self.solver_cfg, self.guess)[0]

    def act_batch(self, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
        """int32[B]: ``act`` on each board of a batch (``keys`` ``[B]``), the same moves, by
        ``solver.batch_solver_action``: only the boards without a proof go on to the guess,
        in chunks, so a search guess's tables are never built for the whole batch at once
        (``jax.vmap(act)`` would build them for every board)."""
        return solver_lib.batch_solver_action(states, keys, self.env_cfg, self.solver_cfg, 0, self.guess)[0]

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
        opening = self._opening()
        return jnp.where(state.first_click_done, jnp.asarray(self.player.act(state, key), jnp.int32), opening)

    def act_batch(self, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
        """int32[B]: ``act`` on a batch (``keys`` ``[B]``), the player's moves from its own
        ``act_batch`` where it has one (a search, the solver: batched programs that
        ``jax.vmap`` of their ``act`` would build for every board at once).

        Raises:
          ValueError: ``cell`` is off the board (when traced).
        """
        opening = self._opening()
        return jnp.where(states.first_click_done, player_actions(self.player, states, keys), opening)

    def _opening(self) -> jax.Array:
        """int32[]: the reveal of ``cell``; ``ValueError`` where it is off the board."""
        row, col = self.cell
        if not (0 <= row < self.env_cfg.H and 0 <= col < self.env_cfg.W):
            raise ValueError(
                f"FirstClickAt.cell={self.cell!r} is off the {self.env_cfg.H}x{self.env_cfg.W} board"
            )
        return jnp.int32(ms_env.encode_action(row * self.env_cfg.W + col, False, self.env_cfg))


def from_params(params: Any, cfg: Any, greedy: bool = True) -> Agent:
    """An agent playing ``cfg.env`` with ``params`` (``cfg`` an ``ExperimentConfig``; the
    config itself is not kept, so agents of runs that differ only outside env/model share
    compiled code)."""
    return Agent(params=params, model_cfg=cfg.model, env_cfg=cfg.env, greedy=greedy)
