"""Bad command lines exit 2 with a message naming the flag and what is allowed."""

import re
import subprocess
import sys

import pytest

from continuum_fl.__main__ import main
from fl_support import SRC


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: aggregator|client|clients"),
        (["trainer"], "invalid choice: 'trainer'"),
        (["aggregator", "--rounds", "0"], "--rounds: 0 is not >= 1"),
        (["aggregator", "--min-clients", "two"], "--min-clients: 'two' is not an integer"),
        (["aggregator", "--listen", "8080"], "--listen: '8080' is not HOST:PORT"),
        (
            ["aggregator", "--dataset", "mnist"],
            r"--dataset: invalid choice: 'mnist' \(choose from 'digits', 'mnist1d'",
        ),
        (["aggregator", "--model", "resnet"], "--model: invalid choice: 'resnet'"),
        (["aggregator", "--lr", "-1"], "--lr: -1 is not a finite number >= 0"),
        (["aggregator", "--report", "orch:9000"], "--report: 'orch:9000' is not an http:// or https:// URL"),
        (["aggregator", "--dataset", "cifar10"], "--dataset cifar10 needs --data-dir"),
        (["aggregator", "--parent", "a:1", "--resume-url", "http://o/m"], "--resume-url is for the global"),
        (["client", "--fail-prob", "1.5"], "--fail-prob: 1.5 is not a probability in 0..1"),
        (["client", "--server", "host"], "--server: 'host' is not HOST:PORT"),
        (["clients", "--seed", "x"], "--seed: invalid int value: 'x'"),
        (
            ["client", "--partition", "p.json", "--partition-json", "{}"],
            "not allowed with argument --partition",
        ),
        (["clients", "--plan", "p.json", "--plan-json", "{}"], "not allowed with argument --plan"),
    ],
)
def test_bad_flags_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err


def test_bad_flags_exit_2_as_a_process():
    p = subprocess.run(
        [sys.executable, "-m", "continuum_fl", "client", "--fail-prob", "2"],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert "--fail-prob: 2 is not a probability in 0..1" in p.stderr


def test_runtime_errors_exit_1_naming_the_input(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text('{"clients_by_node": {"n1": [{"id": "c1", "server": "127.0.0.1:1"}]}}')
    assert main(["clients", "--plan", str(plan), "--node", "n2", "--out", str(tmp_path)]) == 1
    assert "no clients for node 'n2' (nodes: n1)" in capsys.readouterr().err
    part = tmp_path / "p.json"
    part.write_text('{"dataset": "digits", "clients": {"c9": {"0": 5}}}')
    assert main(["client", "--id", "c1", "--partition", str(part), "--out", str(tmp_path)]) == 1
    assert "partition has no row for client c1 (rows: c9)" in capsys.readouterr().err
    part.write_text('{"dataset": "mnist1d", "clients": {"c1": {"0": 5}}}')
    assert main(["client", "--id", "c1", "--partition", str(part), "--out", str(tmp_path)]) == 1
    assert "partition is for data set 'mnist1d', --dataset is 'digits'" in capsys.readouterr().err


def test_inline_json_is_checked_as_the_files_are(tmp_path, capsys):
    """--plan-json and --partition-json (what the orchestrator passes, so that the tables reach
    services that run apart from its files) must be JSON objects (exit 2 naming the flag), and
    are then checked as the files are."""
    out = ["--out", str(tmp_path)]
    for argv, message in [
        (["clients", "--plan-json", "{not json"], "argument --plan-json: not JSON"),
        (
            ["client", "--partition-json", "null"],
            "argument --partition-json: want a JSON object, not NoneType",
        ),
        (
            ["client", "--partition-json", '"p.json"'],
            "argument --partition-json: want a JSON object, not str",
        ),
        (
            ["clients", "--partition-json", "[1, 2]"],
            "argument --partition-json: want a JSON object, not list",
        ),
    ]:
        with pytest.raises(SystemExit) as e:
            main([*argv, *out])
        assert e.value.code == 2
        assert message in capsys.readouterr().err
    plan = '{"clients_by_node": {"n1": [{"id": "c1", "server": "127.0.0.1:1"}]}}'
    assert main(["clients", "--plan-json", plan, "--node", "n2", *out]) == 1
    assert "--plan-json: no clients for node 'n2' (nodes: n1)" in capsys.readouterr().err
    table = '{"dataset": "digits", "clients": {"c9": {"0": 5}}}'
    assert main(["client", "--id", "c1", "--partition-json", table, *out]) == 1
    assert "partition has no row for client c1 (rows: c9)" in capsys.readouterr().err
    empty = '{"clients": {"c1": {"0": 0}}}'
    assert main(["clients", "--plan-json", plan, "--node", "n1", "--partition-json", empty, *out]) == 1
    assert "partition gives client c1 no samples" in capsys.readouterr().err
