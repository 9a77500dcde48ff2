"""The inspector's HTTP side: the page's static files and a small JSON API (FastAPI).

Endpoints (JSON in and out; game state lives on the server, see ``msjax.web.games``):

- ``GET /``: the page; ``GET /static/...``: its script and style (only files of the
  package's ``static`` folder are reachable).
- ``GET /api/info``: boards, the agent's name (or null), size limits, overlay names.
- ``POST /api/games`` ``{"board": "beginner" | "HxWxM", "seed": int | null,
  "safe_first_click": bool, "overlays": [...]}``: a new game (201).
- ``GET /api/games/{id}?overlays=agent,solver,exact,search``: the game (``search``: the
  search player's candidates and their scores, ``msjax.web.games``).
- ``POST /api/games/{id}/move`` ``{"kind": "reveal" | "flag", "row", "col", "overlays"}``:
  a person's move.
- ``POST /api/games/{id}/step`` ``{"player": "agent" | "solver", "overlays"}``: one move
  of a player.
- ``GET /api/tally``: the session's finished games.

Every refusal is a 4xx with ``{"error": "one line"}``: malformed JSON, a missing or wrong
field (400), an unknown game (404), a move on a finished game (409), a cell off the board
or a board that does not fit (400), a body over ``MAX_BODY_BYTES`` (413). An ``overlays``
list holds each name at most once (a repeat is computed once; a longer list is a 400).
A request that needs a compile (a board's first game, move or overlay) while another
board compiles gets a 503 with ``Retry-After`` and the same one-line error, and changes
nothing (one compile at a time: ``web.programs.CompileSlot``).

Every route answers only requests whose ``Host`` header names this server: a loopback name
(``LOOPBACK_HOSTS``) or one it was given (``create_app``'s ``hosts``), with or without a
port; any other gets a 400. A page of another site that points its own name at
127.0.0.1 (DNS rebinding) sends that name, so it cannot drive the inspector.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from msjax.web.games import OVERLAYS, GameError, Inspector
from msjax.web.programs import CompileBusy

STATIC_DIR = Path(__file__).resolve().parent / "static"
Overlay = Literal["agent", "solver", "exact", "search"]
MAX_BODY_BYTES = 4096
"""The largest request body the API reads (every valid one is under 200 bytes)."""
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The names a request may give in its ``Host`` header to any server (IPv6 without brackets)."""


class NewGame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    board: str = Field("beginner", max_length=40)
    seed: int | None = Field(None, ge=0, lt=2**31)
    safe_first_click: bool = False
    overlays: list[Overlay] = Field([], max_length=len(OVERLAYS))


