"""Agents shipped inside the package: loaded by name, their files checked against their
card's digests, shipped from a run by one command (``python -m msjax ship``), and named
where a command line takes ``--agent``. The shipping tests use a tiny run in a temporary
folder of shipped agents (``MSJAX_SHIPPED_AGENTS``); the last tests play the agents that
the package really ships."""

import dataclasses
import io
import json
import os
from pathlib import Path

import jax
import numpy as np
import pytest
from tiny_runs import TINY, saved_run

import msjax
from msjax.run import agents as agents_lib
from msjax.run import config as config_lib
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import shipped
from msjax.cli import evaluate as evaluate_cli
from msjax.cli import play as play_cli
from msjax.cli import serve as serve_cli
from msjax.cli import ship as ship_cli
from msjax.shipped import files as shipped_files

FINAL_EVAL = {"episodes": 32, "win_rate": 0.25, "win_rate_ci95": [0.13, 0.42], "checkpoint": ""}


def finished_run(run_dir, cfg=TINY, final_eval=FINAL_EVAL, wall_s=(5.0, 9.5)):
    """A tiny run as a finished training leaves it: a checkpoint at step 2, its metrics
    (two rows: ``env_steps`` 128 and 256, ``wall_s`` as given) and ``final_eval.json``."""
    saved_run(run_dir, cfg, steps=(2,), metrics=[final_eval["win_rate"]])
    rows = [
        {"kind": "train", "stage": "ppo", "step": step, "env_steps": 128 * step, "time": 1796500000.0 + step, "wall_s": wall}
        for step, wall in zip((1, 2), wall_s)
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    final = {**final_eval, "checkpoint": str(run_dir / "checkpoints" / "2")}
    (run_dir / "final_eval.json").write_text(json.dumps(final))
    return run_dir


@pytest.fixture
def shelf(tmp_path, monkeypatch):
    """An empty folder of shipped agents, the one ``load_agent`` reads by name."""
    folder = tmp_path / "shipped"
    folder.mkdir()
    monkeypatch.setenv(shipped.SHIPPED_DIR_VARIABLE, str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return finished_run(tmp_path_factory.mktemp("runs") / "tiny_run")


def ship(run, name, *more):
    return ship_cli.main([str(run), "--name", name, "--device", "cpu: test", *more])


def params_equal(one, other):
    return jax.tree.all(jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), one, other))


# ----------------------------------------------------------------------------- shipping


def test_a_shipped_run_loads_by_name_with_the_runs_parameters_and_config(shelf, tiny_run):
    assert ship(tiny_run, "tiny") == 0
    agent = msjax.load_agent("tiny")
    from_run = agents_lib.load_agent(tiny_run)
    assert params_equal(agent.params, from_run.params)
    assert agent.config == config_lib.apply_overrides(TINY, ["run.workdir=runs/tiny_run"]) and agent.env_cfg == TINY.env
    assert sorted(p.name for p in (shelf / "tiny").iterdir()) == ["card.json", "config.json", "params.msgpack"]


@pytest.mark.parametrize(("init_from", "shipped"), [
    ("/home/me/work/runs/start", "runs/start"),
    ("/home/me/start/checkpoints/500", "runs/start/checkpoints/500"),
    ("runs/start", "runs/start"),
    ("beginner", "beginner"),
    ("", ""),
])
def test_a_shipped_config_holds_no_path_of_the_machine_that_trained_it(init_from, shipped):
    from msjax.shipped.from_run import portable, portable_init_from

    cfg = config_lib.apply_overrides(TINY, [f"run.init_from={init_from}", "run.workdir=/home/me/work/runs/tiny"])
    assert portable(cfg, Path("/home/me/work/runs/tiny")).run == dataclasses.replace(
        cfg.run, workdir="runs/tiny", init_from=shipped)
    assert portable_init_from(init_from) == shipped  # the card's training chain writes it so


def test_the_card_holds_the_win_rate_the_training_chain_compute_and_dates(shelf, tiny_run):
    ship(tiny_run, "tiny")
    card = shipped.card("tiny")
    assert (card["name"], card["board"], card["rule"]) == ("tiny", "4x4x2", "opening")
    assert (card["win_rate"], card["win_rate_ci95"], card["games"]) == (0.25, [0.13, 0.42], 32)
    assert card["training"] == [
        {"run": "tiny_run", "board": "4x4x2", "stages": {"ppo": 4}, "init_from": "", "seed": 0,
         "env_steps": 256, "wall_s": 9.5, "finished": "2026-12-05"}
    ]  # fmt: skip
    assert card["compute"] == {"env_steps": 256, "wall_s": 9.5, "device": "cpu: test"}
    assert card["trained"] == "2026-12-05" and card["shipped"]
    params = shelf / "tiny" / "params.msgpack"
    assert card["files"]["params.msgpack"] == {"sha256": shipped_files.file_digest(params), "bytes": params.stat().st_size}


