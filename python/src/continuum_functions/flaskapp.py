"""A python3-http handler behind Flask and Waitress with one worker thread.

This is the seed's microservice (Flask + Waitress, one worker thread; seeds/001 §4.2.1) and
the server OpenFaaS' python3-http template puts a handler in: the baseline Continuum's own
:mod:`continuum_functions.server` is measured against.

    python -m continuum_functions.flaskapp functions/hello --port 8080
"""

import argparse
import sys

from flask import Flask, Response, request
from waitress import serve

from continuum_functions.event import Event, Handler, call, load_handler

# The template's routes (Flask adds HEAD and answers OPTIONS and other methods itself).
METHODS = ["GET", "PUT", "POST", "PATCH", "DELETE"]


def make_app(handle: Handler) -> Flask:
    app = Flask("continuum_function")

    @app.route("/_/health", methods=["GET"])
    def health() -> Response:
        return Response("OK\n", status=200, content_type="text/plain")

    @app.route("/", defaults={"path": ""}, methods=METHODS)
    @app.route("/<path:path>", methods=METHODS)
    def invoke(path: str) -> Response:
        # The event holds Flask's own objects, as the template's Event does.
        event = Event(
            body=request.get_data(),
            headers=request.headers,  # type: ignore[arg-type]
            method=request.method,
            query=request.args,  # type: ignore[arg-type]
            path=request.path,
        )
        resp = call(handle, event)
        return Response(resp.body, status=resp.status, headers=resp.headers)

    return app


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="continuum_functions.flaskapp", description=__doc__.split("\n")[0])
    ap.add_argument("handler", help="function folder or its handler.py")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--threads", type=int, default=1, help="Waitress worker threads (the seed: 1)")
    args = ap.parse_args(argv)
    try:
        handle = load_handler(args.handler)
    except (OSError, ImportError) as e:
        print(f"continuum_functions.flaskapp: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"listening on {args.host}:{args.port}", flush=True)
    serve(
        make_app(handle),
        host=args.host,
        port=args.port,
        threads=args.threads,
        max_request_body_size=1 << 30,
    )


if __name__ == "__main__":
    main()
