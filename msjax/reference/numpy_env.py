"""The NumPy env: Minesweeper as vectorised NumPy on the CPU, the seed's original design.

The core spec (seed 000) keeps ``N`` boards as NumPy arrays on the CPU and steps them
together. This module plays exactly the rules of ``msjax.env`` (same actions, rewards,
first-click mine placement, flood fill, flags, ``max_steps``, auto-reset of finished
boards), so ``benchmarks.env_throughput`` can compare the two on the same work;
``tests/test_conformance.py`` checks that it plays the same games as ``msjax.env``.

It is written to be fast, not to lose: every operation works on the whole batch or on the
subset of boards that needs it (first clicks, zero-cell reveals, finished boards); the
flood fill dilates the zero regions of all cascading boards at once, dropping each board
as soon as its region stops growing; the count of revealed safe cells is kept per board
instead of re-summed. There is no per-board Python loop in ``step``.
"""

from __future__ import annotations

import numpy as np

from msjax.env import EnvConfig


def dilate(cells: np.ndarray) -> np.ndarray:
    """bool[n, H, W] -> bool[n, H, W]: each set cell and its 8 neighbours (separable OR)."""
    wide = cells.copy()
    wide[:, :, 1:] |= cells[:, :, :-1]
    wide[:, :, :-1] |= cells[:, :, 1:]
    out = wide.copy()
    out[:, 1:, :] |= wide[:, :-1, :]
    out[:, :-1, :] |= wide[:, 1:, :]
    return out


def neighbour_sum(cells: np.ndarray) -> np.ndarray:
    """bool[n, H, W] -> int8[n, H, W]: number of set cells among each cell's 8 neighbours."""
    height, width = cells.shape[1:]
    padded = np.pad(cells.astype(np.int8), ((0, 0), (1, 1), (1, 1)))
    total = np.zeros(cells.shape, np.int8)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if (dr, dc) != (1, 1):
                total += padded[:, dr : dr + height, dc : dc + width]
    return total


