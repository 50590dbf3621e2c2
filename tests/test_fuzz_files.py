"""Hostile files: fuzzed sweep and search-space files end in one clear line, never a traceback or a hang."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from conftest import REPO, run_ppolab

from ppolab.errors import UserError
from ppolab.experiments.plan import load_plan
from ppolab.experiments.tune.search_space import load_space

EXAMPLE = (REPO / "experiments" / "sweeps" / "example" / "sweep.yaml").read_text()
SPACE = """\
params:
  lr: {type: float, low: 1.0e-5, high: 1.0e-3, log: true}
  epochs: {type: int, low: 2, high: 8}
  minibatch_size: {type: categorical, choices: [64, 128, 256]}
  n_itr: 60
target_scores:
  cartpole: [0, 400]
"""
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)
SNIPPETS = [
    "seeds: [-1, 2]", "seeds: [1000000000000000000000000000000]", "seeds: [1.5]", "seeds: 3", "seeds: [.inf]",
    "  lr: .inf", "  std_dev: .nan", "  clip: -.inf", "  n_itr: 1000000000000000", "  n_itr: -5",
    "  env: ${oc.env:HOME}", "  experiment_tag: ${oc.env:PATH}", "timeout: .inf", "timeout: -1",
    "  C: {name: \"../../ESCAPED\"}", "  C: {name: \"/abs/path\"}", "  C: {name: \".\"}", "  C: {name: \"\"}",
    "  C: {name: \"..\"}", "  C: {name: \"a/b\"}", "  C: {name: \"-rf\"}", "  C: {name: \"" + "x" * 300 + "\"}",
    "  C: {name: \"a\\0b\"}", "  C: {name: control}", "  A: {name: dup}",
    "  D: {name: big, grid: {lr: [" + ",".join(["0.1"] * 100) + "], gamma: [" + ",".join(["0.9"] * 100) + "]}}",
    "  E: {name: g, grid: {lr: *a}}", "x: &a [1, 2]", "metadata: 3", "runs: []", "runs: {}", "defaults: [1, 2]",
    "  F: {name: f, config: {hidden_sizes: [.inf]}}", "  G: {name: g, config: [1, 2]}", "  H: 5",
    "? [a, b]\n: c", "!!python/object:os.system x", "[" * 5000, "{" * 3000 + "}" * 3000, "\t\tbad: indent",
    "metadata: {name: x, min_effect: -1}", "resources: {num_cpus: .inf}", "%YAML 9.9\n---", "--- !!binary aGk=",
]  # fmt: skip


def mutate(text: str, rng: random.Random) -> bytes:
    """One hostile version of a good file: edited text, injected snippets, or hostile bytes."""
    lines = text.splitlines()
    kind = rng.randrange(10)
    if kind == 0:  # a snippet at a random line
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(SNIPPETS))
    elif kind == 1:  # characters deleted or duplicated
        chars = list(text)
        for _ in range(rng.randint(1, 20)):
            i = rng.randrange(len(chars))
            if rng.random() < 0.5:
                del chars[i]
            else:
                chars.insert(i, rng.choice(":{}[]&*!|>'\"#-\n\t ${}"))
        return "".join(chars).encode()
    elif kind == 2:  # lines shuffled or repeated (duplicate keys)
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines.insert(j, lines[i])
    elif kind == 3:
        return BOMB.encode() + text.encode()
    elif kind == 4:  # another encoding, or bytes that are no text at all
        choice = rng.randrange(3)
        if choice == 0:
            return text.encode("utf-16")
        if choice == 1:
            return bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
        return text.encode()[: rng.randrange(len(text))] + b"\xff\xfe\x00" + text.encode()[rng.randrange(len(text)) :]
    elif kind == 5:  # deep nesting
        depth = rng.choice([60, 500, 5000])
        return ("x: " + "[" * depth + "1" + "]" * depth + "\n").encode() + text.encode()
    else:  # several snippets
        for _ in range(rng.randint(1, 3)):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(SNIPPETS))
    return ("\n".join(lines) + "\n").encode()


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


def check_one(load, path: Path, data: bytes, limit: float = 10.0) -> str:
    """'ok', or the one-line error; anything else (a traceback, a hang, a second line) fails the test."""
    path.write_bytes(data)
    before = sorted(os.listdir(path.parent))
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.monotonic()
    try:
        load(path)
        outcome = "ok"
    except UserError as exc:
        outcome = str(exc)
        assert "\n" not in outcome and outcome.startswith(str(path)[:20]), (data[:200], outcome)
    except Hang:
        pytest.fail(f"hang over {limit} s on {data[:200]!r}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - start < limit
    assert sorted(os.listdir(path.parent)) == before, "the loader wrote something"
    return outcome


def test_300_fuzzed_sweep_files_end_in_one_line_each(tmp_path):
    rng = random.Random(14)
    sweep = tmp_path / "fuzz"
    sweep.mkdir()
    outcomes = [
        check_one(lambda p: load_plan(p.parent), sweep / "sweep.yaml", mutate(EXAMPLE, rng)) for _ in range(300)
    ]
    refused = [o for o in outcomes if o != "ok"]
    assert len(refused) > 200  # most mutations are mistakes, and each was named
    assert not any("Traceback" in o for o in outcomes)


def test_60_fuzzed_search_space_files_end_in_one_line_each(tmp_path):
    rng = random.Random(15)
    load = lambda p: load_space(p, {}, ["cartpole"])  # noqa: E731
    outcomes = [check_one(load, tmp_path / "space.yaml", mutate(SPACE, rng)) for _ in range(60)]
    assert sum(o != "ok" for o in outcomes) > 30


@pytest.mark.parametrize(
    "snippet, message",
    [
        ("seeds: [-1, 2]", "seeds.0: Input should be greater than or equal to 0"),
        ("seeds: [1000000000000000000000000000000]", "less than or equal to 4294967295"),
        ("  A2: {name: x, config: {lr: .inf}}", "lr: Input should be a finite number"),
        ("  A2: {name: \"../../ESCAPED\"}", "it names a folder"),
        ("  A2: {name: x, config: {experiment_tag: \"${oc.env:HOME}\"}}", "resolvers such as oc.env are not allowed"),
        ("  A2: {name: x, grid: {lr: [" + ",".join(["0.1"] * 120) + "], gamma: [" + ",".join(["0.9"] * 100) + "]}}",
         "more than 10,000 planned runs"),
    ],
)  # fmt: skip
def test_named_hostile_sweep_inputs(tmp_path, snippet, message):
    text = EXAMPLE + snippet + "\n" if not snippet.startswith("seeds") else EXAMPLE.replace("seeds: [1, 2, 3]", snippet)
    sweep = tmp_path / "s"
    sweep.mkdir()
    assert message in check_one(lambda p: load_plan(p.parent), sweep / "sweep.yaml", text.encode())


def test_duplicate_keys_bombs_and_encodings_name_the_problem(tmp_path):
    sweep = tmp_path / "s"
    sweep.mkdir()
    load = lambda p: load_plan(p.parent)  # noqa: E731
    dup = EXAMPLE.replace("  B:\n", "  A:\n")
    assert "duplicate key 'A' (lines" in check_one(load, sweep / "sweep.yaml", dup.encode())
    assert "expands to more than" in check_one(load, sweep / "sweep.yaml", (BOMB + EXAMPLE).encode())
    assert "not UTF-8 text" in check_one(load, sweep / "sweep.yaml", EXAMPLE.encode("utf-16"))
    assert "not UTF-8 text" in check_one(load, sweep / "sweep.yaml", EXAMPLE.encode() + b"\xff\n")
    assert "nest" in check_one(load, sweep / "sweep.yaml", ("x: " + "[" * 5000 + "]" * 5000).encode())


def test_through_the_cli_a_hostile_file_is_exit_2_and_one_line(tmp_path):
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "sweep.yaml").write_bytes((BOMB + EXAMPLE).encode())
    proc = run_ppolab("sweep", str(sweep), "--dry-run")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert sorted(p.name for p in sweep.iterdir()) == ["sweep.yaml"]
