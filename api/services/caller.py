"""Who is calling, where they work, and what they may do: the one place a call's scopes are decided.

Every service method asks the caller for its scopes (:meth:`Caller.scope_for` for the scope it
works in, :meth:`Caller.readable` for the scopes a read searches). Both apply the caller's grants
(:mod:`hivemem.access`), so a scope the caller may not read never reaches a store query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hivemem.access import Access, Role
from hivemem.errors import MemoryNotFoundError, PermissionDeniedError, ValidationError
from hivemem.jobs import Job
from hivemem.model import GLOBAL_SCOPE, Memory
from hivemem.scope import recall_scopes, validate_scope

__all__ = ["Caller", "OnDenied"]

# Told of every refusal for want of a grant (the server audits it): the caller, the scope, and the
# role it lacked.
OnDenied = Callable[["Caller", str, Role], None]


def _named(scope: str) -> str:
    return "the global scope" if scope == GLOBAL_SCOPE else f"scope {scope!r}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling and where they work.

    ``default_scope`` is the scope of a call that names none; None when the caller named no project
    (an MCP client over HTTP without one): a write must then name a scope or the global one.
    ``locked``: the caller works in ``default_scope`` (and global) only; naming another is refused.
    ``access``: the caller's grants on a team server; None for a trusted local caller (stdio, the
    CLI, a loopback server without tokens), who may do anything.
    ``on_denied``: told of each refusal before it is raised (the server's audit of denied requests).
    """

    principal: str = "local"
    default_scope: str | None = GLOBAL_SCOPE
    locked: bool = False
    access: Access | None = None
    on_denied: OnDenied | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls, access: Access, *, scope: str | None = None, locked: bool = False, on_denied: OnDenied | None = None
    ) -> Caller:
        """A caller with ``access``, working in ``scope`` or else in its personal scope."""
        home = scope if scope is not None else (access.home or GLOBAL_SCOPE)
        return cls(principal=access.principal, default_scope=home, locked=locked, access=access, on_denied=on_denied)

    def refused(self, message: str, scope: str, needed: Role) -> PermissionDeniedError:
        """The error refusing this caller ``needed`` in ``scope``, once the refusal is recorded."""
        if self.on_denied is not None:
            self.on_denied(self, scope, needed)
        return PermissionDeniedError(message)

    def may(self, scope: str, role: Role) -> bool:
        """Whether this caller may act as ``role`` in ``scope``."""
        return self.access is None or self.access.may(scope, role)

    def require(self, scope: str, role: Role) -> str:
        """``scope``, if this caller holds ``role`` there; else ``PermissionDeniedError``."""
        if not self.may(scope, role):
            raise self.refused(f"{self.principal!r} may not {_VERBS[role]} in {_named(scope)}", scope, role)
        return scope

    def require_everything(self, doing: str) -> None:
        """Refuse (and record the refusal) unless this caller is admin on ``*``, or the trusted local
        caller: managing tokens, reading the whole audit log, re-embedding the store."""
        if self.access is not None and not self.access.manages_tokens:
            raise self.refused(f"{self.principal!r} may not {doing} (that takes admin on '*')", "*", Role.ADMIN)

    def require_changing(self, memory: Memory, doing: str | None = None) -> None:
        """Refuse a change to ``memory`` (an edit, a forget, an edge that rewrites it) unless the
        caller wrote it and may write in its scope, or administers its scope. ``doing`` names the
        change in the refusal (an edge's effect); without it the refusal names the role."""
        needed = Role.WRITE if memory.author == self.principal else Role.ADMIN
        if doing is None:
            self.require(memory.scope, needed)
        elif not self.may(memory.scope, needed):
            whose = "a memory of its own" if needed is Role.WRITE else "another's memory"
            raise self.refused(
                f"{self.principal!r} may not {doing}: changing {whose} in {_named(memory.scope)} takes "
                f"{needed.value} there",
                memory.scope,
                needed,
            )

    def require_admin_for(self, scope: str, doing: str) -> None:
        """Refuse ``doing`` unless this caller administers ``scope``, where it would change a memory
        besides the scope the call is in (an undo across an edge, an import by id). The refusal
        names ``scope`` only to a caller who may read it."""
        if not self.may(scope, Role.ADMIN):
            where = _named(scope) if self.may(scope, Role.READ) else "a scope it may not read"
            raise self.refused(
                f"{self.principal!r} may not {doing}: that would change a memory in {where}, which takes admin there",
                scope,
                Role.ADMIN,
            )

    def may_read_job(self, job: Job) -> bool:
        """Whether this caller may read ``job``: it asked for it, or administers every scope the job
        writes in (a job of no scope, the server's own, is for admins on ``*``)."""
        if self.access is None or (job.owner and job.owner == self.principal):
            return True
        if not job.scopes:
            return self.access.manages_tokens
        return all(self.access.may(scope, Role.ADMIN) for scope in job.scopes)

    def visible(self, memory: Memory, requested: str | None) -> Memory:
        """``memory``, if it lies in the scopes a read in ``requested`` searches; else the error an
        unknown id gets (:meth:`not_found`), so that nothing says it exists."""
        if memory.scope not in self.readable(requested):
            raise self.not_found(memory.id, requested)
        return memory

    def not_found(self, memory_id: str, requested: str | None) -> MemoryNotFoundError:
        """The answer to a by-id read that found nothing where it looked: which scopes those were,
        and how to look in another (the same whether the id exists elsewhere or nowhere)."""
        looked = " or ".join(_named(scope) for scope in self.readable(requested))
        if self.locked:
            hint = f"this session is locked to {_named(self.default_scope or GLOBAL_SCOPE)} and the global scope"
        else:
            hint = "a memory of another project is found by naming its scope (`scope`, `?scope=` or --scope)"
        return MemoryNotFoundError(f"no memory with id {memory_id} in {looked}; {hint}")

    def scope_for(self, requested: str | None, *, write: bool) -> str:
        """The scope a call works in: ``requested`` if given and allowed, else the default.

        Raises ``ValidationError`` for a malformed scope (every transport's, the CLI's included, which
        reaches the services without a request model), for another scope than a locked session's,
        and for a write with no scope at all; ``PermissionDeniedError`` when the caller may not read
        (or write) there.
        """
        if requested is not None:
            validate_scope(requested)
        if requested is not None and self.locked and requested not in (self.default_scope, GLOBAL_SCOPE):
            raise ValidationError(
                f"this session is locked to scope {self.default_scope!r} (and global); it cannot work in {requested!r}",
                field="scope",
            )
        scope = self.default_scope if requested is None else requested
        if scope is None:
            if write:
                raise ValidationError(
                    "this connection names no project: pass `scope` (e.g. github.com/acme/api), or `global: true` "
                    "for a memory every project shares",
                    field="scope",
                )
            scope = GLOBAL_SCOPE
        return self.require(scope, Role.WRITE if write else Role.READ)

    def readable(self, requested: str | None) -> list[str]:
        """The scopes a read in ``requested`` searches: that scope, plus global if the caller may read it."""
        scope = self.scope_for(requested, write=False)
        return [s for s in recall_scopes(scope) if s == scope or self.may(s, Role.READ)]


_VERBS = {Role.READ: "read", Role.WRITE: "write", Role.ADMIN: "administer"}
