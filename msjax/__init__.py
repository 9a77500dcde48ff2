"""msjax: Minesweeper reinforcement learning fully on the accelerator, in JAX."""

from msjax.env import EnvConfig, EnvState

__all__ = ["EnvConfig", "EnvState"]
