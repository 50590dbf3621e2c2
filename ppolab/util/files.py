"""Atomic file writes that honour the umask.

A temp file in the same folder is written, then renamed over the target, so a
reader sees the old file or the new one, never half of one, whatever kills the
writer. mkstemp creates files 0600; the final file gets the mode a plain open()
would (0666 less the umask: 0644 under 022), so teammates on a shared filesystem
can read results, state and checkpoints.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import tempfile
import time
from pathlib import Path

from ppolab.errors import UserError

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
    """Write `path` whole or not at all. A symbolic link at `path` is replaced, never written through; a folder
    or file that cannot be written is one UserError naming it and the fix."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except PermissionError as exc:
        raise UserError(f"{path.parent}: cannot write {path.name} there ({exc.strerror}); make the folder "
                        "writable (chmod u+w, or chattr -i), or work in a copy") from None  # fmt: skip
    except OSError as exc:
        if exc.errno != errno.EROFS:
            raise
        raise UserError(f"{path.parent}: a read-only filesystem; work in a copy on a writable disk") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except PermissionError as exc:  # an immutable file (chattr +i) refuses the rename
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"{path}: cannot replace it ({exc.strerror}); make it writable (chmod u+w, or "
                        "chattr -i), or work in a copy") from None  # fmt: skip
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def refuse_links(folder: Path, names: list[str] | None = None, what: str = "") -> None:
    """One UserError naming the first symbolic link among `folder` itself and its entries (all of them, or
    only `names`): ppolab writes only into what it made, never through a link to somewhere else."""
    if folder.is_symlink():
        raise _link_error(folder, what)
    try:
        entries = [folder / n for n in names] if names is not None else list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            raise _link_error(entry, what)


def _link_error(link: Path, what: str) -> UserError:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return UserError(f"{link} is a symbolic link (to {target}){what}; ppolab writes only into what it made, "
                     "never through a link: put the real folder or file there, or remove the link")  # fmt: skip


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


def temp_sibling(path: Path) -> Path:
    """Where a video, picture or exported policy is written before it is renamed into place."""
    return path.with_name(f".{path.stem}.tmp{path.suffix}")


def check_output_file(flag: str, name: str, suffix: str, why: str = "", make_folders: bool = False) -> Path:
    """An output file named by `flag` that can be written, refused in one line before any work is done:
    the right suffix, not a folder, and a folder to write in (with `make_folders`, the missing folders on
    its way are made later, so the nearest existing one must take them). Cheap: no torch, no env."""
    path = Path(name)
    if path.suffix.lower() != suffix:
        raise UserError(f"{flag} {name}: name a {suffix} file" + (f" ({why})" if why else ""))
    if path.is_dir():
        raise UserError(f"{flag} {name}: is a folder; name a {suffix} file inside it")
    folder = path.absolute().parent
    if make_folders:
        folder = next(p for p in path.absolute().parents if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UserError(f"{flag} {name}: cannot write in {folder}; choose another place")
    if folder == path.absolute().parent:  # some folders (/proc, read-only mounts) say yes and then refuse
        probe = temp_sibling(path)
        try:
            probe.open("ab").close()  # a stale one is ours, from a killed run
        except OSError as exc:
            raise UserError(f"{flag} {name}: cannot write in {folder} ({exc.strerror}); choose another place") from None
        probe.unlink()
    return path


def output_file(text: str) -> Path:
    """An argparse type for a file a long command writes at its end (a benchmark's --json): its folder is made
    now, so that a run of minutes never fails at its last line over a missing folder; a path that is a folder
    is refused at once."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name, such as {path / 'figures.json'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot make the folder {path.parent} ({exc.strerror})") from None
    return path
