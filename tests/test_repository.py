"""What the repository holds: code, docs, tests, shipped policies and slim records of its runs. Checked on git's
index (what a commit holds), so a file ignored but added by force, or a run committed unslimmed, fails here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from ppolab.ops.slim import finished
from ppolab.util.run_folder import LAST, METRICS, RunFolder

RECORDS_MIB = 30  # benchmarks/ and experiments/ together, in git's index


def _git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the repository's rules are checked on its index")
    return _git("ls-files", "-z").split("\0")[:-1]


def test_no_tracked_file_is_one_gitignore_ignores(tracked):
    ignored = _git("ls-files", "-ci", "--exclude-standard").split()
    assert not ignored, f"{len(ignored)} tracked file(s) match .gitignore, the first: {ignored[:5]}"


def test_the_records_stay_small(tracked):
    """Slimmed runs (`ppolab runs slim`): benchmarks/ and experiments/ hold at most RECORDS_MIB in the index."""
    stage = _git("ls-files", "-s", "--", "benchmarks", "experiments").splitlines()
    blobs = "\n".join(line.split()[1] for line in stage) + "\n"
    sizes = subprocess.run(["git", "-C", str(REPO), "cat-file", "--batch-check=%(objectsize)"], input=blobs,
                           capture_output=True, text=True, timeout=60, check=True).stdout.split()  # fmt: skip
    total = sum(map(int, sizes)) / 2**20
    assert total <= RECORDS_MIB, f"benchmarks/ and experiments/ hold {total:.1f} MiB; slim the runs"


def test_only_a_run_in_progress_keeps_its_checkpoint_and_raw_metrics(tracked):
    """A finished run is committed slimmed: no last.pt, metrics as metrics.jsonl.gz. A run still in progress keeps
    both, so that the next machine resumes it."""
    folders = {Path(p).parent for p in tracked if Path(p).name in (LAST, METRICS)}
    done = sorted(str(f) for f in folders if finished(RunFolder(REPO / f)))
    assert not done, f"finished runs committed unslimmed (ppolab runs slim them): {done[:5]}"
    for folder in sorted(folders):
        if (folder / LAST).as_posix() in tracked:
            assert (folder / METRICS).as_posix() in tracked, f"{folder}: a last.pt without the records it resumes"


def _sources() -> dict[str, str]:
    import ppolab

    root = Path(ppolab.__file__).parent
    return {str(p.relative_to(root.parent)): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_no_caller_tests_an_env_name_or_probes_an_env():
    """What differs between tasks is in their declarations (protocol.TaskInfo), never read off a name."""
    import re

    probe = re.compile(r"""endswith\(\(?["']_(walk|step|stand)|(hasattr|getattr)\((self\.)?env\b""")
    found = [f"{path}:{n}" for path, text in _sources().items()
             for n, line in enumerate(text.splitlines(), 1) if probe.search(line)]  # fmt: skip
    assert not found, found


def test_only_the_run_folder_module_spells_a_run_file_name():
    from ppolab.util import run_folder as rf

    names = [rf.METRICS, rf.METRICS_GZ, rf.LAST, rf.MARKER, rf.CONFIG, rf.ENV, rf.LOG, rf.RUN_JSON, rf.COMMAND,
             rf.GIT_DIFF, rf.ACTOR, rf.CRITIC]  # fmt: skip
    found = [f"{path}: {name}" for path, text in _sources().items() if not path.endswith("util/run_folder.py")
             for name in names if f'"{name}"' in text or f"'{name}'" in text]  # fmt: skip
    assert not found, found
