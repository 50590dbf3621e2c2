"""The runner: a training run from its settings to its run folder (the trainer loop, its settings and
presets, the samplers that step the envs, the console, metrics and tracking, the checks as training goes)."""
