"""What a python3-http handler receives and returns, as OpenFaaS' template defines it.

``handle(event, context)`` gets an :class:`Event` and a :class:`Context` and its answer is
formatted exactly as the template's ``index.py`` does under Flask (docs/faas.md, "The
python3-http contract", lists every rule). In short:

- ``event.body`` is bytes; ``event.headers`` behaves as werkzeug's ``EnvironHeaders``
  (case-insensitive, a repeated header one value joined by ", ", iteration yields
  ``(name, value)`` pairs); ``event.query`` as its ``ImmutableMultiDict`` (a dict whose ``[]``
  and ``get`` give a parameter's first value, ``getlist`` all; ``[]`` on a missing one is a
  400); ``event.method``; ``event.path`` percent-decoded (:mod:`continuum_functions.request`).
- A returned dict gives ``statusCode`` (default 200), ``body`` (a dict is sent as Flask's
  ``jsonify`` sends it; anything else as ``str(body)``, text/html) and ``headers``. Anything
  else is answered as Flask answers a view's return value: None an empty 200, str/bytes a
  text/html 200, a list JSON, a tuple (body, status[, headers])
  (:mod:`continuum_functions.response`).
- A handler that raises gets werkzeug's 500 page, and its traceback goes to stderr, the
  function's log.

The runtimes build the event from what they parsed and call :func:`call`; nothing here
imports Flask or werkzeug, so a classic process per request does not pay for their imports.
"""

import importlib.util
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from continuum_functions.request import (
    BadRequestKeyError,
    Headers,
    Query,
    env_key,
    headers_environ,
    parse_query,
    request_path,
)
from continuum_functions.response import (
    ALLOW,
    PAGE_400,
    PAGE_405,
    PAGE_500,
    ROUTED,
    TEXT_HTML,
    WAITRESS_500,
    BadReturn,
    NotLatin1,
    Response,
    error_response,
    to_response,
)

__all__ = [
    "HANDLER_SECONDS",
    "PAGE_500",
    "BadRequestKeyError",
    "Context",
    "Event",
    "Handler",
    "Headers",
    "Query",
    "Response",
    "call",
    "env_key",
    "error_response",
    "headers_environ",
    "load_handler",
    "parse_query",
    "request_path",
    "to_response",
]

Handler = Callable[["Event", "Context"], Any]

# The header every runtime adds: seconds spent inside handle(), the seed's execution time t_ex
# (the request-reply time t_rr minus it is what the runtime, watchdog and network added).
HANDLER_SECONDS = "X-Handler-Seconds"


@dataclass
class Event:
    body: bytes = b""
    headers: Headers = field(default_factory=lambda: Headers({}))
    method: str = "GET"
    query: Query = field(default_factory=Query)
    path: str = "/"


class Context:
    """What the template's Context has: the hostname, from $HOSTNAME (default localhost), read
    for every request as the template does."""

    __slots__ = ("hostname",)

    def __init__(self) -> None:
        self.hostname = os.getenv("HOSTNAME", "localhost")


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


def internal_error(event: Event, reason: str | None = None) -> Response:
    """werkzeug's 500 page; what went wrong goes to stderr (the function's log) as Flask logs
    it: the current exception's traceback, or reason."""
    import traceback  # only when something failed: a classic process does not pay for it

    when = time.strftime("%Y-%m-%d %H:%M:%S")
    detail = reason + "\n" if reason else traceback.format_exc()
    sys.stderr.write(f"[{when}] ERROR in handler: Exception on {event.path} [{event.method}]\n{detail}")
    sys.stderr.flush()
    return Response(500, [("Content-Type", TEXT_HTML)], PAGE_500)


class ExecTimeout(BaseException):
    """Raised into a handler past its exec timeout (BaseException: a handler's own
    ``except Exception`` does not swallow it)."""


def _alarm(signum: int, frame: object) -> None:
    raise ExecTimeout


def call(handle: Handler, event: Event, exec_timeout: float = 0) -> Response:
    """Answers one request as the template under Flask does: OPTIONS and unrouted methods
    without the handler, else the handler's return value formatted (:func:`to_response`), a
    missed query lookup 400, any other exception 500 with the traceback logged. With
    exec_timeout (seconds, > 0; main thread only) a handler still running after it is
    interrupted and answered 504; Python code stops at once, C code (a pandas call) when it
    returns. The response carries the handler's own time in HANDLER_SECONDS."""
    if event.method not in ROUTED:
        if event.method == "OPTIONS":
            return Response(200, [("Content-Type", TEXT_HTML), ("Allow", ALLOW)], b"")
        return Response(405, [("Content-Type", TEXT_HTML), ("Allow", ALLOW)], PAGE_405)
    start = time.perf_counter()
    old = None
    if exec_timeout > 0:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, exec_timeout)
    try:
        try:
            resp = to_response(handle(event, Context()))
        finally:
            if old is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
    except ExecTimeout:
        resp = error_response(504, f"handler exceeded its exec timeout of {exec_timeout:g}s")
    except BadRequestKeyError:
        resp = Response(400, [("Content-Type", TEXT_HTML)], PAGE_400)
    except BadReturn as e:
        resp = internal_error(event, str(e))
    except NotLatin1 as e:
        sys.stderr.write(f"Exception while serving {event.path}: {e}\n")
        sys.stderr.flush()
        resp = Response(500, [("Content-Type", "text/plain; charset=utf-8")], WAITRESS_500)
    except Exception as e:  # the handler's failure is the caller's answer, not the server's end
        resp = _http_exception(e) or internal_error(event)
    if resp.status < 200 or resp.status in (204, 304):
        resp.body = b""  # werkzeug sends no body with these, whatever the handler gave
    resp.headers.append((HANDLER_SECONDS, f"{time.perf_counter() - start:.6f}"))
    return resp


def _http_exception(e: Exception) -> Response | None:
    """A werkzeug HTTPException the handler raised (``abort(404)``, ``NotFound()``) is answered
    with its own page, as Flask does; werkzeug is only touched if the handler imported it."""
    if not type(e).__module__.startswith("werkzeug") or not hasattr(e, "get_response"):
        return None
    r = e.get_response()
    return Response(
        r.status_code, [(k, v) for k, v in r.headers if k.lower() != "content-length"], r.get_data()
    )
