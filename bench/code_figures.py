"""The size figures issue 21 asks for: lines, the longest functions, duplicate pairs, README length.

    .venv/bin/python bench/code_figures.py [--rev REV]

Counts the git-tracked ``.py`` files of ``infra/``, ``provider/`` and ``policy/`` at
``REV`` (default: the working tree), every function's length from ``ast``, and the
pairs the ``duplicates`` tool (when on PATH) reports in each of the three folders.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("infra", "provider", "policy")
LIMIT = 60


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _sources(rev: str | None) -> dict[str, str]:
    """The ``.py`` and executable files git tracks in FOLDERS (issue 34 counts both), as text."""
    listed = _git("ls-tree", "-r", rev, "--", *FOLDERS) if rev else _git("ls-files", "-s", "--", *FOLDERS)
    entries = [(line.split(" ", 1)[0], line.split("\t", 1)[1]) for line in listed.splitlines()]
    paths = [path for mode, path in entries if path.endswith(".py") or mode == "100755"]
    if rev is None:
        return {path: (ROOT / path).read_text() for path in paths if (ROOT / path).exists()}
    return {path: _git("show", f"{rev}:{path}") for path in paths}


def _functions(sources: dict[str, str]) -> list[tuple[int, str]]:
    found = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text) if path.endswith(".py") else ast.Module()):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}"))
    return sorted(found, reverse=True)


def _duplicate_pairs() -> dict[str, int]:
    if shutil.which("duplicates") is None:
        return {}
    pairs = {}
    for folder in FOLDERS:
        out = subprocess.run(
            ["duplicates", "--repo", folder], cwd=ROOT, capture_output=True, text=True
        ).stdout
        match = re.search(r"^(\d+) pairs?", out, re.MULTILINE)
        pairs[folder] = int(match.group(1)) if match else 0
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision instead of the working tree")
    args = parser.parse_args()
    sources = _sources(args.rev)
    functions = _functions(sources)
    readme = _git("show", f"{args.rev}:README.md") if args.rev else (ROOT / "README.md").read_text()
    print(
        f"lines of {'+'.join(FOLDERS)} (.py and executables): {sum(len(t.splitlines()) for t in sources.values())}"
    )
    print(f"functions over {LIMIT} lines: {sum(1 for n, _ in functions if n > LIMIT)}")
    for length, where in functions[:3]:
        print(f"  {length:4d}  {where}")
    print(f"README.md lines: {len(readme.splitlines())}")
    if args.rev is None:
        print(f"duplicates pairs: {_duplicate_pairs() or 'duplicates not on PATH'}")


if __name__ == "__main__":
    main()
