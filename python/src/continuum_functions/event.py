"""What a python3-http handler receives and returns, as OpenFaaS' template defines it.

``handle(event, context)`` gets an :class:`Event` and a :class:`Context` and its answer is
formatted exactly as the template's ``index.py`` does under Flask (docs/faas.md, "The
python3-http contract", lists every rule). In short:

- ``event.body`` is bytes; ``event.headers`` behaves as werkzeug's ``EnvironHeaders``
  (case-insensitive, a repeated header one value joined by ", ", iteration yields
  ``(name, value)`` pairs); ``event.query`` as its ``ImmutableMultiDict`` (a dict whose ``[]``
  and ``get`` give a parameter's first value, ``getlist`` all; ``[]`` on a missing one is a
  400); ``event.method``; ``event.path`` percent-decoded.
- A returned dict gives ``statusCode`` (default 200), ``body`` (a dict is sent as Flask's
  ``jsonify`` sends it; anything else as ``str(body)``, text/html) and ``headers``. Anything
  else is answered as Flask answers a view's return value: None an empty 200, str/bytes a
  text/html 200, a list JSON, a tuple (body, status[, headers]).
- A handler that raises gets werkzeug's 500 page, and its traceback goes to stderr, the
  function's log.

The runtimes build the event from what they parsed and call :func:`call`; nothing here
imports Flask or werkzeug, so a classic process per request does not pay for their imports.
"""

import codecs
import importlib.util
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote_to_bytes

Handler = Callable[["Event", "Context"], Any]


def _immutable(self: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__!r} objects are immutable")


class BadRequestKeyError(KeyError):
    """A missing query parameter looked up with ``[]`` (werkzeug's error of the same name, a
    KeyError): unless the handler catches it, the answer is a 400, as under Flask."""


