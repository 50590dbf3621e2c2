"""Sweep files: interpolation, seeds and grids expand as documented; every mistake is one line with file and line."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_ppolab

from ppolab.errors import UserError
from ppolab.experiments.plan import expand
from ppolab.experiments.spec import load_sweep

GOOD = """\
metadata:
  name: "gamma-ablation"
  hypothesis: "gamma 0.995 helps"
  experiment_tag_prefix: "gamma-ablation"
defaults:
  env: cartpole
  n_itr: 300
runs:
  A:
    name: "control"
    description: "Baseline configuration"
    config:
      experiment_tag: "${metadata.experiment_tag_prefix}-A"
  B:
    name: "gamma0995"
    config:
      gamma: 0.995
      experiment_tag: "${metadata.experiment_tag_prefix}-B"
"""


def write(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "sw"
    d.mkdir(exist_ok=True)
    (d / "sweep.yaml").write_text(textwrap.dedent(text))
    return d


def test_interpolation_and_key_changes(tmp_path):
    d = write(tmp_path, GOOD)
    planned = expand(load_sweep(d), d)
    assert [p.name for p in planned] == ["control", "gamma0995"]
    assert planned[1].config["experiment_tag"] == "gamma-ablation-B"
    assert planned[1].changes == {"gamma": 0.995}
    assert planned[0].changes == {}
    assert planned[1].argv[:2] == ["ppolab", "train"] and "--gamma" in planned[1].argv


def test_seeds_and_grids_expand_to_named_runs(tmp_path):
    d = write(tmp_path, GOOD.replace("runs:\n", "seeds: [1, 2]\nruns:\n") + "    grid:\n      lr: [0.0001, 0.0003]\n")
    names = [p.name for p in expand(load_sweep(d), d)]
    assert names == [
        "control-s1",
        "control-s2",
        "gamma0995-lr00001-s1",
        "gamma0995-lr00001-s2",
        "gamma0995-lr00003-s1",
        "gamma0995-lr00003-s2",
    ]


def test_order_seeds_runs_every_configuration_of_a_seed_before_the_next_seed(tmp_path):
    """For a metric that is a time: a drift of the machine's load (or a sweep continued elsewhere) then falls
    on every configuration alike. Within a seed, the file's order; a run's own seeds count as well."""
    text = GOOD.replace("runs:\n", "seeds: [3, 1]\norder: seeds\nruns:\n") + "    seeds: [2, 3]\n"
    d = write(tmp_path, text)
    names = [p.name for p in expand(load_sweep(d), d)]
    assert names == ["control-s3", "gamma0995-s3", "control-s1", "gamma0995-s2"]  # seeds as the file first names them
    d = write(tmp_path, GOOD.replace("runs:\n", "seeds: [1, 2]\norder: randomly\nruns:\n"))
    with pytest.raises(UserError) as err:
        load_sweep(d)
    assert ":9: order: Input should be 'runs' or 'seeds'" in str(err.value)


@pytest.mark.parametrize("given", ["[1, 2, 3]", "3", '"1-3"', '"1,2,3"'])
def test_sweep_file_seeds_take_the_command_line_forms(tmp_path, given):
    d = write(tmp_path, GOOD.replace("runs:\n", f"seeds: {given}\nruns:\n"))
    assert [p.name for p in expand(load_sweep(d), d)][:3] == ["control-s1", "control-s2", "control-s3"]


@pytest.mark.parametrize("given", ["[true, false]", "[1, 2.5]", '["1", 2]'])
def test_seeds_are_whole_numbers_only(tmp_path, given):
    d = write(tmp_path, GOOD.replace("runs:\n", f"seeds: {given}\nruns:\n"))
    with pytest.raises(UserError, match="seeds.[01]: Input should be a valid integer"):
        load_sweep(d)


def test_seed_specs_parse_the_same_everywhere():
    from ppolab.util.seeds import parse_seeds

    assert parse_seeds("3") == [1, 2, 3] and parse_seeds("4-6") == [4, 5, 6] and parse_seeds("0,9") == [0, 9]
    bad_specs = [("0", "count"), ("5-4", "ends before"), ("1,1", "twice"), ("x", "whole number"), ("²", "whole number"),
                 ("4294967296", "over"), ("9" * 5000, "over"), ("0-20000", "more than")]  # fmt: skip
    for bad, why in bad_specs:
        with pytest.raises(ValueError, match=why):
            parse_seeds(bad)


def test_every_command_takes_seeds_the_same_way(tmp_path):
    matrix = run_ppolab("matrix", "--env-ids", "cartpole", "--seeds", "4-5")
    assert matrix.returncode == 0 and matrix.stdout.splitlines()[1:] == [
        "ppolab train --env cartpole --seed 4", "ppolab train --env cartpole --seed 5"
    ]  # fmt: skip
    cleanrl = run_ppolab("matrix", "--env-ids", "cartpole", "--num-seeds", "2", "--start-seed", "4")
    assert cleanrl.stdout == matrix.stdout  # CleanRL's words for the same seeds
    exp = run_ppolab("experiment", "e", "--env", "cartpole", "--vary", "gamma=0.9", "--seeds", "4-5", "--dry-run",
                     "--root", str(tmp_path))  # fmt: skip
    assert exp.returncode == 0 and "e-gamma09-s4" in exp.stdout and "e-gamma09-s5" in exp.stdout
    bad = run_ppolab("tune", "--env", "cartpole", "--study", "s", "--seeds", "2-1", "--space", "x.yaml")
    assert bad.returncode == 2 and "--seeds: range '2-1' ends before it starts" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


ERRORS = {
    "yaml syntax": (GOOD.replace('  name: "gamma-ablation"', '  name: "gamma-ablation'), ":3: YAML syntax error"),
    "unknown key with the closest": (
        GOOD.replace('    description: "Baseline', '    descripton: "Baseline'),
        ":11: unknown key 'descripton'; did you mean 'description'?",
    ),
    "unknown train flag": (
        GOOD.replace("      gamma: 0.995", "      gama: 0.995"),
        ":17: unknown train flag 'gama'; did you mean 'gamma'?",
    ),
    "wrong type": (GOOD.replace("  n_itr: 300", "  n_itr: lots"), ":7: n_itr: Input should be a valid integer"),
    "unknown env": (GOOD.replace("  env: cartpole", "  env: pendulum"), ":6: env: unknown env 'pendulum'"),
    "duplicate run names": (
        GOOD.replace('    name: "gamma0995"', '    name: "control"'),
        ":15: duplicate run name 'control' (also run A); rename one",
    ),
    "missing interpolation key": (
        GOOD.replace("metadata.experiment_tag_prefix}-A", "metadata.prefix}-A"),
        ":13: interpolation failed",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_each_mistake_names_file_and_line(case, tmp_path):
    text, expected = ERRORS[case]
    d = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_sweep(d)
    assert str(err.value).startswith(str(d / "sweep.yaml") + ":")
    assert expected in str(err.value), str(err.value)


def test_cli_reports_a_bad_sweep_in_one_line_exit_2(tmp_path):
    d = write(tmp_path, ERRORS["unknown train flag"][0])
    proc = run_ppolab("sweep", str(d), "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown train flag 'gama'" in proc.stderr
    assert not (d / "state.json").exists()


def test_dry_run_prints_the_numbered_plan_and_changes_nothing(tmp_path):
    d = write(tmp_path, GOOD)
    proc = run_ppolab("sweep", str(d), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| Run "))
    assert [c.strip() for c in lines[head].strip("|").split("|")] == ["Run", "Name", "Key Changes", "Command"]
    row = [c.strip() for c in lines[head + 3].strip("|").split("|")]
    assert row[0] == "2" and row[1] == "gamma0995" and row[2] == "gamma=0.995"
    assert row[3] == "--gamma 0.995 --experiment-tag gamma-ablation-B --run-name gamma0995"  # its own flags
    assert lines[head - 1].startswith("Every run: ppolab train --env cartpole --n-itr 300 ")
    assert f"--logdir {d / 'runs'}" in lines[head - 1] and "--gamma" not in lines[head - 1]
    assert max(len(line) for line in lines[head:]) <= 160
    assert sorted(p.name for p in d.iterdir()) == ["sweep.yaml"]


def test_info_shows_hypothesis_count_and_steps(tmp_path):
    d = write(tmp_path, GOOD)
    out = run_ppolab("sweep", str(d), "--info").stdout
    assert "Hypothesis: gamma 0.995 helps" in out and "Runs: 2" in out
    assert "Estimated env steps: 3,600,000" in out  # 2 runs x 300 itr x 12 x 1 x 500 (the cartpole preset)
    assert "of training" not in out  # no time_limit: the iterations are the budget
    (d / "sweep.yaml").write_text(GOOD.replace("defaults:\n", "defaults:\n  time_limit: 45\n", 1))
    out = run_ppolab("sweep", str(d), "--info").stdout
    assert "Estimated env steps: 3,600,000, or 1:30:00 of training (the runs' time_limit)" in out, out


def test_launch_without_terminal_or_yes_refuses(tmp_path):
    d = write(tmp_path, GOOD)
    proc = run_ppolab("sweep", str(d))
    assert proc.returncode == 2
    assert "no terminal to approve the plan; pass --yes" in proc.stderr
    assert not (d / "state.json").exists()


def test_the_example_sweep_runs_what_its_file_says_presets_notwithstanding():
    """Each planned command, parsed by the real parser, trains with the file's settings: the control's
    learn_std: false is not overridden by the cartpole preset (which learns the std)."""
    from ppolab.cli.main import make_parser
    from ppolab.experiments.plan import load_plan
    from ppolab.runner.config import TrainConfig

    _, planned = load_plan(REPO / "experiments" / "sweeps" / "example")
    assert len(planned) == 6
    for run in planned:
        ns = make_parser().parse_args(run.argv[1:])
        cfg = TrainConfig(**{k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields})
        for key, value in run.config.items():
            assert getattr(cfg, key) == value, (run.name, key)
    assert {r.name: r.config["learn_std"] for r in planned}["control-s1"] is False


def test_the_readme_example_dry_runs_and_runs_on_a_shortened_budget(tmp_path):
    """The README's main job, as written, on 4 iterations of 2 x 50 steps instead of 120 of 12 x 500."""
    example = tmp_path / "as-shipped" / "example"  # a copy: the checkout may hold the README's finished run
    example.mkdir(parents=True)
    shutil.copy(REPO / "experiments" / "sweeps" / "example" / "sweep.yaml", example / "sweep.yaml")
    dry = run_ppolab("sweep", str(example), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Every run: ppolab train --env cartpole" in dry.stdout and dry.stdout.count("--run-name ") == 6
    assert sorted(p.name for p in example.iterdir()) == ["sweep.yaml"]  # a dry run writes nothing
    doc = yaml.safe_load((example / "sweep.yaml").read_text())
    doc["defaults"].update(n_itr=4, num_procs=2, max_traj_len=50, minibatch_size=50, eval_freq=2)
    d = tmp_path / "sweeps" / "example"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = run_ppolab("sweep", str(d), "--yes", env={"PPOLAB_LOCK_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "Sweep finished: 6/6 runs done" in proc.stdout
    report = (d / "results.md").read_text()
    assert "learning the action std reaches a higher final reward" in report and "**Verdict: " in report
    assert "Smallest effect of interest: 20" in report  # the file's min_effect, not the default
