"""Atomic file writes that honour the umask.

A temp file in the same folder is written, then renamed over the target, so a
reader sees the old file or the new one, never half of one, whatever kills the
writer. mkstemp creates files 0600; the final file gets the mode a plain open()
would (0666 less the umask: 0644 under 022), so teammates on a shared filesystem
can read results, state and checkpoints.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

# what an atomic write of one of ppolab's files leaves behind if it is killed between writing and renaming
STALE = re.compile(
    r"\.(state\.json|results\.md|experiment-tracker\.md|last\.pt|metrics\.jsonl|config\.yaml|env\.yaml|"
    r"run\.json|command\.txt|(actor|critic)(_\d+)?\.pt)\.[A-Za-z0-9_]+\.tmp"
)


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


def remove_stale_temps(folder: Path, older_than: float = 60.0) -> int:
    """Delete the temp files killed atomic writes of ppolab's files left in `folder` (not other files,
    and not one a live writer may still rename: only those older than `older_than` seconds)."""
    removed = 0
    try:
        entries = list(folder.iterdir())
    except OSError:
        return 0
    for path in entries:
        try:
            if STALE.fullmatch(path.name) and time.time() - path.stat().st_mtime > older_than:
                path.unlink()
                removed += 1
        except OSError:
            continue
    return removed
