"""YAML settings with ``${VAR}`` substitution and ``DOCMCP_SECTION__KEY`` environment overrides.

Shared by the build (processing config) and the runtime (server config).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ENV_PREFIX = "DOCMCP_"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class SettingsError(ValueError):
    """A settings file is missing, malformed or uses an unknown variable."""


def substitute(value: Any, variables: Mapping[str, str]) -> Any:
    """Replace ``${VAR}`` in every string of ``value`` (recursively); unknown variables raise."""
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in variables:
                return variables[key]
            if key in os.environ:
                return os.environ[key]
            raise SettingsError(
                f"unknown variable ${{{key}}} in configuration (set it in the environment)"
            )

        return _VARIABLE.sub(replace, value)
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    return value


def apply_env_overrides(
    data: dict[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Apply ``DOCMCP_SECTION__KEY=value`` overrides (values parsed as YAML scalars)."""
    environ = os.environ if environ is None else environ
    for key, raw in sorted(environ.items()):
        if not key.startswith(ENV_PREFIX) or "__" not in key:
            continue
        path = [part.lower() for part in key[len(ENV_PREFIX) :].split("__")]
        target = data
        for part in path[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise SettingsError(f"{key}: {part!r} is not a section")
        target[path[-1]] = yaml.safe_load(raw) if raw else raw
    return data


def load_yaml(path: Path, variables: Mapping[str, str]) -> dict[str, Any]:
    """Read ``path`` as YAML, apply environment overrides, substitute variables."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise SettingsError(f"configuration file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a mapping at the top level")
    return substitute(apply_env_overrides(data), variables)
