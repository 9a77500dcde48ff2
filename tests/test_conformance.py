"""One contract for every implementation of the rules: the JAX env (``env.step`` and
``env.batch_step``) and the NumPy references (``msjax.reference.Board``, the reference player's
game, and ``msjax.reference.NumpyMinesweeper``, the NumPy env) play the same games.

The contract is ``ReferenceGame``: the rules of ``msjax.env``'s package docstring as the
plainest Python (a breadth-first flood fill, loops over cells). The contract games are
random layouts on small boards with random action streams drawn once from the reference:
first clicks, cascades, flags and flags removed, reveals of flagged cells, invalid actions
(out-of-range numbers among them), wins, losses on a mine and on the step cap, and a move after the end.
``check_conformance(rules)`` replays every game through one implementation and compares
what it reports after every action (revealed cells, the numbers on them, flags, done, won,
reward and info, each where the implementation has it) with the reference, then checks its
first-click mine placement; pgx's ``api_test`` in spirit: one check, applied to each.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env
from msjax.reference import Board, NumpyMinesweeper

PLAIN = env.EnvConfig(H=5, W=6, mine_count=10)
SHAPED = env.EnvConfig(H=4, W=7, mine_count=12, guarantee_safe_neighborhood=False, use_flag_shaping=True, max_steps=14)
GAMES_PER_CONFIG = 16
MOVES_PER_GAME = 30
DEAL_ROUNDS = 4
INFO_FIELDS = ("invalid", "new_revealed", "won", "lost", "steps", "revealed_fraction")


# ----------------------------------------------------------------------------- the contract


@dataclasses.dataclass
class Outcome:
    """What an implementation reports after one action; None where it has no such thing.

    Attributes:
      revealed: bool[H, W]; counts: int[H, W], the numbers on revealed cells (0 elsewhere);
      flags: bool[H, W]; done, won: the game's state; reward: the step's reward;
      info: some of ``INFO_FIELDS``; refused: the implementation refused the action as
      illegal (and must be left unchanged).
    """

    revealed: np.ndarray | None
    counts: np.ndarray | None
    flags: np.ndarray | None
    done: bool
    won: bool
    reward: float | None = None
    info: dict | None = None
    refused: bool = False


def true_counts(mines: np.ndarray) -> np.ndarray:
    """int[H, W]: mines among each cell's neighbours, by a loop over cells."""
    height, width = mines.shape
    counts = np.zeros((height, width), int)
    for r in range(height):
        for c in range(width):
            counts[r, c] = mines[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].sum() - mines[r, c]
    return counts


