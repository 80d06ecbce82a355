"""Start the maintainers' web page: ``docbuild ui [--host H] [--port P]``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from docserve.http_guard import LOOPBACK_HOSTS

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8780
TOKEN_ENV = "DOCMCP_UI_TOKEN"


class UIError(ValueError):
    """The page cannot be served as asked; the message says what to do."""


def serve(project_root: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serve the page until interrupted. Beyond loopback it needs a bearer token in
    ``DOCMCP_UI_TOKEN``; the token is then asked of every request."""
    import uvicorn

    from docbuild.ui.app import create_app

    token = os.environ.get(TOKEN_ENV) or None
    loopback = host in LOOPBACK_HOSTS
    if not loopback and not token:
        raise UIError(
            f"serving on {host} reaches beyond this machine: set {TOKEN_ENV} to a secret "
            "(every request must then carry it), or keep the default host 127.0.0.1"
        )
    allowed = [] if loopback or host in ("0.0.0.0", "::") else [host]
    if host in ("0.0.0.0", "::"):
        allowed = ["*"]  # any name reaches it; the token guards it
    app = create_app(project_root, token, allowed)
    shown = f"[{host}]" if ":" in host else host
    print(f"docs-mcp UI for {project_root}: http://{shown}:{port}/", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
