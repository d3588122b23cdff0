"""What the services share on top of Flower's legacy gRPC API: quiet logs, the connection loop
of a Flower client, and byte counting.

A Flower client here is long-lived and outlives its server: it retries the connection with a
short capped backoff (at most MAX_RETRY_DELAY; Flower's own retry waits up to 20 s between
tries, too slow for a reconfiguration within seconds) and tells a graceful end (the server
disconnected it: the training is over, return) from a broken connection (the server died or
restarts: reconnect).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from flwr.client import Client

log = logging.getLogger("continuum_fl")

# The longest wait between connection attempts: a restarted server is rejoined within about a
# second, while a client of a server that is gone costs a refused connection a second.
MAX_RETRY_DELAY = 1.0


class ExpectedFailure(Exception):
    """A fit that fails on purpose: logged in one line, without Flower's traceback."""


class SimulatedFailure(ExpectedFailure):
    """Raised by an unreliable client's fit (the seed's failure probability)."""


class Stopping(ExpectedFailure):
    """Raised by a local aggregator's fit once it was asked to stop."""


class _QuietFlower(logging.Filter):
    """Drops Flower's deprecation notices (the legacy API is used on purpose) and the
    traceback of an expected failure (a simulated one is reported as a "fail" event)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "DEPRECATED FEATURE" in record.getMessage():
            return False
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ExpectedFailure)


def _quiet_grpc_race(
    hook: Callable[[threading.ExceptHookArgs], object],
) -> Callable[[threading.ExceptHookArgs], None]:
    """gRPC's channel-state polling thread raises when Flower closes a channel it still
    watches, which a client that fails and reconnects at once does every round: a benign race
    in gRPC, dropped here; every other thread's exception goes to the previous hook."""

    def handle(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, ValueError) and "Channel closed" in str(args.exc_value):
            return
        hook(args)

    return handle


def configure_logging(verbose: bool = False) -> None:
    """This package logs at INFO, everything else (Flower's dependencies log at import) at
    WARNING; Flower keeps its own console handler and does not propagate, so that its lines
    are not printed twice."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("continuum_fl").setLevel(logging.INFO)
    flwr_log = logging.getLogger("flwr")
    flwr_log.setLevel(logging.INFO if verbose else logging.WARNING)
    flwr_log.propagate = False
    for h in flwr_log.handlers:
        h.addFilter(_QuietFlower())
    flwr_log.addFilter(_QuietFlower())
    threading.excepthook = _quiet_grpc_race(threading.excepthook)


def run_connection(
    address: str,
    client_fn: Callable[[], Client],
    name: str,
    stop: threading.Event | None = None,
    on_failure: Callable[[BaseException], None] | None = None,
) -> bool:
    """Connects to the Flower server at address and serves it until it disconnects this client
    gracefully (returns True) or stop is set before a retry (returns False). A broken
    connection, a refused one, or the client raising (an unreliable client's failure: Flower
    drops the connection then) leads to a new connection after a short backoff; on_failure
    hears of the client's own failures, not of connection errors."""
    import grpc
    from flwr.compat.client.app import start_client

    delay = 0.2
    while stop is None or not stop.is_set():
        started = time.monotonic()
        try:
            start_client(server_address=address, client=client_fn(), insecure=True, max_retries=0)
            return True
        except ExpectedFailure as e:
            if on_failure:
                on_failure(e)
            delay = 0.05  # the server is there: rejoin at once for the next round
        except grpc.RpcError as e:
            if time.monotonic() - started > 0.5:
                delay = 0.2  # it was connected (a refusal takes milliseconds): retry soon
            log.info("%s: connection to %s: %s; retrying in %.1f s", name, address, _short(e), delay)
        except Exception as e:  # the client's own work failed: Flower drops the connection
            log.exception("%s: failed serving %s", name, address)
            if on_failure:
                on_failure(e)
            delay = 0.05
        # Jitter keeps many clients of one restarted server from retrying in step.
        wait = delay * random.uniform(0.8, 1.2)
        if stop is not None:
            if stop.wait(wait):
                break
        else:
            time.sleep(wait)
        delay = min(delay * 2, MAX_RETRY_DELAY)
    return False


def _short(e: BaseException) -> str:
    details = getattr(e, "details", None)
    if callable(details):
        try:
            return f"{type(e).__name__}: {details()}"
        except Exception:
            pass
    return f"{type(e).__name__}: {e}"
