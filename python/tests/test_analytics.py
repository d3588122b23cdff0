import json
import random

import pytest

from conftest import FUNCTIONS
from continuum_functions.event import Context, Event, load_handler

analytics = load_handler(str(FUNCTIONS / "iot-analytics"))
module = __import__("sys").modules["handler"]


def msg(sensor: str, kind: str, unit: str, value: object) -> dict:
    return {"sensor_id": sensor, "name": f"{kind}-{sensor}", "type": kind, "unit": unit, "value": value}


def run(batch: object) -> tuple[int, dict]:
    body = batch if isinstance(batch, (bytes, str)) else json.dumps(batch)
    res = analytics(Event(body=body.encode() if isinstance(body, str) else body, method="POST"), Context())
    return res["statusCode"], res["body"]


def test_aggregates_per_type():
    status, out = run(
        [
            msg("t1", "temperature", "°C", 20.0),
            msg("t2", "temperature", "°C", 22.0),
            msg("t1", "temperature", "°C", 24),
            msg("h1", "humidity", "%", 55.5),
        ]
    )
    assert status == 200
    assert out["received"] == 4 and out["valid"] == 4 and out["invalid"] == {}
    t = out["by_type"]["temperature"]
    assert t == {"unit": "°C", "count": 3, "sensors": 2, "mean": 22.0, "min": 20.0, "max": 24.0, "std": 2.0}
    assert out["by_type"]["humidity"]["std"] == 0.0  # one message: no spread, not NaN
    assert list(out["by_type"]) == ["humidity", "temperature"]


def test_invalid_messages_counted_by_reason():
    status, out = run(
        [
            msg("t1", "temperature", "°C", 21.0),
            {"sensor_id": "x", "type": "temperature", "unit": "°C", "value": 1.0},  # no name
            msg("r1", "radiation", "Sv", 0.1),
            msg("t2", "temperature", "°C", "hot"),
            msg("t3", "temperature", "°C", True),
            msg("t4", "temperature", "K", 290.0),
            msg("t5", "temperature", "°C", 500.0),
            msg("p1", "pressure", "hPa", None),
        ]
    )
    assert status == 200
    assert out["received"] == 8 and out["valid"] == 1
    assert out["invalid"] == {
        "missing field": 2,
        "unknown type": 1,
        "value not a number": 2,
        "wrong unit": 1,
        "value out of range": 1,
    }
    assert out["by_type"]["temperature"]["count"] == 1


def test_all_invalid_gives_no_aggregates():
    status, out = run([msg("r1", "radiation", "Sv", 0.1)])
    assert status == 200 and out["valid"] == 0 and out["by_type"] == {}


def test_empty_batch():
    assert run([]) == (200, {"received": 0, "valid": 0, "invalid": {}, "by_type": {}})


@pytest.mark.parametrize(
    ("body", "want"),
    [
        (b"{not json", "body is not JSON"),
        (b'{"a": 1}', "body is a JSON object: want an array"),
        (
            b"[1, 2]",
            "message 0 is a JSON number: want an object with fields sensor_id, name, type, unit, value",
        ),
        (b"\xff\xfe", "body is not JSON"),
    ],
)
def test_bad_batches_are_400_with_the_reason(body, want):
    status, out = run(body)
    assert status == 400
    assert want in out["error"]


def test_large_batch_matches_a_plain_python_aggregate():
    rng = random.Random(7)
    types = list(module.SENSOR_TYPES.items())
    batch = []
    for i in range(20000):
        kind, (unit, lo, hi) = types[i % len(types)]
        batch.append(msg(f"s{i % 1000}", kind, unit, rng.uniform(lo, hi)))
    status, out = run(batch)
    assert status == 200 and out["valid"] == 20000
    for kind, (_unit, _lo, _hi) in types:
        values = [m["value"] for m in batch if m["type"] == kind]
        agg = out["by_type"][kind]
        assert agg["count"] == len(values)
        assert agg["mean"] == pytest.approx(sum(values) / len(values))
        assert agg["min"] == min(values) and agg["max"] == max(values)
