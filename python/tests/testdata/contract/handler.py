"""The contract table's handler: one python3-http handler whose answer depends on the first
segment of the path, so each runtime (and the template's reference server) starts once and
answers every case of cases.json. Each case is one rule of docs/faas.md's "The python3-http
contract"."""

import datetime
import decimal
import json
import uuid
from dataclasses import dataclass
from typing import Any


@dataclass
class Point:
    x: int
    y: int


PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2))


def json_types(event: Any) -> dict[str, Any]:
    """The types Flask's JSON provider adds to json's."""
    return {
        "body": {
            "date": datetime.date(2026, 1, 2),
            "naive": datetime.datetime(2026, 1, 2, 3, 4, 5),
            "aware": datetime.datetime(
                2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
            ),
            "decimal": decimal.Decimal("1.50"),
            "uuid": uuid.UUID(int=1),
            "dataclass": Point(1, 2),
        }
    }


def headers(event: Any) -> dict[str, Any]:
    h = event.headers
    return {
        "lower": h.get("x-test-case"),
        "upper": h.get("X-TEST-CASE"),
        "index": h["X-Test-Case"],
        "in": ["x-test-case" in h, "X-Absent" in h],
        "underscore": h.get("x_test_case"),
        "default": h.get("x-absent", "fallback"),
        "typed": h.get("x-test-number", type=int),
        "repeated": h.get("X-Test-Rep"),
        "getlist": h.getlist("x-test-rep"),
        "content_type": h.get("content-type"),
        "pairs": [list(p) for p in h if p[0].startswith("X-Test")],
        "dict": {k: v for k, v in dict(h).items() if k.startswith("X-Test")},
        "keys_lower": [k for k in h.keys(lower=True) if k.startswith("x-test")],
        "underscored": [h.get("X-Test-Under"), h.get("X_Test_Under")],
        "sized": len(h) > 0,
    }


def query(event: Any) -> dict[str, Any]:
    q = event.query
    return {
        "get": q.get("a"),
        "index": q["a"],
        "getlist": q.getlist("a"),
        "dict": dict(q),
        "to_dict": q.to_dict(),
        "flat_false": q.to_dict(flat=False),
        "items": list(q.items()),
        "multi": list(q.items(multi=True)),
        "keys": list(q),
        "values": list(q.values()),
        "json": json.dumps(q),
        "blank": q.get("b"),
        "typed": q.get("n", type=int),
        "bad_type": q.get("a", "dflt", type=int),
        "plus": q.get("s"),
        "not_utf8": q.get("u"),
        "len": len(q),
        "in": ["a" in q, "zz" in q],
        "isdict": isinstance(q, dict),
    }


def immutable(event: Any) -> dict[str, Any]:
    out = {}
    for name, obj in (("headers", event.headers), ("query", event.query)):
        try:
            obj["X-New"] = "1"
            out[name] = "mutable"
        except TypeError:
            out[name] = "TypeError"
    return {"body": out}


def not_found() -> None:
    """A werkzeug HTTP error, as Flask's abort(404) raises: answered with its own page."""
    from werkzeug.exceptions import NotFound

    raise NotFound()


def boom() -> None:
    raise RuntimeError("contract table: this handler raises")


class Custom(dict):
    """A dict subclass: the template's `type(resp) is dict` test does not take it."""


CASES = {
    "no-status": lambda e: {"body": "no statusCode"},
    "dict-body": lambda e: {"statusCode": 201, "body": {"b": [1, 2], "a": "é", "n": None, "t": True}},
    "str-body": lambda e: {"statusCode": 200, "body": "héllo ☃"},
    "list-body": lambda e: {"body": [1, "a", None]},
    "bytes-body": lambda e: {"body": b"\x00\xffraw"},
    "none-body": lambda e: {"body": None},
    "int-body": lambda e: {"body": 42},
    "empty-dict": lambda e: {},
    "status-only": lambda e: {"statusCode": 404},
    "status-str": lambda e: {"statusCode": "201", "body": "made"},
    "status-none": lambda e: {"statusCode": None, "body": "x"},
    "custom-headers": lambda e: {
        "statusCode": 202,
        "body": "a,b\n",
        "headers": {"Content-Type": "text/csv", "X-Custom": "yes", "X-Number": 7},
    },
    "dict-body-content-type": lambda e: {
        "body": {"a": 1},
        "headers": {"Content-Type": "application/vnd.test+json", "X-Dict": "1"},
    },
    "header-pairs": lambda e: {"body": "pairs", "headers": [("X-Rep", "1"), ("X-Rep", "2")]},
    "header-name-case": lambda e: {
        "body": "case",
        "headers": {"x-lower-name": "1", "X-UPPER": "2", "content-TYPE": "text/x"},
    },
    "header-pairs-json": lambda e: {"body": {"k": "v"}, "headers": [("X-Rep", "1"), ("X-Rep", "2")]},
    "header-list-value": lambda e: {"body": "lv", "headers": {"X-Many": ["1", "2"]}},
    "headers-none": lambda e: {"body": "x", "headers": None},
    "header-newline": lambda e: {"body": "x", "headers": {"X-Bad": "a\r\nInjected: 1"}},
    "json-types": json_types,
    "header-latin1": lambda e: {"body": "x", "headers": {"X-Latin": "café"}},
    "header-not-latin1": lambda e: {"body": "x", "headers": {"X-Snow": "☃"}},
    "json-unserializable": lambda e: {"body": {"o": object()}},
    "return-str": lambda e: "just a string",
    "return-bytes": lambda e: b"\x00just bytes",
    "return-none": lambda e: None,
    "return-list": lambda e: [1, {"b": 2, "a": 1}],
    "return-tuple": lambda e: ("tupled", 203),
    "return-tuple-headers": lambda e: ("th", {"X-T": "1"}),
    "return-tuple3": lambda e: ({"z": 1, "y": [2]}, 206, {"X-T": "3"}),
    "return-int": lambda e: 7,
    "return-dict-subclass": lambda e: Custom(body="sub"),
    "raise": lambda e: boom(),
    "http-error": lambda e: not_found(),
    "headers": lambda e: {"body": headers(e)},
    "header-missing": lambda e: {"body": e.headers["X-Absent"]},
    "query": lambda e: {"body": query(e)},
    "query-missing": lambda e: {"body": e.query["zz"]},
    "body": lambda e: {"body": {"type": type(e.body).__name__, "len": len(e.body), "hex": e.body.hex()}},
    "length": lambda e: {
        "body": {
            "content_length": e.headers.get("Content-Length"),
            "transfer_encoding": e.headers.get("Transfer-Encoding"),
            "len": len(e.body),
        }
    },
    "echo": lambda e: {"body": {"path": e.path, "method": e.method, "query": dict(e.query)}},
    "immutable": immutable,
}


def handle(event: Any, context: Any) -> Any:
    case = event.path.strip("/").split("/")[0] or "echo"
    return CASES[case](event)
