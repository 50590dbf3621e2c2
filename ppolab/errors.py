"""The one exception type for mistakes a user can fix (bad flag, bad path, bad file)."""


class UserError(Exception):
    """Printed by the CLI as one line with exit code 2, never as a traceback."""


NO_SPACE_EXIT = 75  # EX_TEMPFAIL: nothing is lost; free space and launch again


class NoSpace(Exception):
    """The disk filled up: the job stopped cleanly where it was, and goes on after a relaunch."""

    def __init__(self, path: str | None, needed_mb: float | None = None) -> None:
        where = f" on the disk of {path}" if path else ""
        need = f", about {max(needed_mb, 1):.0f} MB needed" if needed_mb else ""
        super().__init__(f"no space left{where}{need}; free space and launch again (nothing is lost)")
