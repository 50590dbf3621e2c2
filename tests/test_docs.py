"""The docs: a README read in minutes, a site that builds strictly with every page in its navigation, a
command-line reference equal to the commands' own --help, and no text that speaks of work sessions."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import yaml
from conftest import REPO

from ppolab.cli.reference import render

SESSION_TALK = re.compile(
    r"\bsessions? \d|\b(this|that|last|next|previous|earlier|later|each|every|one|two|three) sessions?\b|"
    r"\bsessions \d+-\d+",
    re.IGNORECASE,
)


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    return [p for item in nav for p in _nav_pages(item)]


def _copy_docs(dest):
    """What the site is built from (mkdocs.yml, docs/, and the pages it includes), in `dest`."""
    dest.mkdir(exist_ok=True)
    for name in ("mkdocs.yml", "AGENTS.md"):
        shutil.copy(REPO / name, dest / name)
    shutil.copytree(REPO / "docs", dest / "docs")
    shutil.copytree(REPO / "benchmarks", dest / "benchmarks", ignore=shutil.ignore_patterns("runs", "*.py"))
    return dest


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the docs pages hold the rest"


def test_the_cli_reference_is_the_commands_own_help():
    assert (REPO / "docs" / "cli.md").read_text() == render(), (
        "docs/cli.md differs from the commands' --help: python -m ppolab.cli.reference > docs/cli.md"
    )


def test_the_site_builds_strictly_and_every_page_is_in_its_navigation(tmp_path):
    site = _copy_docs(tmp_path / "repo")
    config = yaml.safe_load((site / "mkdocs.yml").read_text())
    pages = {p.name for p in (site / "docs").glob("*.md")}
    assert pages == set(_nav_pages(config["nav"])), "every docs page in mkdocs.yml's nav, and only those"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=site, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Time to pass every check" in (tmp_path / "site" / "benchmarks" / "index.html").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    _copy_docs(tmp_path)
    page = tmp_path / "docs" / "install.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode != 0 and "no-such-page.md" in proc.stderr


def test_no_tracked_text_speaks_of_work_sessions():
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an sdist): the docs and code as they are
        files = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file() and ".venv" not in p.parts]
    else:
        files = listed.stdout.splitlines()
    texts = [f for f in files if f.endswith((".md", ".py", ".yaml", ".yml", ".txt", ".sh", ".toml"))
             and "/runs/" not in f and "/logs/" not in f]  # fmt: skip
    found = [f"{f}: {m.group(0)!r}" for f in texts if (REPO / f).is_file()
             for m in [SESSION_TALK.search((REPO / f).read_text(errors="replace"))] if m]  # fmt: skip
    assert not found, found
