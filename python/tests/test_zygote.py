"""The zygote forks ready instances of a handler it imported once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from conftest import FUNCTIONS, SRC, free_port
from test_runtimes import BATCH, request


def ask(path: str, req: dict) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(json.dumps(req).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def test_zygote_forks_instances(tmp_path):
    sock = str(tmp_path / "z.sock")
    z = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "continuum_functions.zygote",
            str(FUNCTIONS / "iot-analytics"),
            "--socket",
            sock,
        ],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
    )
    pids = []
    try:
        end = time.monotonic() + 60
        while True:  # until it listens (it imports pandas first)
            assert z.poll() is None and time.monotonic() < end, "zygote did not start"
            try:
                ask(sock, {"nope": 1})
                break
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.02)
        ports = [free_port(), free_port()]
        for port in ports:
            answer = ask(sock, {"port": port})
            assert "pid" in answer, answer
            pids.append(answer["pid"])
            # The instance listens once the zygote answers: no wait.
            status, _, body = request(port, "POST", "/", BATCH)
            assert status == 200 and json.loads(body)["valid"] == 2
        assert pids[0] != pids[1] and z.pid not in pids
        # A port in use is an error answer, and the zygote goes on.
        answer = ask(sock, {"port": ports[0]})
        assert "error" in answer and str(ports[0]) in answer["error"]
        answer = ask(sock, {"port": free_port()})
        assert "pid" in answer and z.poll() is None
        pids.append(answer["pid"])
        assert "error" in ask(sock, {"nope": 1})
        # Classic on the zygote: one request in a forked child, CGI-framed.
        for body, want in ((BATCH, b"Status: 200"), (b"[1", b"Status: 400")):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(sock)
                env = {"Http_Method": "POST", "Http_Path": "/", "Http_Content_Type": "application/json"}
                s.sendall(
                    json.dumps({"classic": {"env": env, "body_len": len(body)}}).encode() + b"\n" + body
                )
                out = b""
                while chunk := s.recv(65536):
                    out += chunk
            first, _, rest = out.partition(b"\n")
            assert "pid" in json.loads(first) and rest.startswith(want), out[:200]
        assert z.poll() is None
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        z.kill()
        z.wait()
