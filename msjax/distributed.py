"""Data parallelism over every device and host, with JAX's own distributed runtime.

A run's devices form a one-axis ``Mesh`` (axis ``"data"``) over ``jax.devices()``: the
local devices of one process, or, after ``initialize``, the devices of every process.
Training states are placed on it with the boards in play (``env_states``) split along
their batch axis and everything else (parameters, optimizer state, PRNG key, counters)
replicated. The training chunks are ordinary ``jax.jit`` programs over these global
arrays: XLA's SPMD partitioner runs the per-board work (observations, the network,
sampling, GAE, the loss) on each device's boards and inserts the all-reduce that averages
the gradients over the global minibatch. The game step itself, whose batch-level
gating (``lax.cond`` / ``while_loop`` over ``jnp.any`` of the batch, gathers of pending
boards) would need cross-device traffic every step, runs under ``shard_map`` on each
device's own boards (``per_device``), which gives the same boards as the global step.

Because the program is the same global program on any mesh, random numbers are drawn
for global shapes (threefry is partitionable), so every board's stream, and the whole
training curve, is the same on 1 and on N devices up to floating-point reduction order.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"


# ----------------------------------------------------------------------------- processes


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    timeout_s: float = 300.0,
) -> bool:
    """Joins a multi-process run through ``jax.distributed.initialize``; call before any
    other JAX work. Returns whether it did.

    Either all three arguments are given, or ``coordinator="auto"`` alone lets JAX find
    the cluster (Slurm, Open MPI, Kubernetes, Cloud TPU), as does calling with none while
    ``JAX_COORDINATOR_ADDRESS`` is set; with none and no such variable it does nothing.
    On the CPU backend the cross-process collectives are gloo's.

    Args:
      coordinator: ``HOST:PORT`` of process 0's coordinator service, or ``"auto"``.
      num_processes: processes in the run, >= 1.
      process_id: this process's index in ``[0, num_processes)``.
      timeout_s: how long to wait for the other processes. A process that is not the
        coordinator says at once whom it waits for; one still waiting after ``timeout_s``
        prints a one-line error and exits with status 1 (JAX's own timeout aborts the
        process with a C++ stack trace, so it is set later than ours).
    """
    given = (coordinator, num_processes, process_id)
    if coordinator == "auto" and num_processes is None and process_id is None:
        coordinator = None
    elif all(value is None for value in given):
        if not os.environ.get("JAX_COORDINATOR_ADDRESS"):
            return False
    elif any(value is None for value in given):
        raise ValueError(
            "--coordinator, --num-processes and --process-id go together (or --coordinator auto "
            f"alone); got coordinator={coordinator!r}, num_processes={num_processes!r}, "
            f"process_id={process_id!r}"
        )
    else:
        if num_processes < 1:
            raise ValueError(f"num_processes={num_processes} must be >= 1")
        if not 0 <= process_id < num_processes:
            raise ValueError(f"process_id={process_id} must be in [0, {num_processes})")
    # Only read by the CPU client; GPU and TPU collectives are NCCL's / ICI's.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    where = coordinator or "the address the cluster gives"
    if process_id:
        print(f"waiting for the coordinator at {where}, process {process_id} of {num_processes}", flush=True)
    watchdog = threading.Timer(timeout_s, _give_up_waiting, (where, timeout_s))
    watchdog.daemon = True
    watchdog.start()
    try:
        jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=num_processes,
            process_id=process_id,
            initialization_timeout=int(timeout_s) + 30,
        )
    finally:
        watchdog.cancel()
    return True


def _give_up_waiting(where: str, timeout_s: float) -> None:
    """Ends a process whose ``jax.distributed.initialize`` never returned (it blocks in C++,
    so only exiting the whole process ends it)."""
    print(
        f"error: no multi-process run formed at {where} within {timeout_s:g} s; start process 0 "
        "(the coordinator) and the others with the same --coordinator and --num-processes, or "
        "check the address and firewall",
        file=sys.stderr,
        flush=True,
    )
    os._exit(1)


def any_process(flag: bool) -> bool:
    """Whether ``flag`` is true on any process of the run. In a multi-process run this is
    a collective: every process must call it at the same point."""
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.asarray(flag, np.int32))))


def device_name() -> str:
    """``platform:kind`` of the first device, as benchmarks record it (``gpu:NVIDIA H100 80GB
    HBM3``, ``cpu:cpu``)."""
    device = jax.devices()[0]
    return f"{device.platform}:{device.device_kind}"


def is_main_process() -> bool:
    """Process 0 logs, prints, and writes the run's files (all processes join checkpoints)."""
    return jax.process_index() == 0


