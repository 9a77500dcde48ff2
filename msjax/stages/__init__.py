"""The training stages: one module per stage (``imitation``, ``ppo``) and the curriculum
levels that the PPO stage plays through (``curriculum``)."""

__all__ = ["curriculum", "imitation", "ppo"]
