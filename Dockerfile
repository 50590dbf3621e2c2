# ppolab in a container: `docker build -t ppolab .` (CPU), or for NVIDIA GPUs
# `docker build --build-arg TORCH_VARIANT=cu128 -t ppolab:cu128 .` and `docker run --gpus all ...`.
# `ppolab container` prints these commands with the right tags and mounts.
FROM python:3.11-slim

# cpu, or a CUDA variant of PyTorch's wheel index (cu126, cu128, ...) that the host's driver supports
ARG TORCH_VARIANT=cpu
ARG TORCH_VERSION=2.13.0

# EGL through Mesa: headless rendering for `ppolab eval --video`
RUN apt-get update \
    && apt-get install -y --no-install-recommends git libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri \
    && rm -rf /var/lib/apt/lists/*
ENV MUJOCO_GL=egl PYTHONUNBUFFERED=1

WORKDIR /opt/ppolab
RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}"
COPY pyproject.toml README.md run_experiment.py ./
COPY ppolab ./ppolab
RUN pip install --no-cache-dir .

# experiments (sweeps, runs, reports) live in the mounted working directory
WORKDIR /work
ENTRYPOINT ["ppolab"]
CMD ["--help"]
