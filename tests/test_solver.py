"""The rule solver: sound deduction, the classic patterns, legal moves, batching, keys.

Every test uses one 6x6 config, and the games go to the solver in two batch sizes (160
positions, random or drawn; 64 played games), so each compiled program is built once
and shared. Positions are drawn in the board-text format of
``tests/conftest.py``; soundness is checked against brute-force enumeration of every
mine layout consistent with what the player sees.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import cells, must_prove, position, stack
from test_reference import consistent_layouts as brute_force_layouts
from test_solver_exact import ONE_PASS

from msjax import env, solver
from msjax.solver import record as solver_record
from msjax.env import EnvConfig
from msjax.solver import SolverConfig

CFG = EnvConfig(H=6, W=6, mine_count=5)  # the solver reads the mine count from the state
LAYER1 = SolverConfig(max_layer=1)
DEDUCE = SolverConfig(max_layer=3, contradiction_cells=16)  # every deduction layer, all of layer 3
NUM_POSITIONS = 160  # every batch of positions, random or drawn: one compile per config


# ----------------------------------------------------------------------------- positions


def rotations(text: str) -> list[str]:
    return ["\n".join(" ".join(row) for row in np.rot90(cells(text), k)) for k in range(4)]


def deduce_drawn(texts: list[str], solver_cfg: SolverConfig) -> solver.Forced:
    """``batch_forced_moves`` of the drawn positions (the batch is filled up with copies
    of the last one, to the size of the random positions'): ``Forced`` fields
    ``[NUM_POSITIONS, H, W]``, numpy."""
    states = [position(text, CFG) for text in texts]
    states += states[-1:] * (NUM_POSITIONS - len(states))
    forced = solver.batch_forced_moves(stack(states), CFG, solver_cfg)
    return solver.Forced(*map(np.asarray, forced))


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
    matches every revealed number (brute force: ``test_reference.consistent_layouts``)."""
    revealed, counts = np.asarray(state.revealed), np.asarray(state.counts)
    return brute_force_layouts(revealed, counts, int(state.mine_count))


def game(states, i: int):
    return jax.tree.map(lambda x: x[i], states)


@pytest.fixture(scope="module")
def positions():
    return random_positions(NUM_POSITIONS)


@pytest.fixture(scope="module")
def layouts(positions):
    """Every position's consistent layouts (``consistent_layouts``), computed once."""
    return [consistent_layouts(game(positions, i)) for i in range(positions.done.shape[0])]


@pytest.fixture(scope="module")
def deduced(positions):
    """``batch_forced_moves`` of every position with every deduction layer (numpy)."""
    return solver.Forced(*map(np.asarray, solver.batch_forced_moves(positions, CFG, DEDUCE)))


@pytest.fixture(scope="module")
def probabilities(positions):
    """float[NUM_POSITIONS, H, W]: ``mine_probabilities`` of every position (default config)."""
    per_game = jax.jit(jax.vmap(solver.mine_probabilities, in_axes=(0, None)), static_argnums=1)
    return np.asarray(per_game(positions, CFG))


# ----------------------------------------------------------------------------- soundness


def test_every_proved_cell_holds_in_every_consistent_layout(positions, layouts, deduced):
    proved_by_layer = np.zeros(4, int)
    for i, consistent in enumerate(layouts):
        assert len(consistent) > 0
        safe, mines = deduced.safe[i].reshape(-1), deduced.mines[i].reshape(-1)
        layer = deduced.layer[i].reshape(-1)
        picture = env.render(game(positions, i))
        assert not consistent[:, safe].any(), f"a cell called safe holds a mine in some layout:\n{picture}"
        assert consistent[:, mines].all(), f"a cell called a mine is empty in some layout:\n{picture}"
        assert not (safe & mines).any()
        assert np.all((layer > 0) == (safe | mines)) and layer.max() <= 3
        proved_by_layer += np.bincount(layer[safe | mines], minlength=4)
    # the sample exercises every deduction layer, so each one's soundness is checked
    assert np.all(proved_by_layer[1:] > 0), proved_by_layer


def test_deduction_proves_what_every_layout_agrees_on_in_most_positions(positions, layouts, deduced):
    complete = 0
    for i, consistent in enumerate(layouts):
        hidden = ~np.asarray(positions.revealed[i]).reshape(-1)
        certain = hidden & (consistent.all(axis=0) | ~consistent.any(axis=0))
        proved = (deduced.safe[i] | deduced.mines[i]).reshape(-1)
        complete += np.array_equal(certain, proved)
    assert complete >= 0.9 * len(layouts)


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
    drawings = rotations(PATTERNS[name])
    forced = deduce_drawn(drawings, DEDUCE)
    single_cell_only = deduce_drawn(drawings, LAYER1)
    for k, drawing in enumerate(drawings):
        must_safe, must_mine = must_prove(drawing)
        assert np.all(forced.safe[k][must_safe]), f"{name}, rotation {k}"
        assert np.all(forced.mines[k][must_mine]), f"{name}, rotation {k}"
        key_cells = must_safe | must_mine
        assert np.all(forced.layer[k][key_cells] == 2)
        assert not np.any((single_cell_only.safe[k] | single_cell_only.mines[k])[key_cells])


def test_deduction_ignores_the_players_flags(positions, deduced):
    # flags, right or wrong, are the player's guesses: the solver proves its own mines
    rng = np.random.default_rng(1)
    hidden = ~np.asarray(positions.revealed)
    flagged = positions.replace(flags=jnp.asarray(hidden & (rng.random(hidden.shape) < 0.3)))
    with_flags = solver.batch_forced_moves(flagged, CFG, DEDUCE)
    for got, want in zip(with_flags, deduced):
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
    must_safe, _ = must_prove(ENDGAME)
    forced = deduce_drawn([ENDGAME], DEDUCE)
    safe, layer = forced.safe[0], forced.layer[0]
    assert safe[must_safe].all() and np.all(layer[must_safe] == 3)
    assert not (forced.safe[0] | forced.mines[0])[0, 3] and not safe[1, 3]
    assert not deduce_drawn([ENDGAME], SolverConfig(max_layer=2)).safe[0, 5, 5]


def test_count_rule_marks_every_unknown_a_mine_when_mines_equal_unknowns():
    # the numbers prove the third column; the mines left equal the cells left
    drawing = """
        . 2 * * * m
        . 3 * * * *
        . 3 * * * m
        . 3 * * * *
        . 3 * * * *
        . 2 * * * m
        """
    _, must_mine = must_prove(drawing)
    forced = deduce_drawn([drawing], DEDUCE)
    mines, layer = forced.mines[0], forced.layer[0]
    assert np.array_equal(mines, ~np.asarray(position(drawing, CFG).revealed))
    assert np.all(layer[:, 2] == 1) and np.all(layer[must_mine] == 3)


def test_contradiction_proves_a_cell_that_pairs_and_the_count_miss():
    # no single number, pair of numbers or count rule proves (4, 0); assuming it a mine,
    # layer 1 from there (the 1 below clears (4, 1) and (5, 1), ...) ends at a number
    # that cannot be satisfied, so (4, 0) is safe
    drawing = """
        . . . . . .
        . . . . 1 1
        1 1 1 1 2 *
        # * # # * #
        s * 2 # # #
        1 # # # # #
        """
    must_safe, _ = must_prove(drawing)
    before = deduce_drawn([drawing], SolverConfig(max_layer=3, contradiction_cells=0))
    assert not np.any((before.safe[0] | before.mines[0])[must_safe])
    forced = deduce_drawn([drawing], DEDUCE)
    safe, layer = forced.safe[0], forced.layer[0]
    assert safe[must_safe].all() and np.all(layer[must_safe] == 3)
    # sound: the proved cells agree with every layout consistent with the view
    consistent = consistent_layouts(position(drawing, CFG)).reshape(-1, CFG.H, CFG.W)
    assert not np.any(consistent[:, safe]) and np.all(consistent[:, forced.mines[0]])


# ----------------------------------------------------------------------------- actions


def test_solver_action_is_legal_and_batch_equals_vmap(positions, deduced):
    # the last 8 positions make way for 4 finished and 4 fresh games
    num = positions.done.shape[0]
    finished = jax.tree.map(lambda x: x[:4], positions).replace(done=jnp.ones(4, bool))
    fresh = env.batch_reset(jax.random.key(3), CFG, 4)
    kept = jax.tree.map(lambda x: x[: num - 8], positions)
    states = jax.tree.map(lambda *xs: jnp.concatenate(xs), kept, finished, fresh)
    keys = jax.random.split(jax.random.key(0), num)
    full = SolverConfig(contradiction_cells=16)  # every layer, the batch path's last stage too
    actions, layers = solver.batch_solver_action(states, keys, CFG, full, 16)
    per_game = jax.jit(jax.vmap(solver.solver_action, in_axes=(0, 0, None, None)), static_argnums=(2, 3))
    vmapped_actions, vmapped_layers = per_game(states, keys, CFG, full)
    np.testing.assert_array_equal(actions, vmapped_actions)
    np.testing.assert_array_equal(layers, vmapped_layers)
    actions, layers, done = np.asarray(actions), np.asarray(layers), np.asarray(states.done)
    cell, is_flag = env.decode_action(actions, CFG)
    revealed = np.asarray(states.revealed).reshape(num, -1)
    live = ~done
    assert not is_flag.any()  # reveals only, by default
    assert not revealed[live, cell[live]].any()
    assert np.all(layers[done] == 0) and np.all(np.isin(layers, [0, 1, 2, 3, 4]))
    # the opening click is the documented (3, 3)
    assert np.all(cell[-4:] == np.ravel_multi_index((3, 3), (CFG.H, CFG.W))) and np.all(layers[-4:] == 0)
    # a forced reveal is a cell the deduction proves safe (the positions kept are the
    # first ones, whose deductions ``deduced`` holds)
    proved = (live & np.isin(layers, [1, 2, 3]))[: num - 8]
    safe = deduced.safe[: num - 8].reshape(num - 8, -1)
    assert proved.any() and safe[proved, cell[: num - 8][proved]].all()


def test_batch_forced_moves_equals_vmapped_forced_moves(positions, deduced):
    vmapped = jax.jit(jax.vmap(solver.forced_moves, in_axes=(0, None, None)), static_argnums=(1, 2))(
        positions, CFG, DEDUCE
    )
    for got, want in zip(deduced, vmapped):
        np.testing.assert_array_equal(got, want)


def test_mine_probabilities_are_calibrated_to_the_mine_count(positions, probabilities):
    forced = solver.batch_forced_moves(positions, CFG, SolverConfig(max_layer=3))  # the default deduction
    revealed = np.asarray(positions.revealed)
    assert np.all((probabilities >= 0) & (probabilities <= 1))
    assert np.all(probabilities[revealed] == 0)
    assert np.all(probabilities[np.asarray(forced.mines)] == 1)
    assert np.all(probabilities[np.asarray(forced.safe)] == 0)
    totals = probabilities.sum(axis=(1, 2))
    np.testing.assert_allclose(totals, np.asarray(positions.mine_count), atol=0.05)


def test_mine_probabilities_are_close_to_the_exact_ones(positions, probabilities):
    # nested and equal constraints are taken out of each other before belief propagation;
    # without that, loops of two numbers pushed 50/50 cells to 0 and 1 (errors up to 0.6
    # on these positions)
    from msjax import reference

    errors = []
    for i in range(positions.done.shape[0]):
        revealed, counts = np.asarray(positions.revealed[i]), np.asarray(positions.counts[i])
        truth = reference.analyse(revealed, np.where(revealed, counts, 0), int(positions.mine_count[i])).mine_prob
        errors.append(np.abs(probabilities[i] - truth)[~revealed])
    errors = np.concatenate(errors)
    assert errors.max() < 0.15 and errors.mean() < 0.003, (errors.max(), errors.mean())


# ----------------------------------------------------------------------------- memory

PLAYED_GAMES = 64


def play_with_memory(num_games: int, steps: int, seed: int = 0):
    """Plays ``steps`` moves on ``num_games`` auto-reset games with ``batch_solver_play``;
    yields ``(states, actions, layers, memory, done)``: the games before each step, the
    solver's output, and which games the step ended."""
    step = jax.jit(env.batch_step, static_argnums=2)
    states = env.batch_reset(jax.random.key(seed), CFG, num_games)
    memory = solver.empty_memory(states)
    for t in range(steps):
        keys = jax.random.split(jax.random.fold_in(jax.random.key(seed + 1), t), num_games)
        actions, layers, new_memory = solver.batch_solver_play(states, keys, memory, CFG, SolverConfig())
        next_states, _, done, _ = step(states, actions, CFG)
        yield states, actions, layers, new_memory, np.asarray(done)
        states, memory = next_states, new_memory


def test_solver_memory_keeps_only_sound_proofs_of_the_current_game():
    games, proved_moves = 0, 0
    for states, actions, layers, memory, ended in play_with_memory(PLAYED_GAMES, 40):
        actions, layers = np.asarray(actions), np.asarray(layers)
        mines, revealed, done = map(np.asarray, (states.mine_mask, states.revealed, states.done))
        cell, _ = env.decode_action(actions, CFG)
        live = ~done & revealed.any(axis=(1, 2))
        # every remembered proof is right about this game's mines, and a proved move is safe
        assert not np.any(np.asarray(memory.safe)[live] & mines[live])
        assert np.all(np.asarray(memory.mines)[live] <= mines[live])
        assert not np.any(np.asarray(memory.safe)[~live] | np.asarray(memory.mines)[~live])
        proved = live & np.isin(layers, [1, 2, 3])
        assert not mines.reshape(len(actions), -1)[proved, cell[proved]].any()
        assert not revealed.reshape(len(actions), -1)[live, cell[live]].any()
        games += int(ended.sum())
        proved_moves += int(proved.sum())
    assert games > PLAYED_GAMES and proved_moves > 100  # games were reset, and the memory was used


def test_solver_memory_of_another_game_is_ignored(positions):
    states = jax.tree.map(lambda x: x[:PLAYED_GAMES], positions)  # the batch size played above
    keys = jax.random.split(jax.random.key(0), PLAYED_GAMES)
    # the arguments as passed above (static ones too), so the compiled program is reused
    actions, layers, _ = solver.batch_solver_play(states, keys, solver.empty_memory(states), CFG, SolverConfig())
    # a memory that claims every hidden cell safe, for other games (other keys)
    stale = solver.empty_memory(states)._replace(safe=~states.revealed, layer=jnp.ones_like(states.counts))
    stale = stale._replace(game=stale.game + 1)
    got_actions, got_layers, _ = solver.batch_solver_play(states, keys, stale, CFG, SolverConfig())
    np.testing.assert_array_equal(got_actions, actions)
    np.testing.assert_array_equal(got_layers, layers)


# ----------------------------------------------------------------------------- keys


@pytest.mark.parametrize("make_key", [jax.random.key, jax.random.PRNGKey], ids=["typed", "legacy"])
def test_solver_takes_typed_and_legacy_keys_with_the_same_moves(make_key, positions):
    # layer 1 alone guesses uniformly: every move without a proved-safe cell comes from the key
    per_game = jax.jit(jax.vmap(solver.solver_action, in_axes=(0, 0, None, None)), static_argnums=(2, 3))
    num = positions.done.shape[0]
    typed_keys = jax.random.split(jax.random.key(7), num)
    keys = jax.random.split(make_key(7), num)
    want = per_game(positions, typed_keys, CFG, LAYER1)
    for got in (
        per_game(positions, keys, CFG, LAYER1),
        solver.batch_solver_play(positions, keys, solver.empty_memory(positions), CFG, LAYER1)[:2],
    ):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert np.any(np.asarray(want[1]) == solver.NO_LAYER)  # some moves were guesses
    one_move = solver.solver_action(game(positions, 0), make_key(7), CFG, LAYER1)
    assert one_move == tuple(solver.solver_action(game(positions, 0), jax.random.key(7), CFG, LAYER1))
    assert solver.record_game(make_key(1), CFG).actions == solver.record_game(jax.random.key(1), CFG).actions


# ----------------------------------------------------------------------------- record_game


def test_record_game_records_every_move_and_compiles_the_step_once(monkeypatch):
    traces = []
    real_solver_action = solver_record.solver_action
    monkeypatch.setattr(solver_record, "solver_action", lambda *args: traces.append(1) or real_solver_action(*args))
    records = [solver.record_game(jax.random.key(seed), CFG) for seed in range(3)]
    assert len(traces) <= 1  # traced at most once for the config (never, if an earlier test did)
    for record in records:
        assert record.final_status in ("Won", "Lost") and record.solved == (record.final_status == "Won")
        assert record.actions[0] == solver.ActionRecord("REVEAL", 3, 3, 0)
        assert all(a.action_type == "REVEAL" for a in record.actions)
        assert sum(s["total"] for s in record.action_summary.values()) == len(record.actions)
        assert record.action_summary == solver.layer_summary(record.actions)
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
    state = position(PATTERNS["1-2-2-1"], CFG)
    # reveal every safe cell: only the mines are left, all proved, so the move is a flag
    mines = np.asarray(state.mine_mask)
    state = state.replace(revealed=jnp.asarray(~mines))
    action, layer = jax.jit(solver.solver_action, static_argnums=(2, 3))(
        state, jax.random.key(0), CFG, SolverConfig(max_layer=3, flag_mines=True)
    )
    cell, is_flag = env.decode_action(int(action), CFG)
    assert is_flag and mines.reshape(-1)[cell]
    assert 1 <= int(layer) <= 3


RISKY_FRONTIER = """
    2 * # * * *
    * # * * # *
    * * * # * *
    * # * * * #
    * * # * * *
    * * * * # *
"""  # the frontier's three cells hold 2 mines (2/3 each); the 32 cells off it hold 25


def test_frontier_risk_limit_sends_a_risky_guess_off_the_frontier():
    # today's guess is a frontier cell (estimated 2/3, the lowest; the cells off it are 25/32)
    state = position(RISKY_FRONTIER, CFG)
    frontier = np.zeros((6, 6), bool)
    frontier[:2, :2] = True
    frontier[0, 0] = False
    act = jax.jit(solver.solver_action, static_argnums=(2, 3))
    explore, layer = act(state, jax.random.key(0), CFG, SolverConfig(frontier_risk_limit=0.35))
    assert not frontier.reshape(-1)[int(explore)] and not bool(state.revealed.reshape(-1)[int(explore)])
    assert int(layer) == solver.GUESS_LAYER


def test_config_rejects_out_of_range_values():
    with pytest.raises(ValueError, match="max_layer"):
        SolverConfig(max_layer=5)
    with pytest.raises(ValueError, match="contradiction_cells"):
        SolverConfig(contradiction_cells=-1)
    with pytest.raises(ValueError, match="contradiction_rounds"):
        SolverConfig(contradiction_rounds=0)
    with pytest.raises(ValueError, match="safety_threshold"):
        SolverConfig(safety_threshold=1.5)
    with pytest.raises(ValueError, match="frontier_risk_limit"):
        SolverConfig(frontier_risk_limit=-0.1)


@pytest.mark.parametrize("fields, message", [
    ({"max_layer": "4"}, r"SolverConfig\.max_layer='4' must be an int in \{1, 2, 3, 4\}"),
    ({"max_layer": True}, r"SolverConfig\.max_layer=True must be an int in \{1, 2, 3, 4\}"),
    ({"first_click": [1, 1]}, r"SolverConfig\.first_click=\[1, 1\] must be None or a \(row, col\) tuple"),
    ({"first_click": (1, -1)}, r"SolverConfig\.first_click=\(1, -1\) must be None or a \(row, col\) tuple"),
    ({"exact_limits": None}, r"SolverConfig\.exact_limits=None must be an ExactLimits"),
    ({"probabilities": None}, r"SolverConfig\.probabilities=None must be one of 'bp', 'exact'"),
    ({"use_information_gain": 1}, r"SolverConfig\.use_information_gain=1 must be a bool"),
    ({"bp_damping": "0.8"}, r"SolverConfig\.bp_damping='0\.8' must be a number in \(0, 1\]"),
    ({"contradiction_cells": 1.0}, r"SolverConfig\.contradiction_cells=1\.0 must be an int >= 0"),
])
def test_config_names_a_field_of_the_wrong_type(fields, message):
    with pytest.raises(ValueError, match=message):
        SolverConfig(**fields)


EXACT = {"probabilities": "exact"}


@pytest.mark.parametrize("fields, message", [
    ({"exact_limits": solver.ExactLimits(max_states=64)}, r"exact_limits=ExactLimits\(.*\) has no effect unless probabilities='exact'"),
    ({"max_layer": 3, "safety_threshold": 0.1}, r"safety_threshold=0\.1 has no effect unless max_layer=4 \(max_layer=3\)"),
    ({"max_layer": 2, "frontier_risk_limit": 0.35}, r"frontier_risk_limit=0\.35 has no effect unless max_layer=4"),
    ({"max_layer": 1, "tie_tolerance": 0.01}, r"tie_tolerance=0\.01 has no effect unless max_layer=4"),
    ({"max_layer": 1, "use_information_gain": False}, r"use_information_gain=False has no effect unless max_layer=4"),
])
def test_config_refuses_an_option_that_another_field_switches_off(fields, message):
    with pytest.raises(ValueError, match=message):
        SolverConfig(**fields)


def test_mine_probabilities_take_a_guessing_config():
    # its deduction runs at layer 3, where the guess's options mean nothing
    # one pass of the exact analysis: a third of the default three passes' compile
    searching = SolverConfig(probabilities="exact", exact_limits=ONE_PASS, tie_tolerance=0.01)
    deduction = SolverConfig(max_layer=3, probabilities="exact", exact_limits=ONE_PASS)
    assert searching.deduction(3) == deduction
    state = position(RISKY_FRONTIER, CFG)
    estimate = solver.mine_probabilities(state, CFG, searching)
    np.testing.assert_allclose(estimate, solver.mine_probabilities(state, CFG, deduction))
