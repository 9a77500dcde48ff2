"""The rule solver: sound deduction, the classic patterns, legal moves, batching.

Every test uses one 6x6 config so the solver compiles once per function; boards are
drawn as text (legend in ``board``), and soundness is checked against brute-force
enumeration of every mine layout consistent with what the player sees.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env, solver
from msjax.env import EnvConfig
from msjax.solver import SolverConfig

CFG = EnvConfig(H=6, W=6, mine_count=5)  # the solver reads the mine count from the state
LAYER1 = SolverConfig(max_layer=1)
DEDUCE = SolverConfig(max_layer=3, contradiction_cells=16)  # every deduction layer, all of layer 3


# ----------------------------------------------------------------------------- boards


def board(text: str):
    """A state drawn as text, one row per line, cells separated by spaces.

    Revealed: ``.`` a zero, ``1``-``8`` a number (checked against the mines drawn).
    Hidden: ``#`` safe, ``*`` a mine, ``s`` safe and ``m`` a mine that the solver must
    prove. Returns ``(state, must_be_safe, must_be_mine)``.
    """
    grid = np.array([row.split() for row in text.strip().splitlines()])
    mines = np.isin(grid, ["*", "m"])
    state = env.from_mines(jnp.asarray(mines), CFG)
    revealed = ~np.isin(grid, ["#", "*", "s", "m"])
    counts = np.asarray(state.counts)
    for (r, c), ch in np.ndenumerate(grid):
        if revealed[r, c]:
            assert counts[r, c] == (0 if ch == "." else int(ch)), f"cell ({r}, {c}) of\n{text}"
    state = state.replace(revealed=jnp.asarray(revealed))
    return state, grid == "s", grid == "m"


def stack(states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def rotations(text: str) -> list[str]:
    grid = np.array([row.split() for row in text.strip().splitlines()])
    return ["\n".join(" ".join(row) for row in np.rot90(grid, k)) for k in range(4)]


def flood(mines: np.ndarray, revealed: np.ndarray, cell) -> None:
    """Reveals ``cell`` (safe) in place, opening zero regions as the game does."""
    padded = np.pad(mines, 1).astype(int)
    counts = sum(np.roll(np.roll(padded, dr, 0), dc, 1) for dr in (-1, 0, 1) for dc in (-1, 0, 1))[1:-1, 1:-1]
    todo = [cell]
    while todo:
        r, c = todo.pop()
        if revealed[r, c]:
            continue
        revealed[r, c] = True
        if counts[r, c] == 0:
            for dr, dc in itertools.product((-1, 0, 1), repeat=2):
                rr, cc = r + dr, c + dc
                if 0 <= rr < mines.shape[0] and 0 <= cc < mines.shape[1]:
                    todo.append((rr, cc))


def random_positions(num: int, seed: int = 0):
    """Mid-game states: random layouts of 3-6 mines with 1-4 random safe cells opened."""
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < num:
        mines = np.zeros(CFG.num_cells, bool)
        mines[rng.choice(CFG.num_cells, rng.integers(3, 7), replace=False)] = True
        mines = mines.reshape(CFG.H, CFG.W)
        revealed = np.zeros_like(mines)
        for _ in range(rng.integers(1, 5)):
            safe = np.argwhere(~mines & ~revealed)
            if len(safe):
                flood(mines, revealed, tuple(safe[rng.integers(len(safe))]))
        hidden = int((~revealed).sum())
        if (~mines & ~revealed).any() and math.comb(hidden, int(mines.sum())) <= 30_000:
            state = env.from_mines(jnp.asarray(mines), CFG)
            states.append(state.replace(revealed=jnp.asarray(revealed)))
    return stack(states)


def consistent_layouts(state) -> np.ndarray:
    """bool[L, H*W]: every placement of the state's mines on its hidden cells that
    matches every revealed number (brute force)."""
    revealed = np.asarray(state.revealed).reshape(-1)
    counts = np.asarray(state.counts).reshape(-1)
    hidden = np.flatnonzero(~revealed)
    rows, cols = np.divmod(np.arange(CFG.num_cells), CFG.W)
    adjacent = (np.abs(rows[:, None] - rows[None]) <= 1) & (np.abs(cols[:, None] - cols[None]) <= 1)
    np.fill_diagonal(adjacent, False)
    seen = adjacent[np.ix_(np.flatnonzero(revealed), hidden)].astype(np.int32)  # [R, n]
    choices = np.array(list(itertools.combinations(range(len(hidden)), int(state.mine_count))))
    placed = np.zeros((len(choices), len(hidden)), np.int32)
    np.put_along_axis(placed, choices, 1, axis=1)
    placed = placed[np.all(placed @ seen.T == counts[revealed][None], axis=1)]
    layouts = np.zeros((len(placed), CFG.num_cells), bool)
    layouts[:, hidden] = placed.astype(bool)
    return layouts


@pytest.fixture(scope="module")
def positions():
    return random_positions(160)


# ----------------------------------------------------------------------------- soundness


def test_every_proved_cell_holds_in_every_consistent_layout(positions):
    forced = solver.batch_forced_moves(positions, CFG, DEDUCE)
    proved_by_layer = np.zeros(4, int)
    for i in range(positions.done.shape[0]):
        state = jax.tree.map(lambda x: x[i], positions)
        layouts = consistent_layouts(state)
        assert len(layouts) > 0
        safe, mines = np.asarray(forced.safe[i]).reshape(-1), np.asarray(forced.mines[i]).reshape(-1)
        layer = np.asarray(forced.layer[i]).reshape(-1)
        picture = env.render(state)
        assert not layouts[:, safe].any(), f"a cell called safe holds a mine in some layout:\n{picture}"
        assert layouts[:, mines].all(), f"a cell called a mine is empty in some layout:\n{picture}"
        assert not (safe & mines).any()
        assert np.all((layer > 0) == (safe | mines)) and layer.max() <= 3
        proved_by_layer += np.bincount(layer[safe | mines], minlength=4)
    # the sample exercises every deduction layer, so each one's soundness is checked
    assert np.all(proved_by_layer[1:] > 0), proved_by_layer


def test_deduction_proves_what_every_layout_agrees_on_in_most_positions(positions):
    forced = solver.batch_forced_moves(positions, CFG, DEDUCE)
    complete = 0
    for i in range(positions.done.shape[0]):
        state = jax.tree.map(lambda x: x[i], positions)
        layouts = consistent_layouts(state)
        hidden = ~np.asarray(state.revealed).reshape(-1)
        certain = hidden & (layouts.all(axis=0) | ~layouts.any(axis=0))
        proved = np.asarray(forced.safe[i] | forced.mines[i]).reshape(-1)
        complete += np.array_equal(certain, proved)
    assert complete >= 0.9 * positions.done.shape[0]


# ----------------------------------------------------------------------------- patterns

WALL_ROWS = "\n. . . . . .\n. . . . . .\n. . . . . .\n. . . . . ."

PATTERNS = {
    # 1-1 against the wall: the first 1's mine is in the second 1's cells, so the third
    # cell the second 1 sees is safe (from both ends)
    "1-1": "# * s s * #\n1 1 1 1 1 1" + WALL_ROWS,
    # 1-2: the 2 sees one cell more than the 1, and that cell holds the extra mine
    "1-2": "* # m # * #\n1 2 1 2 1 1" + WALL_ROWS,
    # 1-2-1: the mines lie beside the 2, over the 1s
    "1-2-1": "# m s m # *\n1 1 2 1 2 1" + WALL_ROWS,
    # 1-2-2-1: the mines lie under the 2s, the outer cells are safe
    "1-2-2-1": "s # m m # s\n# 1 2 2 1 #" + WALL_ROWS,
    # a corner 2 less the 1-pair on each side of it: its last cell is safe (no pair of
    # numbers proves it: only the 2 less both 1s at once)
    "2 less two 1s": ". 1 * # # #\n1 2 # # # #\n* # s # # #\n# # # # # *\n# # # # * #\n# # # # # *",
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_subset_layer_solves_classic_pattern_in_every_rotation(name):
    drawn = [board(text) for text in rotations(PATTERNS[name])]
    states = stack([state for state, _, _ in drawn])
    forced = solver.batch_forced_moves(states, CFG, DEDUCE)
    single_cell_only = solver.batch_forced_moves(states, CFG, LAYER1)
    for k, (_, must_safe, must_mine) in enumerate(drawn):
        assert np.all(np.asarray(forced.safe[k])[must_safe]), f"{name}, rotation {k}"
        assert np.all(np.asarray(forced.mines[k])[must_mine]), f"{name}, rotation {k}"
        key_cells = must_safe | must_mine
        assert np.all(np.asarray(forced.layer[k])[key_cells] == 2)
        assert not np.any(np.asarray(single_cell_only.safe[k] | single_cell_only.mines[k])[key_cells])


def test_deduction_ignores_the_players_flags(positions):
    # flags, right or wrong, are the player's guesses: the solver proves its own mines
    rng = np.random.default_rng(1)
    hidden = ~np.asarray(positions.revealed)
    flagged = positions.replace(flags=jnp.asarray(hidden & (rng.random(hidden.shape) < 0.3)))
    plain = solver.batch_forced_moves(positions, CFG, DEDUCE)
    with_flags = solver.batch_forced_moves(flagged, CFG, DEDUCE)
    for got, want in zip(with_flags, plain):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- global count

ENDGAME = """
. . 1 * # #
. . 1 # # #
# # # # # #
# # # # # s
# # # # # #
s # # # # s
"""


def test_count_rule_clears_the_board_once_the_numbers_use_up_the_mines():
    # the top 1 needs one mine in two cells; with one mine in the game, the rest is safe
    state, must_safe, _ = board(ENDGAME)
    forced = solver.batch_forced_moves(stack([state]), CFG, DEDUCE)
    safe, layer = np.asarray(forced.safe[0]), np.asarray(forced.layer[0])
    assert safe[must_safe].all() and np.all(layer[must_safe] == 3)
    assert not np.asarray(forced.safe[0] | forced.mines[0])[0, 3] and not safe[1, 3]
    assert not solver.batch_forced_moves(stack([state]), CFG, SolverConfig(max_layer=2)).safe[0, 5, 5]


def test_count_rule_marks_every_unknown_a_mine_when_mines_equal_unknowns():
    # the numbers prove the third column; the mines left equal the cells left
    state, _, must_mine = board(
        """
        . 2 * * * m
        . 3 * * * *
        . 3 * * * m
        . 3 * * * *
        . 3 * * * *
        . 2 * * * m
        """
    )
    forced = solver.batch_forced_moves(stack([state]), CFG, DEDUCE)
    mines, layer = np.asarray(forced.mines[0]), np.asarray(forced.layer[0])
    assert np.array_equal(mines, ~np.asarray(state.revealed))
    assert np.all(layer[:, 2] == 1) and np.all(layer[must_mine] == 3)


def test_contradiction_proves_a_cell_that_pairs_and_the_count_miss():
    # no single number, pair of numbers or count rule proves (4, 0); assuming it a mine,
    # layer 1 from there (the 1 below clears (4, 1) and (5, 1), ...) ends at a number
    # that cannot be satisfied, so (4, 0) is safe
    state, must_safe, _ = board(
        """
        . . . . . .
        . . . . 1 1
        1 1 1 1 2 *
        # * # # * #
        s * 2 # # #
        1 # # # # #
        """
    )
    no_contradiction = SolverConfig(max_layer=3, contradiction_cells=0)
    before = solver.batch_forced_moves(stack([state]), CFG, no_contradiction)
    assert not np.any(np.asarray(before.safe[0] | before.mines[0])[must_safe])
    forced = solver.batch_forced_moves(stack([state]), CFG, DEDUCE)
    safe, layer = np.asarray(forced.safe[0]), np.asarray(forced.layer[0])
    assert safe[must_safe].all() and np.all(layer[must_safe] == 3)
    # sound: the proved cells agree with every layout consistent with the view
    layouts = consistent_layouts(state).reshape(-1, CFG.H, CFG.W)
    assert not np.any(layouts[:, safe]) and np.all(layouts[:, np.asarray(forced.mines[0])])


# ----------------------------------------------------------------------------- actions


def test_solver_action_is_legal_and_batch_equals_vmap(positions):
    finished = jax.tree.map(lambda x: x[:4], positions).replace(done=jnp.ones(4, bool))
    fresh = env.batch_reset(jax.random.key(3), CFG, 4)
    states = jax.tree.map(lambda *xs: jnp.concatenate(xs), positions, finished, fresh)
    keys = jax.random.split(jax.random.key(0), states.done.shape[0])
    full = SolverConfig(contradiction_cells=16)  # every layer, the batch path's last stage too
    actions, layers = solver.batch_solver_action(states, keys, CFG, full, 16)
    per_board = jax.jit(jax.vmap(solver.solver_action, in_axes=(0, 0, None, None)), static_argnums=(2, 3))
    vmapped_actions, vmapped_layers = per_board(states, keys, CFG, full)
    np.testing.assert_array_equal(actions, vmapped_actions)
    np.testing.assert_array_equal(layers, vmapped_layers)
    actions, layers, done = np.asarray(actions), np.asarray(layers), np.asarray(states.done)
    revealed = np.asarray(states.revealed).reshape(len(actions), -1)
    live = ~done
    assert np.all((0 <= actions) & (actions < CFG.num_cells))  # reveals only, by default
    assert not revealed[live, actions[live]].any()
    assert np.all(layers[done] == 0) and np.all(np.isin(layers, [0, 1, 2, 3, 4]))
    # the opening click is the documented (3, 3)
    assert np.all(actions[-4:] == 3 * CFG.W + 3) and np.all(layers[-4:] == 0)
    # a forced reveal is a cell the deduction proves safe
    forced = solver.batch_forced_moves(states, CFG, DEDUCE)
    proved = live & np.isin(layers, [1, 2, 3])
    safe = np.asarray(forced.safe).reshape(len(actions), -1)
    assert proved.any() and safe[proved, actions[proved]].all()


def test_batch_forced_moves_equals_vmapped_forced_moves(positions):
    batched = solver.batch_forced_moves(positions, CFG, DEDUCE)
    vmapped = jax.jit(jax.vmap(solver.forced_moves, in_axes=(0, None, None)), static_argnums=(1, 2))(
        positions, CFG, DEDUCE
    )
    for got, want in zip(batched, vmapped):
        np.testing.assert_array_equal(got, want)


def test_mine_probabilities_are_calibrated_to_the_mine_count(positions):
    probability = jax.jit(jax.vmap(solver.mine_probabilities, in_axes=(0, None)), static_argnums=1)(
        positions, CFG
    )
    probability = np.asarray(probability)
    forced = solver.batch_forced_moves(positions, CFG, SolverConfig(max_layer=3))  # the default deduction
    revealed = np.asarray(positions.revealed)
    assert np.all((probability >= 0) & (probability <= 1))
    assert np.all(probability[revealed] == 0)
    assert np.all(probability[np.asarray(forced.mines)] == 1)
    assert np.all(probability[np.asarray(forced.safe)] == 0)
    totals = probability.sum(axis=(1, 2))
    np.testing.assert_allclose(totals, np.asarray(positions.mine_count), atol=0.05)


def test_mine_probabilities_are_close_to_the_exact_ones(positions):
    # nested and equal constraints are taken out of each other before belief propagation;
    # without that, loops of two numbers pushed 50/50 cells to 0 and 1 (errors up to 0.6
    # on these positions)
    from msjax import exact

    probability = np.asarray(
        jax.jit(jax.vmap(solver.mine_probabilities, in_axes=(0, None)), static_argnums=1)(positions, CFG)
    )
    errors = []
    for i in range(positions.done.shape[0]):
        revealed, counts = np.asarray(positions.revealed[i]), np.asarray(positions.counts[i])
        truth = exact.analyse(revealed, np.where(revealed, counts, 0), int(positions.mine_count[i])).mine_prob
        errors.append(np.abs(probability[i] - truth)[~revealed])
    errors = np.concatenate(errors)
    assert errors.max() < 0.15 and errors.mean() < 0.003, (errors.max(), errors.mean())


def play_with_memory(num_boards: int, steps: int, seed: int = 0):
    """Plays ``steps`` moves on ``num_boards`` auto-reset boards with ``batch_solver_play``;
    yields ``(states, actions, layers, memory, done)``: the boards before each step, the
    solver's output, and which games the step ended."""
    step = jax.jit(env.batch_step, static_argnums=2)
    states = env.batch_reset(jax.random.key(seed), CFG, num_boards)
    memory = solver.empty_memory(states)
    for t in range(steps):
        keys = jax.random.split(jax.random.fold_in(jax.random.key(seed + 1), t), num_boards)
        actions, layers, new_memory = solver.batch_solver_play(states, keys, memory, CFG, SolverConfig())
        next_states, _, done, _ = step(states, actions, CFG)
        yield states, actions, layers, new_memory, np.asarray(done)
        states, memory = next_states, new_memory


