"""Atomic file writes that honour the umask.

A temp file in the same folder is written, then renamed over the target, so a
reader sees the old file or the new one, never half of one, whatever kills the
writer. mkstemp creates files 0600; the final file gets the mode a plain open()
would (0666 less the umask: 0644 under 022), so teammates on a shared filesystem
can read results, state and checkpoints.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())
