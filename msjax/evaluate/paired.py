"""Players compared on the same boards: their per-board outcomes, the files that keep them,
and the paired difference of two players' win rates with its 95% interval.

Two win rates measured on different boards differ by their noise as well as by the
players; played on the same boards, most games end alike and the per-board differences
(``msjax.stats.paired_difference``) separate players whose own intervals overlap. Game
``i`` of a seed is the same board for every player (``evaluate.play_games``), so outcomes
saved by one run (``save_rows``) pair with another's (``saved_games``, ``saved_outcomes``
for one row), once ``check_same_boards`` has confirmed the board, seed and first-click rule.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any

import numpy as np

from msjax import env as ms_env
from msjax.evaluate.games import play_games
from msjax.stats import paired_difference, wilson_interval


def agent_wins(agent, env_cfg, games: int, seed: int, batch: int, on_batch=None) -> np.ndarray:
    """bool[games]: the boards of ``seed`` (``env_cfg``'s board and first-click rule) that
    ``agent`` wins, playing greedily with its own observation channels
    (``env.with_observation_of``), ``batch`` games at a time; ``on_batch(games)`` after each
    batch, as in ``play_games``."""
    own_cfg = ms_env.with_observation_of(env_cfg, agent.env_cfg)  # its channels, the same games
    return np.asarray(play_games(agent.for_board(own_cfg), own_cfg, games, seed, batch, on_batch=on_batch)["won"])


def boards_played(env_cfg, seed: int) -> dict:
    """What picks the boards that game ``i`` is played on, kept with saved rows: the
    ``board`` ("HxWxM"), the ``seed`` and the first-click ``rule`` (``"opening"``: the first
    click opens a region, ``"safe"``: only the clicked cell is safe)."""
    board = ms_env.board_name(ms_env.board_spec(env_cfg.H, env_cfg.W, env_cfg.mine_count))
    return {"board": board, "seed": seed, "rule": "opening" if env_cfg.guarantee_safe_neighborhood else "safe"}


def save_rows(path: str, names: list[str], outcomes: list[np.ndarray], boards: dict) -> None:
    """Writes rows of per-board outcomes to the ``.npz`` file ``path`` (``wins`` bool[rows,
    games], ``rows`` their names, and ``boards``: ``boards_played``'s board, seed and
    rule), for ``saved_outcomes`` to read (``msjax paired --save``)."""
    np.savez(path, wins=np.stack(outcomes), rows=np.array(names), **boards)


def load_saved(path: str, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` file of per-board outcomes (``save_rows``, or a benchmark's
    ``--save``: a few rows, read whole), which must hold the keys ``required``.

    Raises:
      ValueError: one line for a missing or unreadable file, one that is not a ``.npz``
        archive (truncated, or another kind of file), or one without a ``required`` key.
    """
    not_npz = ValueError("not a .npz file that --save wrote (truncated, or another kind of file)")
    try:
        saved = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except OSError as error:
        raise ValueError(f"cannot read it ({error.strerror or error})") from None
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise not_npz from None
    if not isinstance(saved, np.lib.npyio.NpzFile):
        raise not_npz
    try:
        with saved:
            arrays = {name: saved[name] for name in saved.files}
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error):
        raise not_npz from None
    for key in required:
        if key not in arrays:
            raise ValueError(f"it holds no {key!r}: not a file that --save wrote")
    return arrays


def check_same_boards(saved: dict[str, np.ndarray], this_run: dict[str, Any]) -> list[str]:
    """Whether a saved file's rows were played on this run's boards: ``this_run`` maps the
    keys that pick the boards (board, seed, first click ...) to this run's values.

    Returns:
      The keys of ``this_run`` that ``saved`` does not record (a file written before they
      were saved), for a warning.

    Raises:
      ValueError: naming every recorded key that differs, e.g. ``"its board 16x30x99,
        this run's 8x8x10; its seed 1, this run's 0"``.
    """
    shown = lambda value: str(np.asarray(value).tolist())
    differ = [f"its {key} {shown(saved[key])}, this run's {shown(value)}"
              for key, value in this_run.items() if key in saved and shown(saved[key]) != shown(value)]
    if differ:
        raise ValueError("; ".join(differ) + " (other boards)")
    return [key for key in this_run if key not in saved]


def unrecorded_warning(source: str, missing: list[str], this_run: dict[str, Any]) -> str:
    """The line that says a saved file (``source``: the flag and its value) was taken to
    hold this run's boards although it does not record the keys ``missing``."""
    assumed = ", ".join(f"{key} {np.asarray(this_run[key]).tolist()}" for key in missing)
    return (f"warning: {source} records no {', '.join(missing)} (a file saved before they were): "
            f"taken to be this run's ({assumed})")


def split_row_spec(spec: str) -> tuple[str, str]:
    """``(FILE.npz, ROW)`` of ``spec = "FILE.npz:ROW"``; ValueError without both."""
    path, sep, row = spec.rpartition(":")
    if not sep or not path or not row:
        raise ValueError("must be FILE.npz:ROW (a row's name or index)")
    return path, row


