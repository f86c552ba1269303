"""Every command and every flag of the ``hivemem`` CLI says what it is for in ``--help``."""

from __future__ import annotations

import argparse

from api.cli.app import HELP_SECTIONS, _parser


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            # An alias (`memories` for `memory`) is the same parser as its command, helped once.
            helped = {id(action.choices[choice.dest]) for choice in action._choices_actions if choice.help}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in helped:
                    missing.append(f"{path} {name} (command)")
                if id(sub) not in seen:
                    seen.add(id(sub))
                    missing += _undocumented(sub, f"{path} {name}")
            continue
        if not action.help:
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_command_and_flag_has_help() -> None:
    assert _undocumented(_parser(), "hivemem") == []


def test_top_level_help_lists_every_command_once_under_its_section() -> None:
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = [name for _, names in HELP_SECTIONS for name in names]
    assert sorted(listed) == sorted(choice.dest for choice in commands._choices_actions)
    shown = parser.format_help()
    lines = shown.splitlines()
    for title, names in HELP_SECTIONS:
        start = lines.index(f"{title}:")
        section = lines[start + 1 : lines.index("", start)]
        assert [line.split()[0] for line in section if line.startswith("  ") and not line.startswith("   ")] == list(
            names
        )
    assert "-h, --help" in shown
    # A command's own help lists its subcommands and options as argparse does.
    assert "positional arguments:" in commands.choices["memory"].format_help()
