"""The one reader for every YAML file ppolab takes (sweeps, search spaces, env overrides, thresholds).

What a user's file can do to a reader, and what this one does instead:
- bytes that are not UTF-8 text (a binary, UTF-16): one line saying so and where;
- a key given twice (YAML keeps the last silently): refused, naming both lines;
- an alias bomb ("billion laughs": aliases of aliases that expand exponentially): refused
  once the expanded document would exceed MAX_NODES, before anything walks it;
- nesting deep enough to exhaust the parser's recursion: refused past MAX_DEPTH.
Every failure is `FILE:LINE: what is wrong` as a ValueError subclass the caller turns into
its own one-line error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1_000_000
MAX_DEPTH = 50
MAX_NODES = 100_000  # nodes of the document with every alias expanded


class YamlFileError(ValueError):
    """A file ppolab cannot take, with its name and line in the message."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when present: ~10x faster
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (lines {seen[key]} and {line}); keep one",
                        key_node.start_mark,
                    )
            except TypeError:  # an unhashable key (a list as a key): YAML's own error follows
                pass
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _check_size(root: yaml.Node, path: Path) -> None:
    """Expanded size and depth of the node graph, each shared (aliased) node counted once per use."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise YamlFileError(f"{path}:{node.start_mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
        key = id(node)
        if key in sizes:
            return sizes[key]
        total = 1
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_NODES:
                raise YamlFileError(
                    f"{path}:{node.start_mark.line + 1}: the document expands to more than {MAX_NODES:,} values "
                    "(aliases of aliases?); write it out plainly"
                )
        sizes[key] = total
        return total

    size(root, 0)


def read_text(path: Path) -> str:
    """The file as UTF-8 text, or a YamlFileError saying why not."""
    data = path.read_bytes()
    if len(data) > MAX_BYTES:
        raise YamlFileError(f"{path}: {len(data):,} bytes; a settings file is at most {MAX_BYTES:,}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise YamlFileError(f"{path}: UTF-16 text, not UTF-8 text; save the file as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise YamlFileError(f"{path}: binary data (a NUL byte at offset {nul}), not a YAML text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlFileError(f"{path}:{line}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None


def _failure(path: Path, exc: Exception, what: str = "") -> YamlFileError:
    if isinstance(exc, RecursionError):
        return YamlFileError(f"{path}: nested too deeply to read; at most {MAX_DEPTH} levels")
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark else 1
    return YamlFileError(f"{path}:{line}: {what}{getattr(exc, 'problem', None) or exc}")


def compose(path: Path, text: str) -> yaml.Node | None:
    """The checked node graph of a YAML document (None for an empty one)."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except (yaml.YAMLError, RecursionError) as exc:
        raise _failure(path, exc, "YAML syntax error: ") from None
    if root is not None:
        _check_size(root, path)
    return root


def load(path: Path, text: str | None = None) -> tuple[Any, yaml.Node | None]:
    """The data of a YAML file and its checked node graph (for line numbers)."""
    text = read_text(path) if text is None else text
    root = compose(path, text)
    if root is None:
        return None, None
    loader = _Loader("")  # only its constructor is used, on the checked graph
    try:
        return loader.construct_document(root), root
    except (yaml.YAMLError, RecursionError) as exc:
        raise _failure(path, exc) from None


def line_index(root: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """1-based line of every key path; an aliased node is walked once (no exponential walk)."""
    lines: dict[tuple[str, ...], int] = {}
    seen: set[int] = set()

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                p = (*path, str(key.value))
                lines.setdefault(p, key.start_mark.line + 1)
                walk(value, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines.setdefault((*path, str(i)), item.start_mark.line + 1)
                walk(item, (*path, str(i)))

    if root is not None:
        walk(root, ())
    return lines
