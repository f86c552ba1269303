"""What agents read of the tools, without what costs them tokens and tells them nothing.

An MCP client puts every tool's input schema into the model's context, each session, and each
tool answer's text after every call.

Schemas: pydantic gives each property a title made from its name ("Related Files", next to the
key ``related_files``), and each text field the pattern the validation checks: about 250
characters of control-character classes, five times over in a handoff, close to a fifth of all the
tools' definitions. Neither helps a model call a tool: the key names the field, and a text the
pattern refuses is refused by the server in words ("title: must hold at least 5 characters
besides surrounding whitespace, and no control characters"), because the arguments are still
validated by the model the schema was made from. What a model does use stays: types, lengths,
counts, ranges, enums, defaults, descriptions and the scope pattern. The REST API's OpenAPI keeps
the whole schema: it is read by programs (clients, fuzzers), which check the patterns themselves.

Answers: the SDK writes a tool's answer as JSON indented by two spaces, a line per field; the same
JSON on one line is about a quarter shorter (a recall of ten memories: 4,900 characters, 3,700 on
one line). It stays the serialized structured content, as the protocol asks of a tool that
answers with one, for clients that read only the text.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from mcp_types import CallToolResult, TextContent

from hivemem.limits import FORBIDDEN_CHARACTERS

__all__ = ["compact_answer", "compact_schema"]

Schema = dict[str, Any]

_ONE_SCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs")


def _is_text_rule(key: str, value: Any) -> bool:
    # The patterns hivemem.limits.text_pattern writes: each holds the forbidden characters' class.
    return key == "pattern" and isinstance(value, str) and FORBIDDEN_CHARACTERS in value


def compact_schema(schema: Schema) -> Schema:
    """``schema`` without generated titles and text-rule patterns (a new dict; ``schema`` is kept).

    Only schema keywords are walked: a ``default``, ``enum`` or ``const`` value is copied as it
    is, even where it holds a key named ``title``.
    """
    compact: Schema = {}
    for key, value in schema.items():
        if (key == "title" and isinstance(value, str)) or _is_text_rule(key, value):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            compact[key] = {name: compact_schema(sub) if isinstance(sub, dict) else sub for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            compact[key] = [compact_schema(sub) if isinstance(sub, dict) else sub for sub in value]
        elif key in _ONE_SCHEMA and isinstance(value, dict):
            compact[key] = compact_schema(value)
        else:
            compact[key] = value
    return compact


def compact_answer(result: Any) -> Any:
    """``result`` with its text written on one line, when it is a tool's structured answer as the
    SDK renders it (one text block); anything else (an error, an unstructured answer) as it is."""
    if not isinstance(result, CallToolResult) or result.is_error or result.structured_content is None:
        return result
    if len(result.content) != 1 or not isinstance(result.content[0], TextContent):
        return result
    # Written as the SDK writes it (non-ASCII kept, what JSON cannot hold as null), without indent.
    text = pydantic_core.to_json(result.structured_content, fallback=str).decode()
    return result.model_copy(update={"content": [TextContent(type="text", text=text)]})
