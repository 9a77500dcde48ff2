"""A local web inspector: play in a browser, watch the agent or the solver, compare beliefs.

Usage::

    pip install -e '.[web]'
    python -m msjax serve [--agent RUN|NAME] [--board beginner|intermediate|expert|HxWxM]
                          [--host 127.0.0.1] [--port 8000] [--allow-host NAME ...]

Serves the page on the loopback address (``--host 0.0.0.0`` opens it to the network, with
a warning: the API has no authentication); it binds the address first and then prints
its URL (an address in use is one ``error:`` line). It answers only requests that name it
by a loopback name, its ``--host`` or an ``--allow-host`` name (so that no page of
another site can drive it through DNS rebinding). The page plays any board; ``--board``
is the one it starts with. With ``--agent`` (a run directory or one checkpoint, or the name
of an agent shipped with msjax: beginner, intermediate, expert; fixed for the server's
life: the browser cannot name files) the page can step the agent and show its mine head
and top moves, and names it by its run directory's (or shipped) name; the rule solver
and the exact probabilities are always there. The JSON API is described in
``msjax.web.app``.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import socket
import sys
from typing import Sequence


WEB_PACKAGES = ("fastapi", "uvicorn")
INSTALL_HINT = "msjax serve needs the web extra: pip install -e '.[web]' (fastapi and uvicorn)"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m msjax serve", description=__doc__.split("\n")[0])
    parser.add_argument("--agent", metavar="RUN|NAME",
                        help="the agent saved in runs/NAME (or one checkpoint), or a shipped agent: beginner, intermediate, expert")
    parser.add_argument("--board", default=None, help="board the page starts with: beginner (default), intermediate, expert, HxWxM")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--allow-host", metavar="NAME", action="append", default=[],
                        help="another name the page is reached by (this machine's name or address with --host 0.0.0.0); "
                        "repeat for more")
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port} must be in [1, 65535]")
    return args


def missing_packages() -> list[str]:
    """The web extra's packages that are not installed."""
    return [name for name in WEB_PACKAGES if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C; returns the exit status (1: no web extra, 2: bad option)."""
    args = parse_args(argv)
    if missing_packages():
        print(INSTALL_HINT)
        return 1
    import uvicorn

    from msjax import web

    try:
        agent = None
        if args.agent:
            from msjax.run.agents import load_agent

            agent = load_agent(args.agent)
        agent_name = agent_label(args.agent) if args.agent else None
        inspector = web.Inspector(agent, agent_name, default_board=args.board or "beginner")
        inspector.game_config(inspector.default_board, False)  # a bad --board fails here, not in the page
    except (ValueError, FileNotFoundError, web.GameError) as err:
        print(f"error: {err}")
        return 2
    try:
        listening = bind(args.host, args.port)
    except OSError as err:
        print(f"error: cannot listen on {args.host} port {args.port} ({err.strerror or err}); pick another --port or --host")
        return 2
    host = f"[{args.host}]" if ":" in args.host else args.host
    if not is_loopback(args.host):
        print(f"warning: --host {args.host} lets other machines use the inspector; its API has no authentication"
              + ("; they reach it by a name given with --allow-host NAME" if is_unspecified(args.host) else ""))
    print(f"msjax inspector: http://{host}:{args.port}/  (Ctrl-C stops it)", flush=True)
    app = web.create_app(inspector, hosts=[args.host, *args.allow_host])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[listening])
    return 0


def agent_label(agent: str) -> str:
    """What the page calls the ``--agent`` it serves: a shipped agent's name with
    ``(shipped)``, else its run directory's name (``run_name``)."""
    from msjax import shipped

    return f"{agent} (shipped)" if shipped.is_agent_name(agent) else run_name(agent)


def run_name(path: str) -> str:
    """The name of the run directory that ``path`` (a run directory, its checkpoints
    directory or one checkpoint) belongs to: what the page shows, never the path."""
    from msjax.run.checkpoint import resolve

    checkpoints_dir, _ = resolve(path)
    return (checkpoints_dir.parent if checkpoints_dir.name == "checkpoints" else checkpoints_dir).name


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (IPv4 or IPv6), not yet listening.

    Raises:
      OSError: the address is in use, not this machine's, or the host is unknown.
    """
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    listening = socket.socket(family, kind, proto)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address)
    except OSError:
        listening.close()
        raise
    return listening


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine alone (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_unspecified(host: str) -> bool:
    """Whether ``host`` is every address of this machine (``0.0.0.0``, ``::``): no name a
    request could give."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


if __name__ == "__main__":
    sys.exit(main())
