"""Runtime of a documentation search server (copied into every server folder)."""

__version__ = "0.1.0"
