"""The shipped agents' files: one folder per agent inside the package, read by name.

A shipped agent is the folder ``msjax/shipped/NAME/`` (``NAME`` a standard board's name:
beginner, intermediate, expert) holding three files: ``params.msgpack``, the network's
parameters (``flax.serialization.to_bytes`` of a nested dict of arrays), ``config.json``,
the training run's full config (``config.to_dict``), and ``card.json``, what the agent is:
its win rate with interval and games, the chain of runs that trained it, their compute and
date (``msjax.shipped.from_run.card_of_run``), and under ``files`` the SHA-256 digest and
size of the other two. A load recomputes the digests and refuses a file that differs, so
a damaged or hand-replaced file never plays as if it were the agent the card describes.

``MSJAX_SHIPPED_AGENTS`` names another folder of shipped agents (the tests' temporary ones).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np

from msjax import agent as agent_lib
from msjax.run import config as config_lib
from msjax.run import files as runfiles
from msjax.env import STANDARD_BOARDS

SHIPPED_DIR_VARIABLE = "MSJAX_SHIPPED_AGENTS"
"""The environment variable that names another folder of shipped agents."""
PACKAGE_DIR = Path(__file__).resolve().parent
PARAMS_FILE, CONFIG_FILE, CARD_FILE = "params.msgpack", "config.json", "card.json"
SHIP_COMMAND = "python -m msjax ship runs/NAME --name {name}"


class ShippedAgentError(ValueError):
    """A shipped agent that is not there, or whose files differ from its card."""


def shipped_dir() -> Path:
    """The folder of shipped agents: ``$MSJAX_SHIPPED_AGENTS`` when set, else the package's."""
    override = os.environ.get(SHIPPED_DIR_VARIABLE)
    return Path(override) if override else PACKAGE_DIR


def shipped_names(directory: str | Path | None = None) -> list[str]:
    """The names of the agents shipped in ``directory`` (default ``shipped_dir()``), sorted."""
    directory = Path(directory) if directory is not None else shipped_dir()
    if not directory.is_dir():
        return []
    return sorted(folder.name for folder in directory.iterdir() if (folder / CARD_FILE).is_file())


def is_agent_name(text: Any, directory: str | Path | None = None) -> bool:
    """Whether ``text`` names a shipped agent rather than a run directory: a string with no
    path separator that is a standard board's name (shipped or not yet) or a shipped
    agent's name. ``./beginner`` is always a path."""
    if not isinstance(text, str) or os.sep in text or "/" in text:
        return False
    return text in STANDARD_BOARDS or text in shipped_names(directory)


def check_name(name: str) -> str:
    """``name`` if it can name a shipped agent (its folder's name): lower-case letters,
    digits, ``-`` and ``_``; a ``ShippedAgentError`` otherwise."""
    if not name or not all(c.islower() or c.isdigit() or c in "-_" for c in name) or not name[0].isalpha():
        raise ShippedAgentError(
            f"name={name!r} must start with a letter and hold only lower-case letters, digits, - and _ "
            f"(the standard ones: {', '.join(STANDARD_BOARDS)})"
        )
    return name


def not_shipped_message(name: str, directory: Path) -> str:
    """One line: ``name`` is not shipped, which are, and how to ship one."""
    shipped = shipped_names(directory)
    listed = ", ".join(shipped) if shipped else "none"
    return (
        f"no shipped agent {name!r} in {directory} (shipped: {listed}); train one and ship it with "
        f"`{SHIP_COMMAND.format(name=name)}`, or pass a run directory"
    )


