"""Pure-Python wheels (PEP 427), written directly and byte for byte reproducible.

Two kinds: the server's wheel (runtime code, config, database, a console command) and the model's
wheel, which every server built with the same model shares, so a user who installs several servers
downloads the 87 MB model once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from docbuild import __version__

FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # every entry's timestamp, so equal inputs give equal wheels
GENERATOR = f"docs-mcp {__version__}"


@dataclass
class WheelSpec:
    """What goes into one wheel: its metadata and its files (archive path -> bytes or file)."""

    distribution: str
    version: str
    summary: str
    requires_python: str = ">=3.11"
    requires: list[str] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)  # command -> "module:function"
    readme: str | None = None  # Markdown, the long description
    license: str | None = None
    author: str | None = None
    author_email: str | None = None
    urls: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes | Path] = field(default_factory=dict)

    @property
    def stem(self) -> str:
        name = self.distribution.replace("-", "_").replace(".", "_").lower()
        return f"{name}-{self.version}"

    @property
    def filename(self) -> str:
        return f"{self.stem}-py3-none-any.whl"

    def metadata(self) -> str:
        lines = [
            "Metadata-Version: 2.4",
            f"Name: {self.distribution}",
            f"Version: {self.version}",
            f"Summary: {self.summary}",
            f"Requires-Python: {self.requires_python}",
        ]
        if self.author:
            lines.append(f"Author: {self.author}")
        if self.author_email:
            lines.append(f"Author-email: {self.author_email}")
        if self.license:
            lines.append(f"License-Expression: {self.license}")
        lines += [f"Project-URL: {label}, {url}" for label, url in self.urls.items()]
        lines += [f"Requires-Dist: {requirement}" for requirement in self.requires]
        if self.readme is None:
            return "\n".join(lines) + "\n"
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + self.readme


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _entry(archive: zipfile.ZipFile, path: str, data: bytes) -> str:
    info = zipfile.ZipInfo(path, FIXED_TIME)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data, compresslevel=6)
    return f"{path},{_record_hash(data)},{len(data)}"


def write_wheel(spec: WheelSpec, out_dir: Path) -> Path:
    """Write ``spec`` as a wheel into ``out_dir`` (atomically) and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / spec.filename
    partial = target.with_name(target.name + ".partial")
    dist_info = f"{spec.stem}.dist-info"
    meta = {
        "METADATA": spec.metadata(),
        "WHEEL": f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    if spec.scripts:
        lines = [f"{cmd} = {target}" for cmd, target in sorted(spec.scripts.items())]
        meta["entry_points.txt"] = "[console_scripts]\n" + "\n".join(lines) + "\n"
    with zipfile.ZipFile(partial, "w") as archive:
        record = [
            _entry(archive, path, _bytes(source)) for path, source in sorted(spec.files.items())
        ]
        record += [
            _entry(archive, f"{dist_info}/{name}", text.encode()) for name, text in meta.items()
        ]
        record.append(f"{dist_info}/RECORD,,")
        _entry(archive, f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())
    partial.replace(target)
    return target


def _bytes(source: bytes | Path) -> bytes:
    return source if isinstance(source, bytes) else source.read_bytes()


def tree(folder: Path, prefix: str, skip: Iterable[str] = ("__pycache__",)) -> dict[str, Path]:
    """Every file under ``folder`` as archive path ``prefix/relative`` (``skip``: folder names)."""
    skipped = set(skip)
    return {
        f"{prefix}/{path.relative_to(folder).as_posix()}": path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not skipped & set(path.relative_to(folder).parts)
        and not path.name.endswith(".pyc")
    }


def json_bytes(data: object) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()
