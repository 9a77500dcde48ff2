"""Runs in a subprocess with 4 simulated CPU devices for ``test_distributed.py`` (the
test process itself keeps its one device); prints one JSON object.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python tests/distributed_worker.py WORKDIR

What it records, on the tiny config (4x4 boards, 16 boards, a one-layer network; PPO in
micro-batches of 8):
PPO's first chunk (2 updates, built as the runner builds it) on 1 and on 4 devices from
the same seed; the imitation stage's chunk likewise; each device count's fresh state
saved and restored on the other count, then trained with the other count's compiled
chunk; and the errors of a batch that does not split over the devices.
"""

import json
import sys
from pathlib import Path

import jax
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
from msjax.run import checkpoint as checkpoint_lib  # noqa: E402
from msjax.run import config as config_lib  # noqa: E402
from msjax import distributed  # noqa: E402
from msjax.run import loop as train  # noqa: E402
from msjax.stages import ppo  # noqa: E402
from tiny_runs import TINY  # noqa: E402

DEVICE_COUNTS = (1, 4)
# micro-batches of 8 of the 16 games: the rollout's forward passes and the gradient steps
# take them strided across the devices
CFG = config_lib.apply_overrides(TINY, ["ppo.num_updates=2", "run.chunk_updates=2", "ppo.microbatch_size=8"])
IMITATION = config_lib.apply_overrides(
    CFG,
    [
        "imitation.enabled=true",
        "imitation.num_envs=16",
        "imitation.steps_per_update=2",
        "imitation.num_updates=2",
        "imitation.label_max_layer=1",
        "imitation.play_max_layer=1",
    ],
)


def as_lists(tree):
    """JSON-ready copy of a pytree of (replicated or fully addressable) arrays."""
    return jax.tree.map(lambda x: np.asarray(x).tolist(), distributed.host_value(tree))


def leaves(state):
    """Every leaf of a state as nested lists, keys as their raw data."""
    return [np.asarray(x).tolist() for x in jax.tree.leaves(distributed.host_value(checkpoint_lib.keys_to_data(state)))]


def sharding_of(state):
    return {
        "boards_devices": len(state.env_states.done.sharding.device_set),
        "boards_replicated": state.env_states.done.sharding.is_fully_replicated,
        "params_replicated": all(leaf.sharding.is_fully_replicated for leaf in jax.tree.leaves(state.params)),
    }


def error_of(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return None


def main(workdir: Path) -> dict:
    meshes = {n: distributed.make_mesh(n) for n in DEVICE_COUNTS}
    out = {"devices": jax.device_count()}

    # PPO: the runner's own stage objects, so the 2-process test can compare with them.
    stages = {n: train.make_stages(CFG, meshes[n])[-1] for n in DEVICE_COUNTS}
    fresh = {n: stages[n].init(None) for n in DEVICE_COUNTS}
    out["fresh_states_equal"] = leaves(fresh[1]) == leaves(fresh[4])
    out["sharding"] = sharding_of(fresh[4])
    for n in DEVICE_COUNTS:
        checkpoints = checkpoint_lib.Checkpoints(workdir / f"saved_on_{n}")
        checkpoints.save(0, fresh[n], stage="ppo", update=0, cfg=CFG)
        checkpoints.close()
    chunks = {n: stages[n].make_chunk(2) for n in DEVICE_COUNTS}
    trained = {n: chunks[n](fresh[n]) for n in DEVICE_COUNTS}
    out["ppo"] = {n: {"params": as_lists(s.params), "metrics": as_lists(m)} for n, (s, m) in trained.items()}

    # Checkpoints across device counts: restore on the other count, train there.
    template = ppo.STAGE.abstract_state(CFG)
    out["restored"] = {}
    for saved_on, restored_on in ((4, 1), (1, 4)):
        checkpoints = checkpoint_lib.Checkpoints(workdir / f"saved_on_{saved_on}", read_only=True)
        shardings = distributed.state_shardings(template, meshes[restored_on])
        state = checkpoints.restore(0, template, shardings)
        checkpoints.close()
        record = {"sharding": sharding_of(state)}
        state, metrics = chunks[restored_on](state)
        record["params"], record["metrics"] = as_lists(state.params), as_lists(metrics)
        out["restored"][f"{saved_on}->{restored_on}"] = record

    # Imitation: the same comparison.
    out["imitation"] = {}
    for n in DEVICE_COUNTS:
        stage = train.make_stages(IMITATION, meshes[n])[0]
        state, metrics = stage.make_chunk(2)(stage.init(None))
        out["imitation"][n] = {"params": as_lists(state.params), "metrics": as_lists(metrics)}

    # Batches that do not split over 4 devices.
    uneven = config_lib.apply_overrides(CFG, ["ppo.microbatch_size=0", "ppo.num_envs=18"])
    uneven_il = config_lib.apply_overrides(IMITATION, ["imitation.num_envs=6"])
    out["errors"] = {
        "make_stages_ppo": error_of(lambda: train.make_stages(uneven, meshes[4])),
        "make_stages_imitation": error_of(lambda: train.make_stages(uneven_il, meshes[4])),
        "jit_chunk": error_of(
            lambda: distributed.jit_chunk(
                ppo.ppo_chunk_fn(uneven.env, uneven.model, uneven.ppo, 1),
                jax.eval_shape(lambda k: ppo.init_ppo_state(k, uneven.env, uneven.model, uneven.ppo), jax.random.key(0)),
                meshes[4],
                "ppo.num_envs",
            )
        ),
        "too_many_devices": error_of(lambda: distributed.make_mesh(5)),
    }
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
