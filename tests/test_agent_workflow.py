"""The agent workflow: shipped skills, their installer, commands that parse, JSON output, the /experiment walk."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_ppolab

from ppolab.analysis import synthetic
from ppolab.cli.main import make_parser, normalise, parse

SKILLS = ("train", "eval", "experiment", "sweep", "ops")
FRONT_MATTER = ("name", "description", "disable-model-invocation", "allowed-tools", "argument-hint")


def test_skills_install_writes_the_five_skills_and_keeps_changed_files(tmp_path):
    proc = run_ppolab("skills", "install", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    for name in SKILLS:
        text = (tmp_path / ".claude" / "skills" / name / "SKILL.md").read_text()
        head = text.split("---")[1]
        for key in FRONT_MATTER:
            assert re.search(rf"^{key}:", head, re.M), (name, key)
        assert f"name: {name}" in head and "When something fails" in text
    mine = tmp_path / ".claude" / "skills" / "train" / "SKILL.md"
    mine.write_text(mine.read_text() + "\nMy own note.\n")
    again = run_ppolab("skills", "install", str(tmp_path))
    assert f"kept: {mine} (changed since ppolab wrote it; --force replaces it)" in again.stdout
    assert "My own note." in mine.read_text()
    forced = run_ppolab("skills", "install", str(tmp_path), "--force")
    assert f"wrote: {mine}" in forced.stdout and "My own note." not in mine.read_text()
    (tmp_path / ".claude" / "skills" / "ops" / "SKILL.md").unlink()  # a file the user deleted comes back
    assert "wrote:" in run_ppolab("skills", "install", str(tmp_path)).stdout


def test_skills_install_never_overwrites_a_file_it_did_not_write(tmp_path):
    own = tmp_path / ".claude" / "skills" / "eval" / "SKILL.md"
    own.parent.mkdir(parents=True)
    own.write_text("my eval skill\n")
    proc = run_ppolab("skills", "install", str(tmp_path))
    assert "(not written by ppolab; --force replaces it)" in proc.stdout and own.read_text() == "my eval skill\n"
    assert run_ppolab("skills", "install", str(tmp_path / "missing")).returncode == 2


def _shape(tmp_path: Path, shape: str) -> tuple[Path, Path]:
    """A project whose .claude/skills has `shape`; returns it and the user's file elsewhere that a link reaches."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (elsewhere / "train").mkdir(parents=True)
    (elsewhere / "train" / "SKILL.md").write_text("the user's own file\n")
    skills = project / ".claude" / "skills"
    skills.parent.mkdir(parents=True)
    if shape == "claude link":
        skills.parent.rmdir()
        skills.parent.symlink_to(elsewhere)
    elif shape == "skills link":
        skills.symlink_to(elsewhere)
    elif shape == "dangling link":
        skills.symlink_to(tmp_path / "nowhere")
    elif shape == "skills file":
        skills.write_text("not a folder\n")
    elif shape == "train link":
        skills.mkdir()
        (skills / "train").symlink_to(elsewhere / "train")
    elif shape == "train file":
        skills.mkdir()
        (skills / "train").write_text("not a folder\n")
    elif shape == "skill file link":
        (skills / "train").mkdir(parents=True)
        (skills / "train" / "SKILL.md").symlink_to(elsewhere / "train" / "SKILL.md")
    return project, elsewhere / "train" / "SKILL.md"


