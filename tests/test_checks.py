"""msjax.checks: one style of range check for config fields and arguments, type-aware."""

import pytest

from msjax import checks, models
from msjax.env import config as env_config
from msjax.run import config as run_config
from msjax.stages import curriculum, imitation_config, ppo_config, spec
from msjax.stages.ppo_config import PPOConfig


def test_a_value_shows_as_python_writes_it_so_a_string_is_quoted():
    with pytest.raises(ValueError, match=r"^SolverConfig\.max_layer='4' must be an int in \{1, 2, 3, 4\}$"):
        checks.check_value("SolverConfig", "max_layer", "4", checks.int_in(1, 2, 3, 4))


@pytest.mark.parametrize("allowed, value", [
    (checks.ints(0), True),  # a bool is no int
    (checks.ints(0), 2.0),
    (checks.numbers(0, 1), False),  # nor a number
    (checks.numbers(0, 1), "0.5"),
    (checks.one_of("bp", "exact"), b"bp"),
    (checks.BOOL, 1),
    (checks.tuple_of(checks.ints()), [1, 2]),  # a list is no tuple
    (checks.tuple_of(checks.ints()), (1, 2.0)),
    (checks.tuple_of(checks.ints(), non_empty=True), ()),
])
def test_the_checks_look_at_the_type_before_the_range(allowed, value):
    assert not allowed.test(value)


def test_the_ranges_say_their_bounds():
    assert str(checks.ints(1)) == "an int >= 1" and str(checks.ints(2, 32_767)) == "an int in [2, 32767]"
    assert str(checks.numbers(0, 1, low_open=True)) == "a number in (0, 1]"
    assert str(checks.numbers(0, low_open=True)) == "a number > 0"
    assert str(checks.optional(checks.ints(1))) == "None or an int >= 1"
    assert str(checks.ints(0).noted("0: off")) == "an int >= 0 (0: off)"
    assert str(checks.tuple_of(checks.ints(1), non_empty=True)) == "a non-empty tuple, each item an int >= 1"


def test_a_stage_config_field_that_is_no_number_is_named():
    # the stage configs' check compared a string with a float: a TypeError naming nothing
    with pytest.raises(ValueError, match=r"^PPOConfig\.lr='3e-4' must be > 0$"):
        PPOConfig(lr="3e-4")


def test_every_config_checks_its_fields_with_the_one_helper():
    for module in (spec, ppo_config, imitation_config, curriculum, models, env_config, run_config):
        assert module.check_fields is checks.check_fields, module.__name__
