"""The python3-http contract, byte for byte: the template's own index.py under Flask and
Waitress (testdata/python3-http) and each of Continuum's long-lived runtimes serve the same
handler (testdata/contract), and every request of the table (testdata/contract/cases.json)
must get the same status, body and headers from all of them. The classic mode, the zygote's
classic children and everything behind the Go watchdog are compared the same way by
internal/faas/contract_test.go, from the same table."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SRC, free_port, wait_listening

TESTDATA = Path(__file__).resolve().parent / "testdata"
CONTRACT = TESTDATA / "contract"
REFERENCE = TESTDATA / "python3-http" / "reference.py"
CASES = json.loads((CONTRACT / "cases.json").read_text())["cases"]

# What the servers add on their own, not the handler's answer.
TRANSPORT = {"content-length", "date", "server", "connection", "keep-alive", "x-handler-seconds"}


class Served:
    def __init__(self, proc: subprocess.Popen, port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log


def start(args: list[str], port: int, tmp: Path, name: str) -> Served:
    log = tmp / f"{name}.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            args,
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=f,
        )
    wait_listening(port, proc)
    return Served(proc, port, log)


def start_zygote_instance(tmp: Path) -> tuple[subprocess.Popen, int, int]:
    """A zygote for the handler and one instance it forked (the http upstream of zygote mode)."""
    sock = tmp / "z.sock"
    zlog = open(tmp / "zygote.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "continuum_functions.zygote", str(CONTRACT), "--socket", str(sock)],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=zlog,
    )
    zlog.close()
    end = time.monotonic() + 30
    while True:
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(str(sock))
            break
        except OSError:
            c.close()
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"zygote did not listen: {(tmp / 'zygote.log').read_text()}") from None
            time.sleep(0.02)
    port = free_port()
    with c, c.makefile("rwb") as f:
        f.write(json.dumps({"port": port}).encode() + b"\n")
        f.flush()
        pid = json.loads(f.readline())["pid"]
    return proc, port, pid


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Served]]:
    tmp = Path(tempfile.mkdtemp(prefix="contract-"))
    out: dict[str, Served] = {}
    zproc = None
    zpid = 0
    try:
        port = free_port()
        out["template"] = start(
            [sys.executable, str(REFERENCE), str(CONTRACT), "--port", str(port)], port, tmp, "template"
        )
        for module in ("server", "flaskapp"):
            port = free_port()
            out[module] = start(
                [sys.executable, "-m", f"continuum_functions.{module}", str(CONTRACT), "--port", str(port)],
                port,
                tmp,
                module,
            )
        zproc, port, zpid = start_zygote_instance(tmp)
        out["zygote"] = Served(zproc, port, tmp / "zygote.log")
        yield out
    finally:
        if zpid:
            os.kill(zpid, signal.SIGKILL)
        for s in out.values():
            s.proc.kill()
            s.proc.wait()


def ask(port: int, case: dict) -> tuple[int, dict[str, list[str]], bytes]:
    body = bytes.fromhex(case["body_hex"]) if "body_hex" in case else case["body"].encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.putrequest(case["method"], case["target"], skip_accept_encoding=True)
        for k, v in case["headers"]:
            c.putheader(k, v)
        if case.get("chunked"):
            c.putheader("Transfer-Encoding", "chunked")
            c.endheaders()
            c.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        else:
            if body or case["method"] in ("POST", "PUT", "PATCH"):
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body or None)
        r = c.getresponse()
        data = r.read()
        headers: dict[str, list[str]] = {}
        for k, v in r.getheaders():
            if k.lower() == "allow":  # Flask lists the methods from a set: its order is random
                v = ", ".join(sorted(v.split(", ")))
            if k.lower() not in TRANSPORT:  # names as sent, not lowered: Waitress capitalizes them
                headers.setdefault(k, []).append(v)
        return r.status, headers, data
    finally:
        c.close()


@pytest.mark.parametrize("runtime", ["server", "flaskapp", "zygote"])
def test_contract_table(servers, runtime):
    """Every case answered as the template answers it: status, body bytes, every header the
    handler or Flask sets (Content-Type included)."""
    failures = []
    for case in CASES:
        want = ask(servers["template"].port, case)
        got = ask(servers[runtime].port, case)
        if got != want:
            failures.append(
                f"{case['name']} ({case['method']} {case['target']}):\n  template {want}\n  {runtime} {got}"
            )
    assert not failures, "\n".join(failures)


def test_contract_table_is_not_trivial(servers):
    """The table exercises the rules: the reference gives the statuses and types that make the
    comparison mean something (a table of 200s would compare nothing)."""
    by_name = {c["name"]: ask(servers["template"].port, c) for c in CASES}
    assert by_name["raise"][0] == 500 and by_name["query-missing"][0] == 400
    assert by_name["dict-body"][1]["Content-Type"] == ["application/json"]
    assert by_name["list-body"][2] == b"[1, 'a', None]"  # str() of the list, as the template does
    assert by_name["header-pairs"][1]["X-Rep"] == ["1", "2"]
    h = json.loads(by_name["headers"][2])
    assert h["repeated"] == "one, two" and h["lower"] == h["upper"] == "MiXeD"
    q = json.loads(by_name["query"][2])
    assert q["getlist"] == ["1", "2"] and q["dict"]["a"] == "1"


@pytest.mark.parametrize("runtime", ["template", "server", "flaskapp", "zygote"])
def test_raising_handler_logs_its_traceback(servers, runtime):
    case = next(c for c in CASES if c["name"] == "raise")
    status, _, body = ask(servers[runtime].port, case)
    assert status == 500 and b"this handler raises" not in body  # the page does not leak it
    log = servers[runtime].log
    end = time.monotonic() + 30
    while time.monotonic() < end:
        text = log.read_text(errors="replace")
        if (
            "Traceback (most recent call last)" in text
            and "RuntimeError: contract table: this handler raises" in text
        ):
            assert "Exception on /raise [POST]" in text
            return
        time.sleep(0.05)
    pytest.fail(f"{runtime}: no traceback in the log:\n{log.read_text(errors='replace')}")


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        ({"statusCode": "abc", "body": "x"}, "statusCode 'abc'"),
        ({"statusCode": 1000}, "statusCode 1000"),
        ({"statusCode": 0}, "statusCode 0"),
        ({"statusCode": 201.0}, "statusCode 201.0"),
        ({"statusCode": True}, "statusCode True"),
        ({"statusCode": b"202"}, "statusCode b'202'"),
        ({"statusCode": ""}, "statusCode ''"),
        (iter([b"a"]), "returned list_iterator"),
        (__import__("flask").Response("x"), "returned Response"),
        (object(), "returned object"),
        (("a", 200, {}, 1), "tuple of 4"),
        ({"body": "x", "headers": {"X Bad": "1"}}, "header name 'X Bad'"),
    ],
)
def test_deliberate_differences(returned, why, capsys):
    """Where the template would send a status line no client reads, or Flask objects Continuum
    does not make: a 500 with werkzeug's page, and what was wrong in the log (docs/faas.md,
    "Where Continuum differs, on purpose")."""
    from continuum_functions.event import PAGE_500, Event, Headers, call

    resp = call(lambda e, c: returned, Event(headers=Headers({}), method="POST", path="/p"))
    assert (resp.status, resp.body) == (500, PAGE_500)
    err = capsys.readouterr().err
    assert "Exception on /p [POST]" in err and why in err


def test_status_strings_as_werkzeug_reads_them():
    from http import HTTPStatus

    from continuum_functions.event import to_response

    assert to_response({"statusCode": "201 Created"}).status == 201
    assert to_response({"statusCode": " 203 "}).status == 203
    assert to_response({"statusCode": HTTPStatus.ACCEPTED}).status == 202
