"""The buffer of searched states (``selfplay_buffer``): what it keeps, in which slots, and what
a draw returns (that its empty slots weigh nothing in the loss: ``test_selfplay``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msjax.stages.selfplay_buffer import add_states, draw, empty_buffer
from msjax.stages.selfplay_targets import SearchTargets

NUM_ACTIONS = 8  # a fake 2x2 board: 4 reveals, 4 flags


def states(ids, searched, valid=None):
    """``SearchTargets`` of ``len(ids)`` states, each marked by its id (its outcome and the
    first entry of its observation), searched where ``searched`` says."""
    ids = jnp.asarray(ids, jnp.float32)
    num = ids.shape[0]
    return SearchTargets(
        obs=jnp.broadcast_to(ids[:, None, None, None], (num, 3, 2, 2)),
        action_mask=jnp.ones((num, NUM_ACTIONS), bool),
        action=jnp.zeros(num, jnp.int32),
        action_weights=jnp.full((num, NUM_ACTIONS), 0.125),
        searched=jnp.asarray(searched, bool),
        outcome=ids,
        mine_mask=jnp.zeros((num, 2, 2), bool),
        mine_label_mask=jnp.ones((num, 2, 2), bool),
        valid=jnp.ones(num, bool) if valid is None else jnp.asarray(valid, bool),
    )


def add(buffer, ids, keep, valid=None):
    """``buffer`` after ``add_states`` of the states ``ids`` that ``keep`` marks (none of them
    searched: the buffer keeps what it is told to)."""
    return add_states(buffer, states(ids, [False] * len(ids), valid), jnp.array(keep))


def held(buffer):
    """The ids in the buffer's slots (0 for an empty slot) and its count and next slot."""
    return np.asarray(buffer.states.outcome).tolist(), int(buffer.count), int(buffer.next_slot)


def test_the_buffer_keeps_the_states_it_is_given_in_order_and_writes_over_the_oldest():
    buffer = empty_buffer(4, states([0], [False]))
    assert held(buffer) == ([0, 0, 0, 0], 0, 0)
    assert not np.asarray(buffer.states.valid).any()
    buffer = add(buffer, [1, 2, 3, 4], [True, False, True, False])
    assert held(buffer) == ([1, 3, 0, 0], 2, 2)
    buffer = add(buffer, [5, 6, 7], [True, True, True])
    assert held(buffer) == ([7, 3, 5, 6], 4, 1)  # 7 over 1, the oldest
    np.testing.assert_array_equal(buffer.states.valid, [True] * 4)
    buffer = add(buffer, [8, 9], [True, True], valid=[False, True])  # 8 is no state
    assert held(buffer) == ([7, 9, 5, 6], 4, 2)


def test_a_rollout_with_more_states_to_keep_than_slots_leaves_its_last():
    buffer = add(empty_buffer(3, states([0], [False])), [1, 2], [True, True])
    buffer = add(buffer, [3, 4, 5, 6, 7], [True, True, False, True, True])
    outcome, count, next_slot = held(buffer)
    assert sorted(outcome) == [4, 6, 7] and count == 3
    assert outcome[(next_slot - 1) % 3] == 7  # the newest sits just before the next slot


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=9), min_size=1, max_size=6), st.integers(1, 7))
def test_the_buffer_holds_the_last_states_kept_of_all_rollouts(rollouts, capacity):
    buffer = empty_buffer(capacity, states([0], [False]))
    every, next_id = [], 1
    for searched in rollouts:
        ids = list(range(next_id, next_id + len(searched)))
        next_id += len(searched)
        buffer = add(buffer, ids, searched)
        every += [i for i, s in zip(ids, searched) if s]
    outcome, count, next_slot = held(buffer)
    assert count == min(len(every), capacity)
    newest_first = [outcome[(next_slot - 1 - k) % capacity] for k in range(count)]
    assert newest_first == every[::-1][:count]


def test_a_draw_returns_filled_slots_only_and_an_empty_buffer_none():
    empty = empty_buffer(16, states([0], [False]))
    drawn = draw(empty, jax.random.key(0), 8)
    assert drawn.obs.shape == (8, 3, 2, 2) and not np.asarray(drawn.valid).any()
    buffer = add(empty, [3, 5, 9], [True, True, True])
    drawn = draw(buffer, jax.random.key(1), 200)
    assert set(np.asarray(drawn.outcome).tolist()) == {3.0, 5.0, 9.0}  # every filled slot, no empty one
    assert np.asarray(drawn.valid).all()
    np.testing.assert_array_equal(drawn.obs[:, 0, 0, 0], drawn.outcome)  # each state drawn whole


def test_a_buffer_needs_a_slot():
    with pytest.raises(ValueError, match=r"capacity=0 must be an int >= 1"):
        empty_buffer(0, states([0], [False]))
