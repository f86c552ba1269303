"""Creating what the OpenSearch store needs: index templates, versioned indices behind aliases, pipelines.

Idempotent and safe to run from several processes at once: an index that another process created
first counts as existing. The store runs :func:`ensure` with ``update=False`` when it opens (create
what is missing, check the rest); ``hivemem opensearch setup`` runs it with ``update=True`` (also
rewrite templates and pipelines from the current settings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hivemem.config import Settings
from hivemem.errors import ConfigError, EmbeddingMismatchError, StoreError, StoreUnavailableError
from hivemem.model import FusionMethod
from search.opensearch import bodies, knowledge_bodies
from search.opensearch.bodies import IndexNames, IndexOptions
from search.opensearch.client import ClusterTarget
from search.opensearch.errors import AlreadyExists, translate_errors

__all__ = [
    "NEURAL_SEARCH",
    "SetupReport",
    "check_memory_index",
    "ensure",
    "exported_files",
    "installed_plugins",
    "recorded_model",
    "templates",
]

Json = dict[str, Any]

# The plugin that brings the ``hybrid`` query and the normalization / RRF search processors.
NEURAL_SEARCH = "opensearch-neural-search"


@dataclass(slots=True)
class SetupReport:
    """What :func:`ensure` did, one line per object: ``(kind, name, outcome)``."""

    lines: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, kind: str, name: str, outcome: str) -> None:
        self.lines.append((kind, name, outcome))

    @property
    def failed(self) -> list[tuple[str, str, str]]:
        """The lines whose outcome is a failure."""
        return [line for line in self.lines if line[2].startswith("failed")]

    @property
    def skipped(self) -> list[tuple[str, str, str]]:
        """The lines of objects left out because the cluster cannot hold them."""
        return [line for line in self.lines if line[2].startswith("skipped")]

    def render(self) -> str:
        """One line per object, for the CLI."""
        return "\n".join(f"{kind:<15} {name:<40} {outcome}" for kind, name, outcome in self.lines)


def templates(names: IndexNames, options: IndexOptions, *, embedding_model: str, dimension: int) -> dict[str, Json]:
    """Every index template, keyed by the alias it serves."""
    return {
        names.memories: bodies.memory_template(names, options, embedding_model=embedding_model, dimension=dimension),
        names.relations: bodies.relations_template(names, options),
        names.audit: bodies.audit_template(names, options),
        names.claims: bodies.claims_template(names, options),
        names.sources: knowledge_bodies.sources_template(names, options),
        names.chunks: knowledge_bodies.chunks_template(names, options, dimension=dimension),
        names.tokens: bodies.tokens_template(names, options),
    }


def exported_files(
    names: IndexNames, options: IndexOptions, *, embedding_model: str, dimension: int
) -> dict[str, Json]:
    """The JSON files of ``deploy/opensearch/``: every template and both search pipelines."""
    built = templates(names, options, embedding_model=embedding_model, dimension=dimension)
    files = {f"index-template{alias[len(names.prefix) :]}.json": body for alias, body in built.items()}
    for fusion in FusionMethod:
        files[f"search-pipeline-{fusion.value}.json"] = bodies.search_pipeline(options, fusion)
    return files


def check_memory_index(
    client: Any, target: ClusterTarget, names: IndexNames, embedding_model: str, dimension: int
) -> None:
    """Refuse a memories index built for another embedding model, dimension or schema version, and
    one hivemem did not make (no ``_meta.hivemem``, or its vector field no ``knn_vector``)."""
    with translate_errors(target.display, f"reading the mapping of {names.memories}"):
        response = client.indices.get_mapping(index=names.memories)
    for index, body in response.items():
        mappings = body.get("mappings", {})
        meta = mappings.get("_meta", {}).get("hivemem", {})
        vector = mappings.get("properties", {}).get(bodies.VECTOR_FIELD, {})
        stored_dim = vector.get("dimension")
        problems = [] if meta else ["no _meta.hivemem"]
        if vector.get("type") != "knn_vector":
            problems.append(f"{bodies.VECTOR_FIELD!r} is {vector.get('type') or 'missing'}, not knn_vector")
        if problems:
            # Made by hand or by another program: writing into it would fail per document, or index
            # vectors nobody can search. Nothing is changed; the operator picks a prefix or drops it.
            raise ConfigError(
                f"OpenSearch index {index} was not made by hivemem ({'; '.join(problems)}): use another "
                "?index= prefix, or delete the index for hivemem to make its own"
            )
        if meta.get("schema_version") != names.version:
            raise StoreUnavailableError(
                f"OpenSearch index {index} has hivemem schema version {meta.get('schema_version')!r}, this hivemem "
                f"reads version {names.version}: reindex it or use another ?index= prefix"
            )
        if meta.get("embedding_model") != embedding_model or stored_dim != dimension:
            raise EmbeddingMismatchError(
                f"OpenSearch index {index} was built with embedding model {meta.get('embedding_model')!r} "
                f"({stored_dim} dims), but {embedding_model!r} ({dimension} dims) is configured; set "
                "HIVEMEM_EMBED_MODEL back or use another ?index= prefix"
            )


def recorded_model(url: str, settings: Settings | None = None) -> tuple[str, int] | None:
    """The embedding model and dimension the memories index at ``url`` records (``_meta.hivemem``);
    None when there is no such index yet or the cluster cannot be reached."""
    from search.opensearch.client import make_client, parse_url

    target = parse_url(url)
    settings = settings if settings is not None else Settings.model_construct()
    names = IndexNames(target.index or settings.opensearch_index)
    client = make_client(target, settings)
    try:
        with translate_errors(target.display, f"reading the mapping of {names.memories}"):
            response = client.indices.get_mapping(index=names.memories)
    except StoreError:
        return None
    finally:
        client.close()
    for body in response.values():
        meta = body.get("mappings", {}).get("_meta", {}).get("hivemem", {})
        if "embedding_model" in meta and "dimension" in meta:
            return str(meta["embedding_model"]), int(meta["dimension"])
    return None


def installed_plugins(client: Any, target: ClusterTarget) -> set[str] | None:
    """The plugins installed on the cluster's nodes, or None when the cluster does not list them."""
    try:
        with translate_errors(target.display, "listing the plugins"):
            rows = client.cat.plugins(format="json")
    except StoreUnavailableError:
        raise
    except StoreError:
        return None
    if not isinstance(rows, list):
        return None
    return {str(row.get("component")) for row in rows if isinstance(row, dict)}


