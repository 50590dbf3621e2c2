"""Operations commands: doctor, repro, matrix, slurm, container, cloud.

Preview by default: nothing that submits jobs, spends money or touches
credentials runs without an explicit flag (`--workers`, `--submit`, `--execute`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ppolab.errors import UserError
from ppolab.util.seeds import SEEDS_HELP, parse_seeds, seeds_arg
from ppolab.util.tables import count

RAW = argparse.RawDescriptionHelpFormatter

MATRIX_HELP = """Benchmark matrix: the base command over every env and seed, seed-major
(all envs for seed 1, then seed 2, ...), so a matrix stopped half-way still has a
whole first seed to compare.

  --workers 0 (default)  print the commands (or, with --format, the sweep or Slurm script)
  --workers 1            ppolab train: write experiments/sweeps/NAME and run it with the sweep
                         runner (plan, approval, state, resume, report); any other program: run
                         the commands one at a time
  --write                write the sweep folder only (then: ppolab slurm DIR --submit)

Any other program gets --env-id ENV --seed S appended, as CleanRL's benchmark utility
does (--env-flag, --seed-flag: other names).

examples:
  ppolab matrix --env-ids cartpole --seeds 3 --command "ppolab train --n-itr 500"
  ppolab matrix --env-ids Hopper-v4 --command "python cleanrl/ppo_continuous_action.py" --workers 1
"""

SLURM_HELP = """Run a sweep as a Slurm job array, one task per run (runs already done are left
out). Without --submit, print the sbatch script and the command that submits it.
A task stopped by preemption, or by its own time limit coming near, is requeued
and resumes its run from the last checkpoint. Tasks record their state in the
sweep's state.json (lock: POSIX record locks, which hold on NFS); follow them with
`ppolab sweep SWEEP_DIR --status`."""

CONTAINER_HELP = """Print the docker commands that build ppolab's image from the repository's
Dockerfile, run the example sweep in it, and (with --push) push it. Secrets are
passed by name (-e WANDB_API_KEY), never by value. --execute builds, pushes, then runs."""

CLOUD_HELP = """Print an AWS Batch job definition and one job submission per run, as JSON.
A retried job resumes its run from the checkpoint in --output-dir (a volume all
jobs share, such as EFS). Secrets go by reference: --secret NAME=ARN.
--execute registers and submits through the AWS CLI when credentials are ready."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The operations commands: doctor, skills, repro, matrix, slurm, container, cloud."""
    for add in (_add_doctor_skills_repro, _add_matrix_slurm, _add_container_cloud):
        add(sub)


def _add_doctor_skills_repro(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="machine readiness and credentials (never their values)",
        description="Report versions, cores, GPU, Slurm and Docker, and whether W&B, AWS and Hugging Face "
        "credentials are set, missing or placeholder-like. Secret values are never printed.",
    )
    p.add_argument(
        "--require",
        default="",
        metavar="LIST",
        help="comma-separated credentials that must be ready (wandb,aws,hf); exit 1 if not",
    )
    p.add_argument("--json", action="store_true", help="print the machine facts and credential states as JSON")

    p = sub.add_parser(
        "skills",
        help="copy ppolab's agent skills (/train, /eval, /experiment, /sweep, /ops) into a project",
        description="Write ppolab's Claude Code skills into DIR/.claude/skills/ (default: this folder), so "
        "an agent driving ppolab from your own research repository gets them. A file you changed since, or "
        "one ppolab did not write, is kept unless --force.",
    )
    p.add_argument("action", choices=["install"], help="install (or update) the skills")
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the project's root (default: .)")
    p.add_argument("--force", action="store_true", help="replace skill files even where they were changed")

    p = sub.add_parser(
        "repro",
        help="how to reproduce a run (--run: do it)",
        description="Print a run's exact command, git commit (with a warning and the saved diff "
        "if the tree was dirty), package versions, seed and device. --run re-executes it into a "
        "new run folder.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--run", action="store_true", help="train again with the same command, into a new folder")
    p.add_argument("--logdir", help="where the new run folder goes (default: the original --logdir)")
    p.add_argument("--json", action="store_true", help="print the command, commit, versions, seed and device as JSON")


