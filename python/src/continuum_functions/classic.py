"""One request per process, as OpenFaaS' classic watchdog runs functions.

The watchdog forks and execs this module for each request: the body arrives on stdin, the
request line and headers in the environment (``Http_Method``, ``Http_Path``, ``Http_Query``,
``Http_<Header_Name>``, the classic watchdog's names, in the order the watchdog put them), and
the response leaves on stdout.
With ``CONTINUUM_CGI=1`` (what Continuum's watchdog sets) the response is CGI-framed, a
``Status:`` line and headers before a blank line, so status codes and headers survive;
otherwise stdout is the body alone and a handler status >= 400 exits 1, the classic contract.

    echo -n Ada | python -m continuum_functions.classic functions/hello
"""

import os
import sys

from continuum_functions.event import Event, Headers, Response, call, load_handler, parse_query

_REQUEST_LINE = ("Http_Method", "Http_Path", "Http_Query")


def event_from_env(body: bytes, env: dict[str, str]) -> Event:
    """The event of the request the watchdog put in env. Http_Path is already percent-decoded
    (the watchdog's URL path); Http_Query is the raw query string."""
    headers: dict[str, str] = {}
    for k, v in env.items():
        if k.startswith("Http_") and k not in _REQUEST_LINE:
            key = k[5:].upper()
            headers[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key] = v
    return Event(
        body=body,
        headers=Headers(headers),
        method=env.get("Http_Method", "POST").upper(),
        query=parse_query(env.get("Http_Query", "")),
        path="/" + env.get("Http_Path", "/").lstrip("/"),
    )


def cgi(resp: Response) -> bytes:
    """The response CGI-framed: a Status line and the headers, a blank line, the body."""
    head = [f"Status: {resp.status}"] + [f"{k}: {v}" for k, v in resp.headers]
    # latin-1, as HTTP/1.1 servers write header values (to_response let only such values by).
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + resp.body


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(
            "usage: python -m continuum_functions.classic HANDLER (a function folder or its handler.py)",
            file=sys.stderr,
        )
        return 2
    try:
        handle = load_handler(argv[0])
    except (OSError, ImportError) as e:
        print(f"continuum_functions.classic: {e}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    resp = call(handle, event_from_env(sys.stdin.buffer.read(), env))
    out = sys.stdout.buffer
    if env.get("CONTINUUM_CGI") == "1":
        out.write(cgi(resp))
        return 0
    out.write(resp.body)
    if resp.status >= 400:
        print(f"handler answered {resp.status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
