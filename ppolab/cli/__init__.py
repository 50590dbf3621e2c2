"""Command line: argument parsing and one call per command."""
