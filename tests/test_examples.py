"""The example notebook runs top to bottom against a run made in the test."""

import json
from pathlib import Path

from tiny_runs import saved_run

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "play_and_heatmap.ipynb"


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
