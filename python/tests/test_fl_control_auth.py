"""The aggregators' control API takes a token's word only (issue 41: it took anyone's).

Without the token, with a wrong one or another scheme, every request answers 401 and changes
nothing (settings, stop); with it the API works. Without a token it refuses to listen where
other machines reach it. No PyTorch here: control.py is the standard library's http.server.
"""

import json
import os
import random
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from continuum_fl import auth
from continuum_fl.control import Control, serve
from fl_support import SRC

TOKEN = "c0ntrol-t0ken"


@pytest.fixture
def api():
    control = Control("g", "global", min_clients=2, epochs=1, local_rounds=1, clients=lambda: 0)
    server = serve(control, "127.0.0.1", 0, TOKEN)
    host, port = server.server_address[:2]
    yield control, f"http://{host}:{port}"
    server.shutdown()
    server.server_close()


def call(base, method, path, body=None, authorization=None):
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


BAD = [None, "", "Bearer", "Bearer ", f"Bearer {TOKEN}!", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN.upper()}"]
CALLS = [
    ("GET", "/status", None),
    ("POST", "/config", {"min_clients": 1, "epochs": 9}),
    ("POST", "/stop", None),
]


@pytest.mark.parametrize("authorization", BAD)
def test_control_refuses_without_the_token(api, authorization):
    control, base = api
    before = control.status()
    for method, path, body in CALLS:
        code, headers, raw = call(base, method, path, body, authorization)
        assert code == 401, (method, path, authorization, code, raw)
        assert headers["WWW-Authenticate"].startswith("Bearer"), headers
        assert b"min_clients" not in raw  # the 401 tells nothing of the settings
    assert control.status() == before
    assert not control.stop.is_set()


def test_control_works_with_the_token(api):
    control, base = api
    code, _, raw = call(base, "POST", "/config", {"epochs": 9}, f"Bearer {TOKEN}")
    assert code == 200 and json.loads(raw)["epochs"] == 9
    code, _, raw = call(base, "GET", "/status", None, f"bearer  {TOKEN} ")
    assert code == 200 and json.loads(raw)["epochs"] == 9
    code, _, _ = call(base, "POST", "/stop", None, f"Bearer {TOKEN}")
    assert code == 200 and control.stop.is_set()


def test_random_headers_change_nothing(api):
    """A small fuzz: random Authorization values (seeded) never get past the check."""
    control, base = api
    before = control.status()
    rng = random.Random(41)
    alphabet = "Bearer bearer " + TOKEN + " \t:=,;\"'\\x00é"
    for _ in range(200):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        if auth.has_bearer(value, TOKEN):
            continue
        try:
            code, _, _ = call(base, "POST", "/config", {"min_clients": 7}, value)
        except (ValueError, UnicodeEncodeError, http_client_errors()):
            continue  # a header the client library will not send
        assert code == 401, value
    assert control.status() == before


def http_client_errors():
    import http.client

    return http.client.HTTPException


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "10.1.2.3", "example.org"])
def test_public_bind_needs_a_token(host):
    control = Control("g", "global", 1, 1, 1, clients=lambda: 0)
    with pytest.raises(ValueError, match="reachable from other machines"):
        serve(control, host, free_port(), None)


def test_loopback_without_token_is_open():
    control = Control("g", "global", 1, 1, 1, clients=lambda: 0)
    server = serve(control, "127.0.0.1", 0, None)
    try:
        host, port = server.server_address[:2]
        code, _, _ = call(f"http://{host}:{port}", "GET", "/status")
        assert code == 200
    finally:
        server.shutdown()
        server.server_close()


def test_cli_refuses_a_public_control_without_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != auth.CONTROL_TOKEN_ENV}
    env["PYTHONPATH"] = str(SRC)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "continuum_fl",
            "aggregator",
            "--control",
            f"0.0.0.0:{free_port()}",
            "--out",
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, p
    assert "reachable from other machines" in p.stderr and auth.CONTROL_TOKEN_ENV in p.stderr, p.stderr


def test_services_send_their_token(monkeypatch):
    monkeypatch.setenv(auth.SERVICES_TOKEN_ENV, "svc")
    assert auth.services_headers() == {"Authorization": "Bearer svc"}
    monkeypatch.delenv(auth.SERVICES_TOKEN_ENV)
    assert auth.services_headers() == {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("length", ["-5", "+5", "5x", "5_0", "0x5"])
def test_bad_content_length_is_refused(api, length):
    """A Content-Length that is not digits is refused with 400 at once: "-5" once made the
    handler read until the client closed, holding its thread."""
    control, base = api
    host, port = base.removeprefix("http://").rsplit(":", 1)
    before = control.status()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            (
                f"POST /config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Length: {length}\r\n\r\n{{}}"
            ).encode()
        )
        head = s.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.0 400") or head.startswith("HTTP/1.1 400"), head
    assert "Content-Length" in head
    assert control.status() == before


def test_services_headers_per_client(monkeypatch):
    """A `clients` process sends each client's own token (CONTINUUM_FL_TOKENS); a single
    service sends CONTINUUM_FL_TOKEN."""
    monkeypatch.setenv(auth.GROUP_TOKENS_ENV, json.dumps({"c1": "t1", "c2": "t2"}))
    monkeypatch.delenv(auth.SERVICES_TOKEN_ENV, raising=False)
    assert auth.services_headers("c1") == {"Authorization": "Bearer t1"}
    assert auth.services_headers("c2") == {"Authorization": "Bearer t2"}
    assert auth.services_headers("c3") == {}
    monkeypatch.delenv(auth.GROUP_TOKENS_ENV)
    monkeypatch.setenv(auth.SERVICES_TOKEN_ENV, "mine")
    assert auth.services_headers("g") == {"Authorization": "Bearer mine"}
    assert auth.services_headers() == {"Authorization": "Bearer mine"}
