"""`ppolab skills install [DIR]`: copy ppolab's agent skills into a project's .claude/skills/.

The skills (train, eval, experiment, sweep, ops) ship inside the package, so a user's
own research repository gets the version matching the ppolab it runs. A manifest
(`.claude/skills/.ppolab-skills.json`) keeps the hash of every file written: a file the
user changed since, or a file ppolab did not write, is never overwritten without
`--force`; an unchanged file is updated to the new version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ppolab.errors import UserError
from ppolab.util.files import atomic_write_text

SOURCE = Path(__file__).resolve().parent.parent / "skills"
MANIFEST = ".ppolab-skills.json"


def shipped() -> dict[str, str]:
    """Relative path -> text of every skill file in the package."""
    return {str(p.relative_to(SOURCE)): p.read_text() for p in sorted(SOURCE.glob("*/SKILL.md"))}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _manifest(dest: Path) -> dict[str, str]:
    try:
        data = json.loads((dest / MANIFEST).read_text())
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def install(project: Path, force: bool = False) -> list[str]:
    """Write the skills under project/.claude/skills; returns one line per file saying what happened."""
    if not project.is_dir():
        raise UserError(f"{project}: no such folder; give the root of the project that should get the skills")
    dest = project / ".claude" / "skills"
    if dest.resolve() == SOURCE:
        raise UserError(f"{dest} is ppolab's own copy of the skills; install into another project")
    files = shipped()
    _check_shape(project, [dest / rel for rel in files] + [dest / MANIFEST])
    recorded, lines = _manifest(dest), []
    for rel, text in files.items():
        target = dest / rel
        if target.exists():
            current = target.read_text(errors="replace")
            if current == text:
                lines.append(f"up to date: {target}")
                recorded[rel] = _digest(text)
                continue
            if not force and recorded.get(rel) != _digest(current):
                why = "changed since ppolab wrote it" if rel in recorded else "not written by ppolab"
                lines.append(f"kept: {target} ({why}; --force replaces it)")
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, text)
        recorded[rel] = _digest(text)
        lines.append(f"wrote: {target}")
    atomic_write_text(dest / MANIFEST, json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    return lines


def _check_shape(project: Path, files: list[Path]) -> None:
    """Every folder on the way to each file is a real folder and each file a real file (or absent): a link
    (dangling or not), a file where a folder goes or a folder where a file goes is one UserError naming it.
    Nothing is written through a link into the user's files elsewhere."""
    for file in files:
        parts = file.relative_to(project).parts
        for k in range(1, len(parts) + 1):
            path = project.joinpath(*parts[:k])
            last = k == len(parts)
            if path.is_symlink():
                raise UserError(f"{path} is a symbolic link; skills install writes only real folders and files it "
                                "made: replace the link with a folder (or remove it), then install again")  # fmt: skip
            if path.exists() and not last and not path.is_dir():
                raise UserError(f"{path} is a file where the skills need a folder; move it away, then install again")
            if path.exists() and last and not path.is_file():
                raise UserError(f"{path} is not a file; move it away, then install again")
