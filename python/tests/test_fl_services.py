"""The FL services on localhost with real Flower and PyTorch: a hierarchical run, the control
API, resuming from a snapshot, and unreliable clients. Every wait has a deadline; nothing
asserts on wall-clock time."""

import json
import threading
from collections.abc import Callable

import numpy as np
import pytest

from continuum_fl import data, model, snapshot
from continuum_fl.client import ClientSpec, run_clients
from fl_support import Repo, Services, addr, http, read_jsonl, wait_until

# gRPC's channel-state polling thread (target _run) raises when Flower closes a channel it
# still watches, as a client that fails and reconnects at once does; the services drop that
# benign race (flower.configure_logging), the in-process clients here leave it to this filter.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception in thread Thread-\d+ \(_run\):pytest.PytestUnhandledThreadExceptionWarning"
)

MODEL_BYTES = 622120  # the digits CNN's float32 parameters (test_fl_model checks the count)


@pytest.fixture
def services(tmp_path):
    s = Services(tmp_path)
    yield s
    s.close()


@pytest.fixture
def inproc_clients(tmp_path):
    """Starts clients as threads of the test process (as `clients --plan` runs them), which
    spares a process start (PyTorch's import) per test; returns their fl.jsonl reader."""
    stop = threading.Event()
    threads = []

    def start(clients: dict) -> Callable[[], list]:
        table = {cid: {c: 40 for c in range(10)} for cid in clients}
        ds = data.load("digits", 0)
        parts = data.split(ds.y_train, table, seed=1)
        specs = [ClientSpec(cid, server, fail) for cid, (server, fail) in clients.items()]
        t = threading.Thread(
            target=run_clients,
            args=(specs, ds, parts, "cnn", 0, str(tmp_path / "c"), None, stop),
            daemon=True,
        )
        t.start()
        threads.append(t)
        return lambda: read_jsonl(tmp_path / "c" / "fl.jsonl")

    yield start
    stop.set()
    for t in threads:
        t.join(10)


@pytest.fixture
def repo():
    r = Repo()
    yield r
    r.close()


def write_plan(path, clients: dict, table: dict | None = None) -> str:
    """clients: id -> (server, fail_prob); table: the partition (default: 40 of every class each)."""
    table = table or {cid: {str(c): 40 for c in range(10)} for cid in clients}
    plan = {
        "dataset": "digits",
        "seed": 1,
        "clients": table,
        "clients_by_node": {"n": [{"id": c, "server": s, "fail_prob": p} for c, (s, p) in clients.items()]},
    }
    path.write_text(json.dumps(plan))
    return str(path)


def rounds(events, role=None):
    return [e for e in events if e["event"] == "round" and (role is None or e["role"] == role)]


def test_hierarchical_run(services, repo, tmp_path):
    g, l1, l2 = addr(), addr(), addr()
    gc, l1c, l2c = addr(), addr(), addr()
    common = ["--min-clients", "2", "--epochs", "3", "--report", repo.url]
    glob = services.start(
        "g",
        "aggregator",
        "--id",
        "g",
        "--listen",
        g,
        "--control",
        gc,
        "--rounds",
        "2",
        "--lr",
        "0.1",
        *common,
    )
    locals_ = [
        services.start(
            name,
            "aggregator",
            "--id",
            name,
            "--listen",
            listen,
            "--control",
            control,
            "--parent",
            g,
            "--local-rounds",
            "2",
            *common,
        )
        for name, listen, control in (("l1", l1, l1c), ("l2", l2, l2c))
    ]
    # Non-IID clients: half the classes each; the two clusters both cover all ten.
    evens, odds, low, high = ([0, 2, 4, 6, 8], [1, 3, 5, 7, 9], [0, 1, 2, 3, 4], [5, 6, 7, 8, 9])
    table = {
        cid: {str(c): 60 for c in cls}
        for cid, cls in (("c1", low), ("c2", high), ("c3", evens), ("c4", odds))
    }
    plan = write_plan(
        tmp_path / "plan.json", {"c1": (l1, 0), "c2": (l1, 0), "c3": (l2, 0), "c4": (l2, 0)}, table
    )
    clients = services.start("c", "clients", "--plan", plan, "--node", "n", "--report", repo.url)

    # The global aggregator ends after round 2 and its graceful disconnect ends everyone.
    for p in (glob, *locals_, clients):
        assert services.wait_exit(p) == 0, services.log(p.name)

    ge = services.events("g")
    assert [e["event"] for e in ge] == ["start", "round", "round", "stop"]
    last = rounds(ge)[-1]
    assert [e["round"] for e in rounds(ge)] == [1, 2]
    assert last["accuracy"] > 0.2, last  # chance is 0.1
    assert last["clients"] == 2 and last["failures"] == 0 and last["examples"] == 4 * 300
    # Model bytes: each global round sends the model to 2 local aggregators and gets 2 back.
    assert (last["bytes_sent"], last["bytes_received"]) == (4 * MODEL_BYTES, 4 * MODEL_BYTES)

    for name in ("l1", "l2"):
        le = services.events(name)
        lr = rounds(le)
        assert [(e["round"], e["local_round"]) for e in lr] == [(1, 1), (1, 2), (2, 1), (2, 2)]
        assert all(e["clients"] == 2 and e["examples"] == 600 and e["epochs"] == 3 for e in lr)
        # 2 parent rounds: 1 model in and out with the parent, 2 local rounds x 2 children each way.
        assert le[-1]["event"] == "stop"
        assert (le[-1]["bytes_sent"], le[-1]["bytes_received"]) == (10 * MODEL_BYTES, 10 * MODEL_BYTES)

    ce = services.events("c")
    for cid in ("c1", "c2", "c3", "c4"):
        mine = [e for e in ce if e["id"] == cid]
        assert [e["event"] for e in mine] == ["start", "round", "round", "round", "round", "stop"]
        assert all(e["examples"] == 300 and e["epochs"] == 3 for e in rounds(mine))
        assert (mine[-1]["bytes_sent"], mine[-1]["bytes_received"]) == (4 * MODEL_BYTES, 4 * MODEL_BYTES)

    # The orchestrator got the same lines and a snapshot per global round.
    posted = {(e["id"], e["event"], e.get("round"), e.get("local_round")) for e in repo.reports}
    assert (
        ("g", "round", 2, None) in posted
        and ("l2", "round", 2, 2) in posted
        and ("c4", "stop", None, None) in posted
    )
    assert sorted(repo.models) == [1, 2]
    net = model.build("cnn", "digits", 10, 0)
    model.set_weights(net, snapshot.from_npz(repo.models[2]))


