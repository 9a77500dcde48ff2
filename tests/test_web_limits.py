"""The inspector under a hostile client (issue 25, item 6; issue 92, items 9 and 10):
overlay lists and request bodies are capped, compiled programs are kept for a bounded
number of boards, a compile never holds the lock other games wait on, one compile runs at
a time (a request that needs another gets a 503 and changes nothing), a request naming
another host (DNS rebinding) is refused, ``/api/info`` names the agent's run without its
path, and ``serve`` binds before it prints its URL. The solver alone plays (no agent),
on boards of a few cells."""

from __future__ import annotations

import socket
import threading

import httpx
import jax
import pytest

pytest.importorskip("fastapi", reason="the web extra is not installed: pip install -e '.[web]'")

from fastapi.testclient import TestClient  # noqa: E402

from msjax import web  # noqa: E402
from msjax.cli import serve  # noqa: E402
from msjax.web.app import MAX_BODY_BYTES  # noqa: E402
from tiny_runs import saved_run  # noqa: E402

BOARD = "4x4x2"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax.monitoring's name for an XLA compile


@pytest.fixture(scope="module")
def inspector():
    return web.Inspector(default_board=BOARD, max_boards=2)


@pytest.fixture(scope="module")
def client(inspector):
    with TestClient(web.create_app(inspector), base_url="http://127.0.0.1") as test_client:
        yield test_client


def test_a_long_overlay_list_is_refused_and_repeats_are_computed_once(client):
    game = client.post("/api/games", json={"board": BOARD, "seed": 1}).json()
    url, move = f"/api/games/{game['id']}/move", {"kind": "reveal", "row": 0, "col": 0}
    refused = client.post(url, json={**move, "overlays": ["solver"] * 20})
    assert refused.status_code == 400 and "overlays" in refused.json()["error"]
    assert client.post(url, json={**move, "overlays": ["solver"] * 2000}).status_code == 413
    answer = client.post(url, json={**move, "overlays": ["exact", "exact"]})
    assert answer.status_code == 200 and list(answer.json()["beliefs"]) == ["exact"]


def test_a_body_over_the_cap_is_a_413_with_one_line(client):
    body = b'{"board": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = client.post("/api/games", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert f"over {MAX_BODY_BYTES} bytes" in response.json()["error"]


def test_compiled_programs_are_kept_for_the_standard_boards_and_the_custom_ones_used_last(inspector):
    beginner = inspector.new_game("beginner", 1, False)
    kept = inspector.programs.get(beginner.cfg)
    games = [inspector.new_game(board, 1, True) for board in ("4x4x2", "4x5x2", "5x4x2")]
    assert inspector.programs.boards() == [games[1].cfg, games[2].cfg]
    inspector.move(games[0].game_id, "reveal", 0, 0)  # a dropped board compiles again and plays
    assert inspector.programs.boards() == [games[2].cfg, games[0].cfg]
    assert inspector.programs.get(beginner.cfg) is kept  # custom boards never push a standard one out


def test_a_game_that_is_busy_compiling_does_not_stall_the_others(inspector):
    busy, other = inspector.new_game(BOARD, 1, False), inspector.new_game(BOARD, 2, False)
    done = threading.Event()
    with busy.lock:  # as while its first move on a new board compiles
        worker = threading.Thread(target=lambda: (inspector.move(other.game_id, "reveal", 0, 0), done.set()))
        worker.start()
        assert done.wait(timeout=120), "another game waited for the busy one"
        inspector.new_game("4x6x2", 3, False)
    worker.join()


def assert_one_line_error(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error and "\n" not in error and all(word in error for word in words), error


@pytest.mark.parametrize("method, path", [("GET", "/"), ("GET", "/static/app.js"), ("GET", "/api/info"),
                                          ("GET", "/api/tally"), ("POST", "/api/games"), ("GET", "/nowhere")])
def test_a_request_naming_another_host_is_refused_on_every_route(inspector, method, path):
    # A page of evil.example whose name now resolves to 127.0.0.1 (DNS rebinding) sends Host: evil.example.
    with web.serve_in_thread(web.create_app(inspector)) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}"):
            response = httpx.request(method, url + path, headers={"Host": host}, json={"board": BOARD})
            assert_one_line_error(response, 400, repr(host))


def test_the_loopback_names_and_the_bound_host_are_accepted_with_or_without_the_port(inspector):
    with web.serve_in_thread(web.create_app(inspector, hosts=["Inspector.lan"])) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", f"LocalHost:{port}", "[::1]", f"[::1]:{port}",
                     "inspector.lan", f"inspector.lan:{port}"):
            assert httpx.get(url + "/api/info", headers={"Host": host}).status_code == 200, host
        for host in ("127.0.0.1.evil.example", "localhost.evil.example:80", "[::1]:80:80", "localhost:port", "::1"):
            assert_one_line_error(httpx.get(url + "/api/info", headers={"Host": host}), 400, "Host")


