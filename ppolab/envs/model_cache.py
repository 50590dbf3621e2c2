"""Compiled robot models, cached on disk and shared by every run of the user.

Building a humanoid with MjSpec (parsing, editing, compiling meshes) takes
seconds; every sampling process and every run needs the same model. The cache
key is a hash of everything the model is made from: the source files' bytes,
the builder's own code and its parameters. A changed input gives a new key, so
a stale entry is never read. Entries are written to a temp file and renamed,
and carry their own checksum in the name, so a truncated or corrupt file is
detected, discarded and rebuilt. Each name keeps its KEEP most recently used
entries: a new key comes with every ppolab upgrade and with every setting that
changes the model, and a robot with meshes is hundreds of MB (Apollo's: 258 MB),
so an unpruned cache grew by gigabytes in two days of development here.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import mujoco

FORMAT = "1"
KEEP = 4  # entries per model name, the most recently used (read or written) first


def cache_dir() -> Path:
    root = os.environ.get("PPOLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ppolab"
    )
    return Path(root) / "models"


def content_key(name: str, sources: Iterable[Path], builder: Callable[..., Any], params: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(f"{FORMAT}\0{name}\0{mujoco.__version__}\0".encode())
    for path in sorted(sources):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    for module in _ppolab_modules(inspect.getmodule(builder)):
        h.update(module.__name__.encode() + b"\0" + inspect.getsource(module).encode())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    return h.hexdigest()[:24]


def _ppolab_modules(root: ModuleType | None) -> list[ModuleType]:
    """The builder's module and every ppolab module it reaches through its names, by name: a change to a helper
    (the floor the scene adds, say) is a change to the model, and must not read an entry built before it."""
    seen: dict[str, ModuleType] = {}
    stack = [root] if root is not None else []
    while stack:
        module = stack.pop()
        if module.__name__ in seen:
            continue
        seen[module.__name__] = module
        for value in vars(module).values():
            found = value if isinstance(value, ModuleType) else inspect.getmodule(value)
            if found is not None and found.__name__.startswith("ppolab.") and found.__name__ not in seen:
                stack.append(found)
    return [seen[name] for name in sorted(seen)]


def load_or_build(
    name: str, sources: Iterable[Path], builder: Callable[..., mujoco.MjModel], params: dict[str, Any]
) -> mujoco.MjModel:
    """The model `builder(**params)` makes, from the cache when an intact entry for the same inputs exists."""
    sources = list(sources)
    key = content_key(name, sources, builder, params)
    folder = cache_dir()
    for path in folder.glob(f"{name}-{key}-*.mjb"):
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # pruned by another process meanwhile: build it
            continue
        if hashlib.sha256(data).hexdigest()[:16] == path.stem.rsplit("-", 1)[-1]:
            try:
                model = mujoco.MjModel.from_binary_path(str(path))
            except Exception:  # written by another MuJoCo build, or pruned meanwhile: rebuild
                pass
            else:
                _mark_used(path)
                return model
        path.unlink(missing_ok=True)  # corrupt: rebuild below
    model = builder(**params)
    tmp: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}-", suffix=".tmp")
        os.close(fd)
        mujoco.mj_saveModel(model, tmp, None)
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()[:16]
        os.replace(tmp, folder / f"{name}-{key}-{digest}.mjb")
        prune(folder, name)
    except OSError:  # a read-only cache folder: build every time, never fail because of the cache
        if tmp:
            Path(tmp).unlink(missing_ok=True)
    return model


def _mark_used(path: Path) -> None:
    """An entry's modification time is its last use: what `prune` keeps."""
    try:
        os.utime(path)
    except OSError:  # a read-only cache: nothing is pruned there either
        pass


def prune(folder: Path, name: str, keep: int = KEEP) -> None:
    """Remove all but the `keep` most recently used entries of this model name (only files named as ppolab
    names its entries: NAME-KEY-DIGEST.mjb)."""
    mine = re.compile(re.escape(name) + r"-[0-9a-f]{24}-[0-9a-f]{16}\.mjb")
    entries = []
    for path in folder.iterdir():
        if mine.fullmatch(path.name):
            try:
                entries.append((path.stat().st_mtime_ns, path))
            except FileNotFoundError:  # pruned by another process meanwhile
                continue
    for _, path in sorted(entries, reverse=True)[keep:]:
        path.unlink(missing_ok=True)
