"""A zygote: a process that has imported a handler (and pandas, and the runtime) once and
forks ready instances of it on request, so a new instance skips the interpreter's start and
every import (SOCK-style pre-imported Python zygotes; seeds/001's cold-start problem).

It listens on a unix socket. Each request is one JSON line,
``{"port": P, "host": "127.0.0.1", "cgroups": [".../cgroup.procs", ...], "exec_timeout": S}``; the
zygote forks a child that moves itself into those cgroups (the caller's), so the instance is
limited and accounted as the caller's, binds host:port, and serves the handler
there (as ``continuum_functions.server`` does). The answer, once the child listens, is
``{"pid": N}`` or ``{"error": "..."}``.

``{"classic": {...}}`` instead runs one request in a forked child, the classic watchdog's
process per request without the exec and the imports (see :func:`classic`).

    python -m continuum_functions.zygote python/functions/iot-analytics --socket /tmp/z.sock
"""

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from typing import BinaryIO

from continuum_functions.classic import cgi, event_from_env
from continuum_functions.event import Handler, call, load_handler
from continuum_functions.server import serve_socket


def spawn(handle: Handler, req: dict, max_body: int) -> int:
    """Forks an instance serving on req's port; returns its pid once it listens."""
    host, port = str(req.get("host", "127.0.0.1")), int(req["port"])
    exec_timeout = float(req.get("exec_timeout") or 0)
    cgroups = req.get("cgroups") or []
    # The child listens before it answers, so the caller can send requests at once.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the instance
        os.close(r)
        status = b"ok"
        try:
            for path in cgroups:
                with open(path, "w") as f:
                    f.write(str(os.getpid()))
            sock = socket.create_server((host, port), reuse_port=False)
        except OSError as e:
            status = f"instance on {host}:{port}: {e}".encode()
        os.write(w, status)
        os.close(w)
        if status != b"ok":
            os._exit(1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            asyncio.run(serve_socket(handle, sock, max_body, exec_timeout))
        finally:
            os._exit(0)
    os.close(w)
    status = os.read(r, 4096)
    os.close(r)
    if status != b"ok":
        raise OSError(status.decode())
    return pid


def classic(handle: Handler, req: dict, f: BinaryIO) -> None:
    """One request in a forked child, as the classic watchdog runs one per process, but without
    exec'ing an interpreter or importing anything: ``req`` has ``env`` (the classic
    watchdog's Http_* variables, as [name, value] pairs), ``body_len`` and ``cgroups``; the
    body follows on the connection. The child answers a line ``{"pid": N}``, then the CGI-framed response, and
    exits; the zygote goes on at once."""
    if os.fork() != 0:
        return  # the zygote: the child owns the connection now
    code = 0
    try:
        for path in req.get("cgroups") or []:
            with open(path, "w") as cg:
                cg.write(str(os.getpid()))
        f.write(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        f.flush()
        body = f.read(int(req.get("body_len", 0)))
        raw = req.get("env") or {}
        # [[name, value], ...] in the watchdog's order (or an object).
        pairs = raw.items() if isinstance(raw, dict) else raw
        env = {str(k): str(v) for k, v in pairs}
        f.write(cgi(call(handle, event_from_env(body, env))))
        f.flush()
    except BaseException:  # the child must never return into the zygote's loop
        code = 1
    finally:
        os._exit(code)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="continuum_functions.zygote", description=__doc__.split("\n")[0])
    ap.add_argument("handler", help="function folder or its handler.py")
    ap.add_argument("--socket", required=True, help="unix socket path to listen on")
    ap.add_argument("--max-body", type=int, default=64 << 20)
    args = ap.parse_args(argv)
    try:
        handle = load_handler(args.handler)
    except (OSError, ImportError) as e:
        print(f"continuum_functions.zygote: {e}", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # instances are reaped by the kernel
    with contextlib.suppress(FileNotFoundError):
        os.unlink(args.socket)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(args.socket)
    srv.listen(64)
    print(f"zygote for {args.handler} on {args.socket}", flush=True)
    while True:
        conn, _ = srv.accept()
        with conn, conn.makefile("rwb") as f:
            for line in f:
                try:
                    req = json.loads(line)
                    if isinstance(req, dict) and "classic" in req:
                        # The rest of this connection is the request: a child takes it over.
                        classic(handle, req["classic"], f)
                        break
                    answer = {"pid": spawn(handle, req, args.max_body)}
                except (OSError, ValueError, KeyError, TypeError) as e:
                    answer = {"error": str(e)}
                f.write(json.dumps(answer).encode() + b"\n")
                f.flush()


if __name__ == "__main__":
    main()
