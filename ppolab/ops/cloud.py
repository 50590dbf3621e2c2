"""`ppolab cloud SWEEP_DIR --provider aws-batch`: an AWS Batch job definition and one job per run, as JSON.

Preview by default. `--execute` registers the definition and submits the jobs
through the AWS CLI, only when AWS credentials are ready. Secrets are passed by
reference: `--secret NAME=ARN` becomes a Secrets Manager or SSM reference that
Batch resolves inside the job; a literal value is refused.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppolab.errors import UserError
from ppolab.experiments.plan import PlannedRun, TrainCall
from ppolab.util import script_values

ARN = re.compile(r"^arn:aws[\w-]*:(secretsmanager|ssm):[\w-]+:\d{12}:(secret:|parameter/)\S+$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


@dataclass
class BatchOptions:
    job_queue: str = "ppolab-queue"
    image: str = "ppolab:0.1.0"
    vcpus: int = 4
    memory: int = 16384
    gpus: int = 0
    retries: int = 3
    output_dir: str = "/mnt/ppolab"
    secrets: dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        for name, value in (("--vcpus", self.vcpus), ("--memory", self.memory), ("--retries", self.retries)):
            if value < 1:
                raise UserError(f"{name}: must be at least 1")
        if self.retries > 10:
            raise UserError("--retries: AWS Batch allows 1 to 10 attempts")
        if self.gpus < 0:
            raise UserError("--gpus: must be 0 or more")
        script_values.check("--job-queue", self.job_queue, "aws_name")
        script_values.check("--image", self.image, "image")
        script_values.check("--output-dir", self.output_dir, "abs_path")


def parse_secrets(items: list[str]) -> dict[str, str]:
    """['WANDB_API_KEY=arn:aws:secretsmanager:...'] -> {name: arn}; anything but an ARN is refused unprinted."""
    secrets: dict[str, str] = {}
    for item in items:
        name, sep, ref = item.partition("=")
        if not sep or not ENV_NAME.match(name):
            raise UserError("--secret: write it as NAME=ARN (e.g. WANDB_API_KEY=arn:aws:secretsmanager:...)")
        if not ARN.match(ref):
            raise UserError(
                f"--secret {name}: give the ARN of a Secrets Manager secret or SSM parameter, never the value itself"
            )
        secrets[name] = ref
    return secrets


def _name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)[:128]


def job_definition(sweep_name: str, opt: BatchOptions) -> dict[str, Any]:
    resources = [{"type": "VCPU", "value": str(opt.vcpus)}, {"type": "MEMORY", "value": str(opt.memory)}]
    if opt.gpus:
        resources.append({"type": "GPU", "value": str(opt.gpus)})
    return {
        "jobDefinitionName": _name(f"ppolab-{sweep_name}"),
        "type": "container",
        "platformCapabilities": ["EC2"],
        "retryStrategy": {
            "attempts": opt.retries,
            # retry lost hosts (spot reclaim), not a run that failed on its own
            "evaluateOnExit": [
                {"onStatusReason": "Host EC2*", "action": "RETRY"},
                {"onReason": "*", "action": "EXIT"},
            ],
        },
        "containerProperties": {
            "image": opt.image,
            "resourceRequirements": resources,
            "environment": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
            "secrets": [{"name": n, "valueFrom": ref} for n, ref in opt.secrets.items()],
            "volumes": [{"name": "ppolab-data", "host": {"sourcePath": opt.output_dir}}],
            "mountPoints": [{"sourceVolume": "ppolab-data", "containerPath": opt.output_dir}],
        },
    }


def submissions(sweep_name: str, planned: list[PlannedRun], opt: BatchOptions) -> list[dict[str, Any]]:
    """One job per run; a retried job resumes from its checkpoint in the shared output folder."""
    jobs = []
    for p in planned:
        run_dir = f"{opt.output_dir}/{sweep_name}/runs/{p.name}"
        fresh = TrainCall.fresh(p.config, f"{opt.output_dir}/{sweep_name}/runs", p.name)
        script = (
            f"if [ -f {shlex.quote(run_dir)}/last.pt ]; then exec ppolab train --resume {shlex.quote(run_dir)}; "
            f"else exec {shlex.join(fresh.argv)}; fi"
        )
        jobs.append(
            {
                "jobName": _name(f"{sweep_name}-{p.name}"),
                "jobQueue": opt.job_queue,
                "jobDefinition": _name(f"ppolab-{sweep_name}"),
                "containerOverrides": {"command": ["sh", "-c", script]},
                "tags": {"ppolab-sweep": sweep_name, "ppolab-run": p.name},
            }
        )
    return jobs


def preview(sweep_name: str, planned: list[PlannedRun], opt: BatchOptions) -> str:
    doc = {"jobDefinition": job_definition(sweep_name, opt), "jobs": submissions(sweep_name, planned, opt)}
    return json.dumps(doc, indent=2)


def execute(sweep_name: str, planned: list[PlannedRun], opt: BatchOptions) -> int:
    from ppolab.util.credentials import aws

    cred = aws()
    if not cred.ready:
        raise UserError(f"--execute: AWS credentials are {cred.state} ({cred.source}); see ppolab doctor")
    if not shutil.which("aws"):
        raise UserError("--execute: the AWS CLI (aws) is not installed; install it or submit the printed JSON")
    with tempfile.TemporaryDirectory() as tmp:
        calls = [("register-job-definition", job_definition(sweep_name, opt))]
        calls += [("submit-job", job) for job in submissions(sweep_name, planned, opt)]
        for i, (verb, body) in enumerate(calls):
            path = Path(tmp) / f"{i}.json"
            path.write_text(json.dumps(body))
            print(f"$ aws batch {verb} --cli-input-json file://{path.name}", flush=True)
            code = subprocess.run(["aws", "batch", verb, "--cli-input-json", f"file://{path}"]).returncode
            if code != 0:
                return code
    return 0
