#!/usr/bin/env python3
"""MCP search server for docs-mcp-docs.

Run: python docs_mcp_docs_server.py            (stdio, for Claude Desktop and other MCP clients)
     python docs_mcp_docs_server.py --http     (streamable HTTP on 127.0.0.1:8765/mcp)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from docserve.server import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("docs-mcp-docs", HERE.parent))