class ReferenceGame:
    """The rules as the plainest Python: the contract every implementation must meet."""

    def __init__(self, mines: np.ndarray, cfg: env.EnvConfig):
        self.cfg, self.mines = cfg, mines.copy()
        self.counts = true_counts(mines)
        self.revealed = np.zeros_like(mines)
        self.flags = np.zeros_like(mines)
        self.steps, self.done, self.won = 0, False, False

    def in_range(self, action: int) -> bool:
        """The action is a number ``decode_action`` reads as a move: in ``[0, 2*H*W)``."""
        return 0 <= action < self.cfg.num_actions

    def legal(self, action: int) -> bool:
        """The move is one ``action_mask`` allows: the game runs and the cell is hidden."""
        return not self.done and self.in_range(action) and not self.revealed.flat[action % self.cfg.num_cells]

    def flood_fill(self, row: int, col: int) -> np.ndarray:
        """bool[H, W]: what revealing safe ``(row, col)`` opens: the cell and, from a zero,
        its connected zero region and that region's border."""
        opened = np.zeros_like(self.mines)
        opened[row, col] = True
        queue = deque([(row, col)])
        while queue:
            r, c = queue.popleft()
            if self.counts[r, c]:
                continue
            for rr in range(max(r - 1, 0), min(r + 2, self.cfg.H)):
                for cc in range(max(c - 1, 0), min(c + 2, self.cfg.W)):
                    if not opened[rr, cc]:
                        opened[rr, cc] = True
                        queue.append((rr, cc))
        return opened

    def play(self, action: int) -> Outcome:
        cfg = self.cfg
        if self.done:  # a finished game ignores further actions
            return self.outcome(reward=0.0, invalid=False, new_revealed=0)
        row, col = divmod(action % cfg.num_cells, cfg.W)
        is_flag = action >= cfg.num_cells
        self.steps += 1
        invalid, hit_mine, new_revealed = not self.in_range(action) or bool(self.revealed[row, col]), False, 0
        reward = -cfg.invalid_penalty if invalid else -cfg.step_penalty
        if invalid:
            pass
        elif is_flag:
            if cfg.use_flag_shaping:
                shaping = cfg.flag_correct_reward if self.mines[row, col] else cfg.flag_incorrect_reward
                reward += -shaping if self.flags[row, col] else shaping
            self.flags[row, col] = not self.flags[row, col]
        elif self.mines[row, col]:
            hit_mine = self.revealed[row, col] = True
        else:
            opened = self.flood_fill(row, col)
            new_revealed = int((opened & ~self.revealed).sum())
            self.revealed |= opened
            reward += cfg.progress_reward * new_revealed
        self.flags &= ~self.revealed  # a revealed cell is never flagged
        self.won = not hit_mine and bool((self.revealed | self.mines).all())
        out_of_steps = cfg.max_steps > 0 and self.steps >= cfg.max_steps
        lost = hit_mine or (out_of_steps and not self.won)
        self.done = self.won or lost
        reward += cfg.win_reward if self.won else cfg.loss_reward if lost else 0.0
        return self.outcome(reward, invalid, new_revealed)

    def outcome(self, reward: float, invalid: bool, new_revealed: int) -> Outcome:
        safe_revealed = (self.revealed & ~self.mines).sum()
        info = {
            "invalid": invalid,
            "new_revealed": new_revealed,
            "won": self.won,
            "lost": self.done and not self.won,
            "steps": self.steps,
            "revealed_fraction": safe_revealed / (~self.mines).sum(),
        }
        counts = np.where(self.revealed, self.counts, 0)
        return Outcome(self.revealed.copy(), counts, self.flags.copy(), self.done, self.won, reward, info)


@dataclasses.dataclass(frozen=True)
class Game:
    mines: np.ndarray  # bool[H, W]
    actions: tuple[int, ...]


def random_stream(mines: np.ndarray, cfg: env.EnvConfig, rng: np.random.Generator) -> tuple[int, ...]:
    """A game's actions, drawn as the reference plays them: reveals (half of them of safe
    cells, so games last), flag toggles, reveals of flagged cells, invalid actions (moves on
    revealed cells and numbers outside ``[0, 2*H*W)``), and one arbitrary action once the
    game is over."""
    game, actions = ReferenceGame(mines, cfg), []
    while len(actions) < MOVES_PER_GAME:
        if game.done:
            actions.append(int(rng.integers(cfg.num_actions)))
            break
        hidden = np.flatnonzero(~game.revealed)
        flagged, revealed = np.flatnonzero(game.flags), np.flatnonzero(game.revealed)
        safe_hidden = np.flatnonzero(~game.revealed & ~mines)
        kind = rng.random()
        if kind < 0.15:
            action = cfg.num_cells + int(rng.choice(hidden))
        elif kind < 0.25 and flagged.size:  # unflag, or reveal the flagged cell
            action = int(rng.choice([0, cfg.num_cells])) + int(rng.choice(flagged))
        elif kind < 0.32 and revealed.size:  # invalid: a reveal or flag of a revealed cell
            action = int(rng.choice([0, cfg.num_cells])) + int(rng.choice(revealed))
        elif kind < 0.36:  # invalid: out of range, a cell's number modulo H*W
            action = int(rng.choice([-cfg.num_cells, 2 * cfg.num_cells])) + int(rng.choice(hidden))
        elif kind < 0.66:
            action = int(rng.choice(safe_hidden))
        else:
            action = int(rng.choice(hidden))
        game.play(action)
        actions.append(action)
    return tuple(actions)


def contract_games(cfg: env.EnvConfig, seed: int) -> list[Game]:
    """Random layouts of 1 to ``cfg.mine_count`` mines (``from_mines`` ignores the config's
    count), sparse ones cascading and winning, dense ones losing, each with its actions."""
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(GAMES_PER_CONFIG):
        mines = np.zeros(cfg.num_cells, bool)
        mines[rng.choice(cfg.num_cells, int(rng.integers(1, cfg.mine_count + 1)), replace=False)] = True
        mines = mines.reshape(cfg.H, cfg.W)
        games.append(Game(mines, random_stream(mines, cfg, rng)))
    return games


