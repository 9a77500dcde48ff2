"""argparse types that check counts, so that a bad number is one ``error:`` line naming
the option and its allowed range."""

from __future__ import annotations

import argparse

__all__ = ["non_negative_int", "positive_int", "positive_float", "seed", "MAX_SEED"]

MAX_SEED = 2**32 - 1
"""The largest ``--seed``: a game's key is ``jax.random.key(seed)``, and seeds are offset
per game, so they stay far inside the 64-bit integers JAX converts them to."""


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} must be > 0")
    return value


def seed(text: str) -> int:
    """argparse type: a seed, an integer in ``[0, MAX_SEED]``."""
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} must be in [0, {MAX_SEED}]")
    return value
