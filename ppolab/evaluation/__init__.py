"""A trained policy at work: the behaviour checks, playback (`ppolab eval`), videos, and export for a robot."""
