"""Tokens between the FL services and their orchestrator (internal/fl/orchestrator/auth.go).

The orchestrator starts every service with ``CONTINUUM_FL_TOKEN``, which the service sends as
``Authorization: Bearer TOKEN`` with its reports and model uploads and downloads, and starts
aggregators with ``CONTINUUM_FL_CONTROL_TOKEN`` too, which their control API requires. A
service started by hand may take the control token from ``--control-token-file`` instead; its
control API then refuses to listen beyond loopback without one.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os

SERVICES_TOKEN_ENV = "CONTINUUM_FL_TOKEN"
CONTROL_TOKEN_ENV = "CONTINUUM_FL_CONTROL_TOKEN"


def services_headers() -> dict[str, str]:
    """The Authorization header for the orchestrator's API, when the service has a token."""
    tok = os.environ.get(SERVICES_TOKEN_ENV, "").strip()
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
