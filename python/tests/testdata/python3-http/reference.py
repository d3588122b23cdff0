"""Serves the template's index.py (beside this file) with a handler folder, as OpenFaaS' image
does (Waitress with its defaults), on a port of the caller's choosing:

    python reference.py HANDLER_DIR --port P

The image copies the handler folder to ./function (a package); here a package of that name is
made to point at the folder, so the handler is imported as ``function.handler`` as there.
"""

import argparse
import importlib
import sys
import types
from pathlib import Path

from waitress import serve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("handler", help="function folder (with handler.py)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    pkg = types.ModuleType("function")
    pkg.__path__ = [str(Path(args.handler).resolve())]
    sys.modules["function"] = pkg
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    index = importlib.import_module("index")
    print(f"listening on {args.host}:{args.port}", flush=True)
    serve(index.app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