def _attempt(report: SetupReport, kind: str, name: str, outcome: str, call: Callable[[], object]) -> bool:
    try:
        call()
    except StoreUnavailableError:
        raise
    except StoreError as exc:
        report.add(kind, name, f"failed: {exc}")
        return False
    report.add(kind, name, outcome)
    return True


def _add_fields(client: Any, target: ClusterTarget, alias: str, fields: Json, report: SetupReport) -> None:
    """Put the fields added since the index was made on it (mappings only grow; idempotent)."""

    def put() -> None:
        with translate_errors(target.display, f"updating the mapping of {alias}"):
            client.indices.put_mapping(index=alias, body={"properties": fields})

    _attempt(report, "mapping", alias, "fields added", put)


def ensure(
    client: Any,
    target: ClusterTarget,
    names: IndexNames,
    options: IndexOptions,
    *,
    embedding_model: str,
    dimension: int,
    update: bool,
    pipelines: bool,
) -> SetupReport:
    """Create (and with ``update`` rewrite) templates, versioned indices with their aliases, and pipelines.

    Raises ``EmbeddingMismatchError`` when the memories index exists for another model or
    dimension, ``StoreUnavailableError`` when the cluster cannot be reached. Pipelines are
    reported as skipped on a cluster that lists its plugins without neural-search, and as failed
    when the cluster refuses them; neither is raised.
    """
    report = SetupReport()
    for alias, template in templates(names, options, embedding_model=embedding_model, dimension=dimension).items():
        template_name = names.template(alias)
        with translate_errors(target.display, f"checking template {template_name}"):
            template_exists = bool(client.indices.exists_index_template(name=template_name))
        if update or not template_exists:

            def put(name: str = template_name, body: Json = template) -> None:
                with translate_errors(target.display, f"writing index template {name}"):
                    client.indices.put_index_template(name=name, body=body)

            _attempt(report, "index template", template_name, "updated" if template_exists else "created", put)
        else:
            report.add("index template", template_name, "exists")

        with translate_errors(target.display, f"checking alias {alias}"):
            alias_exists = bool(client.indices.exists_alias(name=alias))
        if alias_exists:
            report.add("alias", alias, "exists")
            if alias == names.memories:
                # Before any field is put on it: an index that is not hivemem's is left as it was.
                check_memory_index(client, target, names, embedding_model, dimension)
            added = {names.relations: bodies.ADDED_RELATION_FIELDS, names.memories: bodies.ADDED_MEMORY_FIELDS}
            if alias in added:
                _add_fields(client, target, alias, added[alias], report)
            continue
        index = names.index(alias)
        body = {**template["template"], "aliases": {alias: {"is_write_index": True}}}
        try:
            with translate_errors(target.display, f"creating index {index}"):
                client.indices.create(index=index, body=body)
            report.add("index + alias", f"{index} <- {alias}", "created")
        except AlreadyExists:
            report.add("index + alias", f"{index} <- {alias}", "exists (created concurrently)")
    check_memory_index(client, target, names, embedding_model, dimension)
    if pipelines:
        plugins = installed_plugins(client, target)
        if plugins is not None and NEURAL_SEARCH not in plugins:
            for fusion in FusionMethod:
                reason = f"skipped: the cluster has no {NEURAL_SEARCH} plugin (hybrid=core needs none)"
                report.add("search pipeline", bodies.pipeline_name(names, fusion), reason)
            return report
        for fusion in FusionMethod:
            name = bodies.pipeline_name(names, fusion)
            pipeline = bodies.search_pipeline(options, fusion)

            def put_pipeline(name: str = name, body: Json = pipeline) -> None:
                with translate_errors(target.display, f"writing search pipeline {name}"):
                    client.search_pipeline.put(id=name, body=body)

            _attempt(report, "search pipeline", name, "written", put_pipeline)
    return report
