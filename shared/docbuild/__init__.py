"""Build-time package: turn a documentation set into a searchable MCP server database."""

__version__ = "0.1.0"
