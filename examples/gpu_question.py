"""A short free-text question as a `POST /recommend` request body, read in the CLI's flag vocabulary
(cli/request_input.py FLAGS): the same field names and the same values, so that what a chat user
types and what `gpu-advisor recommend --help` lists cannot drift apart. Imports without slack_bolt,
so examples/slack_bot.py's parsing is tested on its own (tests/test_bot_parser.py).

    serve llama 3.1 70b on 2 h100, budget 20k, rent
    → {"workload": {"task": "inference", "model": "llama 3.1 70b"},
       "constraints": {"target_hardware": {"gpu": "nvidia-h100-nvl", "count": 2},
                       "budget_usd": 20000, "acquisition": "rent"}}

What it reads, clause by clause (clauses end at `;` or at a comma followed by a space):

- a flag's name, as words or as the flag itself, then its value: `budget 20k`, `--budget-usd 20000`,
  `top k 3`, `max gpus 8`, `seq len 8192`, `horizon 24` (a leading word is enough when no other
  flag starts with it); numbers may carry `$`, thousands commas and `k` or `m`;
- any value a flag's field allows, alone: `rent`, `buy`, `windows`, `cheapest`, `fp8`, `qlora`;
- the task as people say it: `serve`, `train`, `fine-tune`, and the switches `on-prem`,
  `interruptible` (or `spot`), `no quantization`;
- `on [N] GPU` (or `N x GPU`): will it run on that hardware (`--target GPU:N`), the GPU found
  among the service's ids and names (`GET /gpus`), ties broken by id with a note;
- what is left is the model's name (`llama 3.1 70b`: the service reads names case and separators
  aside), or, when only a size is left (`a 70b model`), `--params-b`.

Nothing is validated here: the service answers a 422 naming the field, which the bot posts back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cli.request_input import FLAGS, Flag, apply_flags

TASK_WORDS = {
    "serve": "inference",
    "serving": "inference",
    "infer": "inference",
    "train": "pretrain",
    "training": "pretrain",
    "finetune": "full_finetune",
    "fine tune": "full_finetune",
    "full finetune": "full_finetune",
    "full fine tune": "full_finetune",
}
SWITCHES = {
    "on prem": "on_prem_only",
    "onprem": "on_prem_only",
    "spot": "interruptible",
    "no quantization": "no_quantization",
}
WORDS_FOR_VALUES = {"renting": "rent", "rented": "rent", "buying": "buy", "bought": "buy", "mac": "macos"}
FILLER = frozenset(
    {"a", "an", "the", "model", "for", "me", "i", "we", "want", "to", "please", "with", "of", "my", "our"}
    | {"how", "what", "which", "should", "do", "can", "run", "it", "on", "in", "using"}
)
SIZE = re.compile(r"^\d+(\.\d+)?b$")
NUMBER = re.compile(r"^\$?(\d[\d,]*(?:\.\d+)?)([km]?)$")
CLAUSE = re.compile(r";|,(?=\s)")


class QuestionError(ValueError):
    """The question cannot be read as a request; the message says what to write instead."""


@dataclass
class Question:
    """A request body read from a question, and notes on how it was read (posted beside the answer)."""

    request: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def parse_question(text: str, gpus: Mapping[str, str] | None = None) -> Question:
    """`text` as a `POST /recommend` body. `gpus` maps the service's GPU ids to their names
    (`GET /gpus`); without it a GPU is taken as written, words joined by dashes."""
    reader = _Reader(gpus or {})
    for clause in CLAUSE.split(text):
        reader.read(_words(clause))
    return reader.question()


def _words(clause: str) -> list[str]:
    """Lower-case words, split at spaces and dashes (so `--budget-usd` reads as `budget usd`)."""
    cleaned = clause.lower().replace("_", " ").replace("-", " ").replace("?", " ").replace("!", " ")
    return [word.strip(".:'\"") for word in cleaned.split() if word.strip(".:'\"")]


def _name_words(flag: Flag) -> list[str]:
    return flag.name.lstrip("-").split("-")


def _dest(flag: Flag) -> str:
    return flag.name.lstrip("-").replace("-", "_")


VALUE_KINDS = frozenset({"float", "int", "str", "list", "hardware", "hardware-list"})
NAMED = [flag for flag in FLAGS if flag.kind in VALUE_KINDS and flag.path[-1] != "model"]
"""flags read as `name value`; the model is what is left over, and a file cannot come from chat"""


class _Reader:
    def __init__(self, gpus: Mapping[str, str]) -> None:
        self.gpus = gpus
        self.values: dict[str, Any] = {}
        self.leftover: list[str] = []
        self.notes: list[str] = []

    def read(self, words: list[str]) -> None:
        i = 0
        while i < len(words):
            step = (
                self._flag(words, i)
                or self._phrase(words, i)
                or self._value(words, i)
                or self._hardware(words, i)
            )
            if step:
                i += step
            else:
                self.leftover.append(words[i])
                i += 1

    def question(self) -> Question:
        left = [word for word in self.leftover if word not in FILLER]
        if left and "model" not in self.values:
            if len(left) == 1 and SIZE.match(left[0]):
                self.values.setdefault("params_b", float(left[0][:-1]))
            else:
                self.values["model"] = " ".join(left)
        if "task" not in self.values:
            self.values["task"] = "inference"
            self.notes.append("read as serving the model: say train, fine-tune, lora or qlora otherwise")
        if "model" not in self.values and "params_b" not in self.values:
            raise QuestionError("name a model (e.g. llama 3.1 8b) or its size (e.g. a 7b model)")
        return Question(apply_flags({}, self.values), self.notes)

    def _flag(self, words: list[str], i: int) -> int:
        """`name value`, the name as its leading words (unique among the flags) or in full."""
        for flag in sorted(NAMED, key=lambda f: -len(_name_words(f))):
            name = _name_words(flag)
            for length in range(len(name), 0, -1):
                if words[i : i + length] != name[:length]:
                    continue
                if length < len(name) and sum(_name_words(f)[:length] == name[:length] for f in NAMED) > 1:
                    break
                value = _converted(flag, words[i + length :])
                if value is None:
                    break
                taken, converted = value
                self.values[_dest(flag)] = converted
                return length + taken
        return 0

    def _phrase(self, words: list[str], i: int) -> int:
        for table in (TASK_WORDS, SWITCHES):
            for phrase, meaning in sorted(table.items(), key=lambda item: -len(item[0])):
                length = len(phrase.split())
                if " ".join(words[i : i + length]) == phrase:
                    if table is TASK_WORDS:
                        self.values["task"] = meaning
                    else:
                        self.values[meaning] = True
                    return length
        for flag in FLAGS:
            if flag.kind in ("bool", "off") and words[i : i + len(_name_words(flag))] == _name_words(flag):
                self.values[_dest(flag)] = True
                return len(_name_words(flag))
        return 0

    def _value(self, words: list[str], i: int) -> int:
        """A value one field allows, alone (`rent`, `windows`, `fp8`): the first flag listing it."""
        word = WORDS_FOR_VALUES.get(words[i], words[i])
        for flag in FLAGS:
            choices = {choice.replace("_", " "): choice for choice in flag.choices or ()}
            for length in (2, 1):
                said = " ".join([word, *words[i + 1 : i + length]]) if length == 2 else word
                if said in choices and _dest(flag) not in self.values:
                    self.values[_dest(flag)] = choices[said]
                    return length
        return 0

    def _hardware(self, words: list[str], i: int) -> int:
        """`on [N] GPU` or `N x GPU`: the hardware to run on."""
        start, count = i, 1
        if words[i] == "on":
            start = i + 1
            if start < len(words) and words[start].isdigit():
                count, start = int(words[start]), start + 1
        elif words[i].isdigit() and i + 1 < len(words) and words[i + 1] in ("x", "\N{MULTIPLICATION SIGN}"):
            count, start = int(words[i]), i + 2
        elif re.fullmatch(r"\d+x", words[i]):
            count, start = int(words[i][:-1]), i + 1
        else:
            return 0
        name: list[str] = []
        for word in words[start:]:
            if _known_word(word):
                break
            name.append(word)
        if not name:
            return 0
        self.values["target"] = f"{self._gpu(name)}:{count}"
        return start - i + len(name)

    def _gpu(self, name: list[str]) -> str:
        if not self.gpus:
            return "-".join(name)
        wanted = set(name)
        found = sorted(
            gpu_id
            for gpu_id, gpu_name in self.gpus.items()
            if wanted <= set(_words(gpu_id)) | set(_words(gpu_name))
        )
        if not found:
            raise QuestionError(f"no GPU called {' '.join(name)!r}: GET /gpus lists them")
        if len(found) > 1:
            others = ", ".join(found[1:])
            self.notes.append(f"read {' '.join(name)!r} as {found[0]} (also: {others}); name one to be sure")
        return found[0]


def _known_word(word: str) -> bool:
    """A word that starts something else in a clause: a flag's name, a value, a task or a switch."""
    if word in WORDS_FOR_VALUES or any(phrase.split()[0] == word for phrase in [*TASK_WORDS, *SWITCHES]):
        return True
    return any(
        word == _name_words(flag)[0] or word in (flag.choices or ()) for flag in FLAGS if flag.kind != "file"
    )


def _converted(flag: Flag, words: list[str]) -> tuple[int, Any] | None:
    """(words taken, value) for the words after a flag's name; None when they are not its value."""
    if not words:
        return None
    word = words[0]
    if flag.kind in ("float", "int"):
        number = _number(word)
        if number is None or (flag.kind == "int" and number != int(number)):
            return None
        return 1, int(number) if flag.kind == "int" else number
    if flag.kind == "str":
        choices = flag.choices or ()
        return (1, word) if word in choices else None
    return 1, word  # list, hardware: the CLI's own forms (`aws,gcp`, `GPU:COUNT`)


def _number(word: str) -> float | None:
    match = NUMBER.match(word)
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    return value * {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2)]
