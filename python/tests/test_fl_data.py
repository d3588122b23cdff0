"""The data sets and the clients' partition: deterministic, disjoint, scaled."""

import pickle

import numpy as np
import pytest

from continuum_fl import data


def labels(counts: dict[int, int]) -> np.ndarray:
    """A training label vector with counts[c] samples of class c, interleaved."""
    y = np.concatenate([np.full(n, c) for c, n in counts.items()])
    return np.random.default_rng(5).permutation(y).astype(np.int64)


def test_split_is_deterministic_whatever_the_table_order():
    y = labels({0: 50, 1: 50, 2: 50})
    table = {"b": {0: 10, 1: 5}, "a": {0: 20}, "c": {2: 50, 1: 45}}
    reordered = dict(reversed(list(table.items())))
    one, two = data.split(y, table, seed=3), data.split(y, reordered, seed=3)
    assert one.keys() == two.keys()
    for cid in one:
        assert np.array_equal(one[cid], two[cid])
    other = data.split(y, table, seed=4)
    assert not all(np.array_equal(one[c], other[c]) for c in one), "the seed picks the samples"


def test_split_is_disjoint_with_the_classes_and_counts_asked_for():
    y = labels({c: 40 for c in range(4)})
    table = {"n4": {0: 10, 1: 30}, "n5": {0: 30, 2: 5}, "n6": {3: 40, 2: 35}}
    parts = data.split(y, table, seed=0)
    seen: set[int] = set()
    for cid, idx in parts.items():
        assert not seen & set(idx.tolist()), f"{cid} shares samples"
        seen |= set(idx.tolist())
        got = {int(c): int(n) for c, n in zip(*np.unique(y[idx], return_counts=True), strict=True)}
        assert got == {c: n for c, n in table[cid].items() if n}


def test_split_scales_an_oversubscribed_class_proportionally_at_least_one():
    y = labels({0: 100, 1: 10})
    # class 0: 400 asked of 100 -> 1:3 scaled to 25 and 75; class 1: 1000 and 1 asked of 10.
    parts = data.split(y, {"a": {0: 100, 1: 1000}, "b": {0: 300, 1: 1}}, seed=1)
    assert (y[parts["a"]] == 0).sum() == 25 and (y[parts["b"]] == 0).sum() == 75
    assert (y[parts["a"]] == 1).sum() == 9 and (y[parts["b"]] == 1).sum() == 1
    assert not set(parts["a"].tolist()) & set(parts["b"].tolist())


def test_split_refuses_more_clients_than_samples():
    y = labels({0: 2})
    with pytest.raises(data.DataError, match="class 0 has 2 training samples, fewer than the 3 clients"):
        data.split(y, {"a": {0: 1}, "b": {0: 1}, "c": {0: 1}}, seed=0)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "want a JSON object"),
        ({"clients": {}}, "clients must be a non-empty object"),
        ({"clients": {"a": {"x": 1}}}, "class 'x' is not a class number"),
        ({"clients": {"a": {"10": 1}}}, r"class 10 outside 0..9"),
        ({"clients": {"a": {"1": -1}}}, "count -1 is not an integer >= 0"),
        ({"dataset": "imagenet", "clients": {"a": {"1": 1}}}, "dataset 'imagenet' .allowed: digits, mnist1d"),
        ({"seed": "x", "clients": {"a": {"1": 1}}}, "seed 'x' is not an integer"),
    ],
)
def test_partition_errors_name_the_problem(table, message):
    with pytest.raises(data.DataError, match=message):
        data.parse_partition(table, "p.json")


def test_partition_file(tmp_path):
    p = tmp_path / "p.json"
    p.write_text('{"dataset": "digits", "seed": 7, "clients": {"n4": {"0": 1000, "1": 10000}}}')
    part = data.read_partition(p)
    assert part.dataset == "digits" and part.seed == 7 and part.clients == {"n4": {0: 1000, 1: 10000}}
    p.write_text("{")
    with pytest.raises(data.DataError, match="not JSON"):
        data.read_partition(p)


def test_digits_split_is_fixed_by_the_seed():
    a, b, c = data.load("digits", 0), data.load("digits", 0), data.load("digits", 1)
    assert a.x_train.shape == (1438, 1, 8, 8) and a.x_test.shape == (359, 1, 8, 8)
    assert a.x_train.dtype == np.float32 and a.y_train.dtype == np.int64
    assert np.array_equal(a.y_test, b.y_test) and np.array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.x_test, c.x_test)
    assert set(np.unique(a.y_test)) == set(range(10))
    # Stratified: every class is a fifth test (rounded), and no sample is in both splits.
    assert all(
        abs(n - 0.2 * (n + m)) <= 0.5
        for n, m in zip(np.bincount(a.y_test), np.bincount(a.y_train), strict=True)
    )
    assert not {x.tobytes() for x in a.x_test} & {x.tobytes() for x in a.x_train} - {
        np.zeros((1, 8, 8), np.float32).tobytes()
    }


def test_mnist1d_generates_offline():
    d = data.load("mnist1d", 0)
    assert d.x_train.shape == (4000, 1, 40) and d.x_test.shape == (1000, 1, 40)
    assert d.num_classes == 10 and set(np.unique(d.y_train)) == set(range(10))


def write_batch(path, n, seed):
    rng = np.random.default_rng(seed)
    batch = {
        b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
        b"labels": rng.integers(0, 10, size=n).tolist(),
    }
    path.write_bytes(pickle.dumps(batch))


def test_cifar10_from_python_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    write_batch(folder / "data_batch_1", 12, 1)
    write_batch(folder / "data_batch_2", 8, 2)
    write_batch(folder / "test_batch", 5, 3)
    d = data.load("cifar10", 0, str(tmp_path))
    assert d.x_train.shape == (20, 3, 32, 32) and d.x_test.shape == (5, 3, 32, 32)
    assert d.x_train.dtype == np.float32 and -1.0 <= d.x_train.min() and d.x_train.max() <= 1.0


def test_cifar10_errors_name_the_files(tmp_path):
    with pytest.raises(data.DataError, match="needs --data-dir"):
        data.load("cifar10", 0)
    with pytest.raises(data.DataError, match=r"data_batch_1..5 .at least one. and test_batch"):
        data.load("cifar10", 0, str(tmp_path))
    (tmp_path / "data_batch_1").write_bytes(b"not a pickle")
    write_batch(tmp_path / "test_batch", 5, 3)
    with pytest.raises(data.DataError, match="data_batch_1 is not a CIFAR-10 python batch"):
        data.load("cifar10", 0, str(tmp_path))
