import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
FUNCTIONS = PYTHON_DIR / "functions"
SRC = PYTHON_DIR / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode}: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on {port} within {deadline} s")


@pytest.fixture
def start_server() -> Iterator[Callable[[str, Path], int]]:
    """Starts `python -m continuum_functions.<module> HANDLER --port P`; returns P."""
    procs: list[subprocess.Popen] = []

    def start(module: str, handler: Path) -> int:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", f"continuum_functions.{module}", str(handler), "--port", str(port)],
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(proc)
        wait_listening(port, proc)
        return port

    yield start
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def raising_handler(tmp_path: Path) -> Path:
    d = tmp_path / "raises"
    d.mkdir()
    (d / "handler.py").write_text(
        "def handle(event, context):\n    raise RuntimeError('sensor table missing')\n"
    )
    return d