def _add_matrix_slurm(sub: argparse._SubParsersAction) -> None:
    from ppolab.cli.launch import add_launch_flags

    p = sub.add_parser("matrix", help="envs x seeds benchmark commands", description=MATRIX_HELP, formatter_class=RAW)
    p.add_argument("--env-ids", nargs="+", required=True, metavar="ENV", help="envs to run")
    p.add_argument("--seeds", type=seeds_arg, default="3", metavar="SEEDS", help=f"{SEEDS_HELP} (default: 3)")
    # CleanRL's benchmark words, so its commands work as they are: --seeds START-(START+N-1)
    p.add_argument("--num-seeds", type=int, metavar="N", help=argparse.SUPPRESS)
    p.add_argument("--start-seed", type=int, metavar="N", help=argparse.SUPPRESS)
    p.add_argument("--env-flag", default="--env-id", help="another program's env flag (default: --env-id)")
    p.add_argument("--seed-flag", default="--seed", help="another program's seed flag (default: --seed)")
    p.add_argument(
        "--command",
        default="ppolab train",
        help="base train command, without --env and --seed (default: 'ppolab train')",
    )
    p.add_argument(
        "--format",
        choices=("list", "sweep", "slurm"),
        default="list",
        help="with --workers 0: commands (list), the sweep.yaml (sweep) or the sbatch script (slurm)",
    )
    p.add_argument("--json", action="store_true", help="with --workers 0: print the runs (seed, env, command) as JSON")
    p.add_argument("--name", help="sweep name under --root (default: matrix-ENV1-ENV2...)")
    p.add_argument("--write", action="store_true", help="write the sweep folder without running it")
    add_launch_flags(p, workers=0)
    _add_slurm_resources(p)

    p = sub.add_parser("slurm", help="run a sweep as a Slurm job array", description=SLURM_HELP)
    p.add_argument("sweep_dir", metavar="SWEEP_DIR")
    _add_slurm_resources(p)
    p.add_argument("--submit", action="store_true", help="submit with sbatch and record the job id in state.json")
    p.add_argument("--task", type=int, metavar="I", help=argparse.SUPPRESS)  # used by the generated script