def served_app(monkeypatch, argv: list[str]):
    """The app that ``python -m msjax serve ARGV`` would serve (nothing runs)."""
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: served.append((server, sockets)))
    monkeypatch.setattr(uvicorn.Config, "configure_logging", lambda config: None)  # it would close pytest's handlers
    assert serve.main(argv) == 0
    server, sockets = served[0]
    sockets[0].close()
    return server.config.app


def test_serve_accepts_the_host_it_is_bound_as_and_the_allowed_names_only(monkeypatch):
    port = web.free_port("0.0.0.0")
    app = served_app(monkeypatch, ["--host", "0.0.0.0", "--port", str(port), "--allow-host", "inspector.lan"])
    for host, status in ((f"0.0.0.0:{port}", 200), ("inspector.lan", 200), (f"localhost:{port}", 200), ("evil.example", 400)):
        with TestClient(app, base_url=f"http://{host}") as client:
            assert client.get("/api/info").status_code == status, host


def test_info_names_the_agents_run_never_its_path(monkeypatch, tmp_path):
    run = saved_run(tmp_path / "runs" / "tiny")
    for given in (run.resolve(), run / "checkpoints", run / "checkpoints" / "1"):
        app = served_app(monkeypatch, ["--agent", str(given), "--port", str(web.free_port())])
        with TestClient(app, base_url="http://127.0.0.1") as client:
            assert client.get("/api/info").json()["agent"] == "tiny", given


def test_a_request_needing_a_compile_while_another_compiles_gets_a_503_and_changes_nothing():
    inspector = web.Inspector(default_board=BOARD)  # its own programs: none compiled
    with web.serve_in_thread(web.create_app(inspector)) as url, httpx.Client(base_url=url) as client:
        game = client.post("/api/games", json={"board": BOARD, "seed": 1}).json()
        game_url = f"/api/games/{game['id']}"
        flag = {"kind": "flag", "row": 0, "col": 0}
        assert client.post(game_url + "/move", json=flag).status_code == 200  # compiles a move on this board
        with inspector.compile_slot.hold("another board"):
            assert client.post(game_url + "/move", json=flag).json()["moves"] == 2  # compiled: answers as before
            assert client.get(game_url).status_code == 200
            for method, path, body in (
                ("POST", "/api/games", {"board": "4x5x2", "seed": 1}),
                ("POST", game_url + "/move", {"kind": "reveal", "row": 1, "col": 1, "overlays": ["solver"]}),
                ("POST", game_url + "/step", {"player": "solver"}),
                ("GET", game_url + "?overlays=solver", None),
            ):
                response = client.request(method, path, json=body)
                assert_one_line_error(response, 503, "another board", "is compiling")
                assert response.headers["Retry-After"].isdigit(), path
            unchanged = client.get(game_url).json()
            assert (unchanged["moves"], unchanged["board"]) == (2, ["####"] * 4)
        assert client.post("/api/games", json={"board": "4x5x2", "seed": 1}).status_code == 201


def test_a_boards_programs_compile_once_each_and_inside_the_compile_slot():
    inspector = web.Inspector(default_board=BOARD)
    compiles = []

    def listener(event: str, seconds: float, fun_name: str = "", **_) -> None:
        if event == BACKEND_COMPILE_EVENT and fun_name in ("jit(reset)", "jit(apply)"):
            compiles.append((fun_name, inspector.compile_slot.busy))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        game = inspector.new_game("3x4x2", 1, False)
        inspector.move(game.game_id, "reveal", 0, 0)
        inspector.move(game.game_id, "flag", 2, 3)
        inspector.new_game("3x4x2", 2, False)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == [("jit(reset)", True), ("jit(apply)", True)]


def test_serve_binds_before_it_prints_the_url(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert serve.main(["--port", str(port)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"error: cannot listen on 127.0.0.1 port {port}")
    assert "http://" not in out


def test_serve_on_a_non_loopback_host_warns_that_the_api_has_no_authentication(monkeypatch, capsys):
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: served.append(sockets))
    monkeypatch.setattr(uvicorn.Config, "configure_logging", lambda config: None)  # it would close pytest's handlers
    assert serve.main(["--host", "0.0.0.0", "--port", str(web.free_port("0.0.0.0"))]) == 0
    out = capsys.readouterr().out
    assert out.index("warning: --host 0.0.0.0") < out.index("http://0.0.0.0:") and "no authentication" in out
    served[0][0].close()
    assert serve.is_loopback("127.0.0.1") and serve.is_loopback("::1") and serve.is_loopback("localhost")
