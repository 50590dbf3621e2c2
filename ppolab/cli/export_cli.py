"""`ppolab export`: a trained policy as ONNX or TorchScript for a robot's controller, with its contract."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = """Write a trained policy for a robot's controller: --onnx FILE.onnx (onnxruntime, any language)
and/or --torchscript FILE.pt (libtorch, C++). The file maps raw observations to the deterministic
action (the observation normaliser is folded in). Beside each file, FILE.json is the contract: every
observation entry (name, slice, units, source), the joint order, what an action means (offsets from
the nominal pose, scaled and smoothed, held by PD servos of the gains given), the control and physics
rates, and the versions. Check it outside ppolab: python examples/deploy_mujoco.py FILE.onnx"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="a policy as ONNX or TorchScript, with its observation contract",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("path", metavar="PATH", help="a run folder, an actor .pt, or pretrained/ENV")
    p.add_argument("--onnx", metavar="FILE", help="write the policy as ONNX to FILE.onnx")
    p.add_argument("--torchscript", metavar="FILE", help="write the policy as TorchScript to FILE.pt")


def run_export(ns: argparse.Namespace) -> int:
    from ppolab.util.files import check_output_file

    for flag, name, suffix in (("--onnx", ns.onnx, ".onnx"), ("--torchscript", ns.torchscript, ".pt")):
        if name:  # before torch is loaded: a mistake costs a moment (export checks them again, for its callers)
            check_output_file(flag, name, suffix)
    from ppolab.evaluation.export import export
    from ppolab.ppo import checkpoint as ckpt

    print(ckpt.describe(ckpt.find_actor(Path(ns.path))), flush=True)  # which file and iteration is exported
    for path in export(Path(ns.path), onnx=ns.onnx, torchscript=ns.torchscript):
        print(f"Wrote {path}")
    return 0
