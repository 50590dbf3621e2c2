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


def one_line(message: object) -> str:
    """The message with every control character written as its escape (a newline in a folder name, a
    terminal escape in a file): an error is one line on the terminal, and nothing in it acts on the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
