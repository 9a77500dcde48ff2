"""Plain statistics: the Wilson interval, AUROC by ranks, calibration bins and metrics."""

import numpy as np
import pytest

from msjax import stats


def test_wilson_interval_matches_known_values():
    low, high = stats.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = stats.wilson_interval(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-4) and high == pytest.approx(0.5962, abs=1e-4)


def test_auroc_of_a_perfect_a_reversed_and_a_constant_ranking():
    labels = np.array([0, 0, 1, 0, 1, 1], bool)
    scores = np.array([0.1, 0.2, 0.7, 0.3, 0.8, 0.9])
    assert stats.auroc(scores, labels) == 1.0
    assert stats.auroc(1.0 - scores, labels) == 0.0
    assert stats.auroc(np.full(6, 0.4), labels) == 0.5


def test_auroc_counts_ties_between_classes_as_half():
    # positive 0.5 ties one negative and beats the other: (1 + 0.5) / 2
    assert stats.auroc([0.5, 0.5, 0.1], [True, False, False]) == 0.75


def test_calibration_bins_of_calibrated_and_overconfident_predictions():
    calibrated = stats.calibration_bins(np.full(8, 0.25), np.array([1, 0, 0, 0, 1, 0, 0, 0]), num_bins=4)
    assert calibrated.ece == pytest.approx(0.0)
    assert calibrated.counts.tolist() == [0, 8, 0, 0]
    overconfident = stats.calibration_bins(np.array([0.9, 0.9, 0.1, 0.1]), np.array([0, 0, 0, 0]))
    assert overconfident.ece == pytest.approx(0.5)  # half the cells off by 0.9, half by 0.1
    assert overconfident.observed[9] == 0.0 and overconfident.mean_predicted[9] == pytest.approx(0.9)


def test_calibration_bins_reject_mismatched_inputs():
    with pytest.raises(ValueError, match="labels"):
        stats.calibration_bins(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.calibration_bins(np.array([1.5]), np.array([1]))


def test_calibrated_predictions_have_near_zero_ece_and_the_expected_brier():
    rng = np.random.default_rng(0)
    probs = rng.choice([0.05, 0.25, 0.55, 0.85], size=200_000)
    labels = rng.random(probs.size) < probs
    metrics = stats.calibration_metrics(probs, labels)
    assert metrics["ece"] < 0.01
    assert metrics["brier"] == pytest.approx(np.mean(probs * (1 - probs)), abs=2e-3)
    assert 0.5 < metrics["auroc"] < 1.0


def test_calibration_metrics_score_only_the_masked_cells():
    probs = np.array([[0.9, 0.1], [0.0, 1.0]])
    labels = np.array([[True, False], [True, False]])  # the unmasked row is all wrong
    mask = np.array([[True, True], [False, False]])
    metrics = stats.calibration_metrics(probs, labels, mask)
    assert metrics["cells"] == 2 and metrics["auroc"] == 1.0
    assert metrics["brier"] == pytest.approx(0.01)


def test_paired_difference_of_outcomes_written_out():
    baseline = np.array([1, 1, 0, 0, 1, 0], bool)
    other = np.array([1, 0, 1, 1, 1, 0], bool)  # differences 0, -1, 1, 1, 0, 0: mean 1/6
    difference, (low, high) = stats.paired_difference(baseline, other)
    half = 1.959964 * np.std([0, -1, 1, 1, 0, 0], ddof=1) / np.sqrt(6)
    assert difference == pytest.approx(1 / 6)
    assert (low, high) == pytest.approx((1 / 6 - half, 1 / 6 + half))
    same, (same_low, same_high) = stats.paired_difference(baseline, baseline)
    assert (same, same_low, same_high) == (0.0, 0.0, 0.0)


def test_paired_difference_refuses_unpaired_outcomes_and_has_no_interval_for_one_board():
    with pytest.raises(ValueError, match="same boards"):
        stats.paired_difference(np.ones(3, bool), np.ones(4, bool))
    difference, interval = stats.paired_difference(np.zeros(1, bool), np.ones(1, bool))
    assert difference == 1.0 and all(np.isnan(interval))
