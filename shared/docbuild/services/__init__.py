"""What the tools run besides the build: scaffold, sync, watch, eval, ask, documentation
versions, client configs and the question checker."""
