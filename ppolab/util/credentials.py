"""Which credentials are set, without ever showing one.

Credentials are `set`, `missing` or `placeholder` (empty, `changeme`, `xxx...`,
`<...>`, `your...`, or too short to be real). Their values are read only to
classify them; they are never printed, logged or stored.
"""

from __future__ import annotations

import configparser
import netrc
import os
import re
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDER = re.compile(r"^(|changeme|change[-_]?me|x+|<.*>|your[-_a-z]*|placeholder|none|null|todo|dummy)$", re.I)
MIN_LENGTH = {"wandb": 40, "aws": 16, "hf": 20}
CREDENTIALS = ("wandb", "aws", "hf")


@dataclass
class Credential:
    name: str
    state: str  # set, missing, placeholder
    source: str  # where it was found (a variable or file name, never the value)

    @property
    def ready(self) -> bool:
        return self.state == "set"


def classify(value: str | None, kind: str) -> str:
    if value is None:
        return "missing"
    v = value.strip()
    if PLACEHOLDER.match(v) or len(v) < MIN_LENGTH[kind]:
        return "placeholder"
    return "set"


def _home() -> Path:
    return Path(os.environ.get("HOME", str(Path.home())))


def wandb() -> Credential:
    if "WANDB_API_KEY" in os.environ:
        return Credential("wandb", classify(os.environ["WANDB_API_KEY"], "wandb"), "WANDB_API_KEY")
    path = Path(os.environ.get("NETRC", _home() / ".netrc"))
    try:
        auth = netrc.netrc(str(path)).authenticators("api.wandb.ai")
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        auth = None
    if auth:
        return Credential("wandb", classify(auth[2], "wandb"), f"{path} (api.wandb.ai)")
    return Credential("wandb", "missing", "WANDB_API_KEY or ~/.netrc api.wandb.ai")


def aws() -> Credential:
    if "AWS_ACCESS_KEY_ID" in os.environ or "AWS_SECRET_ACCESS_KEY" in os.environ:
        states = {classify(os.environ.get(k), "aws") for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        state = "set" if states == {"set"} else ("missing" if "missing" in states else "placeholder")
        return Credential("aws", state, "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
    path = Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", _home() / ".aws" / "credentials"))
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return Credential("aws", "placeholder", f"{path} (unreadable)")
    profile = os.environ.get("AWS_PROFILE", "default")
    if parser.has_section(profile):
        keys = [parser.get(profile, k, fallback=None) for k in ("aws_access_key_id", "aws_secret_access_key")]
        states = {classify(k, "aws") for k in keys}
        state = "set" if states == {"set"} else ("missing" if "missing" in states else "placeholder")
        return Credential("aws", state, f"{path} [{profile}]")
    config = Path(os.environ.get("AWS_CONFIG_FILE", _home() / ".aws" / "config"))
    if config.exists() and any(s.startswith("profile ") or s == "default" for s in _sections(config)):
        return Credential("aws", "set", f"{config} (profiles; role or SSO credentials are resolved by AWS)")
    return Credential("aws", "missing", "AWS_* variables or ~/.aws/credentials")


def _sections(path: Path) -> list[str]:
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return []
    return parser.sections()


def hf() -> Credential:
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if var in os.environ:
            return Credential("hf", classify(os.environ[var], "hf"), var)
    hf_home = Path(os.environ.get("HF_HOME", _home() / ".cache" / "huggingface"))
    token = hf_home / "token"
    if token.exists():
        return Credential("hf", classify(token.read_text(), "hf"), str(token))
    return Credential("hf", "missing", "HF_TOKEN or ~/.cache/huggingface/token")


CHECKS = {"wandb": wandb, "aws": aws, "hf": hf}
