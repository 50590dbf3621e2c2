"""ppolab: fast PPO for MuJoCo robot tasks, and the tools to run and compare many training runs."""

__version__ = "0.1.0"
