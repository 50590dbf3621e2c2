"""Fuzzed robot files and LearningHumanoidWalking env files: each a mistake a user could make, run through the
commands that read it. What must hold for every one: an exit code of 0, 1 or 2, never a traceback or a hang,
and a refusal (2) in one line on stderr.

    python tests/fuzzing.py --robots 200 --lhw 100 --seed 0      # the full run (about 20 min on 2 cores)

tests/test_fuzz_robot_files.py runs a few dozen of the same cases on every test run.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ROBOTS = [REPO / "ppolab" / "envs" / "robots" / f"{n}.yaml" for n in ("jvrc", "berkeley", "t1", "g1")]
LHW = sorted((REPO / "tests" / "data" / "lhw").glob("*.yaml"))
JUNK = [None, True, "yes", "x", -1, 0, 1e-12, 1e9, -0.5, [], {}, [1, "a"], {"a": 1}, "1e-9", float("nan")]


@dataclass
class Case:
    name: str
    kind: str  # "robot" or "lhw"
    doc: object  # what goes into the YAML file
    files: dict[str, bytes] = field(default_factory=dict)  # other files beside it (a broken model, say)
    raw: str | None = None  # the file's text as is, instead of doc


def _paths(doc, prefix=()):
    """Every key path of a nested mapping."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))