CONTRACT = {PLAIN: contract_games(PLAIN, seed=0), SHAPED: contract_games(SHAPED, seed=1)}


# ----------------------------------------------------------------------------- implementations


class Rules(Protocol):
    """An implementation of the rules, as the contract drives it.

    Attributes:
      flags: it plays flag toggles (else they are left out of its games).
      step_cap: it ends games at ``max_steps`` (else games with a cap are left out).
      illegal: ``"penalised"`` (an invalid action costs ``invalid_penalty``, a finished game
        ignores actions) or ``"refused"`` (both raise and leave the game unchanged).
      restarts: a finished game restarts at once, so its final position and later moves are
        not observable.
    """

    flags: bool
    step_cap: bool
    illegal: str
    restarts: bool

    def play(self, cfg: env.EnvConfig, games: list[Game]) -> list[list[Outcome]]:
        """One outcome per action of each game, the games starting from their layouts."""

    def deal(self, cfg: env.EnvConfig, clicks: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mine_mask bool[N, H, W], counts int[N, H, W], lost bool[N])`` after fresh
        games (mines placed at the first reveal) reveal ``clicks`` (int[N])."""


def padded_actions(games: list[Game]) -> np.ndarray:
    """int32[N, T]: the games' actions, padded with action 0 past each game's end."""
    length = max(len(game.actions) for game in games)
    return np.array([list(game.actions) + [0] * (length - len(game.actions)) for game in games], np.int32)


def to_outcomes(
    games: list[Game], revealed, flags, counts, done, won, reward, info, observable=None
) -> list[list[Outcome]]:
    """Per game and step outcomes from arrays shaped ``[N, T, ...]`` (``observable`` bool[N, T]:
    where the position can be seen; None: everywhere)."""
    revealed, flags, counts, done, won, reward = (np.asarray(x) for x in (revealed, flags, counts, done, won, reward))
    info = {name: np.asarray(info[name]) for name in INFO_FIELDS}
    games_out = []
    for i, game in enumerate(games):
        steps = []
        for t in range(len(game.actions)):
            seen = observable is None or observable[i, t]
            steps.append(
                Outcome(
                    revealed[i, t] if seen else None,
                    np.where(revealed[i, t], counts[i, t], 0) if seen else None,
                    flags[i, t] if seen else None,
                    bool(done[i, t]),
                    bool(won[i, t]),
                    float(reward[i, t]),
                    {name: info[name][i, t].item() for name in INFO_FIELDS},
                )
            )
        games_out.append(steps)
    return games_out


@functools.partial(jax.jit, static_argnums=2)
def step_trajectories(states, actions, cfg):
    """``env.step`` through int32[N, T] actions; per game and step the state and outputs."""

    def one(state, action):
        state, reward, done, info = env.step(state, action, cfg)
        return state, (state.mine_mask, state.revealed, state.flags, state.counts, state.done, state.won, reward, info)

    return jax.vmap(lambda state, actions: jax.lax.scan(one, state, actions)[1])(states, actions)


@functools.partial(jax.jit, static_argnums=2)
def batch_trajectories(states, actions, cfg):
    """``env.batch_step`` through int32[N, T] actions; per game and step the state and
    outputs, laid out as ``step_trajectories`` lays them."""

    def one(states, actions):
        states, reward, done, info = env.batch_step(states, actions, cfg)
        return states, (states.mine_mask, states.revealed, states.flags, states.counts, done, info["won"], reward, info)

    out = jax.lax.scan(one, states, actions.T)[1]
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)


def repeated(clicks: np.ndarray, cfg: env.EnvConfig) -> np.ndarray:
    """int32[N, T]: each click, then the same (now invalid) click to the games' length ``T``,
    so that a deal reuses the program compiled for the contract games."""
    return np.repeat(np.asarray(clicks, np.int32)[:, None], padded_actions(CONTRACT[cfg]).shape[1], axis=1)


class JaxStep:
    """``env.step`` on one game, vmapped over the games."""

    flags, step_cap, illegal, restarts = True, True, "penalised", False
    trajectories = staticmethod(step_trajectories)

    def play(self, cfg, games):
        states = jax.vmap(env.from_mines, in_axes=(0, None))(jnp.asarray(np.stack([g.mines for g in games])), cfg)
        _, revealed, flags, counts, done, won, reward, info = self.trajectories(states, padded_actions(games), cfg)
        observable = None if not self.restarts else ~np.asarray(done)
        return to_outcomes(games, revealed, flags, counts, done, won, reward, info, observable)

    def deal(self, cfg, clicks, seed):
        states = env.batch_reset(jax.random.key(seed), cfg, len(clicks))
        mines, _, _, counts, done, _, _, info = self.trajectories(states, repeated(clicks, cfg), cfg)
        assert not self.restarts or not np.asarray(done)[:, 0].any(), "a first click won: deal on a denser board"
        return np.asarray(mines)[:, 0], np.asarray(counts)[:, 0], np.asarray(info["lost"])[:, 0]


class JaxBatch(JaxStep):
    """``env.batch_step``: placement and cascades on the pending games, auto-reset."""

    restarts = True
    trajectories = staticmethod(batch_trajectories)


class Numpy:
    """``NumpyMinesweeper``, all games in one batch, without auto-reset."""

    flags, step_cap, illegal, restarts = True, True, "penalised", False

    def play(self, cfg, games):
        numpy_env = NumpyMinesweeper.from_mines(np.stack([g.mines for g in games]), cfg, auto_reset=False)
        steps = []
        for actions in padded_actions(games).T:
            reward, done, info = numpy_env.step(actions)
            view = (numpy_env.revealed.copy(), numpy_env.flags.copy(), numpy_env.counts.copy())
            steps.append(view + (done, numpy_env.won.copy(), reward, info))
        revealed, flags, counts, done, won, reward = (np.stack([s[i] for s in steps], axis=1) for i in range(6))
        info = {name: np.stack([s[6][name] for s in steps], axis=1) for name in INFO_FIELDS}
        return to_outcomes(games, revealed, flags, counts, done, won, reward, info)

    def deal(self, cfg, clicks, seed):
        numpy_env = NumpyMinesweeper(cfg, len(clicks), seed=seed, auto_reset=False)
        _, _, info = numpy_env.step(clicks)
        return numpy_env.mine_mask, numpy_env.counts, info["lost"]


class NumpyBoard:
    """``msjax.reference.Board``: reveals only; refuses an illegal reveal."""

    flags, step_cap, illegal, restarts = False, False, "refused", False

    def play(self, cfg, games):
        out = []
        for game in games:
            board = Board(cfg.H, cfg.W, 0, cfg.guarantee_safe_neighborhood, mine_mask=game.mines)
            steps = []
            for action in game.actions:
                refused, info = False, None
                try:
                    info = {"new_revealed": board.reveal(action)}
                except ValueError:
                    refused = True
                counts = np.where(board.revealed, board.counts, 0)
                done = board.won or board.lost
                steps.append(Outcome(board.revealed.copy(), counts, None, done, board.won, None, info, refused))
            out.append(steps)
        return out

    def deal(self, cfg, clicks, seed):
        rng = np.random.default_rng(seed)
        boards = [Board(cfg.H, cfg.W, cfg.mine_count, cfg.guarantee_safe_neighborhood, rng) for _ in clicks]
        for board, click in zip(boards, clicks):
            board.reveal(int(click))
        mines, counts = np.stack([b.mine_mask for b in boards]), np.stack([b.counts for b in boards])
        return mines, counts, np.array([b.lost for b in boards])


# ----------------------------------------------------------------------------- the check


def games_for(rules: Rules, cfg: env.EnvConfig) -> list[Game]:
    """The contract games of ``cfg`` as ``rules`` can play them (when it has no flags, its
    moves are cells: flag actions and out-of-range numbers left out; none when it has no
    step cap and ``cfg`` has one)."""
    if cfg.max_steps and not rules.step_cap:
        return []
    if rules.flags:
        return CONTRACT[cfg]
    return [Game(g.mines, tuple(a for a in g.actions if 0 <= a < cfg.num_cells)) for g in CONTRACT[cfg]]


def assert_same_outcome(got: Outcome, expected: Outcome, where: str) -> None:
    assert (got.done, got.won) == (expected.done, expected.won), f"done/won, {where}"
    for field in ("revealed", "counts", "flags"):
        if getattr(got, field) is not None:
            np.testing.assert_array_equal(getattr(got, field), getattr(expected, field), err_msg=f"{field}, {where}")
    if got.reward is not None:
        assert got.reward == pytest.approx(expected.reward, abs=1e-6), f"reward, {where}"
    for name, value in (got.info or {}).items():
        assert value == pytest.approx(expected.info[name], abs=1e-6), f"info[{name!r}], {where}"


def check_plays_the_contract_games(rules: Rules, cfg: env.EnvConfig) -> None:
    games = games_for(rules, cfg)
    if not games:
        return
    for index, (game, outcomes) in enumerate(zip(games, rules.play(cfg, games))):
        reference = ReferenceGame(game.mines, cfg)
        for t, (action, got) in enumerate(zip(game.actions, outcomes)):
            where = f"{type(rules).__name__}, game {index} of {cfg}, step {t} (action {action})"
            if reference.done and rules.restarts:
                break
            legal = reference.legal(action)
            expected = reference.play(action)
            assert got.refused == (rules.illegal == "refused" and not legal), f"refused, {where}"
            if got.refused:  # the game must be unchanged: compare the view only
                got = dataclasses.replace(got, info=None)
            assert_same_outcome(got, expected, where)


def check_first_clicks(rules: Rules, cfg: env.EnvConfig) -> None:
    """Mines go down at the first reveal: exactly ``mine_count`` of them, none on the
    click (nor, with the guarantee, its neighbours), so the first reveal never loses.
    Deals come in batches of ``GAMES_PER_CONFIG`` games, the contract games' batch."""
    reach = 1 if cfg.guarantee_safe_neighborhood else 0
    rng = np.random.default_rng(cfg.num_cells)
    for seed in range(DEAL_ROUNDS):
        clicks = rng.integers(0, cfg.num_cells, GAMES_PER_CONFIG)
        mines, counts, lost = rules.deal(cfg, clicks, seed)
        for i, (row, col) in enumerate(zip(*np.divmod(clicks, cfg.W))):
            assert not mines[i, max(row - reach, 0) : row + reach + 1, max(col - reach, 0) : col + reach + 1].any()
            assert mines[i].sum() == cfg.mine_count
            np.testing.assert_array_equal(counts[i], true_counts(mines[i]))
        assert not lost.any()


