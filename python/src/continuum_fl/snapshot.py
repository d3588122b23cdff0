"""Model snapshots: the model's ndarrays as a .npz (keys a0..aN in order) and their transfer to
and from the orchestrator's model repository.

The repository serves the latest snapshot with the round it was taken at in the ``X-Round``
header; a restarted global aggregator continues from that round + 1 with those weights.
"""

from __future__ import annotations

import io
import re
import urllib.error
import urllib.request
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .auth import services_headers

_KEY = re.compile(r"a(\d+)")


class SnapshotError(Exception):
    """A snapshot that cannot be read or transferred."""


def to_npz(arrays: list[NDArray[Any]]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(arrays)})
    return buf.getvalue()


def from_npz(data: bytes) -> list[NDArray[Any]]:
    """The arrays of a .npz written by to_npz, in key order (a2 before a10)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            keys = list(z.keys())
            indices = []
            for k in keys:
                m = _KEY.fullmatch(k)
                if m is None:
                    raise SnapshotError(f"snapshot key {k!r}: want a0..aN")
                indices.append(int(m.group(1)))
            if sorted(indices) != list(range(len(indices))):
                raise SnapshotError(f"snapshot keys {sorted(keys)}: want a0..a{len(keys) - 1} with no gap")
            return [z[f"a{i}"] for i in range(len(indices))]
    except SnapshotError:
        raise
    except Exception as e:
        raise SnapshotError(f"snapshot is not a readable .npz: {e}") from e


def upload(report_url: str, round_: int, arrays: list[NDArray[Any]], timeout: float = 30.0) -> None:
    """PUT {report_url}/model?round=R with the arrays as .npz."""
    url = f"{report_url.rstrip('/')}/model?round={round_}"
    req = urllib.request.Request(
        url,
        data=to_npz(arrays),
        method="PUT",
        headers={"Content-Type": "application/octet-stream", **services_headers()},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
    except Exception as e:
        raise SnapshotError(f"PUT {url}: {e}") from e


def fetch(url: str, timeout: float = 30.0) -> tuple[int, list[NDArray[Any]]] | None:
    """GETs a snapshot: (round it was taken at, arrays), or None when the repository has none (404)."""
    try:
        req = urllib.request.Request(url, headers=services_headers())
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            header = resp.headers.get("X-Round")
            body = resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise SnapshotError(f"GET {url}: {e}") from e
    except Exception as e:
        raise SnapshotError(f"GET {url}: {e}") from e
    if header is None:
        raise SnapshotError(
            f"GET {url}: the response has no X-Round header (the round the snapshot was taken at)"
        )
    try:
        round_ = int(header)
    except ValueError:
        raise SnapshotError(f"GET {url}: X-Round {header!r} is not a round number") from None
    if round_ < 0:
        raise SnapshotError(f"GET {url}: X-Round {round_} is negative")
    return round_, from_npz(body)
