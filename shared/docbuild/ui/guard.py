"""What stands between the network and the pages: :class:`Shield` (security headers on every
response; an unexpected exception becomes a page, its traceback goes to stderr) and
:class:`Guard` (the page's own Host and Origin only, the bearer token beyond loopback, a bound
on the query string)."""

from __future__ import annotations

import hmac
import sys
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from docserve.http_guard import LOOPBACK_HOSTS, host_name
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

MAX_QUERY_STRING = 4096  # bytes of query string a page accepts
TOKEN_COOKIE = "docmcp_ui_token"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
ASGIApp = Callable[[Any, Any, Any], Any]


class Shield:
    """ASGI middleware, outermost: every response carries :data:`SECURITY_HEADERS`, and an
    exception no page handled is answered by ``fallback``'s page (its traceback to stderr)."""

    def __init__(self, app: ASGIApp, fallback: Callable[[Request, Exception], Response]) -> None:
        self.app = app
        self.fallback = fallback

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_secured(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
            await send(message)

        try:
            await self.app(scope, receive, send_secured)
        except Exception as exc:
            print(f"error on {scope.get('path')}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            if started:  # half an answer sent: nothing to do but close the connection
                raise
            await self.fallback(Request(scope), exc)(scope, receive, send_secured)


class Guard:
    """ASGI middleware: the page's own Host and Origin only (403 otherwise, worded for the
    page), then the bearer token when one is set (header, cookie, or ``?token=`` once, which
    sets the cookie and redirects to the same path), then a bound on the query string."""

    def __init__(self, app: ASGIApp, token: str | None, allowed_hosts: list[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = {host_name(h) for h in (*LOOPBACK_HOSTS, *allowed_hosts)}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response = self.refusal(scope)
        if response is None and self.token:
            response = self.token_answer(Request(scope))
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)

    def refusal(self, scope: Any) -> Response | None:
        """403 for a foreign Host or Origin, 400 for a huge query string, else None."""
        headers = Headers(scope=scope)
        host, origin = headers.get("host", ""), headers.get("origin")
        if "*" not in self.hosts and host_name(host) not in self.hosts:
            return forbidden(
                scope,
                f"this page is not served under the name {host!r} (it answers to "
                f"{', '.join(sorted(self.hosts))}); to serve it under that name, start it with "
                "`docbuild ui --host NAME` and a token in DOCMCP_UI_TOKEN",
            )
        if origin is not None and not self.origin_allowed(origin, host):
            return forbidden(
                scope,
                f"a page at {origin} may not send requests here; use the page at its own "
                f"address (http://{host}/)",
            )
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING:
            return PlainTextResponse(
                f"400 Bad Request: the query string is over {MAX_QUERY_STRING} bytes\n", 400
            )
        return None

    @staticmethod
    def origin_allowed(origin: str, host: str) -> bool:
        """The page's own origin (the same host and port as ``Host``), a loopback one, or
        ``null``: under ``Referrer-Policy: no-referrer`` a browser sends ``null`` for the page's
        own form posts, so it says nothing (as no Origin does; the build form's token guards
        the POST)."""
        if origin == "null":
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https"):
            return False
        return parts.netloc.lower() == host.lower() or host_name(parts.netloc) in LOOPBACK_HOSTS

    def token_answer(self, request: Request) -> Response | None:
        """The redirect that sets the cookie, 401 without a valid token, else None."""
        assert self.token is not None
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given, self.token):
            query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            response = RedirectResponse(same_origin_path(request.scope, query), 303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            return response
        bearer = request.headers.get("authorization", "")
        offered = bearer.removeprefix("Bearer ").strip() if bearer.startswith("Bearer ") else ""
        offered = offered or request.cookies.get(TOKEN_COOKIE, "")
        if hmac.compare_digest(offered, self.token):
            return None
        return PlainTextResponse(
            "401 Unauthorized: open this page once with ?token=YOUR_TOKEN "
            "(the value of DOCMCP_UI_TOKEN), or send Authorization: Bearer YOUR_TOKEN\n",
            401,
        )


def same_origin_path(scope: Any, query: list[tuple[str, str]]) -> str:
    """The request's path as it was sent (still percent-encoded), with ``query``: never a
    network-path reference (``//host`` or ``/\\host``), so a redirect stays on this origin."""
    raw = scope.get("raw_path") or scope["path"].encode("utf-8")
    path = "/" + raw.decode("latin-1").lstrip("/\\")
    return path + ("?" + urlencode(query) if query else "")


def forbidden(scope: Any, reason: str) -> PlainTextResponse:
    """403 with ``reason``, said on stderr as well."""
    client = scope.get("client") or ("?", 0)
    print(f"refused a request from {client[0]}: {reason}", file=sys.stderr, flush=True)
    return PlainTextResponse(f"403 Forbidden: {reason}\n", 403)
