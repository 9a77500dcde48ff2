"""Experiment configs: files, command-line overrides, validation and the JSON round trip."""

import dataclasses
from pathlib import Path

import pytest

from msjax.run import config as config_lib
from msjax.run.config import ExperimentConfig, RunConfig, apply_overrides, load_config
from msjax.cli.train import parse_args
from msjax.stages import run_stages
from msjax.stages.ppo import PPOConfig

CONFIG_FILES = sorted((Path(__file__).resolve().parent.parent / "configs").glob("*.py"))
BASE = ExperimentConfig()


def test_overrides_are_parsed_to_each_fields_type():
    cfg = apply_overrides(
        BASE,
        [
            "ppo.lr=1e-4",
            "ppo.num_envs=64",
            "ppo.anneal_lr=false",
            "run.workdir=runs/try",
            "model.channels=(16,32)",
            "env.density_band=(0.1, 0.2)",
        ],
    )
    assert cfg.ppo.lr == 1e-4 and isinstance(cfg.ppo.lr, float)
    assert cfg.ppo.num_envs == 64 and cfg.ppo.anneal_lr is False
    assert cfg.run.workdir == "runs/try"
    assert cfg.model.channels == (16, 32)
    assert cfg.env.density_band == (0.1, 0.2)
    assert apply_overrides(cfg, ["env.density_band=None"]).env.density_band is None


def test_tuples_may_be_written_without_brackets_and_floats_as_integers():
    cfg = apply_overrides(BASE, ["model.channels=8,16", "ppo.lr=1"])
    assert cfg.model.channels == (8, 16)
    assert cfg.ppo.lr == 1.0 and isinstance(cfg.ppo.lr, float)


def test_fields_that_constrain_each_other_can_change_together():
    cfg = apply_overrides(BASE, ["env.H=4", "env.W=4", "env.mine_count=3"])
    assert (cfg.env.H, cfg.env.W, cfg.env.mine_count) == (4, 4, 3)


def test_the_last_override_of_a_field_wins():
    assert apply_overrides(BASE, ["ppo.lr=0.1", "ppo.lr=0.2"]).ppo.lr == 0.2


def test_an_unknown_key_lists_the_valid_keys_of_its_section():
    with pytest.raises(ValueError, match=r"unknown config key 'ppo\.learning_rate'") as err:
        apply_overrides(BASE, ["ppo.learning_rate=1e-4"])
    for field in dataclasses.fields(BASE.ppo):
        assert f"ppo.{field.name}" in str(err.value)


def test_an_unknown_section_lists_the_sections():
    with pytest.raises(ValueError, match="sections are") as err:
        apply_overrides(BASE, ["optim.lr=1"])
    assert all(name in str(err.value) for name in ("env", "model", "ppo", "imitation", "run"))


@pytest.mark.parametrize(
    "override, expected",
    [
        ("ppo.num_envs=1.5", "expected int"),
        ("env.H=big", "expected int"),
        ("run.tensorboard=maybe", "expected bool"),
        ("ppo.lr=fast", "expected float"),
        ("model.channels=(8,x)", "expected"),
        ("env.density_band=(0.1,0.2,0.3)", "expected"),
    ],
)
def test_a_value_of_the_wrong_type_is_rejected_with_the_expected_type(override, expected):
    with pytest.raises(ValueError, match=expected) as err:
        apply_overrides(BASE, [override])
    assert override.split("=")[0] in str(err.value)


def test_an_override_without_a_value_is_rejected():
    with pytest.raises(ValueError, match="section.field=value"):
        apply_overrides(BASE, ["ppo.lr"])


@pytest.mark.parametrize(
    "override, field",
    [
        ("env.mine_count=100", "EnvConfig.mine_count"),
        ("ppo.mini_batches=7", "PPOConfig.mini_batches"),
        ("ppo.gamma=1.5", "PPOConfig.gamma"),
        ("model.channels=(6,)", "ModelConfig.channels"),
        ("run.chunk_updates=0", "RunConfig.chunk_updates"),
        ("run.eval_episodes=-1", "RunConfig.eval_episodes"),
    ],
)
def test_values_a_section_rejects_fail_with_a_message_naming_the_field(override, field):
    with pytest.raises(ValueError, match=field):
        apply_overrides(BASE, [override])


def test_run_config_rejects_bad_values_naming_the_field():
    with pytest.raises(ValueError, match=r"RunConfig\.keep_checkpoints=0 must be an int >= 1"):
        RunConfig(keep_checkpoints=0)
    with pytest.raises(ValueError, match=r"RunConfig\.workdir"):
        RunConfig(workdir="")


def test_a_run_without_ppo_needs_the_imitation_stage_and_no_curriculum():
    assert [stage.name for stage in run_stages(apply_overrides(BASE, ["ppo.enabled=false", "imitation.enabled=true"]))] == [
        "imitation"
    ]
    with pytest.raises(ValueError, match=r"ppo\.enabled=False needs imitation\.enabled=True"):
        apply_overrides(BASE, ["ppo.enabled=false", "imitation.enabled=false"])
    curriculum = ["env.H=4", "env.W=5", "env.boards=((4,4,2,2),(4,5,2,4))", "curriculum.enabled=true",
                  "curriculum.promote_at=0.4"]
    with pytest.raises(ValueError, match=r"ppo\.enabled=False with curriculum\.enabled=True"):
        apply_overrides(BASE, curriculum + ["imitation.enabled=true", "ppo.enabled=false"])
    with pytest.raises(ValueError, match=r"PPOConfig\.enabled=1 must be a bool"):
        PPOConfig(enabled=1)


