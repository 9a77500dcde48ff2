"""Plain statistics of game results and predictions (NumPy, no JAX): the Wilson interval
of a win rate, the paired difference of two players' outcomes on the same boards, AUROC by ranks, and calibration of probabilities (equal-width bins, ECE,
Brier score).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval (95% for the default ``z``) of a binomial rate."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    center = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def paired_difference(baseline: Any, other: Any, z: float = 1.959964) -> tuple[float, tuple[float, float]]:
    """The mean of ``other - baseline`` over the same boards and its interval (95% for the
    default ``z``: the normal interval of the per-board differences' mean).

    Args:
      baseline: bool[N] (or 0/1), the first player's outcome on each board.
      other: bool[N], the second player's outcome on the same boards.

    Returns:
      ``(difference, (low, high))``; the interval is ``(nan, nan)`` for fewer than two boards.

    Raises:
      ValueError: the two hold different numbers of boards.
    """
    baseline = np.asarray(baseline, np.float64).reshape(-1)
    other = np.asarray(other, np.float64).reshape(-1)
    if baseline.shape != other.shape:
        raise ValueError(f"paired_difference: {baseline.size} and {other.size} boards: pair the same boards")
    difference = other - baseline
    mean = float(difference.mean()) if difference.size else float("nan")
    if difference.size < 2:
        return mean, (float("nan"), float("nan"))
    half = z * float(difference.std(ddof=1)) / math.sqrt(difference.size)
    return mean, (mean - half, mean + half)


def auroc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve by ranks (Mann-Whitney U); tied scores share their mean rank.

    Args:
      scores: f[N], higher means more likely positive.
      labels: bool[N].

    Returns:
      The probability that a random positive outscores a random negative (ties count
      half); nan when either class is empty.
    """
    scores = np.asarray(scores, np.float64).reshape(-1)
    labels = np.asarray(labels, bool).reshape(-1)
    positives = int(labels.sum())
    negatives = labels.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    mean_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based ranks, ties averaged
    rank_sum = float(mean_rank[inverse][labels].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


class CalibrationBins(NamedTuple):
    """Predictions grouped into equal-width probability bins.

    Attributes:
      edges: f64[B + 1], bin edges over [0, 1].
      mean_predicted: f64[B], mean prediction per bin (NaN where empty).
      observed: f64[B], fraction of positive labels per bin (NaN where empty).
      counts: int[B], predictions per bin.
      ece: expected calibration error, sum over bins of count/N * |observed - predicted|.
    """

    edges: np.ndarray
    mean_predicted: np.ndarray
    observed: np.ndarray
    counts: np.ndarray
    ece: float


def calibration_bins(probabilities: Any, labels: Any, num_bins: int = 10) -> CalibrationBins:
    """Bins predictions ``probabilities`` (f[N], in [0, 1]) against ``labels`` (bool[N]).

    Raises:
      ValueError: lengths differ, ``num_bins < 1``, or a probability outside [0, 1].
    """
    probs = np.asarray(probabilities, np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1).astype(np.float64)
    if probs.shape != labels.shape:
        raise ValueError(f"{probs.shape[0]} probabilities but {labels.shape[0]} labels")
    if num_bins < 1:
        raise ValueError(f"num_bins={num_bins} must be >= 1")
    if probs.size and (probs.min() < 0.0 or probs.max() > 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    index = np.clip(np.searchsorted(edges, probs, side="right") - 1, 0, num_bins - 1)
    counts = np.bincount(index, minlength=num_bins)
    sums = np.bincount(index, weights=probs, minlength=num_bins)
    positives = np.bincount(index, weights=labels, minlength=num_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_predicted = np.where(counts > 0, sums / counts, np.nan)
        observed = np.where(counts > 0, positives / counts, np.nan)
    filled = counts > 0
    total = max(int(counts.sum()), 1)
    ece = float(np.sum(counts[filled] / total * np.abs(observed[filled] - mean_predicted[filled])))
    return CalibrationBins(edges, mean_predicted, observed, counts, ece)


def calibration_metrics(probs: Any, labels: Any, mask: Any = None, num_bins: int = 10) -> dict[str, float]:
    """AUROC, expected calibration error and Brier score of mine predictions.

    Args:
      probs: f[...], predicted P(mine), in [0, 1].
      labels: bool[...], whether each cell holds a mine (same shape).
      mask: bool[...], the cells to score (e.g. the hidden ones); None scores all.
      num_bins: equal-width bins of the ECE.

    Returns:
      ``auroc`` (nan with one class only), ``ece``, ``brier`` and ``cells`` (scored).

    Raises:
      ValueError: the shapes of ``probs``, ``labels`` and ``mask`` differ.
    """
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels, bool)
    if probs.shape != labels.shape:
        raise ValueError(f"probs shape {probs.shape} differs from labels shape {labels.shape}")
    mask = np.ones(probs.shape, bool) if mask is None else np.asarray(mask, bool)
    if mask.shape != probs.shape:
        raise ValueError(f"mask shape {mask.shape} differs from probs shape {probs.shape}")
    chosen, truth = probs[mask], labels[mask]
    if chosen.size == 0:
        return {"auroc": float("nan"), "ece": float("nan"), "brier": float("nan"), "cells": 0}
    return {
        "auroc": auroc(chosen, truth),
        "ece": calibration_bins(chosen, truth, num_bins).ece,
        "brier": float(np.mean((chosen - truth) ** 2)),
        "cells": int(chosen.size),
    }