class Headers:
    """``event.headers``: the request's headers as werkzeug's ``EnvironHeaders`` presents them.

    It wraps a WSGI-style dict (``CONTENT_TYPE``, ``CONTENT_LENGTH``, ``HTTP_<NAME>``), built
    by :func:`headers_environ` as Waitress builds its environ, so lookups, iteration order and
    the names seen are the template's: ``h["x-custom"]``, ``h.get("X-CUSTOM")`` and
    ``"x_custom" in h`` all find ``X-Custom``; ``h["missing"]`` raises KeyError (a 500 if not
    caught); iterating yields ``(Title-Cased-Name, value)``; ``dict(h)`` maps names to values.
    """

    __slots__ = ("environ",)

    def __init__(self, environ: dict[str, str]) -> None:
        self.environ = environ

    def _get_key(self, key: str) -> str:
        if not isinstance(key, str):
            raise BadRequestKeyError(key)
        key = key.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            return self.environ[key]
        return self.environ[f"HTTP_{key}"]

    def __getitem__(self, key: str) -> str:
        return self._get_key(key)

    def get(self, key: str, default: Any = None, type: Callable[[str], Any] | None = None) -> Any:
        try:
            rv = self._get_key(key)
        except KeyError:
            return default
        if type is None:
            return rv
        try:
            return type(rv)
        except ValueError:
            return default

    def getlist(self, key: str, type: Callable[[str], Any] | None = None) -> list[Any]:
        ikey = key.lower()
        out = []
        for k, v in self:
            if k.lower() == ikey:
                if type is None:
                    out.append(v)
                    continue
                try:
                    out.append(type(v))
                except ValueError:
                    continue
        return out

    def get_all(self, name: str) -> list[str]:
        return self.getlist(name)

    def __contains__(self, key: object) -> bool:
        try:
            self._get_key(key)  # type: ignore[arg-type]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for key, value in self.environ.items():
            if key.startswith("HTTP_") and key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                yield key[5:].replace("_", "-").title(), value
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
                yield key.replace("_", "-").title(), value

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def items(self, lower: bool = False) -> Iterator[tuple[str, str]]:
        for key, value in self:
            yield (key.lower() if lower else key), value

    def keys(self, lower: bool = False) -> Iterator[str]:
        for key, _ in self.items(lower):
            yield key

    def values(self) -> Iterator[str]:
        for _, value in self:
            yield value

    def to_wsgi_list(self) -> list[tuple[str, str]]:
        return list(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return self.environ is other.environ

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return "\r\n".join([f"{k}: {v}" for k, v in self] + ["\r\n"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    def copy(self) -> NoReturn:
        raise TypeError(f"cannot create {type(self).__name__!r} copies")

    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        _immutable(self)

    def __delitem__(self, key: Any) -> NoReturn:
        _immutable(self)

    def set(self, *args: Any, **kwargs: Any) -> NoReturn:
        _immutable(self)

    add = setlist = add_header = remove = extend = update = insert = pop = popitem = setdefault = set


def headers_environ(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The WSGI environ entries Waitress makes of a request's header lines, in arrival order: a
    name with an underscore is dropped (it would be indistinguishable from a dash, so a client
    could pose as a header a proxy set), values are stripped of spaces and tabs, and a repeated
    header becomes one value joined by ", "."""
    env: dict[str, str] = {}
    for name, value in pairs:
        key = env_key(name)
        if not key:
            continue
        value = value.strip(" \t")
        if key in env:
            env[key] += ", " + value
        else:
            env[key] = value
    return env


def env_key(name: str) -> str:
    """The WSGI environ key of a header name ("" for a name Waitress drops)."""
    if "_" in name:
        return ""
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key


class Query(dict):
    """``event.query``: the query parameters as Flask's ``request.args`` (werkzeug's
    ``ImmutableMultiDict``): a dict of lists underneath whose ``[]``, ``get``, ``values``,
    ``items`` and ``dict(q)`` give each parameter's first value, ``getlist`` and
    ``items(multi=True)`` all of them. ``q["missing"]`` raises :class:`BadRequestKeyError`."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        lists: dict[str, list[str]] = {}
        for k, v in pairs:
            lists.setdefault(k, []).append(v)
        super().__init__(lists)

    def __iter__(self) -> Iterator[str]:
        return super().__iter__()

    def __getitem__(self, key: str) -> str:
        if key in self:
            lst = super().__getitem__(key)
            if lst:
                return lst[0]
        raise BadRequestKeyError(key)

    def get(self, key: str, default: Any = None, type: Callable[[str], Any] | None = None) -> Any:
        try:
            rv = self[key]
        except KeyError:
            return default
        if type is None:
            return rv
        try:
            return type(rv)
        except (ValueError, TypeError):
            return default

    def getlist(self, key: str, type: Callable[[str], Any] | None = None) -> list[Any]:
        try:
            rv = super().__getitem__(key)
        except KeyError:
            return []
        if type is None:
            return list(rv)
        out = []
        for item in rv:
            try:
                out.append(type(item))
            except (ValueError, TypeError):
                pass
        return out

    def items(self, multi: bool = False) -> Iterator[tuple[str, str]]:  # type: ignore[override]
        for key, values in super().items():
            if multi:
                for value in values:
                    yield key, value
            else:
                yield key, values[0]

    def lists(self) -> Iterator[tuple[str, list[str]]]:
        for key, values in super().items():
            yield key, list(values)

    def values(self) -> Iterator[str]:  # type: ignore[override]
        for values in super().values():
            yield values[0]

    def listvalues(self) -> Iterable[list[str]]:
        return super().values()

    def to_dict(self, flat: bool = True) -> dict[str, Any]:
        return dict(self.items()) if flat else dict(self.lists())

    def copy(self) -> "Query":
        q = Query()
        dict.update(q, {k: list(v) for k, v in self.lists()})
        return q

    def __copy__(self) -> "Query":
        return self

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items(multi=True)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.items(multi=True))!r})"

    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        _immutable(self)

    def __delitem__(self, key: Any) -> NoReturn:
        _immutable(self)

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[override,misc]
        _immutable(self)

    def setdefault(self, *args: Any) -> NoReturn:  # type: ignore[override]
        _immutable(self)

    add = setlist = setlistdefault = update = pop = popitem = poplist = popitemlist = clear = setdefault


def _keep_percent(err: UnicodeError) -> tuple[str, int]:
    """werkzeug's decoding rule for query strings: bytes that are not UTF-8 stay percent-encoded."""
    assert isinstance(err, UnicodeDecodeError)
    bad = err.object[err.start : err.end]
    return "".join(f"%{b:02X}" for b in bad), err.end


codecs.register_error("continuum.keep_percent", _keep_percent)


def parse_query(raw: str) -> Query:
    """The query string (as the request line had it) as Flask's request.args: blank values
    kept, ``+`` a space, percent-escapes that are not UTF-8 left as they were."""
    if not raw:
        return Query()
    return Query(parse_qsl(raw, keep_blank_values=True, errors="continuum.keep_percent"))


