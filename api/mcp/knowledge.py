"""The MCP ``knowledge`` tool: one tool, six commands, over :class:`api.services.knowledge.KnowledgeService`.

Each command takes its own arguments; an argument another command takes is refused with a
message that says which ones this command uses, so an agent learns the interface from one error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import Field, StrictBool, StrictInt, StrictStr

from api.mcp.host import host_of
from api.mcp.tools import reporting
from api.services.caller import Caller
from api.services.knowledge import KnowledgeService
from hivemem.errors import ValidationError
from hivemem.knowledge_schemas import (
    MAX_STORED_TEXT,
    KnowledgeDeleteRequest,
    KnowledgeMatchRequest,
    KnowledgeReadRequest,
    KnowledgeSearchRequest,
    KnowledgeStoreRequest,
)
from hivemem.schemas import QueryText, ScopeName
from workers.documents.sources import FileAccess

__all__ = ["KNOWLEDGE", "knowledge", "knowledge_tool"]

KNOWLEDGE = """Search and read the documents this team's agents have read: design docs, manuals, specs, \
web pages (pdf, docx, html, md, txt, http(s) URLs). Memories (`remember`) hold what was concluded; \
knowledge holds what was read. Commands:
- `search` (`query`; optional `source`, one file or URL, indexed first when new or changed; `limit`): \
chunks best first, each citing its source, title, section path, page and offsets.
- `read` (`source`: a file, URL, `key:NAME` or `repo:PATH`, a file of this project's checkout as cited; \
`offset`, `limit` in characters): the full text, a page at a time, \
with the headings (and PDF pages) in force in it as `sections`; a document that cannot be \
read now (not allowed here, gone, a site down) is read from its indexed copy (`stored`).
- `match` (`pattern`, a regular expression; optional `source`, `ignore_case`, `limit`): exact matches in \
indexed chunks.
- `store` (`key`, `text`, optional `title`): index text under a key in this project's scope.
- `delete` (`source`: `key:NAME`, a file or a URL): remove an indexed document.
- `sources` (optional `offset`, `limit`): the documents indexed in this project's scope and global, \
{page} at a time, each with its title, format and chunks, or why its last indexing failed; `total` counts them all.
{files}"""

_USES: dict[str, set[str]] = {
    "search": {"query", "source", "limit", "scope"},
    "read": {"source", "offset", "limit", "scope"},
    "match": {"pattern", "source", "ignore_case", "limit", "scope"},
    "store": {"key", "text", "title", "scope"},
    "delete": {"source", "scope"},
    "sources": {"offset", "limit", "scope"},
}
SOURCES_PAGE = 50
"""Documents one ``sources`` answer lists unless ``limit`` says otherwise (about 15,000 characters):
a team's index can hold thousands, more than an agent's context should take at once."""
_NEEDS: dict[str, set[str]] = {
    "search": {"query"},
    "read": {"source"},
    "match": {"pattern"},
    "store": {"key", "text"},
    "delete": {"source"},
    "sources": set(),
}


def files_text(over_stdio: bool) -> str:
    """What the tool can read from disk, in words."""
    if over_stdio:
        return "Local files are read from this machine by path; a folder is refused (index folders with the CLI)."
    return (
        "Over HTTP, the server reads local files only inside the folders its operator allows; otherwise "
        "`store` the text."
    )


def knowledge(
    ctx: Context[Any, Any],
    command: Annotated[
        Literal["search", "read", "match", "store", "delete", "sources"],
        Field(description="What to do (see above)."),
    ],
    query: Annotated[QueryText | None, Field(description="search: what to look for.")] = None,
    source: Annotated[
        Annotated[StrictStr, Field(min_length=1, max_length=4096)] | None,
        Field(description="A file path, an http(s) URL, key:NAME, or repo:PATH (a file of the project's checkout)."),
    ] = None,
    pattern: Annotated[
        Annotated[StrictStr, Field(min_length=1, max_length=500)] | None,
        Field(description="match: a regular expression."),
    ] = None,
    ignore_case: Annotated[StrictBool | None, Field(description="match: case-insensitive.")] = None,
    key: Annotated[
        Annotated[StrictStr, Field(min_length=1, max_length=200)] | None, Field(description="store: the key.")
    ] = None,
    text: Annotated[
        Annotated[StrictStr, Field(min_length=1, max_length=MAX_STORED_TEXT)] | None,
        Field(description="store: the text."),
    ] = None,
    title: Annotated[Annotated[StrictStr, Field(max_length=200)] | None, Field(description="store: a title.")] = None,
    offset: Annotated[
        StrictInt | None, Field(ge=0, description="read: first character; sources: first document.")
    ] = None,
    limit: Annotated[
        StrictInt | None, Field(ge=1, description="search/match: results; read: characters; sources: documents.")
    ] = None,
    scope: Annotated[ScopeName | None, Field(description="Another project's scope.")] = None,
) -> dict[str, Any]:
    values = {
        "query": query,
        "source": source,
        "pattern": pattern,
        "ignore_case": ignore_case,
        "key": key,
        "text": text,
        "title": title,
        "offset": offset,
        "limit": limit,
        "scope": scope,
    }
    _check(command, {name for name, value in values.items() if value is not None})
    host = host_of(ctx)
    # Over stdio the client started this server in its project folder: `repo:` names are found there.
    access = FileAccess(project=Path.cwd()) if host.over_stdio else FileAccess.over_http(host.service().settings)
    return _answer(command, host.service().knowledge, host.caller(ctx), access, values)


def knowledge_tool(over_stdio: bool) -> Tool:
    """The ``knowledge`` tool, new for one server: over stdio it reads local files by path."""
    return Tool.from_function(
        reporting(knowledge),
        description=KNOWLEDGE.format(files=files_text(over_stdio), page=SOURCES_PAGE),
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=True),
    )


def _check(command: str, given: set[str]) -> None:
    """Refuse an argument the command does not take, or one it needs and lacks, naming it."""
    extra = sorted(given - _USES[command])
    if extra:
        raise ValidationError(
            f"`{command}` does not take {', '.join(extra)}; it takes {', '.join(sorted(_USES[command]))}",
            field=extra[0],
        )
    missing = sorted(_NEEDS[command] - given)
    if missing:
        raise ValidationError(f"`{command}` needs {', '.join(missing)}", field=missing[0])


def _answer(
    command: str, knowledge: KnowledgeService, who: Caller, files: FileAccess, values: dict[str, Any]
) -> dict[str, Any]:
    """Run a checked ``knowledge`` command; its answer as JSON."""
    options = {k: values[k] for k in ("limit", "scope", "source") if values[k] is not None}
    if command == "search":
        found = knowledge.search(KnowledgeSearchRequest(query=values["query"], **options), who, files)
        return found.model_dump(mode="json")
    if command == "read":
        read = KnowledgeReadRequest(offset=values["offset"] or 0, **options)
        return knowledge.read(read, who, files).model_dump(mode="json")
    if command == "match":
        matched = KnowledgeMatchRequest(pattern=values["pattern"], ignore_case=bool(values["ignore_case"]), **options)
        return knowledge.match(matched, who, files).model_dump(mode="json")
    if command == "store":
        stored = KnowledgeStoreRequest(key=values["key"], text=values["text"], title=values["title"] or "", **options)
        return knowledge.store_text(stored, who).model_dump(mode="json")
    if command == "sources":
        page = knowledge.sources_page(who, values["scope"], values["offset"] or 0, values["limit"] or SOURCES_PAGE)
        return page.model_dump(mode="json")
    return knowledge.delete(KnowledgeDeleteRequest(**options), who, files).model_dump(mode="json")
