"""`ppolab export`: the exported policy gives ppolab's own actions, and its sidecar says what it reads and means."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import REPO, run_ppolab

from ppolab.envs import make_env
from ppolab.evaluation.export import max_difference
from ppolab.ppo.checkpoint import load_actor
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.sampling_policy import SamplingPolicy


def recorded_observations(name: str, rows: int = 1000) -> np.ndarray:
    """Observations the shipped policy meets when it runs its env (8 envs, 125 steps): the inputs to compare on."""
    actor, meta = load_actor(REPO / "pretrained" / name)
    env, policy = make_env(meta["env"], 8, meta["env_config"]), SamplingPolicy(sampling_params(actor))
    for i in range(8):
        env.reset_one(i, np.random.default_rng(i))
    obs = [env.observe()]
    while len(obs) * 8 < rows:
        obs.append(env.step(policy(obs[-1]))[0])
    return np.concatenate(obs)[:rows]


@pytest.mark.parametrize("name", ["jvrc_walk", "t1_walk"])
def test_the_exported_policy_gives_ppolab_s_actions_within_1e_5(tmp_path, name):
    proc = run_ppolab("export", str(REPO / "pretrained" / name), "--onnx", str(tmp_path / "p.onnx"),
                      "--torchscript", str(tmp_path / "p.pt"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    obs = recorded_observations(name)
    assert max_difference(tmp_path / "p.onnx", REPO / "pretrained" / name, obs) < 1e-5
    scripted = torch.jit.load(str(tmp_path / "p.pt"))
    ours = SamplingPolicy(sampling_params(load_actor(REPO / "pretrained" / name)[0]))(obs)
    assert np.abs(scripted(torch.from_numpy(obs)).detach().numpy() - ours).max() < 1e-5
    side = json.loads((tmp_path / "p.onnx.json").read_text())
    env = make_env(side["env"], 1)
    assert side["obs_dim"] == env.obs_dim and len(side["joint_order"]) == side["act_dim"] == env.act_dim
    covered = sorted(tuple(e["slice"]) for e in side["observation"])
    assert covered[0][0] == 0 and covered[-1][1] == env.obs_dim  # every entry named, once, in order
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    assert set(side["action"]["kp"]) == set(side["joint_order"]) and side["rates"]["substeps"] >= 1


@pytest.mark.parametrize(
    "args, says",
    [
        (["nothing-here", "--onnx", "{tmp}/p.onnx"], "nothing-here: no such file"),
        (["{repo}/pretrained/jvrc_walk", "--onnx", "{tmp}/p.txt"], "--onnx {tmp}/p.txt: name a .onnx file"),
        (["{repo}/pretrained/jvrc_walk", "--onnx", "{tmp}/missing/p.onnx"], "cannot write in"),
        (["{repo}/pretrained/jvrc_walk"], "give --onnx FILE.onnx and/or --torchscript FILE.pt"),
        (["{repo}/README.md", "--onnx", "{tmp}/p.onnx"], "not a readable checkpoint"),
        (["{tmp}/zork.pt", "--onnx", "{tmp}/p.onnx"], "trained on 'zork_walk', which cannot be built here"),
    ],
)
def test_a_bad_export_is_one_line_and_writes_nothing(tmp_path, args, says):
    from ppolab.ppo import checkpoint as ckpt

    data = ckpt.load(REPO / "pretrained" / "t1_walk" / "actor.pt")
    data["meta"]["env"] = "zork_walk"  # a policy of an env this ppolab does not know
    ckpt.atomic_save(data, tmp_path / "zork.pt")
    args = [a.replace("{tmp}", str(tmp_path)).replace("{repo}", str(REPO)) for a in args]
    proc = run_ppolab("export", *args, cwd=tmp_path)
    says = says.replace("{tmp}", str(tmp_path))
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not list(tmp_path.glob("*.onnx*")) and not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize("name", ["jvrc_walk", "t1_walk"])
def test_the_exported_walker_walks_in_mujoco_without_ppolab(tmp_path, name):
    """examples/deploy_mujoco.py (mujoco, numpy and onnxruntime only) builds the observation from MuJoCo's state
    by the sidecar, runs its own PD loop, and the robot stays up and covers half the commanded distance or more
    in 10 s. With LHW's solver settings (PGS, 50 iterations) it reports the same figures (no bar)."""
    import ast
    import subprocess
    import sys

    script = REPO / "examples" / "deploy_mujoco.py"
    nodes = list(ast.walk(ast.parse(script.read_text())))
    imported = {n.names[0].name.split(".")[0] for n in nodes if isinstance(n, ast.Import)}
    imported |= {n.module.split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom) and n.module != "__future__"}
    assert imported <= {"argparse", "json", "math", "pathlib", "mujoco", "numpy", "onnxruntime"}, imported
    assert run_ppolab("export", str(REPO / "pretrained" / name), "--onnx", str(tmp_path / "p.onnx")).returncode == 0
    for extra in ([], ["--solver", "pgs", "--iterations", "50"]):
        proc = subprocess.run([sys.executable, str(script), str(tmp_path / "p.onnx"), "--vx", "0.3", *extra],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0 and "stayed up" in proc.stdout, proc.stdout + proc.stderr


def test_an_lstm_policy_exports_with_its_state_and_gives_ppolab_s_actions_step_by_step(tmp_path):
    """An LSTM actor (two layers of different widths) over 1,000 successive observations: onnxruntime, fed back
    its own state, and ppolab's worker policy agree within 1e-5 at every step."""
    from ppolab.ppo import checkpoint as ckpt
    from ppolab.runner.config import TrainConfig
    from ppolab.runner.trainer import build_networks, policy_meta

    cfg = TrainConfig(env="jvrc_walk", recurrent=True, hidden_sizes=[32, 16])
    env = make_env("jvrc_walk", 1)
    torch.manual_seed(0)
    actor, _ = build_networks(cfg, env.obs_dim, env.act_dim)
    obs = recorded_observations("jvrc_walk")
    actor.norm.update(obs)
    with torch.no_grad():
        actor.out.weight.mul_(100.0)  # actions far from zero: a wrong state shows
    ckpt.save_policy(tmp_path / "actor.pt", actor, policy_meta(cfg, env, "actor", 0, None, None))
    proc = run_ppolab("export", str(tmp_path / "actor.pt"), "--onnx", str(tmp_path / "lstm.onnx"))
    assert proc.returncode == 0, proc.stderr
    side = json.loads((tmp_path / "lstm.onnx.json").read_text())
    assert [s["name"] for s in side["state"]["inputs"]] == ["h0", "c0", "h1", "c1"]
    assert max_difference(tmp_path / "lstm.onnx", tmp_path / "actor.pt", obs) < 1e-5