def check_conformance(rules: Rules) -> None:
    """The contract: every contract game played as the reference plays it, and first clicks
    placed by the rule."""
    for cfg in CONTRACT:
        check_plays_the_contract_games(rules, cfg)
        check_first_clicks(rules, cfg)


@pytest.mark.parametrize("rules", [JaxStep(), JaxBatch(), Numpy(), NumpyBoard()], ids=lambda r: type(r).__name__)
def test_implementation_meets_the_contract(rules):
    check_conformance(rules)


def rules_reached(reference: ReferenceGame, action: int) -> set[str]:
    """The rules of the contract that ``action`` exercises (played on ``reference``)."""
    cell, is_flag = env.decode_action(action, reference.cfg)
    flagged, was_done, in_range = bool(reference.flags.flat[cell]), reference.done, reference.in_range(action)
    outcome = reference.play(action)
    reached = {
        "after the end": was_done,
        "invalid": outcome.info["invalid"] and in_range,
        "invalid out of range": not in_range and not was_done,
        "cascade": outcome.info["new_revealed"] > 1,
        "reveal a flagged cell": flagged and not is_flag and not outcome.info["invalid"],
        "unflag": flagged and is_flag,
    }
    if outcome.done and not was_done:
        hit_mine = not is_flag and reference.mines.flat[cell]
        reached["win" if outcome.won else "loss on a mine" if hit_mine else "loss on the step cap"] = True
    return {rule for rule, hit in reached.items() if hit}


def test_contract_games_cover_every_rule():
    """The games reach every rule the contract states, so conformance means something."""
    seen = set()
    for cfg, games in CONTRACT.items():
        for game in games:
            reference = ReferenceGame(game.mines, cfg)
            for action in game.actions:
                seen |= rules_reached(reference, action)
    assert seen == {
        "after the end",
        "invalid",
        "invalid out of range",
        "cascade",
        "reveal a flagged cell",
        "unflag",
        "win",
        "loss on a mine",
        "loss on the step cap",
    }
