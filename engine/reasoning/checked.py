"""The KB and rules the service runs on: read once, checked in full or restored from the cache.

Each folder is read into memory once (`Tree`), and the cache key, the `kb_version` and every parsed
entity come from those same bytes, so a file edited while this runs is either wholly in what is
served or wholly out of it, and never cached under another file's key.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path
from types import MappingProxyType

from engine.knowledge import cache
from engine.knowledge.cache import CheckedKB
from engine.knowledge.kb import content_version
from engine.knowledge.lint import load_checked_kb
from engine.knowledge.problems import KBInvalid, Problem
from engine.knowledge.snapshot import Tree
from engine.reasoning.rules import read_rules


def read_checked(
    kb_root: Path, rules_root: Path, data_root: Path | None, today: date, folder: Path | None = None
) -> CheckedKB:
    """The KB and rules at these roots when every lint check passes, else `KBInvalid` listing the
    problems of both. A clean result is stored in the cache (`folder`, else the user's cache)."""
    kb_tree, rules_tree = Tree.read(kb_root), Tree.read(rules_root)
    data_tree = Tree.read(data_root) if data_root is not None else None
    key = cache.fingerprint([kb_tree, rules_tree, data_tree], today)
    cached = cache.load(key, kb_root, folder)
    if cached is not None:  # these exact bytes passed every check today, under this code
        return cached
    ruleset = read_rules(rules_tree)
    try:
        kb = load_checked_kb(kb_tree, data_tree, today)
    except KBInvalid as invalid:
        raise KBInvalid(invalid.problems + list(ruleset.problems)) from None
    if ruleset.problems:
        raise KBInvalid(list(ruleset.problems))
    checked = CheckedKB(
        kb, ruleset.rules, key, content_version([kb_tree, rules_tree]), rule_categories(rules_tree)
    )
    cache.store(checked, folder)
    return checked


def disk_key(kb_root: Path, rules_root: Path, data_root: Path | None, today: date) -> str:
    """The cache key of the KB and rules on disk now: equal to a served advisor's `key` exactly when
    reloading would serve the same thing."""
    trees = [Tree.read(kb_root), Tree.read(rules_root), Tree.read(data_root) if data_root else None]
    return cache.fingerprint(trees, today)


def rule_categories(rules: Tree) -> MappingProxyType[str, str]:
    """rule id → its category: the folder its file is in (rules/<category>/<id>.yaml)."""
    categories = {
        path.stem: category.name
        for category in rules.iterdir(rules.root)
        for path in rules.iterdir(category)
        if path.suffix == ".yaml"
    }
    return MappingProxyType(categories)


CHECK_TIMEOUT_S = 300


def read_checked_apart(
    kb_root: Path, rules_root: Path, data_root: Path | None, today: date, folder: Path
) -> CheckedKB:
    """`read_checked` in a child process, which stores the result in `folder`; then read back from
    there. The check is about a second of CPU-bound Python: in a thread of a serving process it
    would hold the GIL against the requests (their p99 rose 2.4x during a reload), while a child
    process runs beside them. Raises `KBInvalid` with the problems, or `CheckFailed`."""
    roots = [str(kb_root), str(rules_root), str(data_root or "")]
    command = [sys.executable, "-m", __name__, *roots, today.isoformat()]
    try:
        child = subprocess.run(
            command,
            env={**os.environ, cache.CACHE_ENV: str(folder)},
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
        answer = json.loads(child.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise CheckFailed(f"the check did not complete: {exc}") from exc
    if "problems" in answer:
        raise KBInvalid([Problem(**problem) for problem in answer["problems"]])
    restored = cache.load(str(answer.get("key")), kb_root, folder)
    if restored is None:
        raise CheckFailed("the checked KB could not be read back from " + folder.name)
    return restored


class CheckFailed(Exception):
    """The check itself failed (not the KB): the child process died, or its result was unreadable."""


def _main(argv: list[str]) -> int:
    """The child of `read_checked_apart`: prints {"key": …} or {"problems": […]} as JSON."""
    if hasattr(os, "nice"):
        os.nice(19)  # a background check: the serving processes come first for the CPU
    kb_root, rules_root, data_root, today = argv
    try:
        checked = read_checked(
            Path(kb_root), Path(rules_root), Path(data_root) if data_root else None, date.fromisoformat(today)
        )
    except KBInvalid as invalid:
        print(json.dumps({"problems": [dataclasses.asdict(problem) for problem in invalid.problems]}))
        return 1
    print(json.dumps({"key": checked.key, "kb_version": checked.version}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
