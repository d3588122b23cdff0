"""event.headers and event.query against the werkzeug types they stand in for: the same
requests, the same operations, the same results or the same kind of error."""

import json
import random
from typing import Any

import pytest
from werkzeug.datastructures import EnvironHeaders, ImmutableMultiDict
from werkzeug.exceptions import BadRequestKeyError as WerkzeugKeyError

from continuum_functions.request import BadRequestKeyError, Headers, Query, headers_environ, parse_query

NAMES = [
    "X-Custom",
    "x-custom",
    "X-CUSTOM",
    "Content-Type",
    "content-length",
    "Accept",
    "X-A-B",
    "X-1a",
    "X_Under",
]
PROBES = [
    "x-custom",
    "X-Custom",
    "x_custom",
    "content-type",
    "CONTENT_LENGTH",
    "accept",
    "x-a-b",
    "X-1A",
    "x-under",
    "missing",
    "HTTP_X_CUSTOM",
    "",
]


def outcome(f: Any) -> Any:
    """f's result, or the kind of error it raised (werkzeug's 400 KeyError and ours alike)."""
    try:
        r = f()
    except (BadRequestKeyError, WerkzeugKeyError):
        return "BadRequestKeyError"
    except KeyError:
        return "KeyError"
    except TypeError:
        return "TypeError"
    if hasattr(r, "__next__"):
        r = list(r)
    return r


def header_ops(h: Any) -> list[Any]:
    out: list[Any] = [
        outcome(lambda: list(h)),
        outcome(lambda: len(h)),
        outcome(lambda: dict(h)),
        outcome(lambda: list(h.keys())),
        outcome(lambda: list(h.keys(lower=True))),
        outcome(lambda: list(h.values())),
        outcome(lambda: list(h.items(lower=True))),
        outcome(lambda: h.to_wsgi_list()),
        outcome(lambda: str(h)),
        outcome(lambda: bool(h)),
        outcome(lambda: h[1]),
        outcome(h.copy),
    ]
    for p in PROBES:
        out += [
            outcome(lambda p=p: h[p]),
            outcome(lambda p=p: h.get(p)),
            outcome(lambda p=p: h.get(p, "d", type=int)),
            outcome(lambda p=p: p in h),
            outcome(lambda p=p: h.getlist(p)),
            outcome(lambda p=p: h.get_all(p)),
        ]
    out.append(outcome(lambda: h.__setitem__("X-New", "1")))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_headers_as_environ_headers(seed):
    rnd = random.Random(seed)
    pairs = [
        (rnd.choice(NAMES), rnd.choice(["1", "v", " spaced ", "", "text/plain", "12"]))
        for _ in range(rnd.randint(0, 8))
    ]
    env = headers_environ(pairs)
    assert header_ops(Headers(env)) == header_ops(EnvironHeaders(dict(env)))


QUERIES = [
    "",
    "a=1",
    "a=1&a=2",
    "a=1&b=&c",
    "a+b=c+d&a%20b=%41",
    "x=%FF%41&x=2",
    "n=5&n=x",
    "=v&k=",
    "a=1;b=2",
    "%zz=1",
]


def query_ops(q: Any) -> list[Any]:
    out: list[Any] = [
        outcome(lambda: dict(q)),
        outcome(lambda: json.dumps(q)),
        outcome(lambda: list(q)),
        outcome(lambda: len(q)),
        outcome(lambda: list(q.items())),
        outcome(lambda: list(q.items(multi=True))),
        outcome(lambda: list(q.values())),
        outcome(lambda: list(q.lists())),
        outcome(lambda: list(q.listvalues())),
        outcome(lambda: q.to_dict()),
        outcome(lambda: q.to_dict(flat=False)),
        outcome(lambda: isinstance(q, dict)),
        outcome(lambda: dict(q.copy())),
        outcome(lambda: q.__setitem__("k", "v")),
        outcome(lambda: q.pop("a")),
        outcome(lambda: q.setdefault("z", "1")),
    ]
    for k in ["a", "b", "c", "n", "x", "a b", "", "k", "missing", "a=1;b"]:
        out += [
            outcome(lambda k=k: q[k]),
            outcome(lambda k=k: q.get(k)),
            outcome(lambda k=k: q.get(k, -1, type=int)),
            outcome(lambda k=k: q.getlist(k)),
            outcome(lambda k=k: q.getlist(k, type=int)),
            outcome(lambda k=k: k in q),
        ]
    return out


@pytest.mark.parametrize("raw", QUERIES)
def test_query_as_request_args(raw):
    from werkzeug.test import EnvironBuilder
    from werkzeug.wrappers import Request

    want = Request(EnvironBuilder(query_string=raw).get_environ()).args
    assert isinstance(want, ImmutableMultiDict)
    ours = parse_query(raw)
    assert isinstance(ours, Query)
    assert query_ops(ours) == query_ops(want)
