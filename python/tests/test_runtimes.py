"""The same handler files under each runtime: the long-lived server, Flask + Waitress, and the
classic one-process-per-request runner."""

import http.client
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import FUNCTIONS, SRC, free_port, wait_listening

BATCH = json.dumps(
    [
        {"sensor_id": "t1", "name": "t", "type": "temperature", "unit": "°C", "value": 20},
        {"sensor_id": "t2", "name": "t", "type": "temperature", "unit": "°C", "value": 22},
    ]
).encode()


def request(
    port: int,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, dict, bytes]:
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


@pytest.mark.parametrize("module", ["server", "flaskapp"])
def test_long_lived_runtimes(module, start_server, raising_handler):
    port = start_server(module, FUNCTIONS / "hello")
    assert request(port, "POST", "/", b"Ada")[::2] == (200, b"Hello, Ada!")
    assert request(port, "GET", "/_/health")[0] == 200
    # One connection, several requests: kept alive.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for name in ("a", "b", "c"):
        status, _, body = request(port, "POST", "/x?y=1", name.encode(), conn=conn)
        assert (status, body) == (200, f"Hello, {name}!".encode())
    conn.close()

    port = start_server(module, FUNCTIONS / "iot-analytics")
    status, headers, body = request(port, "POST", "/", BATCH, {"Content-Type": "application/json"})
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert 0 < float(headers["x-handler-seconds"]) < 10
    assert json.loads(body)["by_type"]["temperature"]["mean"] == 21.0
    status, _, body = request(port, "POST", "/", b"[1")
    assert status == 400 and "body is not JSON" in json.loads(body)["error"]

    port = start_server(module, raising_handler)
    status, headers, body = request(port, "POST", "/", b"x")
    # The template's answer (werkzeug's page, the exception not in it); the traceback is logged
    # (tests/test_contract.py checks where).
    assert status == 500 and b"Internal Server Error" in body and b"sensor table" not in body
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert request(port, "GET", "/_/health")[0] == 200  # still serving


def test_server_chunked_body_and_bad_requests(start_server):
    port = start_server("server", FUNCTIONS / "hello")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\nAd\r\n1;ext=1\r\na\r\n0\r\n\r\n"
        )
        assert b"Hello, Ada!" in recv_response(s)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
        resp = recv_response(s)
        assert resp.startswith(b"HTTP/1.1 400") and b"Content-Length 'nope' is not a number" in resp
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GARBAGE\r\n\r\n")
        assert recv_response(s).startswith(b"HTTP/1.1 400")
    assert request(port, "POST", "/", b"Bo")[2] == b"Hello, Bo!"


def recv_response(s: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    n = int(
        next(
            line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
    )
    while len(body) < n:
        body += s.recv(65536)
    return head + b"\r\n\r\n" + body


def classic(handler, body: bytes, cgi: bool, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {
        "PYTHONPATH": str(SRC),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "Http_Method": "POST",
        "Http_Path": "/function/x",
        "Http_Query": "a=1",
        "Http_Content_Type": "application/json",
    }
    if cgi:
        env["CONTINUUM_CGI"] = "1"
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "continuum_functions.classic", str(handler)],
        input=body,
        env=env,
        capture_output=True,
        timeout=60,
    )


def test_classic(raising_handler, tmp_path):
    r = classic(FUNCTIONS / "hello", b"Ada", cgi=False)
    assert (r.returncode, r.stdout) == (0, b"Hello, Ada!")
    r = classic(FUNCTIONS / "iot-analytics", BATCH, cgi=True)
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    assert r.returncode == 0 and head.startswith(b"Status: 200") and b"Content-Type: application/json" in head
    assert b"X-Handler-Seconds: " in head
    assert json.loads(body)["valid"] == 2
    r = classic(FUNCTIONS / "iot-analytics", b"nope", cgi=True)
    assert r.stdout.startswith(b"Status: 400")
    r = classic(FUNCTIONS / "iot-analytics", b"nope", cgi=False)
    assert r.returncode == 1 and b"body is not JSON" in r.stdout
    r = classic(raising_handler, b"", cgi=True)
    assert r.stdout.startswith(b"Status: 500") and b"sensor table missing" not in r.stdout
    assert b"Traceback" in r.stderr and b"RuntimeError: sensor table missing" in r.stderr
    # The request's headers reach the handler under their HTTP names.
    echo = tmp_path / "echo"
    echo.mkdir()
    (echo / "handler.py").write_text(
        "def handle(event, context):\n"
        "    h = event.headers\n"
        "    return {'body': {'ct': h.get('Content-Type'), 'q': dict(event.query), 'path': event.path}}\n"
    )
    r = classic(echo, b"", cgi=False)
    assert json.loads(r.stdout) == {"ct": "application/json", "q": {"a": "1"}, "path": "/function/x"}
    r = classic(tmp_path / "missing", b"", cgi=False)
    assert r.returncode == 2 and b"no such file" in r.stderr


def test_server_exec_timeout(tmp_path):
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "handler.py").write_text(
        "import time\n\ndef handle(event, context):\n"
        "    if event.body == b'slow':\n"
        "        try:\n            time.sleep(30)\n        except Exception:\n            pass\n"
        "    return {'body': 'done'}\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "continuum_functions.server",
            str(slow),
            "--port",
            str(port),
            "--exec-timeout",
            "0.3",
        ],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_listening(port, proc)
        status, _, body = request(port, "POST", "/", b"slow")
        # The handler's own `except Exception` does not swallow the timeout.
        assert status == 504 and b"exec timeout of 0.3s" in body
        assert request(port, "POST", "/", b"fast")[::2] == (200, b"done")
    finally:
        proc.kill()
        proc.wait()