def saved_board(spec: str) -> str:
    """The board (``"HxWxM"``) of the file in ``spec = "FILE.npz:ROW"``, as ``save_rows`` recorded it.

    Raises:
      ValueError: one line: no ``:ROW``, a file that ``save_rows`` did not write
        (``load_saved``), or one that records no board (written before
        boards were saved).
    """
    saved = load_saved(split_row_spec(spec)[0], ("wins", "rows", "seed"))
    if "board" not in saved:
        raise ValueError("the file records no board (an older file): name it with --board")
    return str(saved["board"])


def saved_games(path: str, games: int, this_run: dict) -> tuple[dict[str, np.ndarray], list[str]]:
    """``(saved, unrecorded)``: every array of the file ``path`` that ``save_rows`` wrote,
    its ``wins`` (bool[rows, games]) cut to the first ``games`` boards (game ``i`` is the same
    board for any count of games); the file must have been played on ``this_run``'s boards
    (``boards_played``), and ``unrecorded`` are the keys of ``this_run`` it does not record
    (an older file), for a warning (``check_same_boards``).

    Raises:
      ValueError: one line: a file that ``save_rows`` did not write (``load_saved``), other
        boards than ``this_run``'s, or fewer than ``games`` boards in the file.
    """
    saved = load_saved(path, ("wins", "rows", "seed"))
    unrecorded = check_same_boards(saved, this_run)
    if saved["wins"].shape[1] < games:
        raise ValueError(f"the file holds {saved['wins'].shape[1]} games per row, fewer than --games {games}")
    return {**saved, "wins": saved["wins"][:, :games].astype(bool)}, unrecorded


def saved_outcomes(spec: str, games: int, this_run: dict) -> tuple[str, np.ndarray, list[str]]:
    """``(name, wins bool[games], unrecorded)``: the row ``ROW`` (its name, or its index)
    of the file ``FILE.npz`` in ``spec = "FILE.npz:ROW"``, read by ``saved_games`` (cut to
    its first ``games`` boards, checked to hold ``this_run``'s boards; ``unrecorded`` the
    keys of ``this_run`` it does not record, for a warning).

    Raises:
      ValueError: one line: no ``:ROW``, an unknown row, or what ``saved_games`` refuses (a
        file that ``save_rows`` did not write, other boards than ``this_run``'s, or fewer
        than ``games`` boards in the file).
    """
    path, row = split_row_spec(spec)
    saved, unrecorded = saved_games(path, games, this_run)
    names = [str(name) for name in saved["rows"]]
    if row in names:
        index = names.index(row)
    elif row.isdigit() and int(row) < len(names):
        index = int(row)
    else:
        raise ValueError(f"no row {row!r}; the file holds {names}")
    return f"{names[index]} (saved)", saved["wins"][index], unrecorded


def paired_row(baseline: np.ndarray, device: np.ndarray) -> dict:
    """The figures of two players' outcomes on the same boards (bool[N] each): win rates
    with their 95% Wilson intervals, the boards won by both, by one alone or by neither,
    and the paired difference (``device`` - ``baseline``) with its 95% interval."""
    games = len(baseline)
    row = {"games": games, "baseline_win_rate": float(baseline.mean()), "device_win_rate": float(device.mean())}
    row["baseline_ci"] = wilson_interval(int(baseline.sum()), games)
    row["device_ci"] = wilson_interval(int(device.sum()), games)
    row.update(both=int(np.sum(baseline & device)), baseline_only=int(np.sum(baseline & ~device)),
               device_only=int(np.sum(~baseline & device)), neither=int(np.sum(~baseline & ~device)))
    row["difference"], row["difference_ci"] = paired_difference(baseline, device)
    return row


def vs_first(first: np.ndarray, wins: np.ndarray) -> dict:
    """A table row's figures for the outcomes ``wins`` (bool[N]) beside the first row's
    ``first`` on the same boards: ``win_rate``, ``ci``, ``vs_first``, ``vs_first_ci`` and the
    boards ``won_by_first_only`` / ``won_by_this_only``."""
    paired = paired_row(first, wins)
    return {"win_rate": paired["device_win_rate"], "ci": paired["device_ci"], "vs_first": paired["difference"],
            "vs_first_ci": paired["difference_ci"], "won_by_first_only": paired["baseline_only"],
            "won_by_this_only": paired["device_only"]}


def percent_cells(row: dict) -> tuple[str, str, str]:
    """A row's ``win_rate``, ``ci`` and ``vs_first`` with ``vs_first_ci`` as table cells
    in percent: ``("52.80", "[52.11, 53.48]", "0.54 [0.20, 0.88]")``."""
    pct = lambda x: f"{100 * x:.2f}"
    (low, high), (d_low, d_high) = row["ci"], row["vs_first_ci"]
    return pct(row["win_rate"]), f"[{pct(low)}, {pct(high)}]", f"{pct(row['vs_first'])} [{pct(d_low)}, {pct(d_high)}]"
