"""What ``hivemem setup`` writes into a project beside the MCP entry: the client's hooks and the
memory-rules snippet. Each write keeps everything else in the file, changes nothing when what it
would write is there already (so a second ``setup`` leaves every file as it was), refuses a file it
cannot read as the client's format, and replaces the file atomically.

- Claude Code's hooks go in the project's ``.claude/settings.json`` under ``hooks``: ``SessionStart``
  (the briefing), ``UserPromptSubmit`` (relevant memories), ``Stop`` (the handoff reminder). Hooks
  hivemem wrote before are replaced; every other hook stays where it is. Claude Code gives
  ``PreCompact`` and ``SessionEnd`` hooks no way to speak to the agent, so the reminder before a
  compaction comes with the briefing right after it (``SessionStart`` from ``compact``).
- Cursor's hooks cannot add to the agent's context, so Cursor gets the rules file alone
  (``.cursor/rules/hivemem.mdc``, always applied).
- The rules snippet goes in ``CLAUDE.md`` between two marks, found and updated there, never added twice.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from hivemem.errors import ValidationError

__all__ = [
    "CLAUDE_HOOKS",
    "RULES",
    "install_claude_hooks",
    "installed_hook_events",
    "is_hivemem_hook",
    "read_config",
    "write_cursor_rules",
    "write_if_changed",
    "write_rules_section",
]

CLAUDE_HOOKS = {"SessionStart": ("session-start", 10), "UserPromptSubmit": ("prompt-submit", 5), "Stop": ("stop", 5)}
"""Claude Code's event -> (the ``hivemem hook`` event, the client's timeout in seconds)."""

RULES_BEGIN = "<!-- hivemem:memory-rules: written by `hivemem setup`, which updates what lies between these marks -->"
RULES_END = "<!-- /hivemem:memory-rules -->"
RULES = """## Memory rules

This project keeps a team memory, hivemem (MCP tools `remember`, `memorize`, `handoff`, `memory`,
`memory_status`). It outlives this session and is shared with the team's other agents.

- Recall before you act: call `remember` before you decide, design, debug, or ask the user something
  they may already have told someone. Check `[INFERRED]` memories before you rely on them.
- Memorize what you learn, when it is settled: a decision with its reason, a fix with its root cause,
  a preference or a convention. One fact per memory, in words a teammate understands without this
  session.
- Update what changed: when a memory is no longer true, memorize the new fact with a `supersedes`
  edge to the old one (its id is in the recall result), or `verify` one that still holds.
- Never store secrets: keys, tokens and passwords are refused.
- Before you stop, save a `handoff`: summary, completed, in progress, blocked, next steps."""


def write_if_changed(path: Path, text: str) -> bool:
    """Replace ``path`` with ``text`` atomically; False (nothing written) when it holds that already."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staging.write_text(text, encoding="utf-8")
    staging.replace(path)
    return True


def is_hivemem_hook(command: object) -> bool:
    """Whether a hook's command is one ``hivemem setup`` writes (``… hivemem hook EVENT …``)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if "hook" not in words:
        return False
    at = words.index("hook")
    named = {"session-start", "prompt-submit", "stop"}
    runs_hivemem = any(Path(w).name == "hivemem" or w == "api.cli" for w in words[:at])
    return runs_hivemem and at + 1 < len(words) and words[at + 1] in named


def read_config(path: Path, section: str) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when there is none), whose ``section`` is an object if there.
    Raises ``ValidationError`` for a folder there or a file that is not such an object."""
    if path.is_dir():
        raise ValidationError(f"{path} is a folder, not a config file", field="path")
    if not path.exists():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problem = f"{path} is not JSON ({exc}); fix or move it, nothing was changed"
        raise ValidationError(problem, field="path") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get(section, {}), dict):
        raise ValidationError(f"{path}: expected a JSON object with a `{section}` object", field="path")
    return loaded


def _settings(path: Path) -> dict[str, Any]:
    loaded = read_config(path, "hooks")
    for event in CLAUDE_HOOKS:
        groups = loaded.get("hooks", {}).get(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise ValidationError(f"{path}: hooks.{event} is not a list of matcher objects", field="path")
    return loaded


def install_claude_hooks(path: Path, program: list[str], options: list[str]) -> bool:
    """Set hivemem's hooks in Claude Code's settings file ``path``, each running ``program hook
    EVENT options``; True when the file changed."""
    config = _settings(path)
    hooks: dict[str, Any] = config.setdefault("hooks", {})
    for event, (ours, timeout_s) in CLAUDE_HOOKS.items():
        kept = []
        for group in hooks.get(event, []):
            others = [h for h in group.get("hooks", []) if not is_hivemem_hook(h.get("command"))]
            if others or not group.get("hooks"):
                kept.append({**group, "hooks": others})
        line = shlex.join([*program, "hook", ours, *options])
        kept.append({"hooks": [{"type": "command", "command": line, "timeout": timeout_s}]})
        hooks[event] = kept
    return write_if_changed(path, json.dumps(config, indent=2) + "\n")


def installed_hook_events(path: Path) -> dict[str, str]:
    """The hivemem hooks in Claude Code's settings file ``path``: client event -> command."""
    try:
        config = _settings(path)
    except (ValidationError, OSError):
        return {}
    found = {}
    for event, groups in config.get("hooks", {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if isinstance(hook, dict) and is_hivemem_hook(hook.get("command")):
                    found[str(event)] = str(hook["command"])
    return found


def write_rules_section(path: Path) -> bool:
    """Put the memory rules in ``path`` (CLAUDE.md, AGENTS.md) between their marks: added once at
    the end, updated in place after; True when the file changed."""
    block = f"{RULES_BEGIN}\n{RULES}\n{RULES_END}"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    begin, end = text.find(RULES_BEGIN), text.find(RULES_END)
    if begin != -1 and end > begin:
        updated = text[:begin] + block + text[end + len(RULES_END) :]
    else:
        updated = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block + "\n"
    return write_if_changed(path, updated)


def write_cursor_rules(path: Path) -> bool:
    """Cursor's rules file for hivemem (``.cursor/rules/hivemem.mdc``, always applied)."""
    header = "---\ndescription: How to use the project's team memory (hivemem)\nalwaysApply: true\n---\n"
    return write_if_changed(path, f"{header}{RULES_BEGIN}\n{RULES}\n{RULES_END}\n")
