"""Real-time IoT analytics (seeds/001 Fig. 2) as an OpenFaaS python3-http function.

One invocation runs the seed's workflow on one batch from an IoT gateway's adaptor:
collection (the JSON array of sensor messages) -> validation (fields present, a known sensor
type, its unit, a numeric value in the type's physical range) -> aggregation per sensor type
(count, sensors, mean, min, max, standard deviation) -> the result, as JSON.

A message is {"sensor_id", "name", "type", "unit", "value"}. A body that is not a JSON array of
objects is answered 400 with what was wrong; invalid messages inside a good batch are counted
by reason and left out of the aggregates, as a stream processor must not fail a whole batch for
one bad reading.

The file depends only on pandas and the standard library, so it deploys unchanged to OpenFaaS
(python3-http template) and to Continuum's runtimes.
"""

import json
import math
from typing import Any

import pandas as pd

# Sensor types: unit and physical range. The IoT emulator generates these.
SENSOR_TYPES: dict[str, tuple[str, float, float]] = {
    "temperature": ("°C", -40.0, 85.0),
    "humidity": ("%", 0.0, 100.0),
    "pressure": ("hPa", 300.0, 1100.0),
    "co2": ("ppm", 0.0, 10000.0),
    "light": ("lx", 0.0, 100000.0),
    "noise": ("dB", 0.0, 140.0),
    "pm25": ("µg/m³", 0.0, 1000.0),
    "vibration": ("mm/s", 0.0, 100.0),
    "power": ("W", 0.0, 100000.0),
}

FIELDS = ("sensor_id", "name", "type", "unit", "value")


class BadBatch(ValueError):
    """The body is not a batch of sensor messages."""


def json_type(v: object) -> str:
    """What v is called in JSON."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(v), "number")


def collect(body: bytes | str) -> pd.DataFrame:
    """Parses a batch into one row per message (columns FIELDS; absent fields are NaN)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadBatch(f"body is not JSON: {e}") from None
    if not isinstance(data, list):
        raise BadBatch(f"body is a JSON {json_type(data)}: want an array of sensor messages")
    for i, m in enumerate(data):
        if not isinstance(m, dict):
            raise BadBatch(
                f"message {i} is a JSON {json_type(m)}: want an object with fields {', '.join(FIELDS)}"
            )
    frame = pd.DataFrame.from_records(data, columns=list(FIELDS))
    return frame


def validate(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keeps the valid messages; counts the others by the first reason that rules them out."""
    reasons: dict[str, int] = {}
    keep = pd.Series(True, index=frame.index)

    def drop(reason: str, bad: pd.Series) -> None:
        bad = bad & keep
        n = int(bad.sum())
        if n:
            reasons[reason] = reasons.get(reason, 0) + n
            keep[bad] = False

    drop("missing field", frame[list(FIELDS)].isna().any(axis=1))
    known = frame["type"].map(lambda t: isinstance(t, str) and t in SENSOR_TYPES)
    drop("unknown type", ~known.astype(bool))
    # Booleans are JSON numbers to pandas but not readings.
    numeric = frame["value"].map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
    drop("value not a number", ~numeric.astype(bool))
    ok = frame[keep]
    units = ok["type"].map(lambda t: SENSOR_TYPES[t][0])
    drop("wrong unit", pd.Series(ok["unit"] != units, index=ok.index).reindex(frame.index, fill_value=False))
    ok = frame[keep]
    values = ok["value"].astype(float)
    lo = ok["type"].map(lambda t: SENSOR_TYPES[t][1])
    hi = ok["type"].map(lambda t: SENSOR_TYPES[t][2])
    out = ~((values >= lo) & (values <= hi))  # NaN and infinities are out of range too
    drop("value out of range", out.reindex(frame.index, fill_value=False))
    valid = frame[keep].copy()
    valid["value"] = valid["value"].astype(float)
    return valid, reasons


def aggregate(valid: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per sensor type: unit, messages, distinct sensors, mean, min, max, standard deviation."""
    if valid.empty:
        return {}
    g = valid.groupby("type", sort=True)
    stats = g["value"].agg(["count", "mean", "min", "max", "std"])
    sensors = g["sensor_id"].nunique()
    out: dict[str, dict[str, Any]] = {}
    for t, row in stats.iterrows():
        std = float(row["std"])
        out[str(t)] = {
            "unit": SENSOR_TYPES[str(t)][0],
            "count": int(row["count"]),
            "sensors": int(sensors[t]),
            "mean": float(row["mean"]),
            "min": float(row["min"]),
            "max": float(row["max"]),
            "std": 0.0 if math.isnan(std) else std,  # one message: no spread
        }
    return out


def process(body: bytes | str) -> dict[str, Any]:
    """The whole workflow on one batch."""
    frame = collect(body)
    valid, reasons = validate(frame)
    return {
        "received": len(frame),
        "valid": len(valid),
        "invalid": reasons,
        "by_type": aggregate(valid),
    }


def handle(event: Any, context: Any) -> dict[str, Any]:
    """OpenFaaS python3-http entry point."""
    try:
        result = process(event.body)
    except BadBatch as e:
        return {"statusCode": 400, "body": {"error": str(e)}, "headers": {"Content-Type": "application/json"}}
    return {"statusCode": 200, "body": result, "headers": {"Content-Type": "application/json"}}