def test_carried_beliefs_need_a_run_whose_stages_carry_them():
    imitation_only = ["ppo.enabled=false", "imitation.enabled=true", "imitation.steps_per_update=1",
                      "imitation.learner_fraction=0.5"]
    assert apply_overrides(BASE, imitation_only + ["model.carry_beliefs=true"]).model.carry_beliefs
    with pytest.raises(ValueError, match=r"model\.carry_beliefs=True needs ppo\.enabled=False"):
        apply_overrides(BASE, ["imitation.enabled=true", "model.carry_beliefs=true"])
    with pytest.raises(ValueError, match=r"model\.carry_beliefs=True needs imitation\.forward_is_shared"):
        apply_overrides(BASE, imitation_only + ["imitation.steps_per_update=2", "model.carry_beliefs=true"])
    with pytest.raises(ValueError, match=r"model\.carry_beliefs=True needs imitation\.random_first_click_share=0"):
        apply_overrides(BASE, imitation_only + ["imitation.random_first_click_share=0.5", "model.carry_beliefs=true"])


def test_an_experiment_config_checks_the_type_of_each_section():
    with pytest.raises(ValueError, match=r"ExperimentConfig\.ppo must be a PPOConfig"):
        ExperimentConfig(ppo=BASE.model)


def test_a_config_round_trips_through_json(tmp_path):
    cfg = apply_overrides(BASE, ["env.density_band=(0.1,0.2)", "model.channels=(8,16)", "run.seed=7"])
    config_lib.save_json(cfg, tmp_path / "config.json")
    assert config_lib.load_json(tmp_path / "config.json") == cfg


def test_from_dict_rejects_keys_it_does_not_know():
    data = config_lib.to_dict(BASE)
    data["ppo"]["learning_rate"] = 1.0
    with pytest.raises(ValueError, match="learning_rate"):
        config_lib.from_dict(data)


def test_a_saved_config_with_a_retired_field_at_its_former_default_still_loads():
    # A run saved before imitation.pass_mine_weight was removed holds it at 0.0: the same run.
    data = config_lib.to_dict(BASE)
    data["imitation"]["pass_mine_weight"] = 0.0
    assert config_lib.from_dict(data) == BASE
    data["imitation"]["pass_mine_weight"] = 0.1  # a run that used it cannot be reproduced now
    with pytest.raises(ValueError, match=r"imitation.pass_mine_weight=0.1: this msjax no longer has this setting"):
        config_lib.from_dict(data)


def test_a_saved_config_with_a_field_s_old_name_loads_under_its_new_name():
    # Runs saved before PPO's fields took the stages' shared names.
    data = config_lib.to_dict(BASE)
    data["ppo"]["total_updates"] = data["ppo"].pop("num_updates") + 1
    data["ppo"]["steps_per_env"] = data["ppo"].pop("steps_per_update")
    assert config_lib.from_dict(data) == dataclasses.replace(BASE, ppo=dataclasses.replace(BASE.ppo, num_updates=BASE.ppo.num_updates + 1))
    data["ppo"]["num_updates"] = 7
    with pytest.raises(ValueError, match=r"ppo.total_updates and ppo.num_updates are one setting"):
        config_lib.from_dict(data)


def test_differences_name_each_changed_field():
    changed = apply_overrides(BASE, ["env.H=9", "ppo.lr=0.1"])
    assert config_lib.differences(BASE, changed) == ["env.H: 8 -> 9", "ppo.lr: 0.0003 -> 0.1"]


def test_the_config_files_exist():
    assert {path.stem for path in CONFIG_FILES} >= {"small", "beginner", "intermediate", "expert"}


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.stem)
def test_every_config_file_loads_into_a_valid_experiment(path):
    cfg = load_config(path)
    assert isinstance(cfg, ExperimentConfig)
    assert cfg.run.workdir == f"runs/{path.stem}"


def test_the_shipped_configs_play_the_boards_they_are_named_for():
    boards = {name: load_config(name).env for name in ("small", "beginner", "intermediate", "expert")}
    sizes = {name: (env.H, env.W, env.mine_count) for name, env in boards.items()}
    assert sizes == {
        "small": (8, 8, 10),
        "beginner": (8, 8, 10),
        "intermediate": (16, 16, 40),
        "expert": (16, 30, 99),
    }


@pytest.mark.parametrize(
    "stage, start",
    [
        ("intermediate_cpu", "small_recycled"),
        ("dense_cpu", "intermediate_cpu"),
        ("expert_cpu", "intermediate_cpu"),
    ],
)
def test_each_cpu_chain_stage_starts_from_the_run_of_the_config_before_it(stage, start):
    stage_cfg, start_cfg = load_config(stage), load_config(start)
    assert stage_cfg.run.init_from == start_cfg.run.workdir
    assert stage_cfg.model == start_cfg.model  # the same weights load: the network is the same


def test_a_config_file_must_define_get_config(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    with pytest.raises(ValueError, match="get_config"):
        load_config(path)
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.py")


def test_a_config_file_with_a_syntax_error_is_one_error_naming_file_and_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def get_config():\n    return (\n")
    with pytest.raises(ValueError, match=r"broken\.py' line \d+: "):
        load_config(path)


def test_command_line_overrides_take_both_spellings():
    args = parse_args(["--config", "small", "--config.ppo.lr=1e-4", "--config.env.H", "9"])
    assert args.overrides == ["ppo.lr=1e-4", "env.H=9"]


def test_the_command_line_rejects_unknown_flags():
    with pytest.raises(SystemExit):
        parse_args(["--config", "small", "--learning-rate", "3"])
