"""The CNN for each data set, weights in and out, and model snapshots (.npz)."""

import numpy as np
import pytest
import torch

from continuum_fl import model, snapshot
from fl_support import Repo

SHAPES = {"digits": (1, 8, 8), "mnist1d": (1, 40), "cifar10": (3, 32, 32)}
# conv1, conv2, fc1 (512), fc2 (10 classes): the seed's layers, sized to each input.
PARAMS = {
    "digits": 32 * 9 + 32 + 64 * 32 * 9 + 64 + 256 * 512 + 512 + 512 * 10 + 10,
    "mnist1d": 32 * 5 + 32 + 64 * 32 * 5 + 64 + 640 * 512 + 512 + 512 * 10 + 10,
    "cifar10": 32 * 3 * 25 + 32 + 64 * 32 * 25 + 64 + 1600 * 512 + 512 + 512 * 10 + 10,
}


@pytest.mark.parametrize("dataset", sorted(SHAPES))
def test_cnn_shapes(dataset):
    net = model.build("cnn", dataset, 10, seed=0)
    out = net(torch.zeros(4, *SHAPES[dataset]))
    assert out.shape == (4, 10)
    weights = model.get_weights(net)
    assert len(weights) == 8
    assert sum(w.size for w in weights) == PARAMS[dataset]
    assert model.nbytes(weights) == 4 * PARAMS[dataset]


def test_same_seed_same_weights_and_set_weights_checks_shapes():
    a, b = (
        model.get_weights(model.build("cnn", "digits", 10, 3)),
        model.get_weights(model.build("cnn", "digits", 10, 3)),
    )
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    net = model.build("cnn", "digits", 10, 4)
    model.set_weights(net, a)
    assert all(np.array_equal(x, y) for x, y in zip(model.get_weights(net), a, strict=True))
    with pytest.raises(ValueError, match="model has 8 tensors, got 7"):
        model.set_weights(net, a[:-1])
    cifar = model.get_weights(model.build("cnn", "cifar10", 10, 0))
    with pytest.raises(ValueError, match=r"tensor conv1.weight: model shape \(32, 1, 3, 3\)"):
        model.set_weights(net, cifar)


def test_unknown_model_or_dataset():
    with pytest.raises(ValueError, match="unknown model 'mlp'"):
        model.build("mlp", "digits", 10, 0)
    with pytest.raises(ValueError, match="unknown data set 'imagenet'"):
        model.build("cnn", "imagenet", 10, 0)


def test_training_lowers_the_loss():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 1, 8, 8)).astype(np.float32)
    y = (x.reshape(64, -1).sum(1) > 0).astype(np.int64)
    net = model.build("cnn", "digits", 10, 0)
    before, _ = model.evaluate(net, x, y)
    model.train(net, x, y, epochs=5, lr=0.05, batch_size=16, seed=0)
    after, _ = model.evaluate(net, x, y)
    assert after < before


def test_npz_round_trip_keeps_order():
    arrays = [np.full((i + 1, 2), i, dtype=np.float32) for i in range(12)]  # a10, a11 sort after a9
    back = snapshot.from_npz(snapshot.to_npz(arrays))
    assert len(back) == 12
    for a, b in zip(arrays, back, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_npz_errors():
    with pytest.raises(snapshot.SnapshotError, match=r"not a readable \.npz"):
        snapshot.from_npz(b"junk")
    import io

    buf = io.BytesIO()
    np.savez(buf, a0=np.zeros(1), a2=np.zeros(1))
    with pytest.raises(snapshot.SnapshotError, match="no gap"):
        snapshot.from_npz(buf.getvalue())
    buf = io.BytesIO()
    np.savez(buf, w=np.zeros(1))
    with pytest.raises(snapshot.SnapshotError, match=r"key 'w': want a0\.\.aN"):
        snapshot.from_npz(buf.getvalue())


def test_upload_and_fetch_through_the_repository():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(4, dtype=np.float32)]
    repo = Repo()
    try:
        assert snapshot.fetch(repo.url + "/model/latest") is None  # 404: start fresh
        snapshot.upload(repo.url, 7, arrays)
        repo.latest = (7, repo.models[7])
        got = snapshot.fetch(repo.url + "/model/latest")
        assert got is not None and got[0] == 7
        assert all(np.array_equal(a, b) for a, b in zip(arrays, got[1], strict=True))
        with pytest.raises(snapshot.SnapshotError, match=r"PUT .*/nowhere/model"):
            snapshot.upload(repo.url + "/nowhere", 1, arrays)
    finally:
        repo.close()
