"""The answer to a python3-http request: what the template's ``format_response`` and Flask's
``make_response`` make of a handler's return value (:func:`to_response`), and the pages
werkzeug and Waitress answer with when something fails, byte for byte."""

import json
import re
from dataclasses import dataclass
from typing import Any


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def error_response(status: int, message: str) -> Response:
    """An answer of the runtime itself (bad request, timeout), not of the handler."""
    return Response(status, [("Content-Type", "text/plain; charset=utf-8")], (message + "\n").encode())


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
        _update(out, headers)
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
        if k not in _TOKENS:
            if _TOKEN.fullmatch(k) is None:
                raise BadReturn(f"handler returned header name {k!r}: want a token (letters, digits, -)")
            if len(_TOKENS) >= 512:  # handlers use a few names over and over
                _TOKENS.clear()
            _TOKENS.add(k)
        if "\n" in v or "\r" in v or "\0" in v:
            raise BadReturn(f"handler returned header {k}: {v!r}: a value with a line break")
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
_TOKENS: set[str] = set()  # header names found to be tokens


def _update(out: list[tuple[str, str]], headers: Any) -> None:
    """werkzeug's Headers.update: each name given replaces what was there, with all the values
    a dict gives it in a list, or its last value among (name, value) pairs."""
    if isinstance(headers, dict):
        groups = [(k, list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in headers.items()]
    elif hasattr(headers, "to_wsgi_list"):
        merged: dict[str, tuple[str, list[Any]]] = {}
        for k, v in headers.to_wsgi_list():
            merged.setdefault(str(k).lower(), (k, []))[1].append(v)
        groups = list(merged.values())
    else:
        groups = [(k, [v]) for k, v in _header_list(headers)]
    for k, values in groups:
        new = _header_list([(k, v) for v in values])
        lk = str(k).lower()
        out[:] = [(n, x) for n, x in out if n.lower() != lk] + new


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