def _set(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


def _delete(doc, path):
    for k in path[:-1]:
        doc = doc[k]
    del doc[path[-1]]


def _model_files(rng: random.Random, model_text: str) -> tuple[str, dict[str, bytes]]:
    """A model file that is not what it should be."""
    choice = rng.randrange(8)
    if choice == 0:
        return "/etc/passwd", {}
    if choice == 1:
        return "model.xml", {"model.xml": b"just some text, not a model\n"}
    if choice == 2:
        return "model.xml", {"model.xml": model_text[: rng.randrange(10, len(model_text))].encode()}
    if choice == 3:
        return "model.xml", {"model.xml": b'<mujoco><include file="/root/nope/unreadable.xml"/></mujoco>'}
    if choice == 4:
        return "model.urdf", {"model.urdf": b'<robot name="r"><link name="a"/><joint name="j" type="revolute">'}
    if choice == 5:
        return "model.xml", {"model.xml": b""}
    if choice == 6:
        return "model.xml", {"model.xml": bytes(rng.randrange(256) for _ in range(200))}
    return "model.xml", {"model.xml": b"<mujoco><worldbody><body name='b'><geom size='1'/></body></worldbody></mujoco>"}


def robot_case(rng: random.Random, i: int) -> Case:
    source = rng.choice(ROBOTS)
    doc = yaml.safe_load(source.read_text())
    paths = list(_paths(doc))
    kind = rng.randrange(10)
    if kind <= 2:  # a key set to a value of the wrong kind or range
        path = rng.choice(paths)
        _set(doc, path, copy.deepcopy(rng.choice(JUNK)))
    elif kind == 3:  # a key removed
        _delete(doc, rng.choice(paths))
    elif kind == 4:  # a name that matches nothing
        section = rng.choice(["legs", "gains.kp", "gains.kd", "nominal.joints", "damping", "armature", "root",
                              "head.body", "feet.left.body", "mirror.right"])  # fmt: skip
        target = doc
        keys = section.split(".")
        for k in keys[:-1]:
            target = target.setdefault(k, {})
        value = target.get(keys[-1])
        if isinstance(value, list):
            value[rng.randrange(len(value))] = "zzz_joint"
        elif isinstance(value, dict):
            value["zzz"] = 1.0
        else:
            target[keys[-1]] = "zzz"
    elif kind == 5:  # rates out of range
        doc["rates"] = {"physics_dt": rng.choice([1e-9, 1e-7, 0.05, 0.03, 0.0011]),
                        "control_dt": rng.choice([0.025, 0.001, 1e-6, 0.02])}  # fmt: skip
    elif kind == 6:  # a model that is no model
        src = doc["model"]
        text = ""
        if isinstance(src, dict) and src.get("package") == "jvrc_description":
            import jvrc_description

            text = (Path(jvrc_description.__file__).parent / src["path"]).read_text()
        path, files = _model_files(rng, text or "<mujoco><worldbody/></mujoco>")
        doc["model"] = {"path": path}
        return Case(f"robot-{i:04d}", "robot", doc, files)
    elif kind == 7:  # task settings gone wrong
        doc.setdefault("tasks", {}).setdefault("walk", {})[rng.choice(
            ["stance_duration", "swing_duration", "goal_height", "unknown_key", "rewards", "randomization",
             "velocity_scale", "heading_gain"])] = copy.deepcopy(rng.choice(JUNK))  # fmt: skip
    elif kind == 8:  # broken YAML
        text = source.read_text()
        cut = rng.randrange(len(text))
        return Case(f"robot-{i:04d}", "robot", None, raw=text[:cut] + rng.choice(["\n  - ]", ": :", "\t", "{"]))
    else:  # a whole section of the wrong kind
        _set(doc, (rng.choice([k for k in doc if k != "name"]),), rng.choice(["text", 3, [1, 2], None]))
    return Case(f"robot-{i:04d}", "robot", doc)


def lhw_case(rng: random.Random, i: int) -> Case:
    source = rng.choice(LHW)
    doc = yaml.safe_load(source.read_text())
    choice = rng.randrange(8)
    if choice == 0:
        doc["sim_dt"] = rng.choice([1e-12, 0.0, -0.001, "x", 0.5, 0.03])
    elif choice == 1:
        doc["perturbation"] = {"enable": rng.choice(["yes", "x", 2, None]), "interval": rng.choice([-1, 0, "s", 5])}
    elif choice == 2:
        doc["dynamics_randomization"] = {"enable": rng.choice(["x", 1, "true"]), "interval": rng.choice([-1, 0, 0.5])}
    elif choice == 3:
        doc["observation_noise"] = {
            "enabled": rng.choice([True, "x"]), "multiplier": rng.choice([-1, "a", 1]),
            "type": rng.choice(["uniform", "gaussian", 3]), "scales": rng.choice([{}, 1]),
        }  # fmt: skip
    elif choice == 4:
        path = rng.choice(list(_paths(doc)))
        _set(doc, path, copy.deepcopy(rng.choice(JUNK)))
    elif choice == 5:
        for key in ("kp", "kd"):
            if key in doc:
                doc[key] = doc[key][: rng.randrange(len(doc[key]))] if isinstance(doc[key], list) else "x"
        doc["pdgains"] = {"zzz_joint": [1, 2]} if rng.random() < 0.5 else {"knee_joint": ["a"]}
    elif choice == 6:
        doc["task"] = {"goal_height": rng.choice([-1, "x", 0.8]), "swing_duration": rng.choice([0, -0.1, 0.75]),
                       "stance_duration": 0.35, "total_duration": rng.choice([1.1, 0.0, "x"])}  # fmt: skip
    else:
        doc["xml_export_path"] = "/tmp/lhw-export.xml"
        doc["half_sitting_pose"] = rng.choice([[0.1] * 3, "x", [1e9] * 12])
    return Case(f"lhw-{i:04d}", "lhw", doc)


@dataclass
class Result:
    case: str
    command: str
    code: int | None  # None: hung
    stderr: str
    seconds: float

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    @property
    def bad_refusal(self) -> bool:
        """Exit 2 must come with one line on stderr."""
        return self.code == 2 and len([line for line in self.stderr.splitlines() if line.strip()]) != 1

    @property
    def ok(self) -> bool:
        return self.code in (0, 1, 2) and not self.traceback and not self.bad_refusal


def write(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (folder / name).write_bytes(data)
    path = folder / f"{case.name}.yaml"
    path.write_text(case.raw if case.raw is not None else yaml.safe_dump(case.doc, sort_keys=False))
    return path


def commands(case: Case, path: Path, logdir: Path) -> list[list[str]]:
    train = ["train", "--n-itr", "1", "--num-procs", "1", "--max-traj-len", "20", "--minibatch-size", "20",
             "--eval-freq", "100", "--logdir", str(logdir)]  # fmt: skip
    if case.kind == "robot":
        name = case.doc.get("name") if isinstance(case.doc, dict) and isinstance(case.doc.get("name"), str) else "x"
        return [["robots", "check", str(path), "--no-picture"], [*train, "--env", f"{name}_walk", "--robot", str(path)]]
    env = "h1_walk" if "h1" in case.name or "pdgains" in (case.doc or {}) else "jvrc_walk"
    return [[*train, "--env", env, "--yaml", str(path)]]


def run(case: Case, folder: Path, timeout: float) -> list[Result]:
    path = write(case, folder)
    out = []
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for argv in commands(case, path, folder / "runs"):
        start = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-m", "ppolab", *argv], capture_output=True, text=True,
                                  timeout=timeout, cwd=folder, stdin=subprocess.DEVNULL, env=env)  # fmt: skip
            out.append(Result(case.name, " ".join(argv[:2]), proc.returncode, proc.stderr, time.monotonic() - start))
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            out.append(Result(case.name, " ".join(argv[:2]), None, err, time.monotonic() - start))
    return out


def cases(seed: int, robots: int, lhw: int) -> list[Case]:
    rng = random.Random(seed)
    return [robot_case(rng, i) for i in range(robots)] + [lhw_case(rng, i) for i in range(lhw)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robots", type=int, default=200)
    p.add_argument("--lhw", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--jobs", type=int, default=2)
    ns = p.parse_args()
    from concurrent.futures import ThreadPoolExecutor

    todo = cases(ns.seed, ns.robots, ns.lhw)
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(ns.jobs) as pool:
        results = [r for rs in pool.map(lambda c: run(c, Path(tmp) / c.name, ns.timeout), todo) for r in rs]
    bad = [r for r in results if not r.ok]
    codes = {c: sum(r.code == c for r in results) for c in (0, 1, 2, None)}
    tracebacks, long = sum(r.traceback for r in results), sum(r.bad_refusal for r in results)
    print(f"{len(todo)} files ({ns.robots} robot files, {ns.lhw} LHW files), {len(results)} commands, seed {ns.seed}: "
          f"exit 0: {codes[0]}, 1: {codes[1]}, 2: {codes[2]}, hung: {codes[None]}; "
          f"tracebacks: {tracebacks}, refusals not one line: {long}")  # fmt: skip
    for r in bad:
        print(f"--- {r.case} ({r.command}): exit {r.code}\n{r.stderr[-1500:]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
