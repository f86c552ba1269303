"""The MCP tools but ``knowledge`` (:mod:`api.mcp.knowledge`): their descriptions, which are product
text (the agent reads them to decide when and how to call, and pays for every word), their
functions, and what every tool shares: errors an agent can act on, and per-action argument checks.

Each tool is a module function; what it calls (the service, the caller of a call, the session's
thread) is its server's, reached from the call's context (:func:`api.mcp.host.host_of`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from api.errors import tool_error
from api.mcp.host import host_of
from hivemem.audit_schemas import AuditRequest
from hivemem.errors import ValidationError
from hivemem.forget_schemas import BulkForgetRequest
from hivemem.limits import DEFAULT_LIMITS
from hivemem.model import GLOBAL_SCOPE, MemoryState, MemoryType, Source
from hivemem.schemas import (
    MAX_LINKS,
    MAX_QUERIES,
    Content,
    FilePath,
    HandoffItems,
    HandoffSave,
    HandoffSummary,
    LinkCreate,
    MemoryCreate,
    Queries,
    RecallLimit,
    RecallRequest,
    ScopeName,
    Tag,
    ThreadName,
    Timestamp,
    Title,
)
from hivemem.token_schemas import MAX_GRANTS, GrantText, PrincipalName, TokenCreate

__all__ = [
    "ADMIN",
    "FORGET",
    "HANDOFF",
    "JOB",
    "MAX_TOOL_EXPORT_CHARS",
    "MEMORIZE",
    "MEMORY",
    "MEMORY_STATUS",
    "REMEMBER",
    "action_arguments",
    "admin",
    "forget",
    "handoff",
    "job",
    "memorize",
    "memory",
    "memory_status",
    "memory_tools",
    "remember",
    "reporting",
]

MEMORIZE = """Save one durable memory: a decision and why, a bug fix and its root cause, a failure, a user \
preference, a convention, a fact that took effort to find.
{writes_to}
Call `remember` first: if it is already known, don't store it again (identical content only reinforces \
the existing memory).
One idea per memory. Title: short and specific. Content: self-contained, readable months later without \
this conversation: what, why, where (files, components).
Importance: 0.9-1.0 critical (security, data loss, hard constraints); 0.7-0.8 decisions, architecture; \
0.5 normal facts and fixes; 0.2-0.3 minor details.
source: `user_confirmed` when the user stated or approved it, `agent_inferred` when you concluded it.
related_to links it to memories by id: a finding `achieves` a goal (`memory_type: goal`); the note that \
finishes a goal `closes` it, which consolidates the goal's findings under that note; `supersedes` marks \
an old fact no longer valid.
The answer names the memory's `id`, its `scope` and the `outcome`; an answer without `outcome` means the \
memory is accepted and queued: `job` tells when it is stored. After an `unavailable` error, calling again \
is safe: identical content is never stored twice."""

JOB = """State of a memorize job by its `job_id`: queued, running, done (with each memory's id and outcome) \
or failed (with the error)."""

REMEMBER = """Recall memories by meaning. Use it before deciding, designing, debugging, or asking the user \
something they may have said before, and before `memorize` (to avoid duplicates).
{reads_from}
Give 1-5 queries phrased differently (the error message, the component, the question); results are fused, \
best first. [CONFIRMED] results were confirmed by a user; [INFERRED] ones were concluded by an agent: \
verify those before relying on them. A result with `valid_to` was superseded by a newer memory: history, \
not the current fact.
Optional filters: memory_types, tags, created_after/created_before (RFC 3339 with timezone)."""

FORGET = """Delete one memory for good (the deletion is audited). Only for memories that are wrong, \
harmful or stored by mistake. Don't forget things for being old: old memories fade from results on \
their own and may still matter. Requires `confirm: true`; take the id from `remember`. {finds_by_id} \
Without `id` (admin on the scope): a `query` and/or filters first answer a dry run (count, titles, \
`preview_token`); the same call with `confirm: true` and the token deletes exactly that set."""

