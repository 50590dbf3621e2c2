"""The one exception type for mistakes a user can fix (bad flag, bad path, bad file)."""


class UserError(Exception):
    """Printed by the CLI as one line with exit code 2, never as a traceback."""