SHAPES = ["claude link", "skills link", "dangling link", "skills file", "train link", "train file", "skill file link"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("force", [False, True])
def test_skills_install_refuses_every_shape_it_cannot_write_without_touching_anything(tmp_path, shape, force):
    project, users_file = _shape(tmp_path, shape)
    proc = run_ppolab("skills", "install", str(project), *(["--force"] if force else []))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and str(project / ".claude") in proc.stderr
    assert users_file.read_text() == "the user's own file\n"
    assert sorted(p.name for p in users_file.parent.parent.rglob("*")) == ["SKILL.md", "train"]


def command_lines(text: str) -> list[str]:
    """Every ppolab command in a document: lines of code blocks and `inline code` that run ppolab."""
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        found += block.replace("\\\n", " ").splitlines()  # continuation lines joined
    found += [  # inline code that is a whole command line (a name alone, such as `ppolab eval`, is prose)
        c
        for c in re.findall(r"`([^`\n]+)`", text)
        if re.match(r"(uv run |RAY_ADDRESS= )*(\.venv/bin/)?(ppolab|python run_experiment)", c) and len(c.split()) > 2
    ]
    out = []
    for line in found:
        line = line.split(" #")[0].strip()
        m = re.search(
            r"(?:^|\s)(?:\.venv/bin/)?(ppolab|python run_experiment\.py|\.venv/bin/python run_experiment\.py)\s", line
        )
        if not m or line.startswith("#"):
            continue
        cmd = line[m.end() :]
        cmd = re.sub(r"\[[^\]]*\]", "", cmd).split(" | ")[0].replace("...", "").strip()
        if cmd and not cmd.startswith(("&&", "|")):
            out.append(cmd.split(" && ")[0])
    return out


DOCS = [
    REPO / "README.md",
    REPO / "AGENTS.md",
    *sorted((REPO / "ppolab" / "skills").glob("*/SKILL.md")),
    *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "cli.md"),
]  # cli.md: --help itself


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_documented_command_parses_with_the_real_parser(doc, capsys):
    commands = command_lines(doc.read_text())
    assert commands or doc.name in ("AGENTS.md", "index.md", "architecture.md", "benchmarks.md")
    parser = make_parser()
    for cmd in commands:
        try:
            parse(parser, normalise(shlex.split(cmd)))  # as `ppolab` reads it: LHW's underscores too
        except SystemExit as exc:
            err = capsys.readouterr().err
            assert exc.code == 0, f"{doc.name}: `ppolab {cmd}` does not parse: {err}"


def test_a_renamed_flag_would_fail_the_parse_test(capsys):
    with pytest.raises(SystemExit):
        make_parser().parse_args(shlex.split("sweep experiments/sweeps/example --dry-rum"))
    assert command_lines("```bash\nppolab sweep X --dry-run  # plan\n```") == ["sweep X --dry-run"]


def as_json(*args: str, cwd: Path | None = None, env: dict | None = None) -> dict:
    proc = run_ppolab(*args, cwd=cwd, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout, parse_constant=_not_json)  # strict: NaN and Infinity are not JSON
    assert data["schema_version"] == 1
    return data


def _not_json(constant: str):
    raise AssertionError(f"{constant} in JSON output: strict parsers reject it")


def test_json_of_doctor_matrix_and_repro(trained_run):
    secret = "wandb-" + "k" * 40
    doctor = as_json("doctor", "--json", env={"WANDB_API_KEY": secret})
    assert doctor["command"] == "doctor" and {c["name"] for c in doctor["credentials"]} == {"wandb", "aws", "hf"}
    assert next(c for c in doctor["credentials"] if c["name"] == "wandb")["state"] == "set"
    assert secret not in json.dumps(doctor)  # the state, never the value
    matrix = as_json("matrix", "--env-ids", "cartpole", "h1", "--num-seeds", "2", "--json")
    assert [(r["seed"], r["env"]) for r in matrix["runs"]] == [(1, "cartpole"), (1, "h1"), (2, "cartpole"), (2, "h1")]
    repro = as_json("repro", str(trained_run), "--json")
    assert repro["command"] == "repro" and repro["train_args"][:2] == ["--env", "cartpole"] and repro["seed"] == 3


