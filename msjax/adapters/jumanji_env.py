"""msjax's game behind Jumanji's ``Environment`` interface (Jumanji 1.1; the ``jumanji`` extra).

``JumanjiMinesweeper(cfg)`` is a ``jumanji.env.Environment`` for any msjax board:
``reset(key) -> (state, TimeStep)`` and ``step(state, action) -> (state, TimeStep)``, with
the state an msjax ``env.EnvState`` (it carries its ``key``, as Jumanji's wrappers expect).
As Jumanji's own environments do, it does not restart games itself: wrap it in
``jumanji.wrappers.AutoResetWrapper`` (or ``VmapAutoResetWrapper``) for that.

* Observation (``MinesweeperObservation``): ``board``, ``env.observe``'s float32[C, H, W];
  ``action_mask``, bool[2*H*W] (the mask inside the observation, as in Jumanji's envs);
  ``step_count``, int32[].
* Action: ``DiscreteArray(2*H*W)``, msjax's encoding (``a < H*W`` reveals cell ``a``,
  row-major; ``a >= H*W`` toggles the flag on ``a - H*W``). Any other number is an invalid
  action, as in msjax: ``invalid_penalty``, the game unchanged, ``extras["invalid"]``.
* Step types: ``termination`` (discount 0) on a win or a mine; ``truncation`` (discount 1)
  when the game has used ``env.move_limit(cfg)`` moves; ``transition`` otherwise
  (``core.episode_end``). ``extras`` holds ``won`` and ``invalid`` (bool[]) of the step.
* ``reset`` takes a typed key (``jax.random.key``) or a legacy one (``jax.random.PRNGKey``)
  and nothing else; ``step`` refuses a state whose board is not the env's ``H x W``.
* ``render(state)`` returns ``env.render``'s text picture of the board.
* Under ``jax.vmap`` the step runs as msjax's batch step (``core.game_step``).
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jumanji import specs
from jumanji.env import Environment
from jumanji.types import StepType, TimeStep, restart

from msjax import env
from msjax.adapters.core import check_board_shape, check_key, episode_end, game_step
from msjax.env import EnvConfig, EnvState


class MinesweeperObservation(NamedTuple):
    """What the agent sees.

    Attributes:
      board: float32[C, H, W], ``env.observe``.
      action_mask: bool[2*H*W], ``env.action_mask``: reveals, then flags.
      step_count: int32[], moves played in this game.
    """

    board: jax.Array
    action_mask: jax.Array
    step_count: jax.Array


class JumanjiMinesweeper(Environment[EnvState, specs.DiscreteArray, MinesweeperObservation]):
    """msjax's Minesweeper as a Jumanji ``Environment`` (module docstring for the contract).

    Args:
      cfg: the game; default ``EnvConfig()`` (8x8, 10 mines).
    """

    def __init__(self, cfg: EnvConfig | None = None):
        self.cfg = EnvConfig() if cfg is None else cfg
        super().__init__()

    def __repr__(self) -> str:
        return f"JumanjiMinesweeper({self.cfg.H}x{self.cfg.W}x{self.cfg.mine_count})"

    def observation_of(self, state: EnvState) -> MinesweeperObservation:
        """The agent's view of a game."""
        return MinesweeperObservation(
            board=env.observe(state, self.cfg),
            action_mask=env.action_mask(state, self.cfg),
            step_count=state.step_count,
        )

    def reset(self, key: jax.Array) -> tuple[EnvState, TimeStep[MinesweeperObservation]]:
        """A new game from ``key`` (mines are placed at its first reveal) and its FIRST step.

        Raises:
          TypeError: ``key`` is not one PRNG key, typed or legacy (``core.check_key``).
        """
        check_key(key)
        state = env.reset(key, self.cfg)
        extras = {"won": jnp.bool_(False), "invalid": jnp.bool_(False)}
        return state, restart(self.observation_of(state), extras, dtype=jnp.float32)

    def step(self, state: EnvState, action: jax.Array) -> tuple[EnvState, TimeStep[MinesweeperObservation]]:
        """One move: ``(state, TimeStep)`` with the step type of ``core.episode_end``.

        Raises:
          ValueError: ``state`` is a board of another size than the env's ``cfg``.
        """
        check_board_shape(state, self.cfg, "env.cfg")
        state, reward, _, info = game_step(self.cfg)(state, jnp.asarray(action, jnp.int32))
        terminated, truncated = episode_end(state, self.cfg)
        timestep = TimeStep(
            step_type=jnp.where(terminated | truncated, StepType.LAST, StepType.MID),
            reward=reward.astype(jnp.float32),
            discount=jnp.where(terminated, 0.0, 1.0).astype(jnp.float32),
            observation=self.observation_of(state),
            extras={"won": info["won"], "invalid": info["invalid"]},
        )
        return state, timestep

    @cached_property
    def observation_spec(self) -> specs.Spec[MinesweeperObservation]:
        cfg = self.cfg
        return specs.Spec(
            MinesweeperObservation,
            "ObservationSpec",
            board=specs.BoundedArray((env.num_channels(cfg), cfg.H, cfg.W), jnp.float32, 0.0, 1.0, "board"),
            action_mask=specs.BoundedArray((cfg.num_actions,), bool, False, True, "action_mask"),
            step_count=specs.BoundedArray((), jnp.int32, 0, env.move_limit(cfg), "step_count"),
        )

    @cached_property
    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(self.cfg.num_actions, dtype=jnp.int32, name="action")

    @cached_property
    def reward_spec(self) -> specs.Array:
        return specs.Array((), jnp.float32, "reward")

    @cached_property
    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), jnp.float32, 0.0, 1.0, "discount")

    def render(self, state: EnvState) -> str:
        """``env.render``'s text picture of one board (``#`` hidden, ``F`` flag, numbers)."""
        return env.render(state, self.cfg)
