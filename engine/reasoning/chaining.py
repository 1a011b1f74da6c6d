"""The durable-rules adapter: the only module that imports durable.

It runs the rules compiled by engine/reasoning/compile.py with the runtime workarounds of
docs/durable-rules.md §3: the agenda driven through the C core's own calls, without the Python
binding's per-action work (§6), durable's background threads off (§5), a
bounded pool of session ids with pairwise-distinct 32-bit FNV-1a hashes (bugs 5, 6), input facts
asserted at C level before `__ready__` runs the agenda (bug 8), exceptions caught in the action
wrapper and raised to the caller (bug 10), facts written in numbers the core reads (bug 12), and
`delete_state` always (§4). Results have the reference engine's shape.
"""

from __future__ import annotations

import copy
import itertools
import json
import queue
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import durable_rules_engine  # durable's C core
from durable import engine as durable_engine

from engine.models.rule import Rule, Scalar
from engine.reasoning.compile import BEGIN, READY, SINK, as_fact, compile_rules
from engine.reasoning.conditions import Facts
from engine.reasoning.refengine import Firing, Outcome, ReferenceEngine, fire, reads_of

RULESET = "rules"
POOL_SIZE = 8
_BARE_EXPONENT = re.compile(r'("value": )(-?\d+)(e[-+]?\d+)')
"""a fact's number written with an exponent and no decimal point: Python's form of 1e-05 and 1e+20"""


def durable_json(facts: object) -> str:
    """Facts as JSON durable's C core reads: `json.dumps`, with a number that has an exponent but no
    decimal point ("1e-05", how Python writes 0.00001) given one ("1.0e-05"). The core misreads the
    first form, and the fact then matches no pattern, not even `exists`: a deadline of 1e-05 hours
    went unenforced (docs/durable-rules.md §3, bug 12). A fact's numbers are only in its `value`."""
    return _BARE_EXPONENT.sub(r"\g<1>\g<2>.0\g<3>", json.dumps(facts, ensure_ascii=False))


def fnv1a_32(text: str) -> int:
    """durable's session hash (32-bit FNV-1a): two sids with one hash would share a session."""
    value = 0x811C9DC5
    for byte in text.encode():
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def distinct_hash_sids(count: int) -> list[str]:
    sids: list[str] = []
    hashes: set[int] = set()
    for n in itertools.count():
        sid = f"s{n}"
        if fnv1a_32(sid) not in hashes:
            hashes.add(fnv1a_32(sid))
            sids.append(sid)
        if len(sids) == count:
            return sids
    raise AssertionError("unreachable")


class _QuietHost(durable_engine.Host):  # type: ignore[misc]
    """Actions by name; none of durable's dispatcher/timer threads (they segfault under load)."""

    def __init__(self, actions: dict[str, Callable[[Any], None]]) -> None:
        self._actions = actions
        super().__init__()

    def get_action(self, name: str) -> Callable[[Any], None]:
        return self._actions[name]

    def _run(self) -> None:
        pass


@dataclass
class _Request:
    known: dict[str, Scalar]
    fired: set[str] = field(default_factory=set)
    firings: list[Firing] = field(default_factory=list)
    error: Exception | None = None


