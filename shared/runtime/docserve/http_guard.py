"""Refuse HTTP requests whose ``Host`` or ``Origin`` this server does not serve (DNS rebinding).

The MCP specification requires servers on streamable HTTP to validate ``Origin``; checking
``Host`` as well stops a rebinding page from reaching a loopback server under a foreign name.
By default only loopback names and origins are accepted; ``transport.allowed_hosts`` and
``transport.allowed_origins`` widen that. A request without ``Origin`` (any non-browser client)
is judged by its ``Host`` alone. A refused request gets 403 and one line on stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


def host_name(value: str) -> str:
    """``Host`` header or URL authority without its port: ``[::1]:8765`` → ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostOriginGuard:
    """ASGI middleware: pass requests from allowed hosts and origins, refuse the rest."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.hosts = {host_name(h) for h in (*LOOPBACK_HOSTS, *allowed_hosts)}
        self.any_host = "*" in self.hosts
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.any_origin = "*" in self.origins

    def refusal(self, scope: Scope) -> str | None:
        """Why the request in ``scope`` is refused, or None when it may pass."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.any_host and host_name(host) not in self.hosts:
            return f"Host {host!r} is not allowed (add it to transport.allowed_hosts)"
        origin = headers.get("origin")
        if origin is None or self.any_origin:
            return None
        parts = urlsplit(origin)
        if origin.rstrip("/").lower() in self.origins:
            return None
        if parts.scheme in ("http", "https") and host_name(parts.netloc) in LOOPBACK_HOSTS:
            return None
        return f"Origin {origin!r} is not allowed (add it to transport.allowed_origins)"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Answer 403 to a refused HTTP request; hand everything else to the app."""
        reason = self.refusal(scope) if scope["type"] == "http" else None
        if reason is None:
            await self.app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        print(f"refused HTTP request from {client[0]}: {reason}", file=sys.stderr, flush=True)
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})
