"""The examples run: the notebook top to bottom against a run made in the test (its cells
in this process, ``MSJAX_RUN`` naming the run, and the notebook in a Jupyter kernel started
in its own folder, as Jupyter starts it: nbclient and ipykernel, the dev extra), and rejax's
PPO through the gymnax adapter in a tiny version (skipped without rejax)."""

import importlib.util
import json
import os
from pathlib import Path

import pytest
from tiny_runs import saved_run

REPOSITORY = Path(__file__).resolve().parent.parent
NOTEBOOK = REPOSITORY / "examples" / "play_and_heatmap.ipynb"
EXAMPLES = REPOSITORY / "examples"


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


def test_the_notebook_runs_in_a_kernel_started_in_its_own_folder_and_finds_runs_small(tmp_path, monkeypatch):
    """As Jupyter runs it: a kernel whose working directory is the notebook's folder
    (``examples/``), with the run in ``runs/small`` of the folder above."""
    nbclient = pytest.importorskip("nbclient", reason="needs nbclient and ipykernel: pip install -e '.[dev]'")
    pytest.importorskip("ipykernel", reason="needs nbclient and ipykernel: pip install -e '.[dev]'")
    import nbformat

    project = tmp_path / "project"
    saved_run(project / "runs" / "small", steps=(1,))
    (project / "examples").mkdir()
    monkeypatch.delenv("MSJAX_RUN", raising=False)
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own inline backend draws the figure
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")]))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(project / "examples")}}
    )
    client.execute()  # a cell that raises fails the test with its traceback
    printed = "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", []) if cell.cell_type == "code"
    )
    assert f"{project / 'runs' / 'small'}: 4x4 board, 2 mines" in printed
    images = [o for cell in notebook.cells for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the heatmap was drawn"


def test_rejax_ppo_trains_through_the_gymnax_adapter_and_never_plays_a_masked_move():
    pytest.importorskip("rejax", reason="examples/rejax_ppo.py needs rejax: pip install -e '.[rejax]'")
    spec = importlib.util.spec_from_file_location("rejax_ppo", EXAMPLES / "rejax_ppo.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.run("4x4x2", timesteps=2048, games=32, seed=0, num_envs=16, num_steps=16, hidden=16)
    assert result["illegal_moves"] == 0
    assert 0.0 <= result["random_win_rate"] <= 1.0 and 0.0 <= result["ppo_win_rate"] <= 1.0
