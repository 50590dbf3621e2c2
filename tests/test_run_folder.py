"""What a run leaves in its folder: config, command, metadata, metrics, TensorBoard events, checkpoints."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest
import torch
import yaml
from conftest import read_metrics, wait_until

METRIC_KEYS = {
    "iteration",
    "mean_eprew",
    "mean_eplen",
    "actor_loss",
    "critic_loss",
    "mirror_loss",
    "kl",
    "entropy",
    "clip_fraction",
    "noise_std",
    "sample_time",
    "optimizer_time",
    "total_steps",
    "total_time",
    "fps",
}


def test_resolved_config_and_reproducing_command(trained_run):
    cfg = yaml.safe_load((trained_run / "config.yaml").read_text())
    assert cfg["env"] == "cartpole" and cfg["seed"] == 3 and cfg["n_itr"] == 4 and cfg["num_procs"] == 2
    command = (trained_run / "command.txt").read_text()
    assert command.startswith("ppolab train --env cartpole ")
    for part in ("--seed 3", "--n-itr 4", "--num-procs 2", "--max-traj-len 50", "--minibatch-size 32"):
        assert part in command


def test_the_env_settings_are_recorded_in_full_without_a_yaml(trained_run):
    """A later change of an env's defaults must not change a run (on --resume) or a policy trained before it."""
    from ppolab.envs.cartpole import CartpoleConfig
    from ppolab.ppo.checkpoint import load

    full = CartpoleConfig().model_dump(mode="json")
    assert yaml.safe_load((trained_run / "env.yaml").read_text()) == full
    for name in ("actor.pt", "actor_2.pt"):
        assert load(trained_run / name)["meta"]["env_config"] == full, name


def test_run_json_records_versions_and_git(trained_run):
    meta = json.loads((trained_run / "run.json").read_text())
    assert {"mujoco", "torch", "numpy", "python", "ppolab", "cpu_count", "cpu_model"} <= set(meta["system"])
    assert "git_commit" in meta and "git_dirty" in meta
    assert meta["argv"]


def test_metrics_jsonl_has_every_iteration_and_eval(trained_run):
    records = read_metrics(trained_run)
    iters = [r for r in records if r["type"] == "iteration"]
    evals = [r for r in records if r["type"] == "eval"]
    assert [r["iteration"] for r in iters] == [0, 1, 2, 3]
    assert METRIC_KEYS <= set(iters[0])
    assert [r["iteration"] for r in evals] == [0, 2, 3]
    assert {"reward", "length", "time"} <= set(evals[0])
    assert iters[-1]["total_steps"] == 400


def test_tensorboard_event_file_holds_the_scalars(trained_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(trained_run))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert {"charts/mean_eprew", "losses/kl", "losses/clip_fraction", "eval/reward"} <= set(tags)
    assert [e.step for e in acc.Scalars("charts/mean_eprew")] == [0, 1, 2, 3]


def test_checkpoints_are_state_dicts_loadable_without_pickled_code(trained_run):
    names = {p.name for p in trained_run.glob("*.pt")}
    assert {
        "actor_0.pt",
        "critic_0.pt",
        "actor_2.pt",
        "critic_2.pt",
        "actor_3.pt",
        "critic_3.pt",
        "actor.pt",
        "critic.pt",
        "last.pt",
    } <= names
    actor = torch.load(trained_run / "actor.pt", weights_only=True)
    assert actor["meta"]["kind"] == "actor" and actor["meta"]["env"] == "cartpole"
    assert all(isinstance(v, torch.Tensor) for v in actor["state_dict"].values())
    assert "norm.mean" in actor["state_dict"]  # the normaliser travels with the policy
    last = torch.load(trained_run / "last.pt", weights_only=True)
    assert last["iteration"] == 3 and last["total_steps"] == 400


def test_best_checkpoint_is_the_best_eval(trained_run):
    evals = [r for r in read_metrics(trained_run) if r["type"] == "eval"]
    best = max(evals, key=lambda r: r["reward"])
    actor = torch.load(trained_run / "actor.pt", weights_only=True)
    assert actor["meta"]["iteration"] == best["iteration"]
    assert abs(actor["meta"]["eval_reward"] - best["reward"]) < 1e-9