def test_json_of_sweep_list_info_status_dry_run_and_compare(tmp_path):
    root = tmp_path / "sweeps"
    synthetic.write_sweep(root / "syn", {"control": {"lr": 1e-3}, "fast": {"lr": 3e-3}}, [1, 2, 3],
                          {"control": [300, 305, 310], "fast": [400, 405, 410]}, stopped={"fast-s3": 50})  # fmt: skip
    listing = as_json("sweep", "--list", "--json", "--root", str(root))
    assert listing["sweeps"][0]["sweep"] == "syn" and listing["sweeps"][0]["done"] == 5
    info = as_json("sweep", str(root / "syn"), "--info", "--json")
    assert info["runs"] == 6 and info["hypothesis"] == "the treatment raises the final reward"
    plan = as_json("sweep", str(root / "syn"), "--dry-run", "--json")
    assert [r["name"] for r in plan["plan"]][:2] == ["control-s1", "control-s2"]
    status = as_json("sweep", str(root / "syn"), "--status", "--json")
    states = {r["name"]: (r["state"], r["iteration"]) for r in status["runs"]}
    assert states["fast-s3"] == ("interrupted", 50) and states["control-s1"] == ("done", 100)
    metrics = [json.loads(line) for line in (root / "syn" / "runs" / "fast-s3" / "metrics.jsonl").open()]
    elapsed = {r["name"]: r["elapsed_s"] for r in status["runs"]}  # its training time, over every resume
    assert elapsed["fast-s3"] == max(r["total_time"] for r in metrics if r["type"] == "iteration")
    cmp = as_json("compare", str(root / "syn"), "--json")
    assert cmp["control"] == "control" and cmp["verdict"]["result"] == "inconclusive"
    assert cmp["verdict"]["why"].startswith("not decided") and cmp["tests"][0]["decision"] == "significant"
    assert next(r for r in cmp["runs"] if r["name"] == "fast-s3")["finished"] is False
    synthetic.write_sweep(root / "one", {"control": {"lr": 1e-3}, "fast": {"lr": 3e-3}}, [1],
                          {"control": [300], "fast": [400]})  # fmt: skip
    one = as_json("compare", str(root / "one"), "--json")  # one seed each: spreads undefined, written null
    assert one["control"] == "control"
    refused = run_ppolab("sweep", str(root / "syn"), "--json")
    assert refused.returncode == 2 and "--json goes with" in refused.stderr


SWEEP = """\
metadata:
  name: "tiny"
  hypothesis: "a larger learning rate raises the final reward"
defaults: {env: cartpole, n_itr: 3, num_procs: 2, max_traj_len: 40, minibatch_size: 16, eval_freq: 2, eval_episodes: 2}
seeds: [1, 2]
runs:
  A: {name: control, config: {lr: 0.0003}}
  B: {name: fast, config: {lr: 0.003}}
"""


def test_the_experiment_skill_walked_end_to_end(tmp_path):
    """The /experiment skill's sequence: write the file, dry-run, run with --yes, compare --json, report."""
    skill = (REPO / "ppolab" / "skills" / "experiment" / "SKILL.md").read_text()
    for step in ("--dry-run", "--yes", "compare experiments/sweeps/NAME --json", "report experiments/sweeps/NAME"):
        assert step in skill
    sweep = tmp_path / "experiments" / "sweeps" / "tiny"
    sweep.mkdir(parents=True)
    (sweep / "sweep.yaml").write_text(textwrap.dedent(SWEEP))
    env = {"PPOLAB_LOCK_DIR": str(tmp_path)}
    dry = run_ppolab("sweep", str(sweep), "--dry-run", cwd=tmp_path, env=env)
    assert dry.returncode == 0 and "| Run | Name" in dry.stdout and not (sweep / "state.json").exists()
    ran = run_ppolab("sweep", str(sweep), "--yes", cwd=tmp_path, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    cmp = as_json("compare", str(sweep), "--json", cwd=tmp_path)
    assert len(cmp["runs"]) == 4 and all(r["finished"] for r in cmp["runs"])
    assert cmp["verdict"]["result"] in ("supported", "refuted", "inconclusive") and cmp["recommendations"] is not None
    rep = run_ppolab("report", str(sweep), cwd=tmp_path, env=env)
    assert rep.returncode == 0 and "**Verdict: " in (sweep / "results.md").read_text()
    assert "[tiny](sweeps/tiny/results.md)" in (tmp_path / "experiments" / "experiment-tracker.md").read_text()
