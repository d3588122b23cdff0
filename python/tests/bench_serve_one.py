"""Per-request cost of continuum_functions.server, in process: a request parsed, the handler
(python/functions/hello) called, the answer encoded, with no socket in between. Give it one or
more python/src directories (say, this clone's and another checkout's) and it runs them in
turn, rounds times, each in its own interpreter, and prints each one's median microseconds per
request and the ratio to the first:

    .tools/venv/bin/python python/tests/bench_serve_one.py python/src ../other/python/src
"""

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

HELLO = Path(__file__).resolve().parent.parent / "functions" / "hello"
REQUEST = (
    b"POST /function/hello?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\n"
    b"Content-Length: 3\r\nAccept-Encoding: gzip\r\nContent-Type: text/plain\r\n"
    b"X-Forwarded-For: 10.0.0.1\r\n\r\nAda"
)


class Sink:
    def write(self, b: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


async def measure(n: int) -> float:
    """Median microseconds per request over 7 runs of n requests."""
    from continuum_functions.event import load_handler
    from continuum_functions.server import Server

    srv = Server(load_handler(str(HELLO)))
    times = []
    for _ in range(7):
        r = asyncio.StreamReader()
        r.feed_data(REQUEST * n)
        r.feed_eof()
        t = time.perf_counter()
        for _ in range(n):
            await srv.serve_one(r, Sink())  # type: ignore[arg-type]
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        sys.path.insert(0, sys.argv[2])
        print(f"{asyncio.run(measure(5000)):.2f}")
        return
    srcs, rounds = sys.argv[1:], 8
    if not srcs:
        sys.exit(__doc__)
    got: dict[str, list[float]] = {s: [] for s in srcs}
    for _ in range(rounds):
        for s in srcs:
            out = subprocess.run(
                [sys.executable, __file__, "--one", s], capture_output=True, check=True, text=True
            )
            got[s].append(float(out.stdout))
    base = statistics.median(got[srcs[0]])
    for s in srcs:
        m = statistics.median(got[s])
        print(f"{s}: median {m:.1f} us/request over {rounds} rounds, {m / base:.2f}x the first")


if __name__ == "__main__":
    main()