def test_the_training_chain_follows_warm_starts_back_to_a_fresh_start(shelf, tmp_path, tiny_run):
    warm = config_lib.apply_overrides(TINY, [f"run.init_from={tiny_run}"])
    second = finished_run(tmp_path / "second", warm, wall_s=(3.0, 1.0))  # resumed: its clock restarted
    assert ship(second, "tiny") == 0
    card = shipped.card("tiny")
    assert [run["run"] for run in card["training"]] == ["tiny_run", "second"]
    assert card["training"][1]["wall_s"] == 4.0
    assert card["training"][1]["init_from"] == "runs/tiny_run"  # not the path on this machine
    assert card["compute"]["env_steps"] == 512 and card["compute"]["wall_s"] == 13.5


def test_the_training_chain_of_a_warm_start_from_a_shipped_agent_is_that_agents_chain_then_the_run(
    shelf, tmp_path, tiny_run
):
    ship(tiny_run, "tiny")
    warm = config_lib.apply_overrides(TINY, ["run.init_from=tiny"])
    assert ship(finished_run(tmp_path / "from_tiny", warm, wall_s=(3.0, 4.0)), "tiny") == 0  # replaces its start
    card = shipped.card("tiny")
    assert [(run["run"], run["init_from"]) for run in card["training"]] == [("tiny_run", ""), ("from_tiny", "tiny")]
    assert card["compute"]["env_steps"] == 512 and card["compute"]["wall_s"] == 13.5


def test_shipping_again_replaces_the_agent_whole(shelf, tmp_path, tiny_run):
    ship(tiny_run, "tiny")
    better = finished_run(tmp_path / "better", final_eval={**FINAL_EVAL, "win_rate": 0.5})
    assert ship(better, "tiny") == 0
    assert shipped.card("tiny")["win_rate"] == 0.5
    assert sorted(p.name for p in shelf.iterdir()) == ["tiny"]  # nothing left beside it


def test_the_evaluation_of_msjax_evaluate_can_replace_final_eval(shelf, tmp_path, tiny_run):
    line = {"player": "agent", "board": "4x4x2", "rule": "safe", "episodes": 1000, "win_rate": 0.3,
            "win_rate_ci95": [0.27, 0.33]}  # fmt: skip
    (tmp_path / "eval.txt").write_text("a table first\n" + json.dumps(line) + "\n")
    assert ship(tiny_run, "tiny", "--evaluation", str(tmp_path / "eval.txt")) == 0
    card = shipped.card("tiny")
    assert (card["win_rate"], card["games"], card["evaluation"]) == (0.3, 1000, "eval.txt")


def test_the_last_row_of_msjax_paired_can_replace_final_eval(shelf, tmp_path, tiny_run):
    rows = [
        {"agent": "other", "board": "4x4x2", "seed": 7, "games": 2000, "win_rate": 0.2, "ci": [0.18, 0.22]},
        {"agent": str(tiny_run), "board": "4x4x2", "seed": 7, "games": 2000, "win_rate": 0.4, "ci": [0.38, 0.42]},
    ]  # fmt: skip
    (tmp_path / "paired.txt").write_text("".join(json.dumps(row) + "\n" for row in rows) + "a table last\n")
    assert ship(tiny_run, "tiny", "--evaluation", str(tmp_path / "paired.txt")) == 0
    card = shipped.card("tiny")
    assert (card["win_rate"], card["win_rate_ci95"], card["games"]) == (0.4, [0.38, 0.42], 2000)


def test_a_standard_name_takes_only_a_run_of_its_board(shelf, tiny_run, capsys):
    assert ship(tiny_run, "beginner") == 2
    assert capsys.readouterr().err.strip() == (
        "python -m msjax ship: error: --name beginner is the 8x8x10 board's agent; the run plays 4x4x2"
    )
    assert shipped.shipped_names() == []


def test_an_unfinished_run_is_not_shipped(shelf, tmp_path, capsys):
    run = saved_run(tmp_path / "unfinished", steps=(1,))
    assert ship(run, "tiny") == 2
    assert "has no final_eval.json: the run has not finished" in capsys.readouterr().err


def test_a_name_that_is_no_folder_name_is_refused(shelf, tiny_run, capsys):
    assert ship(tiny_run, "../Tiny") == 2
    assert "name='../Tiny' must start with a letter" in capsys.readouterr().err


# ----------------------------------------------------------------------------- loading by name


