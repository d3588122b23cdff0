"""Tokens between the FL services and their orchestrator (internal/fl/orchestrator/auth.go).

The orchestrator starts every service with ``CONTINUUM_FL_TOKEN``, its own token (it names
the service's role and node id; the orchestrator takes only that service's reports with it, and
the model repository only from the global aggregator's), which the service sends as
``Authorization: Bearer TOKEN`` with its reports and model uploads and downloads. A ``clients``
process, running several clients, gets ``CONTINUUM_FL_TOKENS`` instead: a JSON object from
client id to that client's token. Aggregators also get ``CONTINUUM_FL_CONTROL_TOKEN``, their
own, which their control API requires. A service started by hand may take the control token
from ``--control-token-file`` instead; its control API then refuses to listen beyond loopback
without one.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os

SERVICES_TOKEN_ENV = "CONTINUUM_FL_TOKEN"
GROUP_TOKENS_ENV = "CONTINUUM_FL_TOKENS"
CONTROL_TOKEN_ENV = "CONTINUUM_FL_CONTROL_TOKEN"


def services_headers(service_id: str | None = None) -> dict[str, str]:
    """The Authorization header for the orchestrator's API, when the service has a token: the
    token of service_id from ``CONTINUUM_FL_TOKENS`` when it has one there, else
    ``CONTINUUM_FL_TOKEN``."""
    tok = ""
    group = os.environ.get(GROUP_TOKENS_ENV, "").strip()
    if group and service_id is not None:
        tokens = json.loads(group)
        if not isinstance(tokens, dict):
            raise ValueError(f"{GROUP_TOKENS_ENV}: want a JSON object from client id to token")
        tok = str(tokens.get(service_id) or "").strip()
    tok = tok or os.environ.get(SERVICES_TOKEN_ENV, "").strip()
    return {"Authorization": f"Bearer {tok}"} if tok else {}


def control_token(token_file: str | None) -> str | None:
    """The control API's token: the file's text, else the environment's, else None."""
    if token_file:
        with open(token_file, encoding="utf-8") as f:
            tok = f.read().strip()
        if not tok:
            raise ValueError(f"--control-token-file {token_file} is empty: want the token callers send")
        return tok
    return os.environ.get(CONTROL_TOKEN_ENV, "").strip() or None


def is_loopback(host: str) -> bool:
    """Whether a listen host only accepts connections from this machine (as httpauth.IsLoopback)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # "" or 0.0.0.0 listen everywhere; a name may resolve to anything


def check_exposure(host: str, port: int, token: str | None) -> None:
    """Refuses a control API other machines can reach without a token (ValueError)."""
    if token or is_loopback(host):
        return
    raise ValueError(
        f"--control {host}:{port} is reachable from other machines and POST /config, /stop would be open "
        f"to them: give a token ({CONTROL_TOKEN_ENV} or --control-token-file; callers send "
        "Authorization: Bearer TOKEN), or listen on loopback (127.0.0.1:PORT, the default)"
    )


def has_bearer(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries token, compared over digests in constant time."""
    scheme, _, got = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    a = hashlib.sha256(got.strip().encode()).digest()
    b = hashlib.sha256(token.encode()).digest()
    return hmac.compare_digest(a, b)
