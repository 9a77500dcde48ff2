"""The memory report and the check before a run: compiled chunks sized by XLA."""

import json

import pytest

from msjax.run import config as config_lib
from msjax.run import memory
from msjax.run import loop as train
from msjax.cli import memory as memory_cli
from tiny_runs import TINY


def test_a_run_that_cannot_fit_stops_before_its_first_update_naming_the_setting(tmp_path):
    cfg = config_lib.apply_overrides(TINY, ["run.device_memory_gib=1e-6"])
    with pytest.raises(memory.DoesNotFit, match=r"the ppo chunk needs .* GiB .* set ppo\.microbatch_size \(now off\)"):
        train.train(cfg, tmp_path, resume=False)
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_run_within_its_limit_passes_the_check():
    mesh = train.distributed.make_mesh(TINY.run.num_devices)
    cfg = config_lib.apply_overrides(TINY, ["run.device_memory_gib=1.0"])
    train.check_memory(train.make_stages(cfg, mesh), cfg)


def test_the_report_prints_each_stages_bytes_as_a_table_and_a_json_line(tmp_path, capsys):
    config_file = tmp_path / "tiny.py"
    config_file.write_text(
        "from msjax.run import config\n\ndef get_config():\n"
        f"    return config.from_dict({config_lib.to_dict(TINY)!r})\n"
    )
    assert memory_cli.main([str(config_file), "--updates", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("compiling each stage's chunk: 1/1 stages,")  # progress, off a terminal
    lines = captured.out.strip().splitlines()
    assert lines[0].startswith("stage") and lines[1].startswith("ppo")
    report = json.loads(lines[-1])
    (ppo_figures,) = report["stages"]
    assert ppo_figures["stage"] == "ppo" and ppo_figures["temp_bytes"] > 0
    assert ppo_figures["total_bytes"] == sum(ppo_figures[k] for k in ("argument_bytes", "output_bytes", "temp_bytes"))
