"""An aggregator's control API: HTTP/JSON on --control, served by the standard library's
http.server in a thread.

- ``GET /status`` -> {"id", "role", "round", "clients", "min_clients", "epochs", "local_rounds"}
- ``POST /config`` {"min_clients"?, "epochs"?, "local_rounds"?} -> the new status. Values apply
  from the next round; min_clients also frees a round that is waiting for children, because
  the wait re-reads it every second.
- ``POST /stop`` -> the current round finishes, then the service exits 0.

With a token (the orchestrator passes CONTINUUM_FL_CONTROL_TOKEN; see auth.py) every request
needs ``Authorization: Bearer TOKEN`` (401 otherwise, nothing changed); without one the API may
only listen on loopback.

The server is started only once the Flower server listens, so a 200 from /status means the
aggregator is ready for children.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .auth import check_exposure, has_bearer

log = logging.getLogger("continuum_fl.control")

MAX_BODY = 64 * 1024
SETTINGS = ("min_clients", "epochs", "local_rounds")


class Control:
    """The settings an orchestrator may change while the aggregator runs, and its stop request."""

    def __init__(
        self,
        service_id: str,
        role: str,
        min_clients: int,
        epochs: int,
        local_rounds: int,
        clients: Callable[[], int],
    ) -> None:
        self.id = service_id
        self.role = role
        self._clients = clients
        self._lock = threading.Lock()
        self._settings = {
            "min_clients": min_clients,
            "epochs": epochs,
            "local_rounds": local_rounds,
        }  # guarded by _lock
        self._round = 0  # guarded by _lock
        self.stop = threading.Event()

    def get(self, name: str) -> int:
        with self._lock:
            return self._settings[name]

    def set_round(self, r: int) -> None:
        with self._lock:
            self._round = r

    def status(self) -> dict[str, Any]:
        with self._lock:
            s: dict[str, Any] = {"id": self.id, "role": self.role, "round": self._round}
            settings = dict(self._settings)
        s["clients"] = self._clients()
        s.update(settings)
        return s

    def update(self, body: Any) -> dict[str, Any]:
        """Applies a /config body; ValueError names the field and what is allowed."""
        if not isinstance(body, dict):
            raise ValueError(f"want a JSON object with any of {', '.join(SETTINGS)}")
        for k, v in body.items():
            if k not in SETTINGS:
                raise ValueError(f"unknown setting {k!r} (allowed: {', '.join(SETTINGS)})")
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{k}: {v!r} is not an integer >= 1")
        with self._lock:
            self._settings.update(body)
        log.info("control: %s", body)
        return self.status()


def serve(control: Control, host: str, port: int, token: str | None = None) -> ThreadingHTTPServer:
    """Starts the control API in a daemon thread; the caller shuts it down. Without a token it
    refuses (ValueError) an address other machines reach."""
    check_exposure(host, port, token)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the orchestrator polls
            pass

        def _reply(self, code: int, obj: Any) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _authorized(self) -> bool:
            if token is None or has_bearer(self.headers.get("Authorization"), token):
                return True
            body = json.dumps(
                {"error": "the aggregator's control API needs its token: Authorization: Bearer TOKEN"}
            ).encode()
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="continuum_fl control"')
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return False

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path == "/status":
                self._reply(200, control.status())
            else:
                self._reply(404, {"error": f"no {self.path}: GET /status, POST /config, POST /stop"})

        def do_POST(self) -> None:
            if not self._authorized():  # before the body is read: nothing of it is looked at
                return
            text = (self.headers.get("Content-Length") or "0").strip()
            # Digits only: int() takes "-5" (read(-5) would wait for the client to close) and
            # "+5", " 5", "5_0", which no HTTP parser should (RFC 9110 8.6: 1*DIGIT).
            if not (text.isascii() and text.isdigit()):
                self._reply(400, {"error": f"Content-Length {text!r}: want a number of bytes (digits only)"})
                self.close_connection = True
                return
            length = int(text)
            if length > MAX_BODY:
                self._reply(413, {"error": f"body over {MAX_BODY} bytes"})
                return
            raw = self.rfile.read(length) if length else b""
            if self.path == "/stop":
                control.stop.set()
                self._reply(200, {"stopping": True, **control.status()})
            elif self.path == "/config":
                try:
                    self._reply(200, control.update(json.loads(raw or b"{}")))
                except json.JSONDecodeError as e:
                    self._reply(400, {"error": f"body is not JSON: {e}"})
                except ValueError as e:
                    self._reply(400, {"error": str(e)})
            else:
                self._reply(404, {"error": f"no {self.path}: GET /status, POST /config, POST /stop"})

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="control", daemon=True).start()
    return server
