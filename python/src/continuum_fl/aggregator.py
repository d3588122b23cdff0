"""Global and local aggregators: FedAvg over their children with Flower's Server and strategy.

Both hold a Flower gRPC server for their children and run rounds the same way (``Children``):
wait until ``min_clients`` children are connected (re-reading the control value every second,
so a lowered value frees a waiting round), send every connected child the current parameters
with the fit config, and average what comes back weighted by sample counts. A child that fails
or leaves mid-round is a failure; the round completes with the others (when none succeeds,
the parameters stay as they were).

- The global aggregator (no parent) runs ``rounds`` global rounds (numbered 1..rounds; after a
  resume from a snapshot taken at round R it runs R+1..rounds), evaluates the global model on
  the held-out test split after each, reports the round and uploads the snapshot. It ends after
  the last round or on POST /stop (after the current round), disconnecting its children
  gracefully: that ends their training too.
- A local aggregator is also a Flower client of its parent: one fit from the parent runs
  ``local_rounds`` rounds with its children starting from the parent's parameters and returns
  their aggregate with the children's sample count. It reconnects when its parent goes away
  (a parent that restarts, e.g. resumed from a snapshot) and ends, disconnecting its children,
  when its parent ends the training gracefully or on POST /stop.

A kill (SIGTERM) is not a graceful end: children keep retrying and rejoin a restarted service.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass
from typing import Any

from flwr.client import NumPyClient
from flwr.common import (
    EvaluateIns,
    FitIns,
    FitRes,
    NDArrays,
    Parameters,
    ReconnectIns,
    Scalar,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import Server, SimpleClientManager
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.server import reconnect_clients
from flwr.server.strategy import FedAvg

from . import control as ctl
from .flower import Stopping, run_connection
from .report import Reporter
from .snapshot import SnapshotError, fetch, upload

log = logging.getLogger("continuum_fl.aggregator")


@dataclass
class AggregatorConfig:
    id: str
    listen: str
    control: str
    parent: str | None = None
    rounds: int = 10
    local_rounds: int = 1
    min_clients: int = 1
    epochs: int = 1
    dataset: str = "digits"
    data_dir: str | None = None
    model: str = "cnn"
    lr: float = 0.05
    batch_size: int = 32
    seed: int = 0
    out: str = "."
    report: str | None = None
    resume_url: str | None = None
    round_timeout: float | None = None
    control_token: str | None = None  # the control API's (auth.py); None: loopback only


def _nbytes(arrays: NDArrays) -> int:
    return int(sum(a.nbytes for a in arrays))


def _mean_loss(metrics: list[tuple[int, dict[str, Scalar]]]) -> dict[str, Scalar]:
    """The children's training loss weighted by their sample counts."""
    pairs = [(n, float(m["loss"])) for n, m in metrics if "loss" in m]
    total = sum(n for n, _ in pairs)
    return {"loss": sum(n * loss for n, loss in pairs) / total} if total else {}


class ChildrenFedAvg(FedAvg):
    """FedAvg over every connected child (not a sample), with the fit config the aggregator
    sets for the round, no federated evaluation, and the model bytes counted both ways."""

    def __init__(self, reporter: Reporter) -> None:
        super().__init__(
            fraction_fit=1.0,
            fraction_evaluate=0.0,
            min_fit_clients=1,
            min_evaluate_clients=0,
            min_available_clients=1,
            accept_failures=True,
            fit_metrics_aggregation_fn=_mean_loss,
        )
        self.reporter = reporter
        self.fit_config: dict[str, Scalar] = {}

    def configure_fit(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[ClientProxy, FitIns]]:
        children = list(client_manager.all().values())
        self.reporter.add_sent(_nbytes(parameters_to_ndarrays(parameters)) * len(children))
        ins = FitIns(parameters, dict(self.fit_config))
        return [(c, ins) for c in children]

    def configure_evaluate(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[ClientProxy, EvaluateIns]]:
        return []

    def aggregate_fit(
        self, server_round: int, results: list[tuple[ClientProxy, FitRes]], failures: list[Any]
    ) -> tuple[Parameters | None, dict[str, Scalar]]:
        for _, res in results:
            self.reporter.add_received(_nbytes(parameters_to_ndarrays(res.parameters)))
        return super().aggregate_fit(server_round, results, failures)


@dataclass
class RoundResult:
    parameters: Parameters
    examples: int
    clients: int
    failures: int
    metrics: dict[str, Scalar]


