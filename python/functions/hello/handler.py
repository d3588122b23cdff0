"""Hello world, an OpenFaaS python3-http function: greets whoever the body names."""

from typing import Any


def handle(event: Any, context: Any) -> dict[str, Any]:
    name = event.body.decode("utf-8", "replace").strip() if event.body else ""
    return {
        "statusCode": 200,
        "body": f"Hello, {name or 'world'}!",
        "headers": {"Content-Type": "text/plain; charset=utf-8"},
    }
