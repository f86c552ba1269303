"""What agents read of the tools, compact (api.mcp.compact)."""

from __future__ import annotations

from mcp_types import CallToolResult, ImageContent, TextContent

from api.mcp.compact import compact_answer, compact_schema
from hivemem.limits import text_pattern


def test_generated_titles_and_text_rules_go_and_everything_else_stays() -> None:
    schema = {
        "title": "memorizeArguments",
        "type": "object",
        "$defs": {"Kind": {"title": "Kind", "enum": ["a", "b"], "type": "string"}},
        "properties": {
            "title": {"title": "Title", "type": "string", "minLength": 5, "pattern": text_pattern(5)},
            "pattern": {"title": "Pattern", "type": "string", "description": "a regular expression"},
            "scope": {"anyOf": [{"type": "string", "pattern": "^[a-z/]+$"}, {"type": "null"}]},
            "files": {"type": "array", "items": {"type": "string", "pattern": text_pattern()}, "maxItems": 3},
            "details": {"type": "object", "default": {"title": "kept: a default is a value"}},
        },
        "required": ["title"],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "$defs": {"Kind": {"enum": ["a", "b"], "type": "string"}},
        "properties": {
            "title": {"type": "string", "minLength": 5},
            "pattern": {"type": "string", "description": "a regular expression"},
            "scope": {"anyOf": [{"type": "string", "pattern": "^[a-z/]+$"}, {"type": "null"}]},
            "files": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "details": {"type": "object", "default": {"title": "kept: a default is a value"}},
        },
        "required": ["title"],
    }
    assert schema["title"] == "memorizeArguments"  # the original is left as it was


def test_a_structured_answer_is_written_on_one_line_and_nothing_else_is_touched() -> None:
    answer = {"results": [{"title": "Zürich office", "score": 0.5}], "related": []}
    indented = CallToolResult(content=[TextContent(type="text", text="{\n  ...\n}")], structured_content=answer)
    compacted = compact_answer(indented)
    assert compacted.content == [
        TextContent(type="text", text='{"results":[{"title":"Zürich office","score":0.5}],"related":[]}')
    ]
    assert compacted.structured_content == answer
    error = CallToolResult(content=[TextContent(type="text", text="not_found: no memory")], is_error=True)
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    unstructured = CallToolResult(content=[TextContent(type="text", text="a\nb"), image])
    for untouched in (error, unstructured, "plain"):
        assert compact_answer(untouched) is untouched
