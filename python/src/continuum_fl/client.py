"""The Flower client: trains the model on its share of the data set for the epochs, learning
rate and batch size its server's fit config names, and returns the weights with its sample
count. With probability fail_prob a fit raises instead (the seed's unreliable client); the
server counts that as the round's failure and the client rejoins for the next round.

``run_clients`` runs many clients as threads of one process (one gRPC connection each) so
that hundreds fit on a small machine: the data set is loaded once and shared read-only.
"""

from __future__ import annotations

import logging
import threading
import zlib
from dataclasses import dataclass

import numpy as np
import torch
from flwr.client import NumPyClient
from flwr.common import NDArrays, Scalar
from numpy.typing import NDArray

from . import model as mdl
from .data import Dataset
from .flower import SimulatedFailure, run_connection
from .report import Reporter

log = logging.getLogger("continuum_fl.client")


@dataclass
class ClientSpec:
    id: str
    server: str
    fail_prob: float = 0.0


class TrainingClient(NumPyClient):
    def __init__(
        self,
        spec: ClientSpec,
        x: NDArray[np.float32],
        y: NDArray[np.int64],
        net: torch.nn.Module,
        seed: int,
        reporter: Reporter,
    ) -> None:
        self.spec = spec
        self.x, self.y = x, y
        self.net = net
        self.seed = seed
        self.reporter = reporter
        # Failures are drawn from the client's own generator: the same seed and id give the
        # same sequence of failed rounds.
        self.rng = np.random.default_rng([seed, zlib.crc32(spec.id.encode())])

    def get_parameters(self, config: dict[str, Scalar]) -> NDArrays:
        return mdl.get_weights(self.net)

    def fit(self, parameters: NDArrays, config: dict[str, Scalar]) -> tuple[NDArrays, int, dict[str, Scalar]]:
        self.reporter.add_received(mdl.nbytes(parameters))
        r = int(config.get("round", 0))
        local_round = config.get("local_round")
        if self.spec.fail_prob > 0 and self.rng.random() < self.spec.fail_prob:
            self.reporter.emit("fail", round=r, local_round=local_round)
            raise SimulatedFailure(f"client {self.spec.id}: simulated failure in round {r}")
        epochs = int(config.get("epochs", 1))
        mdl.set_weights(self.net, parameters)
        loss = mdl.train(
            self.net,
            self.x,
            self.y,
            epochs=epochs,
            lr=float(config.get("lr", 0.05)),
            batch_size=int(config.get("batch_size", 32)),
            seed=self.seed * 1_000_003 + r * 1009 + int(local_round or 0),
        )
        out = mdl.get_weights(self.net)
        self.reporter.add_sent(mdl.nbytes(out))
        self.reporter.emit(
            "round", round=r, local_round=local_round, loss=loss, examples=len(self.y), epochs=epochs
        )
        return out, len(self.y), {"loss": loss}


def run_client(
    spec: ClientSpec,
    ds: Dataset,
    indices: NDArray[np.int64],
    model: str,
    seed: int,
    out: str,
    report: str | None,
    stop: threading.Event | None = None,
) -> None:
    """Serves one client until its server ends the training."""
    reporter = Reporter(out, report, spec.id, "client")
    net = mdl.build(model, ds.name, ds.num_classes, seed)
    x, y = ds.x_train[indices], ds.y_train[indices]
    reporter.emit("start", examples=len(y), server=spec.server, fail_prob=spec.fail_prob or None)

    def failed(e: BaseException) -> None:
        log.info("client %s: %s", spec.id, e)

    done = run_connection(
        spec.server,
        lambda: TrainingClient(spec, x, y, net, seed, reporter).to_client(),
        f"client {spec.id}",
        stop=stop,
        on_failure=failed,
    )
    reporter.emit("stop", reason="done" if done else "stopped")
    reporter.close()


def run_clients(
    specs: list[ClientSpec],
    ds: Dataset,
    parts: dict[str, NDArray[np.int64]],
    model: str,
    seed: int,
    out: str,
    report: str | None,
    stop: threading.Event | None = None,
) -> None:
    """Runs every client as a thread; returns when all have ended (each ends with its server's
    training, or, once stop is set, at its next connection attempt)."""
    threads = []
    for spec in specs:
        t = threading.Thread(
            target=run_client,
            args=(spec, ds, parts[spec.id], model, seed, out, report, stop),
            name=f"client-{spec.id}",
            daemon=True,
        )
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
