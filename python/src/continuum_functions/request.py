"""The request as a python3-http handler sees it: werkzeug's types, rewritten.

Flask gives the template's handler ``request.headers`` (werkzeug's ``EnvironHeaders``, over
the WSGI environ Waitress builds) and ``request.args`` (an ``ImmutableMultiDict``).
:class:`Headers` and :class:`Query` behave as those do for everything a handler can do with
them (lookups, iteration, errors, immutability), and the helpers here parse a request the way
Waitress and werkzeug do. They are written here, not imported, so that a classic process per
request does not pay werkzeug's import (tens of milliseconds).
"""

import codecs
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote_to_bytes


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

    # Overriding __iter__ (even with dict's own) makes dict(q) go through keys() and [] instead
    # of copying the lists underneath: dict(q) gives first values, as werkzeug's does.
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
