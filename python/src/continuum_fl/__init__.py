"""Continuum's federated-learning services on Flower and PyTorch.

Three roles, each a long-lived process (``python -m continuum_fl ROLE ...``):

- ``aggregator`` without ``--parent``: the global aggregator, FedAvg over its children,
  evaluating the global model on the data set's held-out split after every round and
  uploading it to the model repository;
- ``aggregator`` with ``--parent``: a local (edge) aggregator, at once a Flower server to its
  children and a Flower client to its parent: one fit from the parent runs ``local_rounds``
  rounds of FedAvg with its own children;
- ``client`` (and ``clients``, many clients as threads of one process): trains the model on its
  share of the data set.

Flower's legacy gRPC (bidirectional stream) API is used because it is the only one in which a
process can be a long-lived server to its children and a client to its parent at once.

The package imports neither pandas nor Flask (those belong to ``continuum_functions``), and
the aggregators load PyTorch only where they need a model (the global one), so that a local
aggregator starts in a fraction of a second.
"""