def request_path(raw: str) -> str:
    """The request target's path as Flask's request.path: percent-decoded as UTF-8 (bad bytes
    replaced), leading slashes collapsed to one."""
    path = unquote_to_bytes(raw).decode("utf-8", "replace") if "%" in raw else raw
    return "/" + path.lstrip("/")


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


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


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
    """An answer of the runtime itself (bad request, timeout), not of the handler."""
    return Response(status, [("Content-Type", "text/plain; charset=utf-8")], (message + "\n").encode())


# The header every runtime adds: seconds spent inside handle(), the seed's execution time t_ex
# (the request-reply time t_rr minus it is what the runtime, watchdog and network added).
HANDLER_SECONDS = "X-Handler-Seconds"

TEXT_HTML = "text/html; charset=utf-8"


def _werkzeug_page(status: int, title: str, text: str) -> bytes:
    return (
        f"<!doctype html>\n<html lang=en>\n<title>{status} {title}</title>\n<h1>{title}</h1>\n<p>{text}</p>\n"
    ).encode()


# The pages Flask answers with when a handler raises, a query lookup misses, or a method is not
# routed (werkzeug's InternalServerError, BadRequest and MethodNotAllowed, byte for byte).
PAGE_500 = _werkzeug_page(
    500,
    "Internal Server Error",
    "The server encountered an internal error and was unable to complete your request. Either the "
    "server is overloaded or there is an error in the application.",
)
PAGE_400 = _werkzeug_page(
    400, "Bad Request", "The browser (or proxy) sent a request that this server could not understand."
)
PAGE_405 = _werkzeug_page(405, "Method Not Allowed", "The method is not allowed for the requested URL.")

# The template routes these methods to the handler; Flask adds HEAD (the handler runs, the body
# is not sent) and answers OPTIONS itself.
ROUTED = frozenset({"GET", "PUT", "POST", "PATCH", "DELETE", "HEAD"})
ALLOW = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"


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


class BadReturn(Exception):
    """The handler returned something Flask cannot turn into a response (a 500, logged)."""


class _JSON:
    """A body jsonify made: Flask's JSON response, whose status and headers come after."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def to_response(res: Any) -> Response:
    """Formats what a handler returned as the template's format_response, then Flask's
    make_response, do (docs/faas.md lists the rules)."""
    if res is None:
        return _make_response(("", 200))
    if type(res) is dict:  # the template's test: a dict subclass takes Flask's path below
        status = res["statusCode"] if "statusCode" in res else 200
        if "body" not in res:
            body: Any = ""
        elif type(res["body"]) is dict:
            body = _JSON(res["body"])
        else:
            body = str(res["body"])
        if "headers" not in res:
            headers: Any = []
        elif type(res["headers"]) is dict:
            headers = list(res["headers"].items())
        else:
            headers = res["headers"]
        return _make_response((body, status, headers))
    return _make_response(res)


def _make_response(rv: Any) -> Response:
    """Flask's make_response for the values a handler can produce without Flask objects."""
    status = headers = None
    if isinstance(rv, tuple):
        if len(rv) == 3:
            rv, status, headers = rv
        elif len(rv) == 2:
            if isinstance(rv[1], (dict, tuple, list)) or hasattr(rv[1], "to_wsgi_list"):
                rv, headers = rv
            else:
                rv, status = rv
        else:
            raise BadReturn(
                f"handler returned a tuple of {len(rv)}: want (body, status, headers), (body, status) "
                "or (body, headers)"
            )
    if rv is None:
        raise BadReturn("handler returned a None body: want a str, bytes, dict or list")
    if isinstance(rv, (str, bytes, bytearray)):
        out = _header_list(headers)
        if not any(k.lower() == "content-type" for k, _ in out):
            out.append(("Content-Type", TEXT_HTML))
        body = rv.encode() if isinstance(rv, str) else bytes(rv)
        return Response(_status(status), out, body)
    if isinstance(rv, (dict, list)):
        rv = _JSON(rv)
    if not isinstance(rv, _JSON):
        raise BadReturn(
            f"handler returned {type(rv).__name__}: want a dict with statusCode, body and headers, or a "
            "str, bytes, list, tuple or None (Flask's view return values)"
        )
    out = [("Content-Type", "application/json")]
    if headers:
        _update(out, _header_list(headers))
    return Response(_status(status), out, _dumps(rv.obj))


