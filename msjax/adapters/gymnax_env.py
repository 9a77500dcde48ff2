"""msjax's game behind gymnax's ``Environment`` interface (gymnax 1.0; the ``gymnax`` extra).

``GymnaxMinesweeper(cfg)`` is a ``gymnax.environments.environment.Environment`` for any
msjax board: ``reset(key, params) -> (obs, state)`` and the 1.0 six-value
``step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)``
with auto-reset and ``info["final_observation"]``. Consumers that still unpack five values
(PureJaxRL, rejax) use ``LegacyGymnaxMinesweeper`` (``msjax.adapters.make(board,
"gymnax-legacy")``): ``(obs, state, reward, done, info)`` with ``done = terminated |
truncated``, as gymnax's ``LegacyStepAPIWrapper``, but a subclass rather than a wrapper:
rejax deep-copies its env, and the wrapper's ``__getattr__`` recurses forever on a copy
(gymnax 1.0.1).

* Observation: ``env.observe``, float32[C, H, W]; with ``mask_in_observation`` two more
  planes, the legal reveals and the legal flags (1.0 where legal), so a policy that sees
  only the observation can mask its logits (``legal_actions_in_observation``).
* Action: ``Discrete(2*H*W)``, msjax's encoding: ``a < H*W`` reveals cell ``a``
  (row-major), ``a >= H*W`` toggles the flag on ``a - H*W``. Any other number is an
  invalid action, as in msjax: ``invalid_penalty``, the game unchanged, ``info["invalid"]``.
* The legal-action mask: ``state.legal_action_mask`` (bool[2*H*W]), computed once per
  step for the game the agent sees next (the new game after an auto-reset).
* Terminated on a win or a mine, truncated at ``env.move_limit(cfg)`` moves
  (``core.episode_end``); ``info`` also holds msjax's step info (``won``, ``invalid``, ...)
  for the step that was played.
* Keys: a game carries its own key, as in msjax: mines are placed from it at the first
  reveal, and after an auto-reset the next game starts from it, exactly as
  ``env.batch_step`` does, so a vmapped batch is move for move msjax's batch on the same
  reset keys. The step key is accepted for the interface and not used.
* Params (``MinesweeperParams``) carry the board and rules (``cfg``) as static pytree
  metadata: jitted consumers that take params as an argument still see a static config.
* Checked at the door, in Python (shapes and dtypes are static): ``reset`` takes a typed
  key (``jax.random.key``) or a legacy one (``jax.random.PRNGKey``) and nothing else; a step
  refuses a state whose board is not ``params.cfg``'s ``H x W``.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from msjax import env
from msjax.adapters.core import check_board_shape, check_bool, check_key, episode_end, game_step, restart_ended
from msjax.env import EnvConfig, EnvState


@struct.dataclass
class MinesweeperParams:
    """gymnax params: the game's config and the move cap, both static (no array leaves).

    Attributes:
      cfg: the msjax ``EnvConfig`` (board, mines, rewards, observation options).
      max_steps_in_episode: ``env.move_limit(cfg)``, the truncation step (gymnax's name,
        read by consumers such as rejax's evaluation).
    """

    cfg: EnvConfig = struct.field(pytree_node=False)
    max_steps_in_episode: int = struct.field(pytree_node=False)


@struct.dataclass
class MinesweeperState:
    """gymnax state: the msjax game and the legal actions of its current position.

    Attributes:
      game: ``env.EnvState`` of the game in play.
      legal_action_mask: bool[2*H*W], ``env.action_mask(game)``.
    """

    game: EnvState
    legal_action_mask: jax.Array

    @property
    def time(self) -> jax.Array:
        """int32[]: moves played in this game (gymnax's name)."""
        return self.game.step_count


def params_of(cfg: EnvConfig) -> MinesweeperParams:
    """The ``MinesweeperParams`` of a config."""
    return MinesweeperParams(cfg=cfg, max_steps_in_episode=env.move_limit(cfg))


def legal_actions_in_observation(obs: jax.Array) -> jax.Array:
    """bool[..., 2*H*W]: the legal-action mask carried by an observation of
    ``GymnaxMinesweeper(cfg, mask_in_observation=True)`` (its last two planes), in action
    order. ``obs``: float32[..., C+2, H, W]."""
    planes = obs[..., -2:, :, :]
    return planes.reshape(planes.shape[:-3] + (-1,)) > 0.5


class GymnaxMinesweeper(environment.Environment[MinesweeperState, MinesweeperParams]):
    """msjax's Minesweeper as a gymnax ``Environment`` (module docstring for the contract).

    Args:
      cfg: the game; default ``EnvConfig()`` (8x8, 10 mines).
      mask_in_observation: append the legal reveals and flags as two observation planes.
    """

    def __init__(self, cfg: EnvConfig | None = None, mask_in_observation: bool = False):
        super().__init__()
        check_bool("mask_in_observation", mask_in_observation)
        self.cfg = EnvConfig() if cfg is None else cfg
        self.mask_in_observation = mask_in_observation

    def __eq__(self, other: object) -> bool:  # equal envs share jitted code (``self`` is static)
        return type(other) is type(self) and (other.cfg, other.mask_in_observation) == (
            self.cfg,
            self.mask_in_observation,
        )

    def __hash__(self) -> int:
        return hash((type(self), self.cfg, self.mask_in_observation))

    @property
    def default_params(self) -> MinesweeperParams:
        return params_of(self.cfg)

    @property
    def name(self) -> str:
        return f"msjax-Minesweeper-{self.cfg.H}x{self.cfg.W}x{self.cfg.mine_count}"

    @property
    def num_actions(self) -> int:
        return self.cfg.num_actions

    def action_space(self, params: MinesweeperParams | None = None) -> spaces.Discrete:
        cfg = self.cfg if params is None else params.cfg
        return spaces.Discrete(cfg.num_actions)

    def observation_space(self, params: MinesweeperParams | None = None) -> spaces.Box:
        cfg = self.cfg if params is None else params.cfg
        channels = env.num_channels(cfg) + 2 * int(self.mask_in_observation)
        return spaces.Box(0.0, 1.0, (channels, cfg.H, cfg.W), jnp.float32)

    def state_of(self, game: EnvState, params: MinesweeperParams) -> MinesweeperState:
        """The gymnax state of an msjax game (its legal actions computed once, here)."""
        return MinesweeperState(game=game, legal_action_mask=env.action_mask(game, params.cfg))

    def observe(self, key: jax.Array, state: MinesweeperState, action: Any, params: MinesweeperParams) -> jax.Array:
        """float32[C, H, W] (``C+2`` with ``mask_in_observation``); ``key`` and ``action`` unused."""
        del key, action
        obs = env.observe(state.game, params.cfg)
        if not self.mask_in_observation:
            return obs
        mask = state.legal_action_mask.reshape(2, params.cfg.H, params.cfg.W).astype(jnp.float32)
        return jnp.concatenate([obs, mask])

    def get_obs(self, state: MinesweeperState, params: MinesweeperParams | None = None, key: Any = None) -> jax.Array:
        """The legacy hook: ``observe`` without a key or action."""
        return self.observe(key, state, None, self.default_params if params is None else params)

    def reset_env(self, key: jax.Array, params: MinesweeperParams) -> tuple[jax.Array, MinesweeperState]:
        """A new game from ``key``, a typed or legacy PRNG key (``core.check_key``)."""
        check_key(key)
        state = self.state_of(env.reset(key, params.cfg), params)
        return self.observe(key, state, None, params), state

    def step_env(
        self, key: jax.Array, state: MinesweeperState, action: Any, params: MinesweeperParams
    ) -> tuple[jax.Array, MinesweeperState, jax.Array, jax.Array, dict[str, jax.Array]]:
        """One move without auto-reset: ``(obs, state, reward, terminated, info)``; ``info``
        also holds ``truncated`` (the move cap)."""
        game, reward, info = self._play(state, action, params)
        terminated, truncated = episode_end(game, params.cfg)
        state = self.state_of(game, params)
        return self.observe(key, state, action, params), state, reward, terminated, {**info, "truncated": truncated}

    def _play(
        self, state: MinesweeperState, action: Any, params: MinesweeperParams
    ) -> tuple[EnvState, jax.Array, dict[str, jax.Array]]:
        """``(game, reward, info)`` of one move (``core.game_step``), the game as it ended.

        Raises:
          ValueError: ``state`` is a board of another size than ``params.cfg``'s.
        """
        check_board_shape(state.game, params.cfg, "params.cfg")
        game, reward, _, info = game_step(params.cfg)(state.game, jnp.asarray(action, jnp.int32))
        return game, reward, info

    def is_terminated(self, state: MinesweeperState, params: MinesweeperParams) -> jax.Array:
        return episode_end(state.game, params.cfg)[0]

    def is_truncated(self, state: MinesweeperState, params: MinesweeperParams) -> jax.Array:
        return episode_end(state.game, params.cfg)[1]

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(
        self, key: jax.Array, state: MinesweeperState, action: Any, params: MinesweeperParams | None = None
    ) -> tuple[jax.Array, MinesweeperState, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """One move with auto-reset (gymnax 1.0): ``(obs, state, reward: float32[],
        terminated: bool[], truncated: bool[], info)``. After a last move ``obs`` and
        ``state`` are the next game's; the ended game's observation is
        ``info["final_observation"]``. ``info`` also holds ``terminated``, ``truncated`` and
        msjax's step info (``won``, ``lost``, ``invalid``, ``new_revealed``, ``steps``,
        ``revealed_fraction``)."""
        params = self.default_params if params is None else params
        game, reward, info = self._play(state, action, params)
        terminated, truncated = episode_end(game, params.cfg)
        final_observation = self.observe(key, self.state_of(game, params), action, params)
        next_state = self.state_of(restart_ended(game, terminated | truncated, params.cfg), params)
        info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": final_observation}
        return self.observe(key, next_state, action, params), next_state, reward, terminated, truncated, info



class LegacyGymnaxMinesweeper(GymnaxMinesweeper):
    """``GymnaxMinesweeper`` with gymnax's five-value step (before 1.0):
    ``(obs, state, reward, done, info)``, ``done = terminated | truncated``; ``info`` keeps
    ``terminated``, ``truncated`` and ``final_observation``."""

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(
        self, key: jax.Array, state: MinesweeperState, action: Any, params: MinesweeperParams | None = None
    ) -> tuple[jax.Array, MinesweeperState, jax.Array, jax.Array, dict[str, Any]]:
        obs, state, reward, terminated, truncated, info = super().step(key, state, action, params)
        return obs, state, reward, terminated | truncated, info