class Children:
    """The Flower server side of an aggregator: its children and the rounds run with them."""

    def __init__(self, listen: str, control: ctl.Control, reporter: Reporter, timeout: float | None) -> None:
        from flwr.server.superlink.fleet.grpc_bidi.grpc_server import start_grpc_server

        self.manager = SimpleClientManager()
        self.strategy = ChildrenFedAvg(reporter)
        self.server = Server(client_manager=self.manager, strategy=self.strategy)
        self.control = control
        self.timeout = timeout
        self.grpc = start_grpc_server(client_manager=self.manager, server_address=listen)

    def connected(self) -> int:
        return self.manager.num_available()

    def wait_for_min(self) -> bool:
        """Waits until min_clients children are connected; False when a stop is requested while
        too few are. With enough children it returns True even after a stop: a local
        aggregator finishes its parent's round (all its local rounds) before it stops."""
        while True:
            if self.manager.wait_for(self.control.get("min_clients"), timeout=1):
                return True
            if self.control.stop.is_set():
                return False

    def round(self, r: int, parameters: Parameters, config: dict[str, Scalar]) -> RoundResult:
        self.strategy.fit_config = config
        self.server.parameters = parameters
        self.server.set_max_workers(max(1, self.connected()))
        res = self.server.fit_round(server_round=r, timeout=self.timeout)
        if res is None:  # no child connected any more
            return RoundResult(parameters, 0, 0, 0, {})
        new, metrics, (results, failures) = res
        return RoundResult(
            new if new is not None else parameters,
            sum(fr.num_examples for _, fr in results),
            len(results),
            len(failures),
            metrics,
        )

    def close(self, graceful: bool) -> None:
        """Stops serving; graceful tells the children the training is over (they exit)."""
        if graceful:
            children = list(self.manager.all().values())
            reconnect_clients(
                [(c, ReconnectIns(seconds=None)) for c in children], max_workers=None, timeout=5
            )
        self.grpc.stop(grace=1)


