"""The compact tool schema agents read (api.mcp_schema)."""

from __future__ import annotations

from api.mcp_schema import for_agents
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
    assert for_agents(schema) == {
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