# ----------------------------------------------------------------------------- meshes


def make_mesh(num_devices: int = 0) -> Mesh:
    """A one-axis ``("data",)`` mesh of the first ``num_devices`` devices (0 = all).

    With several processes the mesh must span every process's devices (``num_devices``
    0 or the global device count).
    """
    devices = jax.devices()
    if not isinstance(num_devices, int) or num_devices < 0:
        raise ValueError(f"run.num_devices={num_devices!r} must be an int >= 0 (0 = all devices)")
    if num_devices > len(devices):
        raise ValueError(
            f"run.num_devices={num_devices} but only {len(devices)} {devices[0].platform} device(s) "
            "are visible (0 = all of them)"
        )
    count = num_devices or len(devices)
    if jax.process_count() > 1 and count != len(devices):
        raise ValueError(
            f"run.num_devices={num_devices}: a {jax.process_count()}-process run uses all "
            f"{len(devices)} devices (set run.num_devices=0)"
        )
    return Mesh(np.array(devices[:count]), (DATA_AXIS,))


def check_divides(name: str, value: int, mesh: Mesh) -> None:
    """Raises ``ValueError`` unless ``value`` (the config field ``name``) splits evenly
    over the mesh's devices."""
    count = mesh.size
    if value % count:
        raise ValueError(
            f"{name}={value} does not split evenly over {count} devices; use a multiple of "
            f"{count} or set run.num_devices to a divisor of {value}"
        )


def replicated(mesh: Mesh) -> NamedSharding:
    """Every device holds the whole array."""
    return NamedSharding(mesh, PartitionSpec())


def batch_sharded(mesh: Mesh) -> NamedSharding:
    """The leading (board) axis is split over the devices."""
    return NamedSharding(mesh, PartitionSpec(DATA_AXIS))


def state_shardings(state: Any, mesh: Mesh) -> Any:
    """A pytree like ``state`` (a ``PPOState`` or ``ImitationState``, concrete or
    abstract) of its leaves' shardings: ``env_states`` (and an ``ImitationState``'s carried
    ``beliefs``, one per game) batch-sharded, the rest replicated."""
    full = jax.tree.map(lambda _: replicated(mesh), state)
    per_game = {"env_states": jax.tree.map(lambda _: batch_sharded(mesh), state.env_states)}
    if getattr(state, "beliefs", None) is not None:
        per_game["beliefs"] = batch_sharded(mesh)
    return full.replace(**per_game)


def place(state: Any, mesh: Mesh) -> Any:
    """``state`` (a concrete ``PPOState`` or ``ImitationState``, the same value in every
    process) put on ``mesh`` as ``state_shardings`` says; each process fills only the
    shards of its own devices (``jax.device_put`` cannot target other processes' devices)."""

    def put(leaf: Any, sharding: NamedSharding) -> jax.Array:
        if isinstance(leaf, jax.Array) and leaf.sharding == sharding:
            return leaf
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            data = put(jax.random.key_data(leaf), sharding)
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(leaf))
        value = host_value(leaf)
        return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])

    return jax.tree.map(put, state, state_shardings(state, mesh))


def put_like(tree: Any, template: Any) -> Any:
    """``tree``'s values (the same in every process) as arrays placed like ``template``'s
    leaves (a new value for state already on a mesh, e.g. a curriculum promotion)."""

    def put(value: Any, like: Any) -> Any:
        if not isinstance(like, jax.Array):
            return value
        value = host_value(value)
        return jax.make_array_from_callback(value.shape, like.sharding, lambda index: value[index])

    return jax.tree.map(put, tree, template)