def test_a_second_run_gets_its_own_folder(tmp_path):
    from conftest import TINY, run_ppolab

    for _ in range(2):
        assert run_ppolab("train", *TINY, "--n-itr", "1", "--seed", "1", "--logdir", str(tmp_path)).returncode == 0
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2


def test_an_interrupt_during_a_checkpoint_write_waits_for_the_write(tmp_path):
    """Ctrl-C or SIGTERM while torch.save runs: the file is complete, then the interrupt arrives as such."""
    from ppolab.ppo.checkpoint import atomic_save

    big = {"w": torch.randn(2000, 2000)}
    path = tmp_path / "last.pt"
    # as ppolab's entry point does: Ctrl-C raises, even in a suite started with SIGINT ignored (nohup, `&`)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.02, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(200):
                atomic_save(big, path)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert torch.load(path, weights_only=True)["w"].shape == (2000, 2000)
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]


INTERRUPT_EVERY_LINE = """
import signal, sys
from pathlib import Path
from ppolab.runner.run_files import MetricsLog

log = MetricsLog(Path(sys.argv[1]))
keys = ("mean_eprew", "mean_eplen", "noise_std", "fps", "actor_loss", "critic_loss", "mirror_loss", "kl",
        "entropy", "clip_fraction")
at = {"line": 0, "seen": 0}

def line(frame, event, arg):  # the k-th line that threading or queue runs inside the record gets the signal
    if event == "line":
        at["seen"] += 1
        if at["seen"] == at["line"]:
            signal.raise_signal(signal.SIGINT)
    return line

def calls(frame, event, arg):
    return line if frame.f_code.co_filename.endswith(("threading.py", "queue.py")) else None

while at["seen"] >= at["line"]:
    at.update(line=at["line"] + 1, seen=0)
    try:
        sys.settrace(calls)
        log.iteration({"iteration": at["line"], **{k: 1.0 for k in keys}})
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
log.close()
print(at["line"])
"""


def test_a_ctrl_c_at_any_line_of_a_metrics_record_never_hangs_the_close(tmp_path):
    """TensorBoard's writer hands events to a thread through a queue: a KeyboardInterrupt raised inside
    the queue's notify once left that thread asleep, and the run's close() waited up to two minutes
    (1 SIGTERM in 40 under load). A SIGINT delivered at each line of that code in turn must not."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_EVERY_LINE, str(tmp_path)], capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 20  # the signal was delivered at every one of that many lines
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]  # none torn
    written = [r["iteration"] for r in rows]
    assert written == sorted(set(written)) and len(written) > 20  # a record is written whole, once, or not at all


def _training_past_its_first_checkpoint(tmp_path):
    """A `ppolab train` process stopped reading at an iteration after its first checkpoint."""
    import subprocess
    import sys

    from conftest import REPO, TINY

    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "train", *TINY, "--n-itr", "10000", "--logdir", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "RAY_ADDRESS": ""},
    )
    saved = False
    for line in proc.stdout:  # mid-training: an iteration after the first checkpoint
        saved = saved or line.startswith("Saved actor")
        if saved and line.startswith("Total time elapsed"):
            break
    return proc


def test_a_second_sigterm_while_stopping_still_ends_with_the_summary(tmp_path):
    """Slurm signals every process of a task and the runner then stops its child: two SIGTERMs
    milliseconds apart must still end the run cleanly, with its summary line."""
    from conftest import wait_until

    proc = _training_past_its_first_checkpoint(tmp_path)
    proc.send_signal(signal.SIGTERM)
    # the event between the two: the trainer has taken the first (it ignores SIGTERM from then on, while it stops)
    wait_until(lambda: _ignores(proc.pid, signal.SIGTERM), "the trainer to start stopping", every=0.0005, alive=proc)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(60) == 130
    assert "Training interrupted at iteration" in rest


def test_ctrl_c_then_a_sigterm_at_once_still_ends_with_the_summary(tmp_path):
    """`ppolab tune` stopped by Ctrl-C: the run gets SIGINT from the terminal and SIGTERM from the tune a
    moment later. The SIGTERM once landed as the trainer began to stop, before it ignored SIGTERM, and cut
    its close short with a traceback. Both signals back to back must still end the run cleanly."""
    proc = _training_past_its_first_checkpoint(tmp_path)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(60) == 130, rest
    assert "Training interrupted at iteration" in rest and "Traceback" not in rest, rest


def test_the_first_stop_signal_makes_sigterm_a_no_op_before_the_cleanup_runs():
    """Training's handlers: Ctrl-C raises KeyboardInterrupt and, by the first line that handles it, SIGTERM is
    already ignored, so the SIGTERM that `ppolab tune` sends after a Ctrl-C cannot land inside the close."""
    import sys

    from ppolab.util.interrupt import restore, stop_on_signals

    handlers = stop_on_signals()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**7):  # the handler runs at the next bytecode boundary
                pass
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        restore(handlers)
    assert signal.getsignal(signal.SIGINT) == handlers[signal.SIGINT] and sys.unraisablehook is handlers["unraisable"]


def test_git_diff_records_exactly_the_uncommitted_change_of_the_code_that_ran(trained_run):
    import json
    import subprocess

    from conftest import REPO

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)

    info = json.loads((trained_run / "run.json").read_text())
    # the commit checked out when the run started (a commit made since, of other files, leaves it an ancestor)
    assert git("merge-base", "--is-ancestor", info["git_commit"], "HEAD").returncode == 0
    diff = git("diff", info["git_commit"], "--", "ppolab").stdout
    assert info["git_dirty"] == bool(diff)
    if diff:  # a dirty source tree (a developer's): its diff, to the byte, beside run.json
        assert (trained_run / "git.diff").read_text() == diff
    else:  # a clean checkout (CI): no git.diff at all
        assert not (trained_run / "git.diff").exists()


def test_tensorboard_holds_the_hyperparameters_and_the_config_text(trained_run):
    """Runs compare in TensorBoard's HParams table, as CleanRL's do; the resolved config is there as text."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = EventAccumulator(str(trained_run))
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    session = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = session.session_start_info.hparams
    assert hp["seed"].number_value == 3 and hp["env"].string_value == "cartpole"
    assert hp["minibatch_size"].number_value == 32 and hp["learn_std"].number_value == 1  # true, as torch writes it
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert {m.name.tag for m in experiment.experiment.metric_infos} == {"eval/reward", "charts/mean_eprew"}
    text = acc.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "|seed|3|" in text and "|env|cartpole|" in text


