"""Command line: ``python -m continuum_fl aggregator|client|clients [flags]``.

Every flag has a default. Bad flags exit 2 with a message naming the flag and what is allowed;
anything else that fails exits 1 with its message on stderr; a finished or stopped service
exits 0. Flags are checked before PyTorch is imported, so a bad command line fails at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

DATASETS = ("digits", "mnist1d", "cifar10")
MODELS = ("cnn",)

EXAMPLES = """examples:
  CONTINUUM_FL_CONTROL_TOKEN=... python -m continuum_fl aggregator --id n1 --listen 0.0.0.0:8080 \\
      --control 0.0.0.0:8081 --rounds 20 --min-clients 2 --report http://orchestrator:9000
  python -m continuum_fl aggregator --id n2 --listen 0.0.0.0:8080 --parent n1:8080 \\
      --local-rounds 4 --epochs 11 --min-clients 3
  python -m continuum_fl client --id n4 --server n2:8080 --partition partition.json --fail-prob 0.6
  python -m continuum_fl clients --plan plan.json --node n4
"""


def hostport(value: str) -> str:
    """HOST:PORT (IPv6 hosts in brackets), port 0..65535."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (e.g. 0.0.0.0:8080 or [::]:8080)")
    return value


def positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not >= 1")
    return n


