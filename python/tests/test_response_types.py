"""What the runtimes make of a handler's return value, against what the template's own
index.py makes of it under Flask, in one process through Flask's test client: random return
values of every shape the contract has (docs/faas.md), the same status, headers and body."""

import collections
import datetime
import decimal
import http
import importlib
import random
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from continuum_functions.event import Event, Headers, call

TEMPLATE = Path(__file__).resolve().parent / "testdata" / "python3-http"


@pytest.fixture(scope="module")
def template() -> Any:
    """The template's Flask app, its handler returning whatever the test puts in ``returns``."""
    state: dict[str, Any] = {}
    handler = types.ModuleType("function.handler")
    handler.handle = lambda event, context: state["returns"]  # type: ignore[attr-defined]
    pkg = types.ModuleType("function")
    pkg.__path__ = []  # type: ignore[attr-defined]
    pkg.handler = handler  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in ("function", "function.handler", "index")}
    sys.modules["function"], sys.modules["function.handler"] = pkg, handler
    sys.path.insert(0, str(TEMPLATE))
    try:
        index = importlib.import_module("index")
        index.app.logger.disabled = True  # the tracebacks of the 500s are not the point here
        yield state, index.app.test_client(use_cookies=False)
    finally:
        sys.path.remove(str(TEMPLATE))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def scalar(rnd: random.Random) -> Any:
    return rnd.choice(["x", "é ☃", "", 0, 7, 2.5, True, None, b"\x00b", "<p>"])


def value(rnd: random.Random, depth: int = 0) -> Any:
    if depth > 1 or rnd.random() < 0.5:
        return scalar(rnd)
    if rnd.random() < 0.5:
        return [value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {rnd.choice(["b", "a", "é", "Z"]): value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}


def json_value(rnd: random.Random) -> Any:
    v = value(rnd)
    if isinstance(v, (bytes, float)) or (isinstance(v, list) and any(isinstance(x, bytes) for x in v)):
        return {"d": decimal.Decimal("1.10"), "t": datetime.date(2026, 11, 27), "u": uuid.UUID(int=7)}
    return v


def headers(rnd: random.Random) -> Any:
    names = ["X-A", "x-a", "Content-Type", "content-type", "X-B", "Set-Cookie"]
    values = ["1", "text/csv", "application/x-thing", 5, "a b"]
    pairs = [(rnd.choice(names), rnd.choice(values)) for _ in range(rnd.randint(0, 3))]
    return rnd.choice([dict(pairs), pairs, None, {"X-L": ["1", "2"]}, {}])


def status(rnd: random.Random) -> Any:
    return rnd.choice(
        [200, 201, 204, 404, 418, 500, 599, 999, "202", "203 Whatever", None, http.HTTPStatus.CREATED]
    )


def returned(rnd: random.Random) -> Any:
    kind = rnd.randrange(9)
    if kind < 4:  # the dict of the python3-http contract
        d: dict[str, Any] = {}
        if rnd.random() < 0.8:
            d["body"] = rnd.choice([value(rnd), json_value(rnd), collections.OrderedDict(a=1)])
        if rnd.random() < 0.6:
            d["statusCode"] = status(rnd)
        if rnd.random() < 0.6:
            d["headers"] = headers(rnd)
        return d
    if kind == 4:
        return rnd.choice(["plain", b"\x00raw", None, [1, "a"], 5])
    if kind == 5:
        return (rnd.choice(["t", b"b", {"k": 1}, [1]]), status(rnd))
    if kind == 6:
        h = headers(rnd)
        return (rnd.choice(["t", {"k": 1}]), h if isinstance(h, (dict, list)) else {})
    if kind == 7:
        return (rnd.choice(["t", {"k": 1}, [2]]), status(rnd), headers(rnd) or {})
    return rnd.choice([(1, 2, 3, 4), ("only",), collections.OrderedDict(body="sub")])


def normal(hs: Any) -> list[tuple[str, str]]:
    skip = {"content-length", "x-handler-seconds"}
    return sorted((k.lower(), v) for k, v in hs if k.lower() not in skip)


@pytest.mark.parametrize("seed", range(500))
def test_return_value_as_flask_makes_it(template, seed, capsys):
    state, client = template
    rnd = random.Random(seed)
    state["returns"] = returned(rnd)
    want = client.post("/p")
    got = call(lambda e, c: state["returns"], Event(headers=Headers({}), method="POST", path="/p"))
    capsys.readouterr()
    assert (got.status, normal(got.headers), got.body) == (
        want.status_code,
        normal(want.headers.items()),
        want.get_data(),
    ), f"handler returned {state['returns']!r}"
