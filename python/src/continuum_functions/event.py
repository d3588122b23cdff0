"""What a python3-http handler receives and returns, as OpenFaaS' template defines it.

``handle(event, context)`` gets an :class:`Event` (body as bytes, headers, method, query, path)
and a :class:`Context` (hostname), and returns a dict with ``statusCode`` (default 200),
``body`` (str, bytes, or a dict/list sent as JSON) and ``headers``. A bare string or bytes
return is the body of a 200.
"""

import importlib.util
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

Handler = Callable[["Event", "Context"], Any]


@dataclass
class Event:
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    method: str = "GET"
    query: Mapping[str, str] = field(default_factory=dict)
    path: str = "/"


@dataclass
class Context:
    hostname: str = field(default_factory=lambda: os.getenv("HOSTNAME", "localhost"))


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


def parse_query(raw: str) -> dict[str, str]:
    """The first value of each query parameter, as Flask's request.args gives it."""
    return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def load_handler(path: str) -> Handler:
    """Imports the ``handle`` function of the handler file at path (a function folder or its
    handler.py). The folder goes first on sys.path so the handler's sibling modules import."""
    p = Path(path)
    if p.is_dir():
        p = p / "handler.py"
    if not p.is_file():
        raise FileNotFoundError(f"handler {path!r}: no such file (want a function folder or its handler.py)")
    sys.path.insert(0, str(p.parent.resolve()))
    spec = importlib.util.spec_from_file_location("handler", p)
    if spec is None or spec.loader is None:
        raise ImportError(f"handler {path!r}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules["handler"] = module
    spec.loader.exec_module(module)
    handle = getattr(module, "handle", None)
    if not callable(handle):
        raise ImportError(f"handler {path!r} has no function handle(event, context)")
    return handle


def error_response(status: int, message: str) -> Response:
    return Response(status, {"Content-Type": "text/plain; charset=utf-8"}, (message + "\n").encode())


# The header every runtime adds: seconds spent inside handle(), the seed's execution time t_ex
# (the request-reply time t_rr minus it is what the runtime, watchdog and network added).
HANDLER_SECONDS = "X-Handler-Seconds"


class ExecTimeout(BaseException):
    """Raised into a handler past its exec timeout (BaseException: a handler's own
    ``except Exception`` does not swallow it)."""


def _alarm(signum: int, frame: object) -> None:
    raise ExecTimeout


def call(handle: Handler, event: Event, context: Context, exec_timeout: float = 0) -> Response:
    """Calls the handler; an exception becomes a 500 whose body names it. With exec_timeout
    (seconds, > 0; main thread only) a handler still running after it is interrupted and
    answered 504; Python code stops at once, C code (a pandas call) when it returns. The
    response carries the handler's own time in HANDLER_SECONDS."""
    start = time.perf_counter()
    old = None
    if exec_timeout > 0:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, exec_timeout)
    try:
        try:
            res = handle(event, context)
        finally:
            if old is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
    except ExecTimeout:
        resp = error_response(504, f"handler exceeded its exec timeout of {exec_timeout:g}s")
    except Exception as e:  # the handler's failure is the caller's answer, not the server's end
        resp = error_response(500, f"handler raised {type(e).__name__}: {e}")
    else:
        resp = to_response(res)
    resp.headers[HANDLER_SECONDS] = f"{time.perf_counter() - start:.6f}"
    return resp


def to_response(res: Any) -> Response:
    """Normalizes what a handler returned (see the module doc)."""
    if isinstance(res, (str, bytes)):
        res = {"body": res}
    if res is None:
        res = {}
    if not isinstance(res, dict):
        return error_response(
            500, f"handler returned {type(res).__name__}: want a dict with statusCode, body, headers"
        )
    headers = {str(k): str(v) for k, v in (res.get("headers") or {}).items()}
    body = res.get("body", b"")
    if isinstance(body, (dict, list)):
        body = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    elif isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, bytes):
        body = str(body).encode()
    try:
        status = int(res.get("statusCode", 200))
    except (TypeError, ValueError):
        return error_response(500, f"handler returned statusCode {res.get('statusCode')!r}: want an integer")
    if not 100 <= status <= 599:
        return error_response(500, f"handler returned statusCode {status}: want 100-599")
    return Response(status, headers, body)
