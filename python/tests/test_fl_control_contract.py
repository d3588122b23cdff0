"""The control API's bodies as the orchestrator sends them (testdata/fl-control/contract.json,
which internal/fl/control's Go test marshals byte for byte): every field is one control.py reads,
every setting it reads is sent by some body, each body applies, and GET /status answers exactly
the fields Go decodes. No PyTorch here: control.py is the standard library's http.server."""

import json
import urllib.request
from pathlib import Path

import pytest

from continuum_fl.control import SETTINGS, Control, serve

CONTRACT = json.loads(
    (Path(__file__).resolve().parent / "testdata" / "fl-control" / "contract.json").read_text()
)
TOKEN = "c0ntrol-t0ken"


def test_config_fields_are_the_settings():
    sent = set().union(*(body.keys() for body in CONTRACT["config"]))
    assert sent == set(SETTINGS)


@pytest.mark.parametrize("body", CONTRACT["config"], ids=lambda b: ",".join(b))
def test_config_body_applies(body):
    control = Control("n2", "local", min_clients=1, epochs=1, local_rounds=1, clients=lambda: 0)
    status = control.update(body)
    for k, v in body.items():
        assert status[k] == v == control.get(k)


def test_status_has_the_fixture_fields():
    want = CONTRACT["status"]
    control = Control(
        want["id"],
        want["role"],
        min_clients=want["min_clients"],
        epochs=want["epochs"],
        local_rounds=want["local_rounds"],
        clients=lambda: want["clients"],
    )
    control.set_round(want["round"])
    assert control.status() == want


def test_bodies_over_http():
    control = Control("n2", "local", min_clients=1, epochs=1, local_rounds=1, clients=lambda: 0)
    server = serve(control, "127.0.0.1", 0, TOKEN)
    host, port = server.server_address[:2]
    try:

        def post(path, body):
            req = urllib.request.Request(
                f"http://{host}:{port}{path}",
                data=json.dumps(body).encode(),
                method="POST",
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())

        for body in CONTRACT["config"]:
            code, status = post("/config", body)
            assert code == 200 and all(status[k] == v for k, v in body.items()), (body, status)
        code, status = post("/stop", CONTRACT["stop"])
        assert code == 200 and status["stopping"] and control.stop.is_set()
    finally:
        server.shutdown()
        server.server_close()
