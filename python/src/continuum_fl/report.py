"""Event reports: one JSON line per event in DIR/fl.jsonl, the same object POSTed to the
orchestrator's ``/report`` when a URL is given.

Reporting is best effort: a failed POST is logged and dropped, never fatal, and it never
delays training (a single sender thread per reporter posts in order from a bounded queue).
The byte counters are cumulative model bytes (the ndarrays' ``nbytes``) this service sent and
received; every event carries their values at the time of the event.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from .auth import services_headers

log = logging.getLogger("continuum_fl.report")

# One lock per file path: the threads of a `clients` process share one fl.jsonl, and a line
# must never interleave with another.
_file_locks: dict[Path, threading.Lock] = {}
_file_locks_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _file_locks_guard:
        return _file_locks.setdefault(path, threading.Lock())


class Reporter:
    """Writes and posts the events of one service (id, role)."""

    def __init__(self, out_dir: str | Path, report_url: str | None, service_id: str, role: str) -> None:
        self.id = service_id
        self.role = role
        self.path = Path(out_dir) / "fl.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _lock_for(self.path.resolve())
        self._bytes_lock = threading.Lock()
        self.bytes_sent = 0  # guarded by _bytes_lock
        self.bytes_received = 0  # guarded by _bytes_lock
        self._url = report_url.rstrip("/") + "/report" if report_url else None
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=10_000)
        self._sender: threading.Thread | None = None
        if self._url:
            self._sender = threading.Thread(target=self._send_loop, name=f"report-{service_id}", daemon=True)
            self._sender.start()

    def add_sent(self, nbytes: int) -> None:
        with self._bytes_lock:
            self.bytes_sent += nbytes

    def add_received(self, nbytes: int) -> None:
        with self._bytes_lock:
            self.bytes_received += nbytes

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Records one event; fields whose value is None are left out."""
        with self._bytes_lock:
            sent, received = self.bytes_sent, self.bytes_received
        obj: dict[str, Any] = {"t": time.time(), "id": self.id, "role": self.role, "event": event}
        obj.update({k: v for k, v in fields.items() if v is not None})
        obj["bytes_sent"] = sent
        obj["bytes_received"] = received
        line = json.dumps(obj, separators=(",", ":"))
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
        if self._sender is not None:
            try:
                self._queue.put_nowait(obj)
            except queue.Full:
                log.warning("report queue full: event %s of %s not posted", event, self.id)
        return obj

    def close(self, timeout: float = 3.0) -> None:
        """Posts what is queued (waiting at most timeout seconds) and stops the sender."""
        if self._sender is None:
            return
        self._queue.put(None)
        self._sender.join(timeout)
        self._sender = None

    def _send_loop(self) -> None:
        assert self._url is not None
        while True:
            obj = self._queue.get()
            if obj is None:
                return
            body = json.dumps(obj).encode()
            req = urllib.request.Request(
                self._url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", **services_headers(self.id)},
            )
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    resp.read()
            except Exception as e:  # best effort: the line is in fl.jsonl already
                log.warning("report %s to %s failed: %s", obj.get("event"), self._url, e)
