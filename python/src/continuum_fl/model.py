"""The seed's CNN, sized to each data set, and its local training and evaluation.

The seed's network (its Figure 5, for CIFAR-10): two convolutions (32 and 64 channels, 5x5),
each followed by ReLU and 2x2 max pooling, then a 512-unit fully connected layer with ReLU and
a fully connected layer to the classes. The same shape serves the smaller inputs:

- cifar10 (3x32x32): 5x5 kernels, no padding, as the seed: 32 -> 28 -> 14 -> 10 -> 5;
- digits (1x8x8): 3x3 kernels, padding 1: 8 -> 4 -> 2 (a 5x5 kernel would not fit twice);
- mnist1d (1x40): 1-D convolutions, kernel 5, padding 2: 40 -> 20 -> 10.

The parameters travel as the state dict's tensors in order (``get_weights``/``set_weights``);
the order is fixed by the module definition, so every process agrees on it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

MODELS = ("cnn",)


class CNN(nn.Module):
    def __init__(self, dataset: str, num_classes: int = 10) -> None:
        super().__init__()
        # Conv1d/MaxPool1d for mnist1d's 1-D signals, the 2-D ones for images: one shape of net.
        conv: type[nn.Conv1d] | type[nn.Conv2d]
        pool: type[nn.MaxPool1d] | type[nn.MaxPool2d]
        if dataset == "cifar10":
            conv, pool, k, pad, channels, side, dims = nn.Conv2d, nn.MaxPool2d, 5, 0, 3, 5, 2
        elif dataset == "digits":
            conv, pool, k, pad, channels, side, dims = nn.Conv2d, nn.MaxPool2d, 3, 1, 1, 2, 2
        elif dataset == "mnist1d":
            conv, pool, k, pad, channels, side, dims = nn.Conv1d, nn.MaxPool1d, 5, 2, 1, 10, 1
        else:
            raise ValueError(f"model cnn: unknown data set {dataset!r} (allowed: cifar10, digits, mnist1d)")
        self.conv1 = conv(channels, 32, k, padding=pad)
        self.conv2 = conv(32, 64, k, padding=pad)
        self.pool = pool(2)
        self.fc1 = nn.Linear(64 * side**dims, 512)
        self.fc2 = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        out: torch.Tensor = self.fc2(torch.relu(self.fc1(x)))
        return out


def build(model: str, dataset: str, num_classes: int, seed: int) -> CNN:
    """A freshly initialised model; the same seed gives the same weights in every process."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r} (allowed: {', '.join(MODELS)})")
    torch.manual_seed(seed)
    return CNN(dataset, num_classes)


def get_weights(net: nn.Module) -> list[NDArray[Any]]:
    return [t.detach().cpu().numpy().copy() for t in net.state_dict().values()]


def set_weights(net: nn.Module, arrays: list[NDArray[Any]]) -> None:
    """Loads arrays (in get_weights order); a count or shape mismatch is an error naming the layer."""
    state = net.state_dict()
    if len(arrays) != len(state):
        raise ValueError(f"model has {len(state)} tensors, got {len(arrays)} arrays")
    new = OrderedDict()
    for (name, t), a in zip(state.items(), arrays, strict=True):
        if tuple(a.shape) != tuple(t.shape):
            raise ValueError(f"tensor {name}: model shape {tuple(t.shape)}, got {tuple(a.shape)}")
        new[name] = torch.from_numpy(np.asarray(a, dtype=np.float32))
    net.load_state_dict(new)


def nbytes(arrays: list[NDArray[Any]]) -> int:
    return int(sum(a.nbytes for a in arrays))


def train(
    net: nn.Module, x: NDArray[Any], y: NDArray[Any], epochs: int, lr: float, batch_size: int, seed: int
) -> float:
    """SGD for epochs passes over (x, y) in shuffled batches; returns the last epoch's mean loss."""
    if len(x) == 0:
        raise ValueError("no training samples")
    gen = torch.Generator().manual_seed(seed)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    net.train()
    mean = 0.0
    for _ in range(epochs):
        order = torch.randperm(len(xs), generator=gen)
        total, count = 0.0, 0
        for i in range(0, len(xs), batch_size):
            idx = order[i : i + batch_size]
            opt.zero_grad()
            loss = loss_fn(net(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            count += len(idx)
        mean = total / count
    return mean


@torch.no_grad()
def evaluate(net: nn.Module, x: NDArray[Any], y: NDArray[Any], batch_size: int = 512) -> tuple[float, float]:
    """(mean cross-entropy loss, accuracy) over (x, y)."""
    net.eval()
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    total, correct = 0.0, 0
    for i in range(0, len(xs), batch_size):
        out = net(xs[i : i + batch_size])
        total += loss_fn(out, ys[i : i + batch_size]).item()
        correct += int((out.argmax(1) == ys[i : i + batch_size]).sum())
    return total / max(len(xs), 1), correct / max(len(xs), 1)
