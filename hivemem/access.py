"""Who may do what where: principals, their roles per scope pattern, and the one check every call makes.

A team server names each caller (a *principal*) by its token. A principal holds grants, each a
scope pattern with a role:

- ``read``: recall, get, search knowledge, read status and handoffs in matching scopes;
- ``write``: read, plus memorize, store knowledge, save handoffs, and forget what it wrote itself;
- ``admin``: write, plus forget anything and undo; ``admin`` on ``*`` also manages tokens.

Patterns are globs on the scope name (``github.com/acme/*``; ``*`` also matches ``/``, so it covers a
whole subtree). The global scope has no name of its own (it is the empty string), so grants name it
``(global)``, which no scope can spell; ``*`` covers it too. Every principal also holds ``admin`` on
its personal scope, ``user/<name>``.

The check is made once, where a call picks its scopes (``api.services.caller.Caller``): the scopes it may read
become the scope filter of the store's own query, so nothing outside them is ever fetched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase

from hivemem.errors import ValidationError
from hivemem.model import GLOBAL_SCOPE

__all__ = [
    "GLOBAL_PATTERN",
    "GRANT_PATTERN",
    "LOCAL",
    "MAX_GRANT_LENGTH",
    "NAME_PATTERN",
    "Access",
    "Grant",
    "Role",
    "personal_scope",
    "validate_principal_name",
]

GLOBAL_PATTERN = "(global)"
"""How a grant names the global scope."""

PERSONAL_PREFIX = "user/"
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
"""A principal's name, as a JSON Schema pattern too."""
MAX_GRANT_LENGTH = 530
_ROLES = "read|write|admin"
# A glob's '/'-separated segments are each non-empty and not '..', as a scope's are: a glob with an
# empty or '..' segment (`github.com/acme/:write`, meant as `/*`) would match no scope at all, and
# the token would quietly get nothing there. The lookahead is negative only, so that a fuzzer can
# generate from the pattern: '..' is a whole segment when a '/' or the ':ROLE' at the end follows.
_GLOB_SEGMENT = rf"(?!\.\.(?:/|:(?:{_ROLES})$))[A-Za-z0-9._~@:+\-*?\[\]]+"
GRANT_PATTERN = rf"^(\(global\)|{_GLOB_SEGMENT}(?:/{_GLOB_SEGMENT})*):({_ROLES})$(?!\n)"
"""A whole ``PATTERN:ROLE`` grant of at most ``MAX_GRANT_LENGTH`` characters, as a pattern that
means the same in Python and in JSON Schema: exactly what :meth:`Grant.parse` accepts."""
_NAME = re.compile(NAME_PATTERN)
_GRANT = re.compile(GRANT_PATTERN)


class Role(StrEnum):
    """What a grant allows; each role includes the ones before it."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def includes(self, other: Role) -> bool:
        """Whether holding this role allows what ``other`` allows."""
        return self.rank >= other.rank


_RANKS = {Role.READ: 1, Role.WRITE: 2, Role.ADMIN: 3}


def validate_principal_name(name: str) -> str:
    """Return ``name`` if it is a valid principal name (lower-case letters, digits, ``. _ -``)."""
    if not _NAME.fullmatch(name):
        raise ValidationError(
            "a principal's name is 1-64 characters: lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
            field="name",
        )
    return name


def personal_scope(name: str) -> str:
    """The scope a principal owns: ``user/<name>``."""
    return PERSONAL_PREFIX + name


@dataclass(frozen=True, slots=True)
class Grant:
    """A role on every scope ``pattern`` matches."""

    pattern: str
    role: Role

    @classmethod
    def parse(cls, text: str) -> Grant:
        """``PATTERN:ROLE`` (the last ``:`` splits, as scopes may hold one), e.g. ``github.com/acme/*:write``."""
        pattern, sep, role = text.rpartition(":")
        if not sep or not pattern:
            raise ValidationError(
                f"a grant is PATTERN:ROLE (e.g. 'github.com/acme/*:write'), not {text!r}", field="grants"
            )
        try:
            parsed = Role(role)
        except ValueError:
            raise ValidationError(f"a grant's role is read, write or admin, not {role!r}", field="grants") from None
        if len(text) > MAX_GRANT_LENGTH:
            raise ValidationError(f"a grant is at most {MAX_GRANT_LENGTH} characters, not {len(text)}", field="grants")
        if not _GRANT.fullmatch(text):
            raise ValidationError(
                f"a grant's pattern is '(global)' or a glob of scope characters and * ? [ ] whose "
                f"'/'-separated segments are neither empty nor '..' (such a glob matches no scope), not {pattern!r}",
                field="grants",
            )
        return cls(pattern, parsed)

    def covers(self, scope: str) -> bool:
        """Whether this grant's pattern matches ``scope``."""
        if scope == GLOBAL_SCOPE:
            return self.pattern in (GLOBAL_PATTERN, "*")
        return self.pattern != GLOBAL_PATTERN and fnmatchcase(scope, self.pattern)

    def __str__(self) -> str:
        return f"{self.pattern}:{self.role}"

    def as_dict(self) -> dict[str, str]:
        """How the stores keep a grant."""
        return {"pattern": self.pattern, "role": str(self.role)}

    @classmethod
    def from_dict(cls, stored: dict[str, str]) -> Grant:
        return cls(stored["pattern"], Role(stored["role"]))


@dataclass(frozen=True, slots=True)
class Access:
    """A principal and what it may do: its grants plus ``admin`` on its personal scope.

    ``personal`` is False for the trusted local caller (stdio, a loopback server without tokens),
    which holds ``admin`` on ``*`` instead.
    """

    principal: str
    grants: tuple[Grant, ...] = field(default=())
    personal: bool = True

    def role_in(self, scope: str) -> Role | None:
        """The strongest role this principal holds in ``scope``, or None."""
        if self.personal and scope == personal_scope(self.principal):
            return Role.ADMIN
        roles = [grant.role for grant in self.grants if grant.covers(scope)]
        return max(roles, key=lambda role: role.rank) if roles else None

    def may(self, scope: str, role: Role) -> bool:
        """Whether this principal may act as ``role`` in ``scope``."""
        held = self.role_in(scope)
        return held is not None and held.includes(role)

    @property
    def home(self) -> str | None:
        """The scope a call that names none works in: the personal scope, or None for ``local``."""
        return personal_scope(self.principal) if self.personal else None

    @property
    def manages_tokens(self) -> bool:
        """Admin on ``*``: creates, lists and revokes tokens and reads the whole audit log."""
        return any(grant.pattern == "*" and grant.role is Role.ADMIN for grant in self.grants)


LOCAL = Access("local", (Grant("*", Role.ADMIN),), personal=False)
"""The trusted caller of stdio and of a loopback server without tokens: everything, as before tokens."""
