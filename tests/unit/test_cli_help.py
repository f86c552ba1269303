"""Every command and every flag of the ``hivemem`` CLI says what it is for in ``--help``."""

from __future__ import annotations

import argparse

from api.cli.app import _parser


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
