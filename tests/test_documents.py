"""Reading a single YAML file: any input yields a document or a precise error, never an exception."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.knowledge import documents
from engine.knowledge.documents import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    Document,
    ReadError,
    parse_yaml_mapping,
    read_yaml_mapping,
)


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


def flow(depth: int) -> str:
    """`depth` levels of nesting, the top-level mapping included, on line 1."""
    return "a: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def block(depth: int) -> str:
    """`depth` levels of nesting, level n opening on line n."""
    return "a:\n" + "".join(" " * i + "k:\n" for i in range(1, depth)) + " " * depth + "x\n"


@pytest.fixture(params=["libyaml", "pure-python"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both loaders PyYAML may bring: LibYAML's when the wheel was built with it, else its own."""
    if request.param == "libyaml":
        if not hasattr(yaml, "CSafeLoader"):
            pytest.skip("this PyYAML was built without LibYAML")
        monkeypatch.setattr(documents, "_Loader", yaml.CSafeLoader)
    else:
        monkeypatch.setattr(documents, "_Loader", yaml.SafeLoader)


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    "text",
    [flow(40), flow(5_000), flow(200_000), block(40), block(3_000)],
    ids=["flow-40", "flow-5000", "flow-200000", "block-40", "block-3000"],
)
def test_deep_nesting_is_an_error_not_a_crash(text: str) -> None:
    # LibYAML's composer recurses on the C stack: 200,000 levels would crash the process. Which check
    # stops very deep flow input depends on the build: LibYAML 0.2.6 refuses nesting past 1000
    # (yaml/libyaml#287), in its scanner for flow collections (yaml/libyaml#329), before this module
    # has counted MAX_DEPTH levels, and says so in its own words. So the outcome is asserted, not whose
    # words describe it.
    result = error(text)
    assert result.check == "yaml"
    assert result.line == (1 if text.startswith("a: [") else MAX_DEPTH + 1)


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    "text",
    [flow(MAX_DEPTH + 1), flow(40), block(MAX_DEPTH + 1), block(3_000)],
    ids=["flow-limit+1", "flow-40", "block-limit+1", "block-3000"],
)
def test_the_depth_limit_names_itself_where_it_fires_first(text: str) -> None:
    """Block nesting, and flow nesting well under LibYAML's own limit, meet MAX_DEPTH first."""
    result = error(text)
    assert result.message == f"nested more than {MAX_DEPTH} levels deep"
    assert result.fix == "flatten the structure"


def test_nesting_up_to_the_limit_is_read() -> None:
    assert isinstance(parse(flow(MAX_DEPTH)), Document)
    assert isinstance(parse(block(MAX_DEPTH)), Document)


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