def random_hidden_cells(reveal_mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """int64[n]: one cell per board drawn uniformly among its allowed reveals.

    Args:
      reveal_mask: bool[n, H*W], the reveal half of the action mask; every row must allow
        at least one cell.
      rng: the random source.
    """
    allowed = np.cumsum(reveal_mask, axis=1, dtype=np.int32)
    draw = rng.integers(0, allowed[:, -1])
    return np.argmax(allowed > draw[:, None], axis=1)


class NumpyMinesweeper:
    """``num_envs`` Minesweeper games stepped together with NumPy.

    State, one row per board (the fields of ``msjax.env.EnvState``):
      mine_mask: bool[N, H, W]; counts: int8[N, H, W]; revealed: bool[N, H, W];
      flags: bool[N, H, W]; first_click_done, done, won: bool[N];
      step_count, mine_count, revealed_safe: int32[N] (``revealed_safe`` counts the
      revealed cells that hold no mine).

    Args:
      cfg: the game's rules (``msjax.env.EnvConfig``).
      num_envs: boards in the batch.
      seed: seed of the batch's random source (mine placement, density-band counts).
      auto_reset: start a new game on every board that finishes, inside ``step``.
    """

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int = 0, auto_reset: bool = True):
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs} must be >= 1")
        self.cfg = cfg
        self.num_envs = num_envs
        self.auto_reset = auto_reset
        self.rng = np.random.default_rng(seed)
        shape = (num_envs, cfg.H, cfg.W)
        self.mine_mask = np.zeros(shape, bool)
        self.counts = np.zeros(shape, np.int8)
        self.revealed = np.zeros(shape, bool)
        self.flags = np.zeros(shape, bool)
        self.first_click_done = np.zeros(num_envs, bool)
        self.done = np.zeros(num_envs, bool)
        self.won = np.zeros(num_envs, bool)
        self.step_count = np.zeros(num_envs, np.int32)
        self.mine_count = np.zeros(num_envs, np.int32)
        self.revealed_safe = np.zeros(num_envs, np.int32)
        self.reset_boards(np.arange(num_envs))

    @classmethod
    def from_mines(
        cls, mine_masks: np.ndarray, cfg: EnvConfig, seed: int = 0, auto_reset: bool = True
    ) -> "NumpyMinesweeper":
        """Games with exactly these layouts (``bool[N, H, W]``); nothing moves at the first
        click, as in ``msjax.env.from_mines``. Boards that finish restart as random games."""
        mine_masks = np.asarray(mine_masks, bool)
        if mine_masks.ndim != 3 or mine_masks.shape[1:] != (cfg.H, cfg.W):
            raise ValueError(f"mine_masks has shape {mine_masks.shape}, expected [N, {cfg.H}, {cfg.W}]")
        env = cls(cfg, mine_masks.shape[0], seed=seed, auto_reset=auto_reset)
        env.mine_mask[:] = mine_masks
        env.counts[:] = neighbour_sum(mine_masks)
        env.mine_count[:] = mine_masks.sum(axis=(1, 2))
        env.first_click_done[:] = True
        return env

    # ------------------------------------------------------------------------- reset

    def reset_boards(self, boards: np.ndarray) -> None:
        """Fresh games (nothing revealed, no mines yet) on the boards indexed by ``boards``."""
        for field in (self.mine_mask, self.counts, self.revealed, self.flags):
            field[boards] = 0
        for field in (self.first_click_done, self.done, self.won, self.step_count, self.revealed_safe):
            field[boards] = 0
        fewest, most = self.cfg.mine_count_range
        if fewest == most:
            self.mine_count[boards] = fewest
        else:
            self.mine_count[boards] = self.rng.integers(fewest, most + 1, size=np.size(boards))

    def _place_mines(self, boards: np.ndarray, cells: np.ndarray) -> None:
        """Places each board's mines uniformly among the cells its first click allows.

        The ``k`` allowed cells with the smallest uniform keys hold the mines: a uniform
        ``k``-subset, found with one partition (or sort, when ``k`` varies) per batch.
        """
        cfg = self.cfg
        n = boards.size
        click = np.zeros((n, cfg.num_cells), bool)
        click[np.arange(n), cells] = True
        click = click.reshape(n, cfg.H, cfg.W)
        excluded = dilate(click) if cfg.guarantee_safe_neighborhood else click
        keys = self.rng.random((n, cfg.H, cfg.W))
        keys[excluded] = 2.0  # above every allowed key, so never among the k smallest
        keys = keys.reshape(n, cfg.num_cells)
        k = self.mine_count[boards]
        fewest, most = cfg.mine_count_range
        if fewest == most:
            threshold = np.partition(keys, fewest - 1, axis=1)[:, fewest - 1]
        else:
            threshold = np.sort(keys, axis=1)[np.arange(n), k - 1]
        mines = (keys <= threshold[:, None]).reshape(n, cfg.H, cfg.W)
        self.mine_mask[boards] = mines
        self.counts[boards] = neighbour_sum(mines)
        self.first_click_done[boards] = True

    # ------------------------------------------------------------------------- step

    def _flood_fill(self, boards: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """bool[n, H, W]: the cells opened by revealing the safe zero ``cells`` of ``boards``:
        each click's connected zero region and that region's border."""
        cfg = self.cfg
        n = boards.size
        zero_cells = (self.counts[boards] == 0) & ~self.mine_mask[boards]
        region = np.zeros((n, cfg.num_cells), bool)
        region[np.arange(n), cells] = True
        region = region.reshape(n, cfg.H, cfg.W)
        growing = np.arange(n)
        while growing.size:
            current = region[growing]
            grown = dilate(current) & zero_cells[growing]
            changed = (grown != current).reshape(growing.size, -1).any(axis=1)
            region[growing] = grown
            growing = growing[changed]
        return dilate(region)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Plays one action on every board (and restarts finished boards when ``auto_reset``).

        Args:
          actions: int[N], each in ``[0, 2*H*W)`` (any other value is an invalid action);
            ``a < H*W`` reveals cell ``a``, otherwise toggles the flag on ``a - H*W``.

        Returns:
          ``(reward: float32[N], done: bool[N], info)`` with ``info`` as in
          ``msjax.env.step``: ``invalid``, ``new_revealed``, ``won``, ``lost``, ``steps``,
          ``revealed_fraction``, each ``[N]``.
        """
        cfg = self.cfg
        boards = np.arange(self.num_envs)
        actions = np.asarray(actions, np.int64)
        cell = actions % cfg.num_cells
        is_flag = actions >= cfg.num_cells
        revealed = self.revealed.reshape(self.num_envs, cfg.num_cells)
        flags = self.flags.reshape(self.num_envs, cfg.num_cells)
        was_done = self.done.copy()
        valid = ~was_done & (actions >= 0) & (actions < cfg.num_actions) & ~revealed[boards, cell]

        needs_mines = valid & ~is_flag & ~self.first_click_done
        if needs_mines.any():
            self._place_mines(np.flatnonzero(needs_mines), cell[needs_mines])

        on_mine = self.mine_mask.reshape(self.num_envs, cfg.num_cells)[boards, cell]
        reveal = valid & ~is_flag
        hit_mine = reveal & on_mine
        safe_reveal = reveal & ~hit_mine
        new_safe = safe_reveal.astype(np.int32)
        cascade = safe_reveal & (self.counts.reshape(self.num_envs, cfg.num_cells)[boards, cell] == 0)

        toggle = valid & is_flag
        flag_was_set = flags[boards, cell]
        flags[boards[toggle], cell[toggle]] ^= True
        revealed[boards[reveal], cell[reveal]] = True
        flags[boards[reveal], cell[reveal]] = False
        if cascade.any():
            fill = np.flatnonzero(cascade)
            opened = self._flood_fill(fill, cell[fill])
            before = self.revealed[fill]
            new_safe[fill] += (opened & ~before).reshape(fill.size, -1).sum(axis=1, dtype=np.int32)
            self.revealed[fill] = before | opened
            self.flags[fill] &= ~opened
        self.revealed_safe += new_safe

        safe_cells = cfg.num_cells - self.mine_count
        won = ~hit_mine & self.first_click_done & (self.revealed_safe == safe_cells)
        self.step_count += ~was_done
        out_of_steps = (cfg.max_steps > 0) & (self.step_count >= cfg.max_steps) & ~was_done
        self.done = was_done | hit_mine | won | out_of_steps
        self.won |= won

        reward = cfg.progress_reward * new_safe - cfg.step_penalty
        if cfg.use_flag_shaping:
            shaping = np.where(on_mine, cfg.flag_correct_reward, cfg.flag_incorrect_reward)
            shaping = np.where(flag_was_set, -shaping, shaping) * self.first_click_done
            reward += np.where(toggle, shaping, 0.0)
        invalid = ~valid & ~was_done
        reward = np.where(invalid, -cfg.invalid_penalty, reward)
        lost = hit_mine | (out_of_steps & ~won)
        reward += np.where(won, cfg.win_reward, 0.0) + np.where(lost, cfg.loss_reward, 0.0)
        reward = np.where(was_done, 0.0, reward).astype(np.float32)

        done = self.done.copy()
        info = {
            "invalid": invalid,
            "new_revealed": new_safe,
            "won": self.won.copy(),
            "lost": done & ~self.won,
            "steps": self.step_count.copy(),
            "revealed_fraction": (self.revealed_safe / safe_cells).astype(np.float32),
        }
        if self.auto_reset and done.any():
            self.reset_boards(np.flatnonzero(done))
        return reward, done, info

    # ------------------------------------------------------------------------- views

    def frontier(self) -> np.ndarray:
        """bool[N, H, W]: hidden cells next to a revealed cell."""
        return dilate(self.revealed) & ~self.revealed

    def action_mask(self, frontier_only: bool | None = None) -> np.ndarray:
        """bool[N, 2*H*W]: legal reveals then legal flag toggles, as ``msjax.env.action_mask``."""
        hidden = ~self.revealed & ~self.done[:, None, None]
        reveal_ok = hidden
        if self.cfg.frontier_only_reveals if frontier_only is None else frontier_only:
            near = self.frontier()
            restrict = near.reshape(self.num_envs, -1).any(axis=1)[:, None, None]
            reveal_ok = np.where(restrict, hidden & near, hidden)
        return np.concatenate(
            [reveal_ok.reshape(self.num_envs, -1), hidden.reshape(self.num_envs, -1)], axis=1
        )

    def observe(self) -> np.ndarray:
        """float32[N, C, H, W], the channels of ``msjax.env.observe``."""
        cfg = self.cfg
        numbers = (self.counts[:, None] == np.arange(9, dtype=np.int8)[None, :, None, None])
        numbers &= self.revealed[:, None]
        channels = [self.revealed[:, None], self.flags[:, None], numbers]
        if cfg.obs_frontier:
            channels.append(self.frontier()[:, None])
        planes = np.concatenate(channels, axis=1).astype(np.float32)
        if cfg.obs_counts:
            number = np.where(self.revealed, self.counts, 0)
            counts = np.stack([number, neighbour_sum(~self.revealed)], axis=1).astype(np.float32) / 8.0
            planes = np.concatenate([planes, counts], axis=1)
        if cfg.obs_scalars:
            mines = np.maximum(self.mine_count, 1).astype(np.float32)
            remaining = (mines - self.flags.sum(axis=(1, 2))) / mines
            progress = self.revealed_safe / (cfg.num_cells - mines)
            scalars = np.stack([remaining, progress], axis=1).astype(np.float32)
            scalars = np.broadcast_to(scalars[:, :, None, None], (self.num_envs, 2, cfg.H, cfg.W))
            planes = np.concatenate([planes, scalars], axis=1)
        return planes
