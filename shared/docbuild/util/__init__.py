"""Helpers the stages share: token counting, step caches, worker processes, the build lock,
chunk hygiene, and the full-text and partitioned vector index writers."""