class Move(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["reveal", "flag"]
    row: int
    col: int
    overlays: list[Overlay] = Field([], max_length=len(OVERLAYS))


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    player: Literal["agent", "solver"]
    overlays: list[Overlay] = Field([], max_length=len(OVERLAYS))


def validation_message(err: RequestValidationError) -> str:
    """One line for the first thing wrong with a request."""
    first = err.errors()[0]
    if first.get("type") == "json_invalid":
        return f"malformed JSON: {first.get('ctx', {}).get('error', 'cannot be parsed')}"
    where = ".".join(str(part) for part in first.get("loc", ())[1:])
    if not where:
        return "the request needs a JSON object body" + ("" if first.get("type") == "missing" else f" ({first.get('msg')})")
    return f"{where}: {first.get('msg', 'invalid')}" if where else first.get("msg", "invalid request")


def parse_overlays(text: str) -> tuple[str, ...]:
    """``"agent,exact"`` as a tuple. Raises: GameError(400) naming an unknown overlay."""
    names = tuple(name for name in text.split(",") if name)
    unknown = [name for name in names if name not in OVERLAYS]
    if unknown:
        raise GameError(400, f"unknown overlay {unknown[0]!r}: use {', '.join(OVERLAYS)}")
    return names


def create_app(inspector: Inspector, hosts: Iterable[str] = ()) -> FastAPI:
    """The FastAPI app serving ``inspector``'s games (no docs pages, no other files).

    ``hosts``: the names it answers to besides ``LOOPBACK_HOSTS`` (the address it is
    bound to, other names of this machine), matched without case; an IPv6 address with or
    without its brackets.
    """
    app = FastAPI(title="msjax inspector", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    app.add_middleware(HostCheck, hosts=(*LOOPBACK_HOSTS, *hosts))  # added last: it runs first
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.exception_handler(GameError)
    async def refused(request: Request, err: GameError) -> JSONResponse:
        return JSONResponse({"error": str(err)}, status_code=err.status)

    @app.exception_handler(CompileBusy)
    async def compiling(request: Request, err: CompileBusy) -> JSONResponse:
        return JSONResponse({"error": str(err)}, status_code=503, headers={"Retry-After": str(err.retry_after_s)})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": validation_message(err)}, status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(err.detail)}, status_code=err.status_code)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/api/info")
    def info() -> dict:
        return inspector.info()

    @app.post("/api/games", status_code=201)
    def new_game(request: NewGame) -> dict:
        overlays = tuple(request.overlays)
        game = inspector.new_game(request.board, request.seed, request.safe_first_click, overlays)
        return inspector.describe(game, overlays)

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str, overlays: str = Query("", max_length=40)) -> dict:
        return inspector.describe(inspector.game(game_id), parse_overlays(overlays))

    @app.post("/api/games/{game_id}/move")
    def move(game_id: str, request: Move) -> dict:
        overlays = tuple(request.overlays)
        game = inspector.move(game_id, request.kind, request.row, request.col, overlays)
        return inspector.describe(game, overlays)

    @app.post("/api/games/{game_id}/step")
    def step(game_id: str, request: Step) -> dict:
        overlays = tuple(request.overlays)
        return inspector.describe(inspector.step(game_id, request.player, overlays), overlays)

    @app.get("/api/tally")
    def tally() -> dict:
        return inspector.tally()

    return app


class BodyLimit:
    """ASGI middleware: a request whose body is over ``max_bytes`` gets a 413 with one
    line, before the app reads any of it (by its ``Content-Length``) or as soon as a
    streamed body passes the limit; the body read is handed on to the app."""

    def __init__(self, app: Any, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", ())).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return await self._refuse(send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                return await self._refuse(send)
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        message = f"request body over {self.max_bytes} bytes: the API's requests are small JSON objects"
        await JSONResponse({"error": message}, status_code=413)({"type": "http"}, None, send)


def host_name(header: str) -> str | None:
    """The name in a ``Host`` header, lower-case, without its port nor an IPv6 address's
    brackets (``"[::1]:8000"`` -> ``"::1"``); None for a header that is not ``NAME``,
    ``NAME:PORT``, ``[IPV6]`` or ``[IPV6]:PORT``."""
    header = header.strip().lower()
    if header.startswith("["):
        name, bracket, port = header[1:].partition("]")
        if not bracket:
            return None
    else:
        name, colon, port = header.partition(":")
        port = colon + port
    if port and not (port.startswith(":") and port[1:].isdigit()):
        return None
    return name or None


class HostCheck:
    """ASGI middleware: a request whose ``Host`` header names none of ``hosts`` gets a
    400 with one line, before the app sees it (``create_app`` says why)."""

    def __init__(self, app: Any, hosts: Iterable[str]):
        self.app = app
        self.hosts = tuple(dict.fromkeys(host.strip("[]").lower() for host in hosts))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan; the app has no websocket routes
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
        if host_name(header) in self.hosts:
            return await self.app(scope, receive, send)
        names = ", ".join(f"[{host}]" if ":" in host else host for host in self.hosts)
        message = (f"Host {header[:100]!r} is not a name of this server: it answers to {names} "
                   "(python -m msjax serve --allow-host NAME adds one)")
        await JSONResponse({"error": message}, status_code=400)({"type": "http"}, None, send)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve_in_thread(app: FastAPI, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """Serves ``app`` with uvicorn in a daemon thread (a free port by default); yields its
    URL and stops the server on exit (for tests and benchmarks).

    Raises:
      RuntimeError: the server did not start within 30 s.
    """
    import uvicorn

    port = free_port(host) if port is None else port
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the inspector did not start on {host}:{port}")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