def _split_hostport(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


def _on_signal(reporter: Reporter) -> None:
    """SIGTERM/SIGINT: a kill, not a graceful end; record it and leave at once."""

    def handler(signum: int, _: Any) -> None:
        reporter.emit("stop", reason=signal.Signals(signum).name)
        reporter.close(timeout=1)
        os._exit(0)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run(cfg: AggregatorConfig) -> int:
    role = "local" if cfg.parent else "global"
    reporter = Reporter(cfg.out, cfg.report, cfg.id, role)
    children_box: list[Children] = []
    control = ctl.Control(
        cfg.id,
        role,
        cfg.min_clients,
        cfg.epochs,
        cfg.local_rounds,
        clients=lambda: children_box[0].connected() if children_box else 0,
    )
    _on_signal(reporter)
    if cfg.parent:
        return _run_local(cfg, control, reporter, children_box)
    return _run_global(cfg, control, reporter, children_box)


def _start_children(
    cfg: AggregatorConfig, control: ctl.Control, reporter: Reporter, box: list[Children]
) -> Children:
    children = Children(cfg.listen, control, reporter, cfg.round_timeout)
    box.append(children)
    host, port = _split_hostport(cfg.control)
    ctl.serve(control, host, port, cfg.control_token)  # ready: the Flower server listens
    return children


def _run_global(cfg: AggregatorConfig, control: ctl.Control, reporter: Reporter, box: list[Children]) -> int:
    from . import data, model

    ds = data.load(cfg.dataset, cfg.seed, cfg.data_dir)
    net = model.build(cfg.model, ds.name, ds.num_classes, cfg.seed)
    first = 1
    if cfg.resume_url:
        snap = fetch(cfg.resume_url)
        if snap is not None:
            taken, arrays = snap
            try:
                model.set_weights(net, arrays)
            except ValueError as e:
                raise SnapshotError(
                    f"resume {cfg.resume_url}: the snapshot does not fit the model: {e}"
                ) from e
            first = taken + 1
            log.info("resuming from the snapshot of round %d", taken)
    children = _start_children(cfg, control, reporter, box)
    control.set_round(first - 1)
    reporter.emit(
        "start",
        round=first - 1,
        epochs=cfg.epochs,
        local_rounds=cfg.local_rounds,
        listen=cfg.listen,
        resumed=(cfg.resume_url is not None and first > 1) or None,
    )
    parameters = ndarrays_to_parameters(model.get_weights(net))
    for r in range(first, cfg.rounds + 1):
        if control.stop.is_set() or not children.wait_for_min():
            break
        control.set_round(r)
        epochs, local_rounds = control.get("epochs"), control.get("local_rounds")
        config: dict[str, Scalar] = {"epochs": epochs, "lr": cfg.lr, "batch_size": cfg.batch_size, "round": r}
        res = children.round(r, parameters, config)
        parameters = res.parameters
        arrays = parameters_to_ndarrays(parameters)
        model.set_weights(net, arrays)
        loss, acc = model.evaluate(net, ds.x_test, ds.y_test)
        # The snapshot is stored before the round is reported: whoever sees round r (the
        # orchestrator, a test holding the aggregator) may rely on resuming from it.
        if cfg.report:
            try:
                upload(cfg.report, r, arrays)
            except SnapshotError as e:
                log.warning("snapshot of round %d not stored: %s", r, e)
        reporter.emit(
            "round",
            round=r,
            loss=loss,
            accuracy=acc,
            examples=res.examples,
            clients=res.clients,
            failures=res.failures,
            epochs=epochs,
            local_rounds=local_rounds,
        )
        log.info(
            "round %d: accuracy %.4f loss %.4f (%d children, %d failures)",
            r,
            acc,
            loss,
            res.clients,
            res.failures,
        )
        if control.stop.is_set():
            break
    reason = "stopped" if control.stop.is_set() else "done"
    children.close(graceful=True)
    reporter.emit("stop", round=control.status()["round"], reason=reason)
    reporter.close()
    return 0


class LocalAggregatorClient(NumPyClient):
    """The local aggregator as seen by its parent. One instance serves every connection to
    the parent, so what it knows of past fits survives a reconnection."""

    # Once stopping, the last reply may still be on its way to the parent when fit returns;
    # the parent's next fit (refused) proves it arrived. Without a next fit (the parent is
    # waiting for other children), the stop waits this long for the reply to leave.
    REPLY_GRACE = 2.0

    def __init__(self, children: Children, control: ctl.Control, reporter: Reporter) -> None:
        self.children = children
        self.control = control
        self.reporter = reporter
        self.busy = threading.Lock()  # held by a fit from its start to its return
        self.fits = 0  # guarded by busy
        self.refused = threading.Event()  # a fit came after the stop

    def get_parameters(self, config: dict[str, Scalar]) -> NDArrays:
        raise RuntimeError("a local aggregator holds no model of its own: the parent initialises it")

    def fit(self, parameters: NDArrays, config: dict[str, Scalar]) -> tuple[NDArrays, int, dict[str, Scalar]]:
        with self.busy:
            if self.control.stop.is_set():
                self.refused.set()
                raise Stopping(f"local aggregator {self.control.id} stopping")
            self.fits += 1
            return self._fit(parameters, config)

    def drain(self) -> None:
        """After a stop: waits for the fit in progress and for its reply to reach the parent."""
        with self.busy:
            fits = self.fits
        if fits:
            self.refused.wait(self.REPLY_GRACE)

    def _fit(
        self, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Scalar]]:
        self.reporter.add_received(_nbytes(parameters))
        r = int(config.get("round", 0))
        self.control.set_round(r)
        params = ndarrays_to_parameters(parameters)
        local_rounds, epochs = self.control.get("local_rounds"), self.control.get("epochs")
        examples, aggregated, metrics = 0, False, {}
        for k in range(1, local_rounds + 1):
            if not self.children.wait_for_min():
                raise Stopping(f"local aggregator {self.control.id} stopping")
            # The parent's config with this tier's epochs: the orchestrator sets them per cluster.
            child_config = {**config, "epochs": epochs, "local_round": k}
            res = self.children.round(r, params, child_config)
            params = res.parameters
            if res.clients:
                examples, aggregated, metrics = res.examples, True, res.metrics
            self.reporter.emit(
                "round",
                round=r,
                local_round=k,
                examples=res.examples,
                clients=res.clients,
                failures=res.failures,
                epochs=epochs,
                local_rounds=local_rounds,
            )
        if not aggregated:
            raise RuntimeError(f"round {r}: no child returned an update in {local_rounds} local rounds")
        out = parameters_to_ndarrays(params)
        self.reporter.add_sent(_nbytes(out))
        return out, examples, metrics


def _run_local(cfg: AggregatorConfig, control: ctl.Control, reporter: Reporter, box: list[Children]) -> int:
    assert cfg.parent is not None
    children = _start_children(cfg, control, reporter, box)
    reporter.emit(
        "start", epochs=cfg.epochs, local_rounds=cfg.local_rounds, listen=cfg.listen, parent=cfg.parent
    )
    parent_done = threading.Event()
    client = LocalAggregatorClient(children, control, reporter)

    def serve_parent() -> None:
        if run_connection(
            cfg.parent or "", client.to_client, f"local aggregator {cfg.id}", stop=control.stop
        ):
            parent_done.set()

    threading.Thread(target=serve_parent, name="parent", daemon=True).start()
    _wait_any(parent_done, control.stop)
    if control.stop.is_set():
        client.drain()  # the parent's current round finishes with this aggregator's update
    children.close(graceful=True)
    reporter.emit(
        "stop", round=control.status()["round"], reason="stopped" if control.stop.is_set() else "done"
    )
    reporter.close()
    return 0


def _wait_any(*events: threading.Event) -> None:
    while not any(e.wait(0.2) for e in events):
        pass


def build_config(args: Any) -> AggregatorConfig:
    return AggregatorConfig(**{k: getattr(args, k) for k in AggregatorConfig.__dataclass_fields__})