def _dumps(obj: Any) -> bytes:
    """Flask's jsonify outside debug mode: sorted keys, ASCII, no spaces, a newline."""
    try:
        return (
            json.dumps(obj, default=_json_default, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
            + "\n"
        ).encode()
    except (TypeError, ValueError) as e:
        raise BadReturn(f"handler's JSON body cannot be encoded: {e}") from None


def _json_default(o: Any) -> Any:
    """The types Flask's JSON provider adds to json's: dates, decimals, UUIDs, dataclasses,
    objects with __html__."""
    import dataclasses
    import datetime
    import decimal
    import uuid
    from email.utils import format_datetime

    if isinstance(o, datetime.date):
        if not isinstance(o, datetime.datetime):
            o = datetime.datetime.combine(o, datetime.time(), datetime.UTC)
        elif o.tzinfo is None:
            o = o.replace(tzinfo=datetime.UTC)
        else:
            o = o.astimezone(datetime.UTC)
        return format_datetime(o, usegmt=True)
    if isinstance(o, (decimal.Decimal, uuid.UUID)):
        return str(o)
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if hasattr(o, "__html__"):
        return str(o.__html__())
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _header_list(headers: Any) -> list[tuple[str, str]]:
    """Response headers as werkzeug's Headers takes them: a dict (a list value gives the header
    once per item), or (name, value) pairs; values become str, and a value with a line break is
    refused (a 500), so no handler can inject header lines."""
    if not headers:
        return []
    if isinstance(headers, dict):
        pairs: list[tuple[Any, Any]] = []
        for k, v in headers.items():
            if isinstance(v, (list, tuple)):
                pairs.extend((k, x) for x in v)
            else:
                pairs.append((k, v))
    elif hasattr(headers, "to_wsgi_list"):
        pairs = list(headers.to_wsgi_list())
    else:
        try:
            pairs = [(k, v) for k, v in headers]
        except (TypeError, ValueError):
            raise BadReturn(
                f"handler returned headers {headers!r}: want a dict or (name, value) pairs"
            ) from None
    out = []
    for k, v in pairs:
        if type(k) is not str:
            k = str(k)
        if type(v) is not str:
            v = str(v)
        if _BAD_VALUE.search(v) is not None or _TOKEN.fullmatch(k) is None:
            raise BadReturn(f"handler returned header {k!r}: {v!r}: want a token name, no line break")
        if not v.isascii():
            try:
                v.encode("latin-1")
            except UnicodeEncodeError:
                raise NotLatin1(
                    f"handler returned header {k}: {v!r}: HTTP header values are latin-1"
                ) from None
        out.append((k, v))
    return out


class NotLatin1(Exception):
    """A response header value Waitress cannot write (it is not latin-1): Waitress answers the
    template's request with its own 500 page instead."""


# Waitress's answer when the application's response cannot be sent (generated by waitress, the
# server of the template's image), byte for byte.
WAITRESS_500 = (
    b"Internal Server Error\r\n\r\nThe server encountered an unexpected internal server error\r\n\r\n"
    b"(generated by waitress)"
)


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\0]")


def _update(out: list[tuple[str, str]], new: list[tuple[str, str]]) -> None:
    """werkzeug's Headers.update with pairs: each name's value replaces what was there."""
    for k, v in new:
        lk = k.lower()
        first = next((i for i, (n, _) in enumerate(out) if n.lower() == lk), None)
        if first is None:
            out.append((k, v))
            continue
        out[first] = (k, v)
        out[first + 1 :] = [(n, x) for n, x in out[first + 1 :] if n.lower() != lk]


def _status(status: Any) -> int:
    """The status code werkzeug makes of a statusCode: an int (an IntEnum such as HTTPStatus
    too), or a str starting with one ("201", "201 Created"); None is 200. Codes outside
    100-999 are refused (a 500): werkzeug would send a status line no client reads ("0 abc");
    what it cannot read at all (bytes, a float) is a 500 there too."""
    if type(status) is int and 100 <= status <= 999:
        return status
    if status is None:
        return 200
    code: Any = None
    if isinstance(status, int) and not isinstance(status, bool):
        code = int(status)
    elif isinstance(status, str) and status.strip():
        try:
            code = int(status.strip().partition(" ")[0])
        except ValueError:
            code = None
    if code is None or not 100 <= code <= 999:
        raise BadReturn(f"handler returned statusCode {status!r}: want an integer 100-999")
    return code