def constrain(tree: Any, spec: PartitionSpec) -> Any:
    """``tree``'s leaves constrained to ``spec`` inside a function traced for a mesh
    (``jit_chunk``); ``tree`` unchanged when traced for one device."""
    if jax.sharding.get_abstract_mesh().empty:
        return tree
    return jax.lax.with_sharding_constraint(tree, spec)


def constrain_to_games(tree: Any) -> Any:
    """``tree``'s leaves ``[K, B, ...]`` split over the devices along ``B`` (the games'
    axis of a stack of batches, e.g. micro-batches); see ``constrain``."""
    return constrain(tree, PartitionSpec(None, DATA_AXIS))


def per_device(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` of batched pytrees (every input and output leaf has the game axis first)
    run by each device on its own games (``shard_map``) when traced for a mesh
    (``jit_chunk``); ``fn`` itself when traced for one device. Right only for functions
    whose games do not interact, such as the env step: its batch-level gating
    (``lax.cond`` / ``while_loop`` over ``jnp.any`` of the batch) then stays on each
    device instead of needing cross-device traffic every step."""
    spec = PartitionSpec(DATA_AXIS)

    def on_each_device(*args):
        if jax.sharding.get_abstract_mesh().empty:
            return fn(*args)
        # check_vma=False: the env and solver build loop carries from constants (not
        # "varying" over devices), which the type check would reject; every output is per game.
        sharded = jax.shard_map(fn, in_specs=(spec,) * len(args), out_specs=spec, check_vma=False)
        return sharded(*args)

    return on_each_device


# ----------------------------------------------------------------------------- programs


def jit_chunk(
    chunk: Callable[[Any], tuple[Any, Any]],
    abstract_state: Any = None,
    mesh: Mesh | None = None,
    games_field: str = "num_envs",
) -> Callable[[Any], tuple[Any, Any]]:
    """``chunk`` (a stage's ``state -> (state, metrics)``, written for one device)
    compiled with its input state donated.

    With a ``mesh``, the program runs on the mesh: the state in and out sharded as
    ``state_shardings`` says (``abstract_state``, the state's shapes, fixes the tree),
    metrics replicated, and ``chunk`` traced with the mesh as the context mesh, so that
    its ``per_device`` and ``constrain`` parts split over the devices. The state passed
    in must already be placed so (``place``, or a checkpoint restored with
    ``state_shardings``). Either way the result has ``lower(state)`` (a concrete or
    abstract state) for XLA's ahead-of-time analysis, e.g. its memory.

    Raises:
      ValueError: the state's games (``env_states``, counted by the config field
        ``games_field``) do not split evenly over the mesh's devices.
    """
    if mesh is None:
        return jax.jit(chunk, donate_argnums=0)
    check_divides(games_field, int(abstract_state.env_states.done.shape[0]), mesh)
    shardings = state_shardings(abstract_state, mesh)
    compiled = jax.jit(
        chunk,
        in_shardings=(shardings,),
        out_shardings=(shardings, replicated(mesh)),
        donate_argnums=0,
    )

    def chunk_on_mesh(state: Any) -> tuple[Any, Any]:
        with jax.set_mesh(mesh):
            return compiled(state)

    def lower(state: Any) -> Any:
        # placed as a call's state is, so that the call reuses this compilation
        placed = jax.tree.map(
            lambda leaf, sharding: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding), state, shardings
        )
        with jax.set_mesh(mesh):
            return compiled.lower(placed)

    chunk_on_mesh.compiled = compiled  # the jitted program, for inspection (cache size, lowering)
    chunk_on_mesh.lower = lower
    return chunk_on_mesh


# ----------------------------------------------------------------------------- host values


def host_value(tree: Any) -> Any:
    """numpy copies of ``tree``'s leaves, read from this process's devices.

    Replicated leaves (parameters, counters, metrics) are read from the first local
    replica, which works in multi-process runs where a global array is not fully
    addressable; a batch-sharded leaf must be fully addressable (one process).
    """

    def read(leaf):
        if not isinstance(leaf, jax.Array) or leaf.is_fully_addressable:
            return np.asarray(jax.device_get(leaf))
        if not leaf.sharding.is_fully_replicated:
            raise ValueError("host_value reads replicated arrays only in a multi-process run")
        return np.asarray(leaf.addressable_data(0))

    return jax.tree.map(read, tree)