class DurableEngine:
    """Forward chaining on durable-rules with the reference engine's semantics and results."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        ruleset, owners = compile_rules(rules)
        actions: dict[str, Callable[[Any], None]] = {BEGIN: _noop, SINK: _noop}
        actions.update({name: self._action(rule) for name, rule in owners.items()})
        # The host only creates the ruleset (and checks its definition); the agenda is driven through
        # the C core's calls by `_drain`, where each compiled rule's `run` names its action.
        self._actions = actions
        self._host = _QuietHost(actions)
        self._host.register_rulesets({RULESET: copy.deepcopy(ruleset)})
        self._ruleset = self._host.get_ruleset(RULESET)
        self._handle: int = self._ruleset._handle
        self._requests: dict[str, _Request] = {}
        # Only facts some rule reads are asserted: the others cannot match a pattern (all facts stay
        # readable by actions through `known`).
        self._read = frozenset(name for rule in rules for name in reads_of(rule))
        self._sids: queue.Queue[str] = queue.Queue()
        for sid in distinct_hash_sids(POOL_SIZE):
            self._sids.put(sid)
        self._lock = threading.Lock()  # the C core never releases the GIL: a lock costs nothing
        self._rules = tuple(rules)
        self._closed: ReferenceEngine | None = None

    def live_sessions(self) -> int:
        return len(self._requests)

    def close(self) -> None:
        """Free the ruleset in durable's C core: `Ruleset` objects never free their handle, so each
        replaced engine would keep about 0.8 MB (docs/durable-rules.md §4). Taken under the
        lock, so no request is inside the core meanwhile; a request that reaches this engine later
        is answered by the reference engine, whose outcomes are identical (tests/test_chaining.py)."""
        with self._lock:
            if self._closed is not None:
                return
            self._closed = ReferenceEngine(self._rules)
            durable_rules_engine.delete_ruleset(self._ruleset._handle)
            del self._ruleset, self._host, self._actions  # the actions refer back to this engine: a cycle

    def run(self, facts: Facts) -> Outcome:
        with self._lock:
            if self._closed is not None:
                return self._closed.run(facts)
            sid = self._sids.get()
            request = self._requests[sid] = _Request(known=dict(facts))
            try:
                self._drain(sid, self._assert({"type": BEGIN, "sid": sid}))
                batch = [
                    {**as_fact(name, value), "sid": sid}
                    for name, value in facts.items()
                    if name in self._read
                ]
                if batch:  # at C level, no action run (§3, bug 8)
                    self._checked(durable_rules_engine.assert_facts(self._handle, durable_json(batch)), batch)
                self._drain(sid, self._assert({"type": READY, "sid": sid}))
                if request.error is not None:
                    raise request.error
                return Outcome(MappingProxyType(dict(request.known)), tuple(request.firings))
            finally:
                try:
                    durable_rules_engine.delete_state(self._handle, sid)
                finally:
                    del self._requests[sid]
                    self._sids.put(sid)

    def _assert(self, fact: dict[str, Any]) -> int:
        """Assert one fact at C level; the offset of its session's state, whose agenda `_drain` runs.
        A fact no rule takes, or one already held, raises as durable's own `assert_fact` would (§2.2)."""
        return self._checked(durable_rules_engine.assert_fact(self._handle, durable_json(fact)), fact)

    @staticmethod
    def _checked(result: tuple[int, Any], facts: object) -> int:
        """The state offset of an assertion's result, or durable's own exception for its code."""
        code, state = result
        if code == 1:
            raise durable_engine.MessageNotHandledException(facts)
        if code == 2:
            raise durable_engine.MessageObservedException(facts)
        return 0 if code == 3 else int(state)

    def _drain(self, sid: str, state: int) -> None:
        """Run the session's agenda to its end: durable's `Ruleset.do_actions` less its per-action
        work (a `Closure`, two clock reads, the state's `json.dumps` and `update_state`): the
        actions never change the session's state and no rule reads it, so it is not written back.
        The C core picks the next action after each one, so an action's derived facts take part."""
        started = durable_rules_engine.start_action_for_state(self._handle, state)
        if not started:
            return
        message = started[1]
        while message:
            name = next(iter(json.loads(message)))  # {rule name: the facts it matched}, as durable reads it
            self._actions[name](sid)
            message = durable_rules_engine.complete_and_start_action(self._handle, state)

    def _action(self, rule: Rule) -> Callable[[Any], None]:
        reads = reads_of(rule)

        def act(sid: str) -> None:
            request = self._requests[sid]
            if request.error is not None or rule.id in request.fired:
                return  # one firing per rule, whichever conjunction matched
            try:
                request.fired.add(rule.id)
                firing = fire(rule, request.known, len(request.firings) + 1, reads)
                for name, value in firing.derived.items():
                    self._assert({**as_fact(name, value), "sid": sid})  # `_drain` takes it
                request.firings.append(firing)
            except Exception as exc:  # durable would swallow it (docs/durable-rules.md §2.4)
                request.error = exc

        return act


def _noop(_: Any) -> None:
    pass