HANDOFF = """Session handoff. `action: save` at the end of a session (or before the context runs out): \
`summary` of where the work stands, and the lists `completed`, `in_progress`, `blocked`, `next_steps`. \
`action: load` at the start of a session: the latest handoff of the project, or null. {works_in}"""

MEMORY_STATUS = """Where the project's memory stands: counts by type and state, documents indexed (search them \
with `knowledge`), open failures by component and severity, features not done with their status and completion, \
when memories were last consolidated, and jobs waiting. {works_in}"""

MEMORY = """One memory up close, and taking back what the memory system did to it. `action: get` with `id`: \
the memory whole, with its relations (edges to other memories). `action: history` with `id`: its audit \
records, newest first (merges, supersedes, consolidations, forgets, undos), each with its `id`. \
`action: verify` with `id`: it still holds (clears `[STALE? …]`). \
`action: undo` with `audit_id`: undo the merge, supersede or consolidation a record names, putting the \
memories back as they were (admin on its scope; audited). `action: export`: the scope's memories, relations \
and documents as JSON lines (the file `hivemem import` reads). {finds_by_id}"""

ADMIN = """Team server administration (admins of every scope): `action: tokens` lists the tokens (never their \
secrets); `action: create_token` makes one for `name` with `grants` (`PATTERN:ROLE`, role read, write or \
admin) and answers its secret once; `action: revoke_token` revokes `token_id`, refused from the next request."""


def action_arguments(
    action: str, given: Mapping[str, object], takes: tuple[str, ...], needs: str | None = None
) -> None:
    """Refuse what one action of a tool with several cannot take: an argument outside ``takes`` that
    was given, or ``needs`` left out (one schema serves every action, so these are checked here)."""
    extra = [name for name, value in given.items() if value is not None and name not in takes]
    if extra:
        raise ValidationError(f"`{action}` takes no {', '.join(extra)}", field=extra[0])
    if needs is not None and given.get(needs) is None:
        article = "an" if needs[0] in "aeiou" else "a"
        raise ValidationError(f"`{action}` needs {article} `{needs}`", field=needs)


