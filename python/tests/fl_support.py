"""Helpers for the FL tests: free ports, services as subprocesses, deadlines, and a stand-in
for the orchestrator's HTTP endpoints (reports and the model repository)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

PYTHON_DIR = Path(__file__).resolve().parent.parent
SRC = PYTHON_DIR / "src"
DEADLINE = 60.0  # generous: the tests run on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def addr() -> str:
    return f"127.0.0.1:{free_port()}"


def wait_until(pred: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise TimeoutError(f"{what}: not within {deadline} s")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class Services:
    """Starts `python -m continuum_fl ...` processes; kills what is left at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "continuum_fl", *args, "--out", str(self.tmp / name)],
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        proc.name = name  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def events(self, name: str) -> list[dict[str, Any]]:
        return read_jsonl(self.tmp / name / "fl.jsonl")

    def wait_exit(self, proc: subprocess.Popen, deadline: float = DEADLINE) -> int:
        try:
            return proc.wait(deadline)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{proc.name} did not exit: {self.log(proc.name)[-3000:]}") from None  # type: ignore[attr-defined]

    def wait_ready(self, proc: subprocess.Popen, control: str) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            if proc.poll() is not None:
                raise AssertionError(f"{proc.name} exited {proc.returncode}: {self.log(proc.name)[-3000:]}")  # type: ignore[attr-defined]
            try:
                code, status = http("GET", f"http://{control}/status")
            except OSError:
                return None
            return status if code == 200 else None

        return wait_until(ready, f"{proc.name} ready")  # type: ignore[attr-defined]

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


class Repo:
    """The orchestrator's endpoints: POST /report, PUT /model?round=R, GET /model/latest (the
    given snapshot, else the latest stored one, else 404)."""

    def __init__(self, latest: tuple[int, bytes] | None = None) -> None:
        self.reports: list[dict[str, Any]] = []
        self.models: dict[int, bytes] = {}
        self.latest = latest
        self.lock = threading.Lock()
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self._body()
                if self.path == "/report":
                    with repo.lock:
                        repo.reports.append(json.loads(body))
                    self._reply(204)
                else:
                    self._reply(404)

            def do_PUT(self) -> None:
                body = self._body()
                u = urlparse(self.path)
                if u.path == "/model":
                    with repo.lock:
                        repo.models[int(parse_qs(u.query)["round"][0])] = body
                    self._reply(204)
                else:
                    self._reply(404)

            def do_GET(self) -> None:
                with repo.lock:
                    latest = repo.latest
                    if latest is None and repo.models:
                        r = max(repo.models)
                        latest = (r, repo.models[r])
                if self.path == "/model/latest" and latest is not None:
                    r, body = latest
                    self._reply(200, body, {"X-Round": str(r), "Content-Type": "application/octet-stream"})
                else:
                    self._reply(404)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
