"""`python -m ppolab` is the same as the `ppolab` command."""

from ppolab.cli.main import entry

entry()