def _add_container_cloud(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("container", help="docker build/run/push commands", description=CONTAINER_HELP)
    p.add_argument("--tag", help="image tag (default: ppolab:VERSION)")
    p.add_argument("--cuda", metavar="VARIANT", help="CUDA build of PyTorch, e.g. cu128 (default: CPU)")
    p.add_argument("--push", metavar="REGISTRY", help="also tag and push to this registry")
    p.add_argument("--execute", action="store_true", help="build, push, run now; default: print only")

    p = sub.add_parser("cloud", help="AWS Batch job definition and submissions", description=CLOUD_HELP)
    p.add_argument("sweep_dir", metavar="SWEEP_DIR")
    p.add_argument("--provider", choices=("aws-batch",), default="aws-batch", help="(default: aws-batch)")
    p.add_argument("--job-queue", default="ppolab-queue", help="Batch job queue (default: ppolab-queue)")
    p.add_argument("--image", help="container image (default: ppolab:VERSION; see ppolab container --push)")
    p.add_argument("--vcpus", type=int, default=4, metavar="N", help="vCPUs per job (default: 4)")
    p.add_argument("--memory", type=int, default=16384, metavar="MB", help="memory per job (default: 16384)")
    p.add_argument("--gpus", type=int, default=0, metavar="G", help="GPUs per job (default: 0)")
    p.add_argument("--retries", type=int, default=3, metavar="R", help="attempts per job, 1-10 (default: 3)")
    p.add_argument("--output-dir", default="/mnt/ppolab", help="shared volume for run folders (default: /mnt/ppolab)")
    p.add_argument(
        "--secret", action="append", default=[], metavar="NAME=ARN", help="a secret by reference; repeatable"
    )
    p.add_argument("--execute", action="store_true", help="register and submit now; default: print only")


def _add_slurm_resources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--partition", help="Slurm partition (default: the cluster's default)")
    p.add_argument("--time", default="24:00:00", help="time limit per task (default: 24:00:00)")
    p.add_argument("--cpus-per-task", type=int, default=2, metavar="N", help="(default: 2)")
    p.add_argument("--gpus-per-task", type=int, default=0, metavar="G", help="(default: 0)")
    p.add_argument("--mem", default="16G", help="memory per task (default: 16G)")
    p.add_argument("--max-concurrent", type=int, metavar="K", help="array tasks running at once (default: no limit)")


def _matrix_seeds(ns: argparse.Namespace) -> list[int]:
    """--seeds, or CleanRL's --num-seeds/--start-seed."""
    if ns.num_seeds is None and ns.start_seed is None:
        return ns.seeds
    start, count = 1 if ns.start_seed is None else ns.start_seed, 3 if ns.num_seeds is None else ns.num_seeds
    if count < 1 or start < 0:
        raise UserError("--num-seeds: at least 1, --start-seed: 0 or more (or give --seeds START-END)")
    return parse_seeds(f"{start}-{start + count - 1}")


def _resources(ns: argparse.Namespace):
    from ppolab.experiments.executors.slurm import Resources

    res = Resources(ns.partition, ns.time, ns.cpus_per_task, ns.gpus_per_task, ns.mem, ns.max_concurrent)
    res.check()
    return res


def run_doctor(ns: argparse.Namespace) -> int:
    from ppolab.ops.doctor import CREDENTIALS, report

    required = [r.strip() for r in ns.require.split(",") if r.strip()]
    unknown = [r for r in required if r not in CREDENTIALS]
    if unknown:
        raise UserError(f"--require: unknown credential '{unknown[0]}'; choose from {', '.join(CREDENTIALS)}")
    if ns.json:
        from ppolab.cli.args import print_json
        from ppolab.ops.doctor import report_data

        data = report_data(required)
        print_json("doctor", data)
        return 0 if data["ready"] else 1
    text, ready = report(required)
    print(text)
    return 0 if ready else 1


def run_repro(ns: argparse.Namespace) -> int:
    from ppolab.ops.repro import describe, rerun

    run_dir = Path(ns.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if ns.json:
        if ns.run:
            raise UserError("--json describes the run; drop it to --run")
        from ppolab.cli.args import print_json
        from ppolab.ops.repro import describe_data

        print_json("repro", describe_data(run_dir))
        return 0
    text, args = describe(run_dir)
    print(text)
    if not ns.run:
        return 0
    print("Reproducing into a new run folder...", flush=True)
    return rerun(args, ns.logdir)


def run_matrix(ns: argparse.Namespace) -> int:
    import yaml

    from ppolab.cli.args import train_defaults
    from ppolab.cli.launch import check_workers, launch
    from ppolab.envs import ENVS
    from ppolab.experiments.quick import write_sweep
    from ppolab.experiments.spec import check_folder_name
    from ppolab.ops.matrix import Matrix

    unknown = [e for e in ns.env_ids if e not in ENVS]
    if unknown and "train" in ns.command.split():
        raise UserError(f"--env-ids: unknown env '{unknown[0]}'; choose from {', '.join(ENVS)}")
    matrix = Matrix.from_command(ns.command, ns.env_ids, _matrix_seeds(ns), (ns.env_flag, ns.seed_flag))
    check_workers(ns)
    res = _resources(ns)
    name = ns.name or "matrix-" + "-".join(ns.env_ids)
    check_folder_name(name, "--name")  # a folder, and a name in the sweep file and the Slurm script, in every format
    if ns.json:
        if ns.workers or ns.write:
            raise UserError("--json lists the matrix; drop it to --write or run it")
        from ppolab.cli.args import print_json

        pairs = zip(matrix.cells(), matrix.commands())
        cells = [{"seed": seed, "env": env, "command": cmd} for (seed, env), cmd in pairs]
        print_json("matrix", {"env_ids": ns.env_ids, "seeds": sorted({c["seed"] for c in cells}), "runs": cells})
        return 0
    if ns.workers == 0 and not ns.write and ns.format == "list":
        print(matrix.listing())
        return 0
    if not matrix.trains:
        if ns.format != "list" or ns.write:
            raise UserError("--format and --write are for ppolab train commands; another program runs as it is")
        return run_commands(matrix, ns)
    defaults = train_defaults(matrix.flags, "--command")
    for fixed in ("logdir", "run_name"):
        if fixed in defaults:
            raise UserError(f"--command sets --{fixed.replace('_', '-')}; the sweep places its runs, drop it")
    doc = matrix.sweep_doc(name, defaults)
    if ns.workers == 0 and not ns.write:
        if ns.format == "sweep":
            print(yaml.safe_dump(doc, sort_keys=False), end="")
        else:
            from ppolab.experiments.executors.slurm import render_script

            sweep_dir = Path(ns.root) / name
            print(render_script(sweep_dir, name, list(range(len(matrix.cells()))), res), end="")
            print(f"# needs the sweep folder {sweep_dir}: write it with --write, then `ppolab slurm {sweep_dir}`")
        return 0
    sweep_dir = write_sweep(Path(ns.root), name, doc)
    print(f"Sweep file: {sweep_dir / 'sweep.yaml'} ({count(len(matrix.cells()), 'run')}, seed-major)")
    if ns.workers == 0:
        return 0
    return launch(sweep_dir, ns)


def run_commands(matrix, ns: argparse.Namespace) -> int:
    """Another program's matrix: each command in turn (the machine lock held), its output shown; 0 if all succeed."""
    import shlex
    import subprocess

    from ppolab.experiments.machine_lock import MachineLock

    if ns.workers > 1:
        raise UserError("--workers: another program's commands run one at a time here; use 1")
    cmds = [matrix.argv(seed, env) for seed, env in matrix.cells()]
    lock = MachineLock({"sweep": "matrix " + " ".join(matrix.base)})
    say = lambda who: print(f"Waiting for {who} to finish: one training job at a time on this machine.")  # noqa: E731
    if not lock.acquire(not ns.no_wait, on_wait=say):
        raise UserError(f"the machine is busy with {lock.holder()}; wait for it, or drop --no-wait to queue")
    failed = []
    try:
        for i, argv in enumerate(cmds, start=1):
            print(f"Run {i}/{len(cmds)}: {shlex.join(argv)}", flush=True)
            try:
                code = subprocess.run(argv, stdin=subprocess.DEVNULL).returncode
            except OSError as exc:
                raise UserError(f"--command: cannot run {argv[0]} ({exc.strerror})") from None
            print(f"Run {i}/{len(cmds)}: exit code {code}", flush=True)
            failed += [i] if code else []
    finally:
        lock.release()
    print(f"Matrix finished: {len(cmds) - len(failed)}/{len(cmds)} commands succeeded", flush=True)
    return 1 if failed else 0


def run_slurm(ns: argparse.Namespace) -> int:
    from ppolab.experiments.executors import slurm
    from ppolab.experiments.plan import load_plan
    from ppolab.experiments.spec import sweep_name

    sweep_dir = Path(ns.sweep_dir)
    if not (sweep_dir / "sweep.yaml").is_file():
        raise UserError(f"{sweep_dir}: not a sweep folder (no sweep.yaml)")
    if ns.task is not None:
        return slurm.run_task(sweep_dir, ns.task)
    res = _resources(ns)
    spec, planned = load_plan(sweep_dir)
    indices = slurm.runs_left(sweep_dir, planned)
    if not indices:
        print(f"All {len(planned)} runs of {sweep_dir} are done; nothing to submit.")
        return 0
    script = slurm.render_script(sweep_dir, sweep_name(sweep_dir), indices, res)
    if not ns.submit:
        print(script)
        print(f"# {count(len(indices), 'array task')}. To submit: ppolab slurm {sweep_dir} --submit")
        print(f"#   (writes {sweep_dir / slurm.SCRIPT_NAME}, then: sbatch {sweep_dir / slurm.SCRIPT_NAME})")
        return 0
    job_id = slurm.submit(sweep_dir, sweep_name(sweep_dir), planned, script, indices)
    print(f"Submitted Slurm job {job_id}: {count(len(indices), 'array task')}, one per run.")
    print(f"Follow it: ppolab sweep {sweep_dir} --status")
    return 0


def run_container(ns: argparse.Namespace) -> int:
    import shlex

    from ppolab.ops import container

    image = container.image_name(ns.tag, ns.cuda)
    cmds = container.commands(image, ns.cuda, ns.push, container.find_context())
    for cmd in cmds:
        print(shlex.join(cmd))
    if not ns.execute:
        print("# preview only: --execute builds" + (", pushes" if ns.push else "") + " and runs the image")
        return 0
    return container.execute(cmds)


def run_cloud(ns: argparse.Namespace) -> int:
    from ppolab import __version__
    from ppolab.experiments.plan import load_plan
    from ppolab.experiments.spec import sweep_name
    from ppolab.ops import cloud

    sweep_dir = Path(ns.sweep_dir)
    if not (sweep_dir / "sweep.yaml").is_file():
        raise UserError(f"{sweep_dir}: not a sweep folder (no sweep.yaml)")
    opt = cloud.BatchOptions(
        job_queue=ns.job_queue,
        image=ns.image or f"ppolab:{__version__}",
        vcpus=ns.vcpus,
        memory=ns.memory,
        gpus=ns.gpus,
        retries=ns.retries,
        output_dir=ns.output_dir.rstrip("/"),
        secrets=cloud.parse_secrets(ns.secret),
    )
    opt.check()
    spec, planned = load_plan(sweep_dir)
    print(cloud.preview(sweep_name(sweep_dir), planned, opt))
    if not ns.execute:
        return 0
    return cloud.execute(sweep_name(sweep_dir), planned, opt)


def run_skills(ns: argparse.Namespace) -> int:
    from ppolab.ops.skills import install

    for line in install(Path(ns.dir), force=ns.force):
        print(line)
    return 0


COMMANDS = {
    "skills": run_skills,
    "doctor": run_doctor,
    "repro": run_repro,
    "matrix": run_matrix,
    "slurm": run_slurm,
    "container": run_container,
    "cloud": run_cloud,
}
