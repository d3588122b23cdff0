"""A small HTTP/1.1 server that calls one python3-http handler per request.

It is the upstream process of the ``http`` mode (the Go watchdog in front) and, exposed
directly, the ``micro`` mode. Requests are handled one at a time on one thread, as Waitress
with one worker thread does: handlers are CPU-bound, so a second thread would only contend
for the same core. Connections are kept alive; bodies come with Content-Length or chunked.
``/_/health`` answers 200 without calling the handler.

    python -m continuum_functions.server functions/hello --port 8080
"""

import argparse
import asyncio
import contextlib
import socket
import sys
from http import HTTPStatus

from continuum_functions.event import (
    Event,
    Handler,
    Headers,
    Response,
    call,
    env_key,
    error_response,
    load_handler,
    parse_query,
    request_path,
)

MAX_HEADER = 64 * 1024
# Header names whose environ key a server remembers (then it starts over: a client sending
# ever new names costs the cache nothing but the work it saves).
MAX_ENV_KEYS = 512
# Response header names as the handler gave them -> as they are sent (the same bound).
NAMES: dict[str, str] = {}


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def encode(resp: Response, keep_alive: bool, head_only: bool = False) -> bytes:
    """The response on the wire; a HEAD request gets the headers (Content-Length included)
    without the body."""
    lines = [f"HTTP/1.1 {resp.status} {reason(resp.status)}"]
    for k, v in resp.headers:
        name = NAMES.get(k)
        if name is None:
            # Waitress capitalizes each dash-separated part of a name (x-custom: X-Custom).
            name = "-".join([x.capitalize() for x in k.split("-")])
            if len(NAMES) >= MAX_ENV_KEYS:
                NAMES.clear()
            NAMES[k] = name
        if name not in ("Content-Length", "Connection", "Transfer-Encoding"):
            lines.append(f"{name}: {v}")
    lines.append(f"Content-Length: {len(resp.body)}")
    if not keep_alive:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    return head if head_only else head + resp.body


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str], max_body: int) -> bytes:
    """The request body; headers are the environ keys headers_environ makes."""
    te = headers.get("HTTP_TRANSFER_ENCODING", "").lower()
    if te:
        if te != "chunked":
            raise BadRequest(501, f"Transfer-Encoding {te!r} is not supported: use chunked or Content-Length")
        parts, size = [], 0
        while True:
            line = await reader.readuntil(b"\r\n")
            try:
                n = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise BadRequest(400, f"bad chunk size line {line[:40]!r}") from None
            if n == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            size += n
            if size > max_body:
                raise BadRequest(413, f"body larger than {max_body} bytes")
            parts.append(await reader.readexactly(n))
            await reader.readexactly(2)
    raw = headers.get("CONTENT_LENGTH", "0")
    try:
        n = int(raw)
    except ValueError:
        raise BadRequest(400, f"Content-Length {raw!r} is not a number") from None
    if n < 0:
        raise BadRequest(400, f"Content-Length {n} is negative")
    if n > max_body:
        raise BadRequest(413, f"body of {n} bytes is larger than the limit of {max_body}")
    return await reader.readexactly(n) if n else b""


class Server:
    def __init__(self, handle: Handler, max_body: int = 64 << 20, exec_timeout: float = 0) -> None:
        self.handle = handle
        self.max_body = max_body
        self.exec_timeout = exec_timeout
        self.env_keys: dict[str, str] = {}  # header name as sent -> environ key ("": dropped)

    async def serve_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self.serve_one(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serves one request; False when the connection is to be closed."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            writer.write(encode(error_response(431, f"request head larger than {MAX_HEADER} bytes"), False))
            await writer.drain()
            return False
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        keep_alive = True
        try:
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                raise BadRequest(400, f"bad request line {lines[0][:80]!r}")
            method, target, version = parts
            # The handler sees the headers as Waitress passes them to Flask (headers_environ's
            # rules, inline, with each name's environ key remembered: this runs for every
            # header of every request, and clients send the same names again and again).
            env: dict[str, str] = {}
            keys = self.env_keys
            for line in lines[1:]:
                if not line:
                    continue
                k, sep, v = line.partition(":")
                key = keys.get(k)
                if key is None:
                    if not sep or not k or k[0] in " \t" or k[-1] in " \t":
                        raise BadRequest(400, f"bad header line {line[:80]!r}")
                    key = env_key(k)
                    if len(keys) >= MAX_ENV_KEYS:
                        keys.clear()
                    keys[k] = key
                if not key:  # a name with an underscore
                    continue
                v = v.strip(" \t")
                if key in env:
                    env[key] += ", " + v
                else:
                    env[key] = v
            conn = env.get("HTTP_CONNECTION", "").lower()
            keep_alive = conn != "close" and (version == "HTTP/1.1" or conn == "keep-alive")
            body = await read_body(reader, env, self.max_body)
        except BadRequest as e:
            writer.write(encode(error_response(e.status, str(e)), False))
            await writer.drain()
            return False
        if "HTTP_TRANSFER_ENCODING" in env:  # Waitress: the body arrived whole, so say its length
            del env["HTTP_TRANSFER_ENCODING"]
            env["CONTENT_LENGTH"] = str(len(body))
        raw_path, _, query = target.partition("?")
        raw_path = raw_path.partition("#")[0]
        if raw_path == "/_/health":
            resp = Response(200, [("Content-Type", "text/plain")], b"OK\n")
        else:
            event = Event(
                body=body,
                headers=Headers(env),
                method=method.upper(),
                query=parse_query(query.partition("#")[0]),
                path=request_path(raw_path),
            )
            resp = call(self.handle, event, self.exec_timeout)
        writer.write(encode(resp, keep_alive, method == "HEAD"))
        await writer.drain()
        return keep_alive


async def serve(handle: Handler, host: str, port: int, max_body: int, exec_timeout: float = 0) -> None:
    srv = Server(handle, max_body, exec_timeout)
    server = await asyncio.start_server(srv.serve_conn, host, port, limit=MAX_HEADER, reuse_address=True)
    print(f"listening on {host}:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


async def serve_socket(handle: Handler, sock: socket.socket, max_body: int, exec_timeout: float = 0) -> None:
    """Serves on an already listening socket (a zygote's instance)."""
    srv = Server(handle, max_body, exec_timeout)
    server = await asyncio.start_server(srv.serve_conn, sock=sock, limit=MAX_HEADER)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="continuum_functions.server", description=__doc__.split("\n")[0])
    ap.add_argument("handler", help="function folder or its handler.py")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080, help="0: any free port (printed)")
    ap.add_argument("--max-body", type=int, default=64 << 20, help="largest request body in bytes")
    ap.add_argument(
        "--exec-timeout", type=float, default=0, help="seconds a handler may run (then 504); 0: no limit"
    )
    args = ap.parse_args(argv)
    try:
        handle = load_handler(args.handler)
    except (OSError, ImportError) as e:
        print(f"continuum_functions.server: {e}", file=sys.stderr)
        sys.exit(2)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(handle, args.host, args.port, args.max_body, args.exec_timeout))


if __name__ == "__main__":
    main()