def test_solver_memory_keeps_only_sound_proofs_of_the_current_game():
    games, proved_moves = 0, 0
    for states, actions, layers, memory, ended in play_with_memory(64, 40):
        actions, layers = np.asarray(actions), np.asarray(layers)
        mines, revealed, done = map(np.asarray, (states.mine_mask, states.revealed, states.done))
        live = ~done & revealed.any(axis=(1, 2))
        # every remembered proof is right about this game's mines, and a proved move is safe
        assert not np.any(np.asarray(memory.safe)[live] & mines[live])
        assert np.all(np.asarray(memory.mines)[live] <= mines[live])
        assert not np.any(np.asarray(memory.safe)[~live] | np.asarray(memory.mines)[~live])
        proved = live & np.isin(layers, [1, 2, 3])
        assert not mines.reshape(len(actions), -1)[proved, actions[proved]].any()
        assert not revealed.reshape(len(actions), -1)[live, actions[live]].any()
        games += int(ended.sum())
        proved_moves += int(proved.sum())
    assert games > 64 and proved_moves > 100  # boards were reset, and the memory was used


def test_solver_memory_of_another_game_is_ignored(positions):
    keys = jax.random.split(jax.random.key(0), positions.done.shape[0])
    actions, layers = solver.batch_solver_action(positions, keys, CFG)
    # a memory that claims every hidden cell safe, for other games (other keys)
    stale = solver.empty_memory(positions)._replace(safe=~positions.revealed, layer=jnp.ones_like(positions.counts))
    stale = stale._replace(game=stale.game + 1)
    got_actions, got_layers, _ = solver.batch_solver_play(positions, keys, stale, CFG)
    np.testing.assert_array_equal(got_actions, actions)
    np.testing.assert_array_equal(got_layers, layers)