def test_control_api(services, inproc_clients):
    g, gc = addr(), addr()
    glob = services.start(
        "g",
        "aggregator",
        "--id",
        "g",
        "--listen",
        g,
        "--control",
        gc,
        "--rounds",
        "1000",
        "--min-clients",
        "3",
    )
    status = services.wait_ready(glob, gc)
    assert status == {
        "id": "g",
        "role": "global",
        "round": 0,
        "clients": 0,
        "min_clients": 3,
        "epochs": 1,
        "local_rounds": 1,
    }
    client_events = inproc_clients({"c1": (g, 0), "c2": (g, 0)})
    wait_until(lambda: http("GET", f"http://{gc}/status")[1]["clients"] == 2, "2 clients connected")
    # Two of three: the first round waits.
    assert http("GET", f"http://{gc}/status")[1]["round"] == 0
    assert rounds(services.events("g")) == []

    code, body = http("POST", f"http://{gc}/config", {"min_clients": 0})
    assert code == 400 and body["error"] == "min_clients: 0 is not an integer >= 1"
    code, body = http("POST", f"http://{gc}/config", {"rounds": 3})
    assert (
        code == 400
        and "unknown setting 'rounds' (allowed: min_clients, epochs, local_rounds)" in body["error"]
    )
    code, body = http("POST", f"http://{gc}/config", {"min_clients": 2, "epochs": 2})
    assert code == 200 and body["min_clients"] == 2 and body["epochs"] == 2

    # Lowered to 2: the waiting round runs, with the new epochs.
    first = wait_until(lambda: rounds(services.events("g")), "a round after lowering min_clients")[0]
    assert first["round"] == 1 and first["clients"] == 2 and first["epochs"] == 2

    code, body = http("POST", f"http://{gc}/stop")
    assert code == 200 and body["stopping"] is True
    assert services.wait_exit(glob) == 0
    # The graceful end reaches the clients.
    wait_until(
        lambda: sorted(e["id"] for e in client_events() if e["event"] == "stop") == ["c1", "c2"], "stops"
    )
    ge = services.events("g")
    assert ge[-1]["event"] == "stop" and ge[-1]["reason"] == "stopped"
    assert rounds(ge)[-1]["round"] == ge[-1]["round"] < 1000