def test_a_shipped_file_whose_digest_is_wrong_is_refused(shelf, tiny_run):
    ship(tiny_run, "tiny")
    params = shelf / "tiny" / "params.msgpack"
    damaged = bytearray(params.read_bytes())
    damaged[-1] ^= 1
    params.write_bytes(bytes(damaged))
    with pytest.raises(shipped.ShippedAgentError, match=r"params.msgpack has SHA-256 .* its card records"):
        msjax.load_agent("tiny")


def test_a_config_whose_digest_is_wrong_is_refused(shelf, tiny_run):
    ship(tiny_run, "tiny")
    config_file = shelf / "tiny" / "config.json"
    config_file.write_text(config_file.read_text().replace('"mine_count": 2', '"mine_count": 3'))
    with pytest.raises(shipped.ShippedAgentError, match=r"config.json has SHA-256"):
        msjax.load_agent("tiny")


def test_a_name_not_shipped_names_those_shipped_and_the_ship_command(shelf, tiny_run):
    ship(tiny_run, "tiny")
    with pytest.raises(shipped.ShippedAgentError) as error:
        msjax.load_agent("expert")
    assert str(error.value) == (
        f"no shipped agent 'expert' in {shelf} (shipped: tiny); train one and ship it with "
        "`python -m msjax ship runs/NAME --name expert`, or pass a run directory"
    )


def test_a_path_to_a_run_of_a_shipped_agents_name_loads_the_run(shelf, tmp_path, monkeypatch):
    saved_run(tmp_path / "beginner", steps=(1,))
    monkeypatch.chdir(tmp_path)
    assert msjax.load_agent("./beginner").env_cfg == TINY.env
    with pytest.raises(shipped.ShippedAgentError, match="no shipped agent 'beginner'"):
        msjax.load_agent("beginner")


# ----------------------------------------------------------------------------- command lines


def test_evaluate_play_and_serve_take_a_shipped_name(shelf, tiny_run, capsys):
    ship(tiny_run, "tiny")
    assert evaluate_cli.main(["--agent", "tiny", "--episodes", "4", "--calibration-games", "0"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["player"] == "agent tiny"
    out = io.StringIO()
    assert play_cli.main(["--agent", "tiny", "--seed", "3", "--color", "never"], stdin=io.StringIO("c\n"), stdout=out) == 0
    assert "The agent plays a 4x4 board with 2 mines, seed 3." in out.getvalue()
    assert serve_cli.agent_label("tiny") == "tiny (shipped)"
    assert serve_cli.agent_label(str(tiny_run / "checkpoints" / "2")) == "tiny_run"


# ----------------------------------------------------------------------------- the package's agents


def test_the_package_ships_the_beginner_agent():
    assert "beginner" in shipped.shipped_names(shipped_files.PACKAGE_DIR)


@pytest.mark.parametrize("name", shipped.shipped_names(shipped_files.PACKAGE_DIR))
def test_every_shipped_agent_loads_plays_a_legal_game_and_wins_small_board_games(name, monkeypatch):
    monkeypatch.delenv(shipped.SHIPPED_DIR_VARIABLE, raising=False)
    agent = msjax.load_agent(name)
    card = shipped.card(name)
    cfg = agent.env_cfg
    assert card["board"] == "x".join(map(str, ms_env.STANDARD_BOARDS[name])) == f"{cfg.H}x{cfg.W}x{cfg.mine_count}"
    *turns, (final, _) = evaluate_lib.game_turns(evaluate_lib.agent_turns(agent, seed=0), cfg, 0)
    assert turns and all(bool(ms_env.action_mask(state, cfg)[turn.action]) for state, turn in turns)
    assert bool(final.done)
    small = ms_env.EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=True)
    figures = evaluate_lib.evaluate(agent.for_board(small), small, episodes=32, seed=0, batch_size=32)
    assert figures["invalid_action_rate"] == 0.0
    assert figures["win_rate"] > 0.4, f"{name} won {figures['win_rate']:.0%} of 32 beginner games"
    assert os.path.getsize(shipped_files.PACKAGE_DIR / name / "params.msgpack") < 2_000_000


def test_the_notebook_plays_the_shipped_agent_when_no_run_exists(tmp_path, monkeypatch):
    repository = shipped_files.PACKAGE_DIR.parent.parent
    if (repository / "runs" / "small").exists():
        pytest.skip("this checkout has runs/small, which the notebook takes first")
    monkeypatch.delenv("MSJAX_RUN", raising=False)
    monkeypatch.delenv(shipped.SHIPPED_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    notebook = json.loads((repository / "examples" / "play_and_heatmap.ipynb").read_text())
    namespace: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "play_and_heatmap.ipynb", "exec"), namespace)
    assert namespace["RUN_DIR"] == "beginner"
    assert namespace["belief"].shape == (8, 8)
    if namespace["plt"] is not None:
        namespace["plt"].close("all")
