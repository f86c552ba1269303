"""The tool schemas agents read: pydantic's, less what costs an agent tokens and tells it nothing.

An MCP client puts every tool's input schema into the model's context, each session. Pydantic's
schema gives each property a title made from its name ("Related Files", next to the key
``related_files``), and each text field the pattern the validation checks: about 250 characters
of control-character classes, five times over in a handoff, close to a fifth of all the tools'
definitions. Neither helps a model call a tool: the key names the field, and a text the pattern
refuses is refused by the server in words ("title: must hold at least 5 characters besides
surrounding whitespace, and no control characters"), because the arguments are still validated
by the model the schema was made from. What a model does use stays: types, lengths, counts,
ranges, enums, defaults, descriptions and the scope pattern. The REST API's OpenAPI keeps the
whole schema: it is read by programs (clients, fuzzers), which check the patterns themselves.
"""

from __future__ import annotations

from typing import Any

from hivemem.limits import FORBIDDEN_CHARACTERS

__all__ = ["for_agents"]

Schema = dict[str, Any]

_ONE_SCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs")


def _is_text_rule(key: str, value: Any) -> bool:
    # The patterns hivemem.limits.text_pattern writes: each holds the forbidden characters' class.
    return key == "pattern" and isinstance(value, str) and FORBIDDEN_CHARACTERS in value


def for_agents(schema: Schema) -> Schema:
    """``schema`` without generated titles and text-rule patterns (a new dict; ``schema`` is kept).

    Only schema keywords are walked: a ``default``, ``enum`` or ``const`` value is copied as it
    is, even where it holds a key named ``title``.
    """
    compact: Schema = {}
    for key, value in schema.items():
        if (key == "title" and isinstance(value, str)) or _is_text_rule(key, value):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            compact[key] = {name: for_agents(sub) if isinstance(sub, dict) else sub for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            compact[key] = [for_agents(sub) if isinstance(sub, dict) else sub for sub in value]
        elif key in _ONE_SCHEMA and isinstance(value, dict):
            compact[key] = for_agents(value)
        else:
            compact[key] = value
    return compact
