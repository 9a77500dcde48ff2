"""The examples run: the notebook top to bottom against a run made in the test, and rejax's
PPO through the gymnax adapter in a tiny version (skipped without rejax)."""

import importlib.util
import json
from pathlib import Path

import pytest
from tiny_runs import saved_run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOK = EXAMPLES / "play_and_heatmap.ipynb"


def code_cells(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    assert notebook["nbformat"] == 4
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_the_notebook_loads_a_run_plays_a_game_and_draws_the_heatmap(tmp_path, monkeypatch):
    run_dir = saved_run(tmp_path / "run", steps=(1,))
    monkeypatch.setenv("MSJAX_RUN", str(run_dir))
    monkeypatch.setenv("MPLBACKEND", "Agg")  # plt.show() draws nothing and returns
    namespace: dict = {}
    for source in code_cells(NOTEBOOK):
        exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    cfg = namespace["cfg"]
    assert bool(namespace["state"].done) or len(namespace["history"]) > namespace["ms_env"].move_limit(cfg)
    assert namespace["belief"].shape == (4, 4)
    if namespace["plt"] is not None:
        assert namespace["fig"].axes, "the heatmap figure was drawn"
        namespace["plt"].close("all")


def test_rejax_ppo_trains_through_the_gymnax_adapter_and_never_plays_a_masked_move():
    pytest.importorskip("rejax", reason="examples/rejax_ppo.py needs rejax: pip install -e '.[rejax]'")
    spec = importlib.util.spec_from_file_location("rejax_ppo", EXAMPLES / "rejax_ppo.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.run("4x4x2", timesteps=2048, games=32, seed=0, num_envs=16, num_steps=16, hidden=16)
    assert result["illegal_moves"] == 0
    assert 0.0 <= result["random_win_rate"] <= 1.0 and 0.0 <= result["ppo_win_rate"] <= 1.0