def reporting(tool: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The tool, with every failure turned into an MCP tool error an agent can act on, and each
    call told to its server's metrics (:class:`api.mcp.host.ToolHost`)."""

    @functools.wraps(tool)
    def reporting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        ctx = kwargs.get("ctx")
        on_call = host_of(ctx).on_tool_call if isinstance(ctx, Context) else None
        began = time.perf_counter()
        failed = True
        try:
            answer = tool(*args, **kwargs)
            failed = False
            return answer
        except Exception as exc:
            raise tool_error(exc) from exc
        finally:
            if on_call is not None:
                on_call(tool.__name__, time.perf_counter() - began, failed)

    return reporting


# The list arguments, bounded as a memory's lists are (the input limits in force).
TagList = Annotated[list[Tag], Field(max_length=DEFAULT_LIMITS.max_tags)]
FileList = Annotated[list[FilePath], Field(max_length=DEFAULT_LIMITS.max_related_files)]

MAX_TOOL_EXPORT_CHARS = 100_000
"""The longest export the ``memory`` tool answers with (about 25,000 tokens, what agents' MCP
clients show of a tool's answer by default); a longer one is for the CLI or REST."""


def memorize(
    ctx: Context[Any, Any],
    title: Annotated[Title, Field(description='Short title naming the subject, e.g. "Billing service owner".')],
    content: Annotated[Content, Field(description="Self-contained content.")],
    memory_type: Annotated[MemoryType, Field(description="Kind of memory.")] = MemoryType.FACT,
    importance: Annotated[StrictFloat, Field(ge=0, le=1, description="0-1, see the guide above.")] = 0.5,
    source: Annotated[Source, Field(description="Who vouches for it.")] = Source.AGENT_INFERRED,
    tags: Annotated[TagList | None, Field(description="Keywords for filtering.")] = None,
    related_files: Annotated[FileList | None, Field(description="Paths this memory is about.")] = None,
    details: Annotated[
        dict[str, Any] | None,
        Field(description="Structured fields, e.g. a failure's error, component, severity, root_cause, fix."),
    ] = None,
    related_to: Annotated[
        list[LinkCreate] | None,
        Field(
            max_length=MAX_LINKS,
            description="Edges to existing memories: {target_id, relationship_type, strength?, description?}; "
            "`achieves` a goal, `closes` a goal (consolidates its findings), `supersedes` an old fact.",
        ),
    ] = None,
    scope: Annotated[ScopeName | None, Field(description="Another project's scope.")] = None,
    global_: Annotated[StrictBool, Field(alias="global", description="Store for every project.")] = False,
    thread: Annotated[
        ThreadName | None,
        Field(
            description="The conversation or task this is one step of (your id for it): recall reads "
            "each memory with its neighbours in the thread, and lifts the other memories of the thread it "
            "finds best. Default: this session (what one session memorizes is one thread)."
        ),
    ] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    if global_ and scope is not None:
        raise ValidationError("pass either `scope` or `global: true`, not both", field="global")
    request = MemoryCreate(
        title=title,
        content=content,
        memory_type=memory_type,
        importance=importance,
        source=source,
        tags=tags or [],
        related_files=related_files or [],
        details=details or {},
        related_to=related_to or [],
        scope=GLOBAL_SCOPE if global_ else scope,
        thread=thread,
    )
    who = host.caller(ctx)
    if thread is None:
        request.thread = host.threads.of(
            headers=ctx.headers,
            connection_state=ctx.request_context.lifespan_context,
            meta=ctx.request_context.meta,
            principal=who.principal or "",
            scope=request.scope if request.scope is not None else (who.default_scope or ""),
        )
    return host.service().memorize(request, who).model_dump(mode="json")


def _by_wire_names(memorize: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``memorize`` called with the schema's names: `global` is a Python keyword, so the schema
    names it `global` and the function takes `global_`."""

    @functools.wraps(memorize)
    def memorize_by_wire_names(**kwargs: Any) -> dict[str, Any]:
        if "global" in kwargs:
            kwargs["global_"] = kwargs.pop("global")
        return memorize(**kwargs)

    return memorize_by_wire_names


def remember(
    ctx: Context[Any, Any],
    query: Annotated[Queries, Field(description=f"A query, or 1-{MAX_QUERIES} queries to fuse.")],
    limit: Annotated[RecallLimit, Field(description="How many results (1-100).")] = 10,
    memory_types: Annotated[list[MemoryType] | None, Field(description="Only these kinds.")] = None,
    tags: Annotated[TagList | None, Field(description="Only memories with one of these tags.")] = None,
    created_after: Annotated[Timestamp | None, Field(description="Created at or after.")] = None,
    created_before: Annotated[Timestamp | None, Field(description="Created before.")] = None,
    states: Annotated[
        list[MemoryState] | None,
        Field(min_length=1, max_length=3, description="Default working and consolidated; `archived`: faded ones."),
    ] = None,
    scope: Annotated[ScopeName | None, Field(description="Another project's scope.")] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    request = RecallRequest(
        query=query,
        limit=limit,
        memory_types=memory_types,
        states=states,
        tags=tags,
        created_after=created_after,
        created_before=created_before,
        scope=scope,
    )
    return host.service().remember(request, host.caller(ctx)).model_dump(mode="json", exclude_none=True)


def job(
    ctx: Context[Any, Any],
    job_id: Annotated[StrictStr, Field(min_length=1, max_length=200, description="The job_id a memorize gave.")],
) -> dict[str, Any]:
    host = host_of(ctx)
    return host.service().job(job_id, host.caller(ctx)).model_dump(mode="json")


def memory_status(
    ctx: Context[Any, Any],
    scope: Annotated[ScopeName | None, Field(description="Another project's scope.")] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    return host.service().status(host.caller(ctx), scope=scope).model_dump(mode="json")


def forget(
    ctx: Context[Any, Any],
    id: Annotated[
        StrictStr | None,
        Field(min_length=1, max_length=200, description="The memory id, from remember (leave out for bulk)."),
    ] = None,
    confirm: Annotated[StrictBool, Field(description="Must be true to delete.")] = False,
    scope: Annotated[ScopeName | None, Field(description="The memory's project scope.")] = None,
    # In bulk (no id), as `remember` takes them. Plain here, checked whole by BulkForgetRequest:
    # every session's context pays for a schema, and these would repeat remember's enums and patterns.
    query: StrictStr | None = None,
    memory_types: list[StrictStr] | None = None,
    tags: list[StrictStr] | None = None,
    states: list[StrictStr] | None = None,
    author: StrictStr | None = None,
    created_after: StrictStr | None = None,
    created_before: StrictStr | None = None,
    limit: StrictInt | None = None,
    preview_token: StrictStr | None = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    bulk: dict[str, Any] = {"query": query, "memory_types": memory_types, "tags": tags, "states": states}
    bulk |= {"author": author, "created_after": created_after, "created_before": created_before}
    bulk |= {"limit": limit, "preview_token": preview_token}
    asked = {k: v for k, v in bulk.items() if v is not None}
    if id is None:
        request = BulkForgetRequest.model_validate(asked | {"scope": scope, "confirm": confirm})
        return host.service().forget_matching(request, host.caller(ctx)).model_dump(mode="json")
    if asked:
        raise ValidationError(f"{sorted(asked)[0]}: forgets in bulk, without an `id`", field=sorted(asked)[0])
    removed = host.service().forget(id, confirm=confirm, caller=host.caller(ctx), scope=scope)
    return {"forgotten": removed.id, "title": removed.title, "scope": removed.scope}


def admin(
    ctx: Context[Any, Any],
    action: Annotated[
        Literal["tokens", "create_token", "revoke_token"], Field(description="list, create or revoke tokens.")
    ],
    name: Annotated[PrincipalName | None, Field(description="create_token: who it is for.")] = None,
    grants: Annotated[
        list[GrantText] | None,
        Field(max_length=MAX_GRANTS, description="create_token: PATTERN:ROLE, e.g. github.com/acme/*:write."),
    ] = None,
    expires_in_days: Annotated[
        StrictFloat | None, Field(gt=0, le=3650, description="create_token: days until it stops working.")
    ] = None,
    token_id: Annotated[
        StrictStr | None, Field(pattern=r"^[0-9a-f]{12}$", description="revoke_token: the token's id.")
    ] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    given = {"name": name, "grants": grants, "expires_in_days": expires_in_days, "token_id": token_id}
    tokens = host.service().tokens
    if action == "tokens":
        action_arguments(action, given, takes=())
        return {"tokens": [t.model_dump(mode="json") for t in tokens.list(host.caller(ctx))]}
    if action == "create_token":
        action_arguments(action, given, takes=("name", "grants", "expires_in_days"), needs="name")
        assert name is not None  # checked just above
        request = TokenCreate(name=name, grants=grants or [], expires_in_days=expires_in_days)
        return tokens.create(request, host.caller(ctx)).model_dump(mode="json")
    action_arguments(action, given, takes=("token_id",), needs="token_id")
    assert token_id is not None  # checked just above
    return tokens.revoke(token_id, host.caller(ctx)).model_dump(mode="json")


def handoff(
    ctx: Context[Any, Any],
    action: Annotated[Literal["save", "load"], Field(description="save a handoff, or load the latest.")],
    summary: Annotated[HandoffSummary | None, Field(description="save: where the work stands.")] = None,
    completed: Annotated[HandoffItems | None, Field(description="save: what was finished.")] = None,
    in_progress: Annotated[HandoffItems | None, Field(description="save: what is under way.")] = None,
    blocked: Annotated[HandoffItems | None, Field(description="save: what waits, and on what.")] = None,
    next_steps: Annotated[HandoffItems | None, Field(description="save: what to do next.")] = None,
    scope: Annotated[ScopeName | None, Field(description="Another project's scope.")] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    lists = {"completed": completed, "in_progress": in_progress, "blocked": blocked, "next_steps": next_steps}
    given = {"summary": summary, **lists}
    if action == "load":
        action_arguments("load", given, takes=())
        latest = host.service().load_handoff(host.caller(ctx), scope=scope)
        return {"handoff": None if latest is None else latest.model_dump(mode="json")}
    action_arguments("save", given, takes=tuple(given), needs="summary")
    assert summary is not None  # checked just above
    request = HandoffSave(summary=summary, scope=scope, **{k: v for k, v in lists.items() if v is not None})
    return host.service().save_handoff(request, host.caller(ctx)).model_dump(mode="json")


def memory(
    ctx: Context[Any, Any],
    action: Annotated[
        Literal["get", "history", "verify", "undo", "export"],
        Field(description="get a memory, read its history, verify it still holds, undo a change, or export."),
    ],
    id: Annotated[
        StrictStr | None, Field(min_length=1, max_length=64, description="get, history, verify: the memory id.")
    ] = None,
    audit_id: Annotated[
        StrictStr | None, Field(min_length=1, max_length=64, description="undo: the record's id, from history.")
    ] = None,
    scope: Annotated[
        ScopeName | None,
        Field(description="get, history, verify: the memory's project scope; export: the scope."),
    ] = None,
) -> dict[str, Any]:
    host = host_of(ctx)
    given = {"id": id, "audit_id": audit_id, "scope": scope}
    if action == "export":
        action_arguments(action, given, takes=("scope",))
        who = host.caller(ctx)
        # A session locked to a project exports that project; otherwise `scope`, or all it may read.
        named = scope if scope is not None else (who.default_scope if who.locked else None)
        lines: list[str] = []
        size = 0
        for line in host.service().transfer.export(who, None if named is None else [named]):
            size += len(line) + 1
            if size > MAX_TOOL_EXPORT_CHARS:
                # A tool's answer lands in the agent's context: the rest is read no further.
                raise ValidationError(
                    f"the export is longer than {MAX_TOOL_EXPORT_CHARS:,} characters, too long for a tool's "
                    "answer: name one `scope`, or use `hivemem export` or GET /v1/export",
                    field="action",
                )
            lines.append(line)
        return {"lines": len(lines), "export": "\n".join(lines) + "\n"}
    if action == "undo":
        action_arguments(action, given, takes=("audit_id",), needs="audit_id")
        assert audit_id is not None  # checked just above
        return host.service().audit_trail.undo(audit_id, host.caller(ctx)).model_dump(mode="json")
    action_arguments(action, given, takes=("id", "scope"), needs="id")
    assert id is not None  # checked just above
    if action == "get":
        return host.service().get(id, host.caller(ctx), scope=scope).model_dump(mode="json")
    if action == "verify":
        return host.service().operators.verify(id, host.caller(ctx), scope=scope).model_dump(mode="json")
    records = host.service().audit_trail.search(AuditRequest(memory_id=id, scope=scope), host.caller(ctx))
    return {"records": [record.model_dump(mode="json") for record in records]}


_WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False)
_DELETES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False)
_READS = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
# Each tool but `knowledge` (api.mcp.knowledge), with the text an agent reads and what it does.
_TOOLS: tuple[tuple[Callable[..., dict[str, Any]], str, ToolAnnotations], ...] = (
    (memorize, MEMORIZE, ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)),
    (remember, REMEMBER, _READS),
    (job, JOB, _READS),
    (forget, FORGET, _DELETES),
    (handoff, HANDOFF, _WRITES),
    (memory, MEMORY, _WRITES),
    (admin, ADMIN, _DELETES),
    (memory_status, MEMORY_STATUS, _READS),
)


def memory_tools() -> list[Tool]:
    """The tools but ``knowledge``, new for one server, in the order clients have always listed them."""
    tools = [
        Tool.from_function(reporting(function), description=text, annotations=notes) for function, text, notes in _TOOLS
    ]
    # memorize's schema names `global`, a Python keyword: its tool calls it by the schema's names.
    by_name = {tool.name: tool for tool in tools}
    by_name["memorize"].fn = reporting(_by_wire_names(memorize))
    return tools
