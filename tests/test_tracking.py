"""Tracking: TensorBoard across a sweep, W&B offline without a key, and training that never waits on W&B."""

from __future__ import annotations

import time

from conftest import TINY, WANDB_SECRET, clean_env, run_ppolab

SWEEP = """\
metadata: {name: tracked, experiment_tag_prefix: trk}
defaults: {env: cartpole, n_itr: 3, num_procs: 2, max_traj_len: 20, minibatch_size: 8, eval_episodes: 1,
           track: true, wandb_project: ppolab-tests}
seeds: [1]
runs:
  A: {name: control, config: {experiment_tag: "${metadata.experiment_tag_prefix}-A"}}
  B: {name: clip03, config: {clip: 0.3, experiment_tag: "${metadata.experiment_tag_prefix}-B"}}
"""


def wandb_record(run_dir) -> bytes:
    """The offline W&B run file: protobuf records, in which keys and strings appear as written."""
    files = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1, files
    return files[0].read_bytes()


def test_a_tracked_sweep_logs_offline_without_a_key_grouped_and_tagged(tmp_path):
    sweep = tmp_path / "tracked"
    sweep.mkdir()
    (sweep / "sweep.yaml").write_text(SWEEP)
    proc = run_ppolab("sweep", str(sweep), "--yes", base_env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = (sweep / "logs" / "control-s1.log").read_text()  # each run's training output
    assert "W&B: logging offline" in log and "wandb sync" in log
    for name, tag in (("control-s1", b"trk-A"), ("clip03-s1", b"trk-B")):
        record = wandb_record(sweep / "runs" / name)
        for key in (b"charts/mean_eprew", b"losses/kl", b"eval/reward", b"tracked", b"ppolab-tests", tag):
            assert key in record, (name, key)
        assert "wandb_group: tracked" in (sweep / "runs" / name / "config.yaml").read_text()

    # TensorBoard: one logdir, the sweep folder, shows every run side by side
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    mux = EventMultiplexer().AddRunsFromDirectory(str(sweep))
    mux.Reload()
    runs = {run: tags["scalars"] for run, tags in mux.Runs().items()}
    assert sorted(runs) == ["runs/clip03-s1", "runs/control-s1"]
    assert all("charts/mean_eprew" in scalars and "eval/reward" in scalars for scalars in runs.values())


def test_training_goes_on_when_wandb_is_unreachable_and_the_key_stays_secret(tmp_path):
    env = {
        **clean_env(tmp_path),
        "WANDB_API_KEY": WANDB_SECRET,
        "WANDB_BASE_URL": "http://127.0.0.1:9",  # nothing listens: connection refused
        "WANDB_INIT_TIMEOUT": "5",
    }
    start = time.monotonic()
    proc = run_ppolab(
        "train", *TINY, "--n-itr", "3", "--seed", "1", "--logdir", str(tmp_path / "logs"), "--track", base_env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - start < 90
    assert "W&B: could not start in online mode" in proc.stdout
    assert "Training finished." in proc.stdout
    texts = [proc.stdout, proc.stderr]
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".pt":
            texts.append(path.read_text(errors="replace"))
    assert not any(WANDB_SECRET in t for t in texts)