def file_digest(path: Path) -> str:
    """The SHA-256 digest of ``path``'s bytes, as hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- writing


def params_bytes(params: Any) -> bytes:
    """``params`` (a pytree of arrays, on any device) as msgpack bytes, arrays on the host."""
    host = jax.tree.map(np.asarray, jax.device_get(params))
    return flax.serialization.to_bytes(host)


def read_params(path: str | Path) -> Any:
    """The parameters ``params_bytes`` wrote to the file ``path``, as JAX arrays (no digest check)."""
    return jax.tree.map(jnp.asarray, flax.serialization.msgpack_restore(Path(path).read_bytes()))


def write(name: str, params: Any, cfg: config_lib.ExperimentConfig, card: dict[str, Any],
          directory: str | Path | None = None) -> Path:
    """Writes the shipped agent ``name`` into ``directory`` (default ``shipped_dir()``),
    replacing any agent of that name whole (files written beside it, then renamed in);
    ``card`` gains ``name`` and the ``files``' digests and sizes. Returns its folder."""
    directory = Path(directory) if directory is not None else shipped_dir()
    target = directory / check_name(name)
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory, prefix=f".{name}."))
    try:
        (staging / PARAMS_FILE).write_bytes(params_bytes(params))
        config_lib.save_json(cfg, staging / CONFIG_FILE)
        files = {
            file: {"sha256": file_digest(staging / file), "bytes": (staging / file).stat().st_size}
            for file in (PARAMS_FILE, CONFIG_FILE)
        }
        runfiles.write_json_atomic(staging / CARD_FILE, {"name": name, **card, "files": files})
        staging.chmod(0o755)
        if target.exists():
            retired = Path(tempfile.mkdtemp(dir=directory, prefix=f".{name}.old."))
            target.rename(retired / name)
            staging.rename(target)
            shutil.rmtree(retired)
        else:
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


# ----------------------------------------------------------------------------- reading


def folder_of(name: str, directory: str | Path | None = None) -> Path:
    """The folder of shipped agent ``name``; ``ShippedAgentError`` (naming those shipped and
    the ship command) when there is none."""
    directory = Path(directory) if directory is not None else shipped_dir()
    if name not in shipped_names(directory):
        raise ShippedAgentError(not_shipped_message(name, directory))
    return directory / name


def card(name: str, directory: str | Path | None = None) -> dict[str, Any]:
    """The card of shipped agent ``name`` (``card.json``)."""
    return runfiles.read_json(folder_of(name, directory) / CARD_FILE)


def check_files(folder: Path, card_data: dict[str, Any]) -> None:
    """Raises ``ShippedAgentError`` naming the first file of ``folder`` that is missing or
    whose SHA-256 digest differs from the card's."""
    listed = card_data.get("files")
    if not isinstance(listed, dict) or set(listed) != {PARAMS_FILE, CONFIG_FILE}:
        raise ShippedAgentError(f"{folder / CARD_FILE} lists no digests of {PARAMS_FILE} and {CONFIG_FILE}")
    for file, recorded in sorted(listed.items()):
        path = folder / file
        if not path.is_file():
            raise ShippedAgentError(f"shipped agent {folder.name!r}: {path} is missing")
        digest = file_digest(path)
        if digest != recorded.get("sha256"):
            raise ShippedAgentError(
                f"shipped agent {folder.name!r}: {path} has SHA-256 {digest[:16]}..., its card records "
                f"{str(recorded.get('sha256'))[:16]}...: the file is damaged or was replaced by hand "
                f"(reinstall msjax, or ship it again with `{SHIP_COMMAND.format(name=folder.name)}`)"
            )


def read(name: str, directory: str | Path | None = None) -> tuple[Any, config_lib.ExperimentConfig, dict[str, Any]]:
    """``(params, config, card)`` of shipped agent ``name``, its files checked against the
    card's digests first.

    Raises:
      ShippedAgentError: not shipped (the message lists those that are and the ship
        command), or a file missing or differing from its digest.
    """
    folder = folder_of(name, directory)
    card_data = runfiles.read_json(folder / CARD_FILE)
    check_files(folder, card_data)
    try:
        cfg = config_lib.load_json(folder / CONFIG_FILE)
    except (ValueError, TypeError) as err:
        raise ShippedAgentError(f"shipped agent {name!r}: {folder / CONFIG_FILE} is a config this msjax cannot use: {err}") from err
    return read_params(folder / PARAMS_FILE), cfg, card_data


def load(name: str, directory: str | Path | None = None, greedy: bool = True) -> agent_lib.Agent:
    """The shipped agent ``name`` (``read``'s checks first), playing its training board.

    Args:
      name: a shipped agent's name: ``beginner``, ``intermediate`` or ``expert``.
      directory: the folder of shipped agents (default ``shipped_dir()``).
      greedy: play the most likely action; ``False`` samples from the policy.
    """
    params, cfg, _ = read(name, directory)
    return agent_lib.from_params(params, cfg, greedy).replace(config=cfg)


def describe(card_data: dict[str, Any]) -> str:
    """One line of a card: name, board, win rate with interval and games."""
    low, high = card_data["win_rate_ci95"]
    return (
        f"{card_data['name']}: {card_data['board']}, wins {100 * card_data['win_rate']:.2f}% "
        f"[{100 * low:.2f}, {100 * high:.2f}] of {card_data['games']} games"
    )