def nonnegative_float(value: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not f >= 0 or f == float("inf"):
        raise argparse.ArgumentTypeError(f"{value} is not a finite number >= 0")
    return f


def json_object(value: str) -> dict[str, Any]:
    """A JSON object given as text (--partition-json, --plan-json)."""
    try:
        obj = json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError(f"want a JSON object, not {type(obj).__name__}")
    return obj


def probability(value: str) -> float:
    f = nonnegative_float(value)
    if f > 1:
        raise argparse.ArgumentTypeError(f"{value} is not a probability in 0..1")
    return f


def url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http:// or https:// URL")
    return value.rstrip("/")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", choices=DATASETS, default="digits", help="data set (default digits)")
    p.add_argument("--data-dir", default=None, help="folder of the CIFAR-10 python batches (cifar10 only)")
    p.add_argument("--model", choices=MODELS, default="cnn", help="model (default cnn: the seed's CNN)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the train/test split and the model init (default 0)"
    )
    p.add_argument("--out", default=".", help="folder for fl.jsonl (default .)")
    p.add_argument("--report", type=url, default=None, help="orchestrator URL: POST /report, PUT /model")
    p.add_argument("--verbose", action="store_true", help="Flower's own INFO logs too")


def parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line parser and its role subparsers (for errors that name the role)."""
    p = argparse.ArgumentParser(
        prog="python -m continuum_fl",
        description="Continuum's federated-learning services (Flower + PyTorch).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="role", required=True, metavar="aggregator|client|clients")
    host = socket.gethostname()

    a = sub.add_parser(
        "aggregator",
        help="global aggregator, or local with --parent",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("--id", default=host, help="service id in reports (default: host name)")
    a.add_argument(
        "--listen",
        type=hostport,
        default="0.0.0.0:8080",
        help="Flower server for the children (default 0.0.0.0:8080)",
    )
    a.add_argument("--parent", type=hostport, default=None, help="parent aggregator: makes this a local one")
    a.add_argument(
        "--control",
        type=hostport,
        default="127.0.0.1:8081",
        help="control API: GET /status, POST /config, POST /stop (default 127.0.0.1:8081; another address "
        "needs a token: $CONTINUUM_FL_CONTROL_TOKEN or --control-token-file)",
    )
    a.add_argument(
        "--control-token-file",
        default=None,
        help="file holding the token the control API requires (default: $CONTINUUM_FL_CONTROL_TOKEN)",
    )
    a.add_argument(
        "--rounds", type=positive, default=10, help="global rounds, the last round's number (default 10)"
    )
    a.add_argument(
        "--local-rounds", type=positive, default=1, help="local rounds per parent round (default 1)"
    )
    a.add_argument("--min-clients", type=positive, default=1, help="children a round waits for (default 1)")
    a.add_argument(
        "--epochs", type=positive, default=1, help="local epochs per round sent to children (default 1)"
    )
    a.add_argument("--lr", type=nonnegative_float, default=0.05, help="SGD learning rate (default 0.05)")
    a.add_argument("--batch-size", type=positive, default=32, help="SGD batch size (default 32)")
    a.add_argument(
        "--resume-url", type=url, default=None, help="GET a snapshot (.npz, X-Round) to resume from"
    )
    a.add_argument(
        "--round-timeout",
        type=nonnegative_float,
        default=0.0,
        help="seconds a child may take for a fit before it counts as failed (default 0: no limit)",
    )
    _common(a)

    c = sub.add_parser(
        "client",
        help="one Flower client",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("--id", default=host, help="client id: its row in the partition (default: host name)")
    c.add_argument(
        "--server", type=hostport, default="127.0.0.1:8080", help="its aggregator (default 127.0.0.1:8080)"
    )
    cp = c.add_mutually_exclusive_group()
    cp.add_argument(
        "--partition",
        default=None,
        help="partition JSON {dataset, seed, clients: {id: {class: count}}} (default: all training data)",
    )
    cp.add_argument(
        "--partition-json",
        type=json_object,
        default=None,
        help="the partition table itself, as JSON text (what --partition's file holds)",
    )
    c.add_argument("--fail-prob", type=probability, default=0.0, help="probability a fit fails (default 0)")
    _common(c)

    m = sub.add_parser(
        "clients",
        help="many clients as threads of one process",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mp = m.add_mutually_exclusive_group()
    mp.add_argument(
        "--plan",
        required=False,
        default="plan.json",
        help='JSON with "clients_by_node": {node: [{"id", "server", "fail_prob"}]} (default plan.json)',
    )
    mp.add_argument(
        "--plan-json",
        type=json_object,
        default=None,
        help="the plan itself, as JSON text (what --plan's file holds)",
    )
    m.add_argument("--node", default=host, help="which node's clients to run (default: host name)")
    mpart = m.add_mutually_exclusive_group()
    mpart.add_argument(
        "--partition", default=None, help="partition JSON (default: the plan file's own clients table)"
    )
    mpart.add_argument(
        "--partition-json", type=json_object, default=None, help="the partition table itself, as JSON text"
    )
    _common(m)
    return p, {"aggregator": a, "client": c, "clients": m}


def main(argv: list[str] | None = None) -> int:
    p, subs = parser()
    args = p.parse_args(argv)
    sub = subs[args.role]
    if args.dataset == "cifar10" and not args.data_dir:
        sub.error("--dataset cifar10 needs --data-dir: the folder of the CIFAR-10 python batches")
    if args.role == "aggregator" and args.parent and args.resume_url:
        sub.error("--resume-url is for the global aggregator (no --parent): a local one holds no model")
    from .flower import configure_logging

    configure_logging(args.verbose)
    try:
        return _run(args, sub)
    except KeyboardInterrupt:
        return 0
    except Exception as e:
        logging.getLogger("continuum_fl").debug("failed", exc_info=True)
        print(f"continuum_fl {args.role}: {e}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, sub: argparse.ArgumentParser) -> int:
    if args.role == "aggregator":
        # Before anything slow: a control API that would be open to other machines is refused.
        from .auth import check_exposure, control_token

        args.control_token = control_token(args.control_token_file)
        host, _, port = args.control.rpartition(":")
        check_exposure(host, int(port), args.control_token)
    if not (args.role == "aggregator" and args.parent):  # a local aggregator holds no model
        import torch

        torch.set_num_threads(1)  # many services share a node's few CPUs
    if args.role == "aggregator":
        from .aggregator import AggregatorConfig, run

        if args.round_timeout == 0:
            args.round_timeout = None
        return run(AggregatorConfig(**{k: getattr(args, k) for k in AggregatorConfig.__dataclass_fields__}))

    from . import data
    from .client import ClientSpec, run_client, run_clients

    inline = args.partition_json
    if args.role == "client":
        specs = [ClientSpec(args.id, args.server, args.fail_prob)]
        table_source: Any = inline if inline is not None else args.partition
    else:
        if args.plan_json is not None:
            specs, plan = _plan_specs(args.plan_json, "--plan-json", args.node)
        else:
            specs, plan = _read_plan(Path(args.plan), args.node)
        table_source = (
            inline if inline is not None else args.partition or (plan if "clients" in plan else None)
        )
    ds = data.load(args.dataset, args.seed, args.data_dir)
    parts = _partition(table_source, ds, args.seed, [s.id for s in specs], args.dataset)
    if args.role == "client":
        run_client(specs[0], ds, parts[specs[0].id], args.model, args.seed, args.out, args.report)
    else:
        run_clients(specs, ds, parts, args.model, args.seed, args.out, args.report)
    return 0


def _read_plan(path: Path, node: str) -> tuple[list[Any], dict[str, Any]]:
    try:
        plan = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"plan {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"plan {path}: not JSON: {e}") from e
    return _plan_specs(plan, f"plan {path}", node)


def _plan_specs(plan: Any, source: str, node: str) -> tuple[list[Any], dict[str, Any]]:
    """The client specs of node in a decoded plan; source names the plan in errors."""
    from .client import ClientSpec

    by_node = plan.get("clients_by_node") if isinstance(plan, dict) else None
    if not isinstance(by_node, dict):
        raise ValueError(
            f'{source}: want an object with "clients_by_node": {{node: [{{"id", "server", "fail_prob"}}]}}'
        )
    if node not in by_node:
        raise ValueError(
            f"{source}: no clients for node {node!r} (nodes: {', '.join(sorted(by_node)) or 'none'})"
        )
    specs = []
    for i, entry in enumerate(by_node[node]):
        where = f"{source}: clients_by_node[{node}][{i}]"
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("id"), str)
            or not isinstance(entry.get("server"), str)
        ):
            raise ValueError(f'{where}: want {{"id": str, "server": "HOST:PORT", "fail_prob"?: 0..1}}')
        try:
            hostport(entry["server"])
            fail = probability(str(entry.get("fail_prob", 0)))
        except argparse.ArgumentTypeError as err:
            raise ValueError(f"{where}: {err}") from None
        specs.append(ClientSpec(entry["id"], entry["server"], fail))
    if not specs:
        raise ValueError(f"{source}: node {node!r} has no clients")
    return specs, plan


def _partition(source: Any, ds: Any, seed: int, ids: list[str], dataset: str) -> dict[str, Any]:
    import numpy as np

    from . import data

    if source is None:  # no partition: every client trains on the whole training split
        return {i: np.arange(len(ds.y_train)) for i in ids}
    if not isinstance(source, str):  # a decoded table: --partition-json's, or the plan's own
        label = "(plan)" if isinstance(source, dict) and "clients_by_node" in source else "--partition-json"
        part = data.parse_partition(source, label, ds.num_classes)
    else:
        part = data.read_partition(source, ds.num_classes)
    if part.dataset is not None and part.dataset != dataset:
        raise data.DataError(f"partition is for data set {part.dataset!r}, --dataset is {dataset!r}")
    missing = [i for i in ids if i not in part.clients]
    if missing:
        raise data.DataError(
            f"partition has no row for client {', '.join(missing)} (rows: {', '.join(sorted(part.clients))})"
        )
    parts = data.split(ds.y_train, part.clients, part.seed if part.seed is not None else seed)
    empty = [i for i in ids if len(parts[i]) == 0]
    if empty:
        raise data.DataError(f"partition gives client {', '.join(empty)} no samples")
    return parts


if __name__ == "__main__":
    sys.exit(main())
