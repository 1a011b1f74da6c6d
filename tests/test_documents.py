"""Reading a single YAML file: any input yields a document or a precise error, never an exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.documents import MAX_FILE_BYTES, Document, ReadError, parse_yaml_mapping, read_yaml_mapping


def parse(text: str | bytes) -> Document | ReadError:
    raw = text.encode() if isinstance(text, str) else text
    return parse_yaml_mapping(raw, Path("x.yaml"), "x.yaml")


def error(text: str | bytes) -> ReadError:
    result = parse(text)
    assert isinstance(result, ReadError), result
    return result


def test_a_mapping_parses_and_maps_fields_to_lines() -> None:
    document = parse("id: a\nnested:\n  list:\n    - x\n    - y\n")
    assert isinstance(document, Document)
    assert document.data == {"id": "a", "nested": {"list": ["x", "y"]}}
    assert document.line_of(("id",)) == 1
    assert document.line_of(("nested", "list", 1)) == 5
    assert document.line_of(("nested", "missing")) == 2  # deepest existing node


def test_empty_file() -> None:
    assert error("").check == "empty"
    assert error("  \n\n").check == "empty"
    assert error("# only a comment\n").check == "empty"


def test_binary_junk() -> None:
    assert error(b"\x89PNG\r\n\x1a\n\x00\x00").check == "encoding"


def test_invalid_utf8_names_the_line() -> None:
    result = error(b"id: a\nname: \xff\xfe\n")
    assert (result.check, result.line) == ("encoding", 2)


def test_invalid_yaml_names_the_line() -> None:
    result = error("id: a\nname: [unclosed\nvendor: x\n")
    assert result.check == "yaml"
    assert result.line >= 2


def test_top_level_must_be_a_mapping() -> None:
    assert error("- a\n- b\n").check == "type"
    assert error("just a string\n").check == "type"


def test_duplicate_keys_are_reported_not_silently_merged() -> None:
    result = error("id: a\nname: x\nname: y\n")
    assert (result.check, result.line) == ("duplicate-key", 3)


def test_anchors_and_aliases_are_refused() -> None:
    bomb = "a: &a [x, x, x]\nb: [*a, *a, *a]\n"
    assert error(bomb).check == "yaml"


def test_several_documents_are_refused() -> None:
    result = error("id: a\n---\nid: b\n")
    assert (result.check, result.line) == ("yaml", 3)


@pytest.mark.parametrize("depth", [40, 5_000, 200_000])
def test_deep_nesting_is_an_error_not_a_crash(depth: int) -> None:
    # LibYAML's composer recurses on the C stack: 200,000 levels would crash the process.
    flow = error("a: " + "[" * depth + "]" * depth + "\n")
    block = error("a:\n" + "".join(" " * i + "k:\n" for i in range(min(depth, 3000))) + "x\n")
    assert flow.message.startswith("nested more than") and block.message.startswith("nested more than")


def test_python_tags_are_not_executed() -> None:
    result = parse("id: !!python/object/apply:os.system ['echo owned']\n")
    assert isinstance(result, ReadError)
    assert result.check == "yaml"


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"id: a\nnotes: '" + b"x" * (10 * 1024 * 1024) + b"'\n")
    result = read_yaml_mapping(path, "big.yaml")
    assert isinstance(result, ReadError)
    assert result.check == "size"
    assert path.stat().st_size > MAX_FILE_BYTES


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(raw: bytes) -> None:
    assert isinstance(parse(raw), Document | ReadError)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n ?,%@`")), max_size=120))
def test_yaml_punctuation_soup_never_raises(text: str) -> None:
    assert isinstance(parse(text), Document | ReadError)
