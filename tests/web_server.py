"""A live inspector server on 127.0.0.1 for the browser test and the latency benchmark."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Iterator


def free_port() -> int:
    """A TCP port free on the loopback address right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running(app) -> Iterator[str]:
    """Serves ``app`` with uvicorn on 127.0.0.1 in a thread; yields its URL, stops it at exit."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the inspector server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
