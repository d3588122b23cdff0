"""Data sets and the clients' deterministic, disjoint partition of them.

Data sets (each with a fixed train/test split chosen by the seed):

- ``digits``: scikit-learn's ``load_digits`` (1797 8x8 images, 10 classes), installed with it;
  a stratified 20 % test split;
- ``mnist1d``: the ``mnist1d`` package's ``make_dataset`` (5000 1-D signals of length 40, 10
  classes), generated offline; its own 80/20 split, generated with the seed;
- ``cifar10``: the user's CIFAR-10 python-pickle batches (``data_batch_1`` .. ``data_batch_5``,
  ``test_batch``) in ``--data-dir`` or its ``cifar-10-batches-py`` folder. No package ships
  them and nothing may download them, so they are the user's files; they are pickles, so load
  only files you trust.

Partition (the contract between the orchestrator and every client): a table
``{"dataset", "seed", "clients": {client_id: {class: count}}}``. Every client computes the same
split from the whole table, so no coordinator hands out indices: per class, the training pool
of that class is shuffled with (seed, class) and the clients asking for the class take
consecutive, disjoint slices of it in client-id order (plain string order). When a class is
asked for more samples than it has, every request for it is scaled down proportionally
(floor, at least 1 per non-zero request).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

DATASETS = ("digits", "mnist1d", "cifar10")


class DataError(Exception):
    """A data set or partition that cannot be loaded, with what was wrong and what is allowed."""


@dataclass
class Dataset:
    name: str
    x_train: NDArray[np.float32]
    y_train: NDArray[np.int64]
    x_test: NDArray[np.float32]
    y_test: NDArray[np.int64]
    num_classes: int


def load(name: str, seed: int, data_dir: str | None = None) -> Dataset:
    if name == "digits":
        return _digits(seed)
    if name == "mnist1d":
        return _mnist1d(seed)
    if name == "cifar10":
        if not data_dir:
            raise DataError("data set cifar10 needs --data-dir: the folder of the CIFAR-10 python batches")
        return load_cifar10(Path(data_dir))
    raise DataError(f"unknown data set {name!r} (allowed: {', '.join(DATASETS)})")


def _digits(seed: int) -> Dataset:
    table = _digits_table()
    x = (table[:, :-1] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = table[:, -1].astype(np.int64)
    test = stratified_test_indices(y, 0.2, seed)
    train = np.setdiff1d(np.arange(len(y)), test)
    return Dataset("digits", x[train], y[train], x[test], y[test], 10)


def _digits_table() -> NDArray[np.float64]:
    """load_digits' table (64 pixels and the label per row). Read from the CSV that
    scikit-learn ships, without importing scikit-learn (most of a second of every service's
    start, which a reconfiguration waits for); load_digits itself if the file moved."""
    spec = importlib.util.find_spec("sklearn")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return np.loadtxt(path, delimiter=",")
    from sklearn.datasets import load_digits

    d = load_digits()
    return np.column_stack([d.data, d.target])


def stratified_test_indices(y: NDArray[np.int64], fraction: float, seed: int) -> NDArray[np.int64]:
    """A fixed test split: of every class, round(fraction * its count) samples chosen by seed."""
    rng = np.random.default_rng(seed)
    test = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        test.append(rng.permutation(idx)[: int(fraction * len(idx) + 0.5)])
    return np.sort(np.concatenate(test))


def _mnist1d(seed: int) -> Dataset:
    # mnist1d imports matplotlib.pyplot at load time: a headless backend, whatever the host has.
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError as e:
        raise DataError(
            f"data set mnist1d needs the mnist1d package (python/requirements-fl.txt): {e}"
        ) from e
    args = get_dataset_args()
    args.seed = seed
    # make_dataset seeds numpy's and random's global generators; keep the caller's state.
    state = np.random.get_state()
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(state)

    def x(a: NDArray[Any]) -> NDArray[np.float32]:
        return a.astype(np.float32).reshape(len(a), 1, -1)

    return Dataset(
        "mnist1d", x(d["x"]), d["y"].astype(np.int64), x(d["x_test"]), d["y_test"].astype(np.int64), 10
    )


def load_cifar10(data_dir: Path) -> Dataset:
    """The CIFAR-10 python batches in data_dir (or data_dir/cifar-10-batches-py): at least one
    data_batch_N and the test_batch."""
    if (data_dir / "cifar-10-batches-py").is_dir():
        data_dir = data_dir / "cifar-10-batches-py"
    train = sorted(data_dir.glob("data_batch_*"))
    test = data_dir / "test_batch"
    if not train or not test.is_file():
        raise DataError(
            f"cifar10: {data_dir} must hold the CIFAR-10 python batches: data_batch_1..5 (at least one) "
            f"and test_batch (found {[p.name for p in train]}{', test_batch' if test.is_file() else ''})"
        )
    parts = [_cifar_batch(p) for p in train]
    xtr = np.concatenate([p[0] for p in parts])
    ytr = np.concatenate([p[1] for p in parts])
    xte, yte = _cifar_batch(test)
    return Dataset("cifar10", xtr, ytr, xte, yte, 10)


def _cifar_batch(path: Path) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    try:
        with path.open("rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except Exception as e:
        raise DataError(
            f"cifar10: {path} is not a CIFAR-10 python batch (a pickle with data, labels): {e}"
        ) from e
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise DataError(f"cifar10: {path}: data {data.shape}, labels {labels.shape}: want (N, 3072) and (N,)")
    if len(labels) and (labels.min() < 0 or labels.max() > 9):
        raise DataError(f"cifar10: {path}: labels outside 0..9")
    x = (data.reshape(-1, 3, 32, 32).astype(np.float32) / 255.0 - 0.5) / 0.5
    return x, labels


@dataclass
class Partition:
    dataset: str | None
    seed: int | None
    clients: dict[str, dict[int, int]]


def parse_partition(obj: Any, source: str, num_classes: int = 10) -> Partition:
    """Validates a partition table (already decoded JSON); source names it in errors."""
    if not isinstance(obj, dict):
        raise DataError(f"partition {source}: want a JSON object with dataset, seed and clients")
    dataset = obj.get("dataset")
    if dataset is not None and dataset not in DATASETS:
        raise DataError(f"partition {source}: dataset {dataset!r} (allowed: {', '.join(DATASETS)})")
    seed = obj.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise DataError(f"partition {source}: seed {seed!r} is not an integer")
    table = obj.get("clients")
    if not isinstance(table, dict) or not table:
        raise DataError(
            f"partition {source}: clients must be a non-empty object of client id -> {{class: count}}"
        )
    clients: dict[str, dict[int, int]] = {}
    for cid, classes in table.items():
        if not isinstance(classes, dict):
            raise DataError(f"partition {source}: client {cid}: want an object of class -> sample count")
        want: dict[int, int] = {}
        for k, v in classes.items():
            try:
                c = int(k)
            except ValueError:
                raise DataError(
                    f"partition {source}: client {cid}: class {k!r} is not a class number"
                ) from None
            if not 0 <= c < num_classes:
                raise DataError(f"partition {source}: client {cid}: class {c} outside 0..{num_classes - 1}")
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise DataError(
                    f"partition {source}: client {cid}: class {c}: count {v!r} is not an integer >= 0"
                )
            want[c] = v
        clients[str(cid)] = want
    return Partition(dataset, seed, clients)


def read_partition(path: str | Path, num_classes: int = 10) -> Partition:
    try:
        obj = json.loads(Path(path).read_text())
    except OSError as e:
        raise DataError(f"partition {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise DataError(f"partition {path}: not JSON: {e}") from e
    return parse_partition(obj, str(path), num_classes)


def split(
    y_train: NDArray[np.int64], clients: dict[str, dict[int, int]], seed: int
) -> dict[str, NDArray[np.int64]]:
    """Every client's training indices, disjoint across clients (see the module doc)."""
    order = sorted(clients)
    parts: dict[str, list[NDArray[np.int64]]] = {cid: [] for cid in order}
    for c in sorted({c for want in clients.values() for c in want}):
        pool = np.flatnonzero(y_train == c)
        np.random.default_rng([seed, c]).shuffle(pool)
        asks = [(cid, clients[cid].get(c, 0)) for cid in order]
        asks = [(cid, n) for cid, n in asks if n > 0]
        total = sum(n for _, n in asks)
        if total > len(pool):
            asks = [(cid, max(1, n * len(pool) // total)) for cid, n in asks]
            if sum(n for _, n in asks) > len(pool):
                raise DataError(
                    f"partition: class {c} has {len(pool)} training samples, fewer than the {len(asks)} "
                    "clients asking for it (each gets at least one)"
                )
        start = 0
        for cid, n in asks:
            parts[cid].append(pool[start : start + n])
            start += n
    return {cid: np.sort(np.concatenate(p)) if p else np.zeros(0, np.int64) for cid, p in parts.items()}