def test_resume_from_a_snapshot(services, inproc_clients):
    # A model no fresh start would have (another seed), taken at round 3.
    weights = model.get_weights(model.build("cnn", "digits", 10, seed=7))
    repo = Repo(latest=(3, snapshot.to_npz(weights)))
    try:
        g = addr()
        glob = services.start(
            "g",
            "aggregator",
            "--id",
            "g",
            "--listen",
            g,
            "--control",
            addr(),
            "--rounds",
            "4",
            "--lr",
            "0",
            "--resume-url",
            repo.url + "/model/latest",
            "--report",
            repo.url,
        )
        inproc_clients({"c1": (g, 0)})
        assert services.wait_exit(glob) == 0, services.log("g")
        ge = services.events("g")
        assert ge[0]["event"] == "start" and ge[0]["round"] == 3 and ge[0]["resumed"] is True
        assert [e["round"] for e in rounds(ge)] == [4]
        # With lr 0 training leaves the weights alone: round 4's snapshot is the resumed model.
        assert sorted(repo.models) == [4]
        for a, b in zip(weights, snapshot.from_npz(repo.models[4]), strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    finally:
        repo.close()


def test_unreliable_client(services, inproc_clients):
    g = addr()
    glob = services.start(
        "g",
        "aggregator",
        "--id",
        "g",
        "--listen",
        g,
        "--control",
        addr(),
        "--rounds",
        "2",
        "--min-clients",
        "3",
    )
    client_events = inproc_clients({"ok1": (g, 0), "ok2": (g, 0), "bad": (g, 1.0)})
    assert services.wait_exit(glob) == 0, services.log("g")
    # The reliable clients end with the training; the unreliable one may be between connections
    # when the server ends, and then retries until it is stopped (the orchestrator's job).
    wait_until(lambda: {e["id"] for e in client_events() if e["event"] == "stop"} >= {"ok1", "ok2"}, "stops")
    rs = rounds(services.events("g"))
    assert [e["round"] for e in rs] == [1, 2]
    # Every round waits for all three, the unreliable one fails, the round completes with the others.
    assert all(e["clients"] == 2 and e["failures"] >= 1 for e in rs), rs
    bad = [e for e in client_events() if e["id"] == "bad"]
    # Its own record: it failed (normally in both rounds; a round may begin before the server
    # has dropped its previous connection, and then that stale one is what fails).
    fails = [e["round"] for e in bad if e["event"] == "fail"]
    assert fails and set(fails) <= {1, 2}
    assert not rounds(bad) and bad[-1]["bytes_sent"] == 0


def test_global_restart_resumes_and_the_tree_rejoins(services, repo, inproc_clients):
    g, gc, local, localc = addr(), addr(), addr(), addr()
    resume = ["--report", repo.url, "--resume-url", repo.url + "/model/latest"]
    first = services.start(
        "g1", "aggregator", "--id", "g", "--listen", g, "--control", gc, "--rounds", "1000", *resume
    )
    loc = services.start(
        "l", "aggregator", "--id", "l", "--listen", local, "--control", localc, "--parent", g
    )
    client_events = inproc_clients({"c1": (local, 0)})
    wait_until(lambda: rounds(services.events("g1")), "a first global round")
    # Hold the first global aggregator between rounds, then kill it there.
    assert http("POST", f"http://{gc}/config", {"min_clients": 5})[0] == 200
    wait_until(
        lambda: http("GET", f"http://{gc}/status")[1]["round"] == rounds(services.events("g1"))[-1]["round"],
        "held",
    )
    held = rounds(services.events("g1"))[-1]["round"]
    first.terminate()
    assert services.wait_exit(first) == 0
    assert services.events("g1")[-1] == {**services.events("g1")[-1], "event": "stop", "reason": "SIGTERM"}
    assert max(repo.models) == held

    # A new global aggregator on the same address resumes from the snapshot; the local
    # aggregator and its client, never restarted, rejoin it.
    second = services.start(
        "g2", "aggregator", "--id", "g", "--listen", g, "--control", gc, "--rounds", str(held + 2), *resume
    )
    for p in (second, loc):
        assert services.wait_exit(p) == 0, services.log(p.name)
    wait_until(lambda: [e["event"] for e in client_events()][-1] == "stop", "the client's end")
    g2 = services.events("g2")
    assert g2[0]["event"] == "start" and g2[0]["round"] == held and g2[0]["resumed"] is True
    assert [e["round"] for e in rounds(g2)] == [held + 1, held + 2]
    le = services.events("l")
    assert [e["event"] for e in le].count("start") == 1
    assert [e["round"] for e in rounds(le)][-2:] == [held + 1, held + 2]


def test_local_stop_finishes_the_parent_round(services, inproc_clients):
    g, gc, local, localc = addr(), addr(), addr(), addr()
    glob = services.start("g", "aggregator", "--id", "g", "--listen", g, "--control", gc, "--rounds", "1000")
    loc = services.start(
        "l", "aggregator", "--id", "l", "--listen", local, "--control", localc, "--parent", g,
        "--local-rounds", "3",
    )  # fmt: skip
    client_events = inproc_clients({"c1": (local, 0)})
    wait_until(lambda: rounds(services.events("l")), "a local round")
    code, body = http("POST", f"http://{localc}/stop")
    assert code == 200 and body["stopping"] is True and body["role"] == "local"
    assert services.wait_exit(loc) == 0, services.log("l")
    wait_until(lambda: [e["event"] for e in client_events()][-1] == "stop", "the client's end")

    le = services.events("l")
    assert le[-1]["event"] == "stop" and le[-1]["reason"] == "stopped"
    last = le[-1]["round"]
    # The parent's round in progress at the stop ran all its local rounds and was delivered.
    assert [e["local_round"] for e in rounds(le) if e["round"] == last] == [1, 2, 3]
    wait_until(lambda: [e for e in rounds(services.events("g")) if e["round"] == last], "the parent's round")
    assert [e["clients"] for e in rounds(services.events("g")) if e["round"] == last] == [1]
    assert http("POST", f"http://{gc}/stop")[0] == 200
    assert services.wait_exit(glob) == 0
