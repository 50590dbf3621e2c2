#!/usr/bin/env bash
# Set up ppolab on a fresh machine: system libraries for headless rendering, a virtualenv in .venv,
# PyTorch (CPU build where the machine has one on disk), and ppolab with its test tools.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Headless OpenGL (EGL) for `ppolab eval --video`, and a virtual display (Xvfb) for `xvfb-run -a ppolab play`
# without a screen; needs root and apt, skipped otherwise.
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  if ! ldconfig -p | grep -q 'libEGL.so.1' || ! ldconfig -p | grep -q 'libEGL_mesa.so.0' \
      || ! command -v xvfb-run >/dev/null 2>&1; then
    echo "== installing Debian packages for headless rendering (EGL, Mesa, Xvfb)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libegl1 libegl-mesa0 libgl1-mesa-dri xvfb xauth >/dev/null
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)

# Pin torch first: an unpinned torch would pull a multi-GB CUDA build. 2.13.0 is in pyproject's range.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "== installing torch ${TORCH_VERSION:-2.13.0}"
  "${PIP[@]}" "torch==${TORCH_VERSION:-2.13.0}"
fi
echo "== installing ppolab and its dependencies"
"${PIP[@]}" -e ".[dev]"
.venv/bin/ppolab --version