def test_ctrl_c_before_the_first_iteration_removes_the_empty_run_folder(tmp_path):
    """Nothing to resume, so nothing left behind: no folder that --resume would refuse."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    argv = ["train", "--env", "h1", "--num-procs", "4", "--max-traj-len", "400", "--logdir", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", *argv, "--no-lock"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "RAY_ADDRESS": ""},
    )  # fmt: skip
    for line in proc.stdout:
        if line.startswith("Warming up observation normalization"):  # the folder exists; no iteration yet
            assert len(list(tmp_path.iterdir())) == 1
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.stdout.read()
    assert proc.wait(60) == 130
    assert "No iteration had completed: removed the run folder" in rest and "--resume" not in rest
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("after", ["config.yaml", "run.json", "metrics.jsonl"])
def test_ctrl_c_while_the_run_folder_is_being_set_up_leaves_nothing_behind(tmp_path, after):
    """Earlier than the warm-up: between the folder's first files and its logs. The moment is an event (a file
    of the folder appearing), not a sleep; either nothing is left or a run --resume continues."""
    import subprocess
    import sys

    from conftest import REPO

    argv = ["train", "--env", "cartpole", "--n-itr", "3", "--logdir", str(tmp_path), "--no-lock"]
    proc = subprocess.Popen([sys.executable, "-m", "ppolab", *argv], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""})  # fmt: skip
    wait_until(lambda: list(tmp_path.glob(f"*/{after}")), f"the run's {after}", every=0.001, alive=proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130
    left = list(tmp_path.iterdir())
    assert left == [] or (left[0] / "last.pt").is_file(), [p.name for p in left[0].iterdir()]


def _ignores(pid: int, sig: int) -> bool:
    """Whether the process ignores `sig` now (its SigIgn mask in /proc)."""
    try:
        text = open(f"/proc/{pid}/status").read()
    except OSError:
        return False
    mask = int(next(ln.split()[1] for ln in text.splitlines() if ln.startswith("SigIgn:")), 16)
    return bool(mask >> (sig - 1) & 1)
