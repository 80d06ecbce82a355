#!/usr/bin/env python3
"""MCP search server for {{name}}.

Run: python {{name_underscored}}_server.py            (stdio, for Claude Desktop and other MCP clients)
     python {{name_underscored}}_server.py --http     (streamable HTTP on 127.0.0.1:8765/mcp)
     python {{name_underscored}}_server.py --doctor   (check this install; prints the fix for any problem)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from docserve.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("{{name}}", HERE.parent))