# ----------------------------------------------------------------------------- play_game


def test_play_game_records_every_move_and_compiles_the_step_once():
    records = [solver.play_game(jax.random.key(seed), CFG) for seed in range(3)]
    assert solver._jit_solver_action._cache_size() == 1  # one trace for the config
    for record in records:
        assert record.final_status in ("Won", "Lost") and record.solved == (record.final_status == "Won")
        assert record.actions[0] == solver.ActionRecord("REVEAL", 3, 3, 0)
        assert all(a.action_type == "REVEAL" for a in record.actions)
        assert sum(s["total"] for s in record.action_summary.values()) == len(record.actions)
        text = record.history(detailed=True)
        lines = text.splitlines()
        assert lines[1] == "HYBRID SOLVER RESULTS"
        assert f"Final Status: {record.final_status}" in lines
        assert f"Total Actions: {len(record.actions)}" in lines
        assert "    1. Layer 0: REVEAL (3, 3)" in lines
        for layer, s in record.action_summary.items():
            assert f"  Layer {layer}: {s['REVEAL']} reveals, {s['FLAG']} flags, {s['total']} total" in lines
        if record.solved:
            assert bool(record.final_state.won)
    assert any(r.solved for r in records)


def test_flag_mines_flags_a_proved_mine_instead_of_guessing():
    state, _, must_mine = board(PATTERNS["1-2-2-1"])
    # reveal every safe cell: only the mines are left, all proved, so the move is a flag
    mines = np.asarray(state.mine_mask)
    state = state.replace(revealed=jnp.asarray(~mines))
    action, layer = jax.jit(solver.solver_action, static_argnums=(2, 3))(
        state, jax.random.key(0), CFG, SolverConfig(max_layer=3, flag_mines=True)
    )
    assert int(action) >= CFG.num_cells and mines.reshape(-1)[int(action) - CFG.num_cells]
    assert 1 <= int(layer) <= 3


def test_config_rejects_out_of_range_values():
    with pytest.raises(ValueError, match="max_layer"):
        SolverConfig(max_layer=5)
    with pytest.raises(ValueError, match="contradiction_cells"):
        SolverConfig(contradiction_cells=-1)
    with pytest.raises(ValueError, match="contradiction_rounds"):
        SolverConfig(contradiction_rounds=0)
    with pytest.raises(ValueError, match="safety_threshold"):
        SolverConfig(safety_threshold=1.5)
