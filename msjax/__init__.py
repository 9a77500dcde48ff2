"""msjax: Minesweeper reinforcement learning fully on the accelerator, in JAX.

``msjax.load_agent(path)`` loads a trained agent from a run directory, or one that ships
with the package by name (``msjax.load_agent("beginner")``; ``msjax.shipped``); it is
imported on first use so that ``import msjax`` stays light (no Orbax, no TensorBoard).
"""

from msjax.env import EnvConfig, EnvState

__all__ = ["EnvConfig", "EnvState", "load_agent"]


def __getattr__(name):
    if name == "load_agent":
        from msjax.run.agents import load_agent

        return load_agent
    raise AttributeError(f"module 'msjax' has no attribute {name!r}")
