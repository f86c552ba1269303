"""Validate OpenSearch request bodies against the official API specification (../shared/opensearch-api-spec).

How (see the spec's SOURCE.md): every YAML file is loaded as YAML 1.2 (``no``/``yes`` stay strings)
and registered in a ``referencing`` registry under a URI that mirrors the folder, Draft 2020-12.
A strict overlay adds ``unevaluatedProperties: false`` to closed object schemas (not to ``allOf``
building blocks nor to free-form maps), so a misspelled key or an unknown query type fails.
On top come rules the spec cannot say: ``k >= 1``, one of ``k``/``min_score``/``max_distance``,
vector length = the mapped dimension, ``hybrid`` only at the top with 1–5 sub-queries and no
boost, pipeline weights summing to 1, sane ``knn_vector`` methods. ``_msearch`` and ``_bulk``
NDJSON are validated line by line.

:class:`SpecValidator.validate_request` dispatches on the HTTP method and path, as a client sends
them; :func:`checked_connection` wraps opensearch-py's connection so every request is validated
before it leaves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO = Path(__file__).resolve().parent.parent
SPEC_DIR = REPO.parent / "shared" / "opensearch-api-spec" / "spec"
BASE_URI = "https://opensearch-api-spec.local/spec/"
_CORE = "namespaces/_core.yaml#/components/requestBodies"
_INDICES = "namespaces/indices.yaml#/components/requestBodies"
_TYPE_MAPPING = "schemas/_common.mapping.yaml#/components/schemas/TypeMapping"

Json = dict[str, Any]


class SpecViolation(AssertionError):
    """A request body the OpenSearch API specification (or one of our extra rules) rejects."""


# -- loading -------------------------------------------------------------------------------------


class _Yaml12Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader with YAML 1.2 booleans: only true/false, so the enum value ``no`` stays a string."""


_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

_SCHEMA_KEYS_ONE = ("items", "not", "if", "then", "else", "contains", "propertyNames", "additionalProperties")
_SCHEMA_KEYS_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_KEYS_MAP = ("properties", "patternProperties", "$defs", "dependentSchemas")
_OPEN_MARKERS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def _subschemas(node: Json) -> Iterator[Json]:
    for key in _SCHEMA_KEYS_ONE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _SCHEMA_KEYS_MANY:
        for member in node.get(key) or []:
            if isinstance(member, dict):
                yield member
    for key in _SCHEMA_KEYS_MAP:
        if isinstance(node.get(key), dict):
            yield from (v for v in node[key].values() if isinstance(v, dict))


def _roots(doc: Json) -> Iterator[tuple[str, Json]]:
    """The schemas of one spec file with their JSON pointers: components.schemas and request bodies."""
    components = doc.get("components") or {}
    for name, schema in (components.get("schemas") or {}).items():
        yield f"/components/schemas/{name}", schema
    for name, body in (components.get("requestBodies") or {}).items():
        for media, content in (body.get("content") or {}).items():
            if isinstance(content.get("schema"), dict):
                pointer = f"/components/requestBodies/{name}/content/{media.replace('/', '~1')}/schema"
                yield pointer, content["schema"]


def _walk(node: Json) -> Iterator[Json]:
    yield node
    for sub in _subschemas(node):
        yield from _walk(sub)


def _resolve(docs: dict[str, Json], file_uri: str, ref: str) -> tuple[str, Json] | None:
    target = urljoin(file_uri, ref)
    uri, _, pointer = target.partition("#")
    node: Any = docs.get(uri)
    for part in [p for p in pointer.split("/") if p]:
        if not isinstance(node, dict):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return (target, node) if isinstance(node, dict) else None


def _is_free_form(node: Json) -> bool:
    extra = node.get("additionalProperties")
    return (extra is not None and extra is not False) or "patternProperties" in node


def _strict_overlay(docs: dict[str, Json]) -> None:
    """Close every object schema with fixed ``properties`` (in place), except ``allOf`` building blocks.

    A building block must stay open: its siblings in the ``allOf`` add the other keys. The schema
    holding the ``allOf`` is closed instead (``unevaluatedProperties`` sees through ``allOf``).
    """
    blocks: set[str] = set()
    inline_blocks: set[int] = set()
    for uri, doc in docs.items():
        for _, root in _roots(doc):
            for node in _walk(root):
                members = node.get("allOf") or []
                if len(members) < 2 and "properties" not in node:
                    continue  # a one-member allOf is an alias: its target may be closed
                for member in members:
                    if "$ref" in member:
                        resolved = _resolve(docs, uri, member["$ref"])
                        if resolved is not None:
                            blocks.add(resolved[0])
                    else:
                        inline_blocks.add(id(member))
    for uri, doc in docs.items():
        for pointer, root in _roots(doc):
            root_is_block = f"{uri}#{pointer}" in blocks
            for node in _walk(root):
                if (node is root and root_is_block) or id(node) in inline_blocks:
                    continue
                if any(key in node for key in _OPEN_MARKERS):
                    continue
                if "allOf" in node:
                    members = []
                    for member in node["allOf"]:
                        resolved = _resolve(docs, uri, member["$ref"]) if "$ref" in member else (uri, member)
                        members.append(resolved[1] if resolved else {"additionalProperties": True})
                    if any(_is_free_form(m) or ("properties" not in m and "allOf" not in m) for m in members):
                        continue
                    node["unevaluatedProperties"] = False
                elif isinstance(node.get("properties"), dict):
                    node["unevaluatedProperties"] = False


@cache
def load_registry(spec_dir: Path = SPEC_DIR) -> Registry:
    """Every spec file, strict overlay applied, under ``BASE_URI`` + its path relative to ``spec/``."""
    docs: dict[str, Json] = {}
    for path in sorted(spec_dir.rglob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            docs[BASE_URI + path.relative_to(spec_dir).as_posix()] = yaml.load(handle, Loader=_Yaml12Loader)
    _strict_overlay(docs)
    return Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in docs.items()
    )


# -- the validator -------------------------------------------------------------------------------


_KNN_SPACES = {"l2", "cosinesimil", "innerproduct", "l1", "linf", "hamming"}
_KNN_ENGINES = {"lucene", "faiss", "nmslib"}
_KNN_PARAMETERS = {"m", "ef_construction", "ef_search", "encoder", "nlist", "nprobes"}


def _walk_json(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _walk_json(sub, f"{path}.{key}")
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _walk_json(sub, f"{path}[{i}]")


class SpecValidator:
    """Validates bodies by endpoint; remembers the mappings it saw, to check vector lengths and fields."""

    def __init__(self, spec_dir: Path = SPEC_DIR) -> None:
        self._registry = load_registry(spec_dir)
        self.mappings: dict[str, Json] = {}
        self.seen: list[tuple[str, str]] = []
        self._valid: set[tuple[str, str]] = set()

    # - schemas -

    def validate(self, ref: str, instance: Any, what: str = "body") -> None:
        """Validate ``instance`` against the spec schema at ``ref`` (relative to ``spec/``)."""
        key = (ref, json.dumps(instance, sort_keys=True))
        if key in self._valid:  # mappings repeat in every test, and validating one takes ~0.4 s
            return
        validator = jsonschema.Draft202012Validator({"$ref": BASE_URI + ref}, registry=self._registry)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            location = "/".join(str(p) for p in best.absolute_path) or "(top)"
            missing = "; ".join(e.message for e in errors if e.validator == "required")
            message = f"{best.message[:500]}" + (f" ({missing})" if missing else "")
            raise SpecViolation(f"{what} violates {ref.rsplit('/', 1)[-1]} at {location}: {message}")
        self._valid.add(key)

    def _validate_mappings(self, body: Json, ref: str, what: str) -> None:
        """Validate ``body`` with its ``mappings`` checked on their own, so the (slow) mapping check is cached."""
        if "mappings" in body:
            self.validate(_TYPE_MAPPING, body["mappings"], f"{what} mappings")
            body = {**body, "mappings": {}}
        self.validate(ref, body, what)

    # - our own rules -

    def _mapping_of(self, index: str | None) -> Json | None:
        if index is None:
            return None
        return self.mappings.get(index)

    def check_query(self, body: Json, index: str | None) -> None:
        """Rules on a search body the spec cannot state."""
        mapping = self._mapping_of(index)
        for path, node in _walk_json(body.get("query", {}), "$.query"):
            if not isinstance(node, dict):
                continue
            if "hybrid" in node and isinstance(node["hybrid"], dict):
                if path != "$.query":
                    raise SpecViolation(f"hybrid query must be the top-level query, found at {path}")
                queries = node["hybrid"].get("queries") or []
                if not 1 <= len(queries) <= 5:
                    raise SpecViolation(f"hybrid query takes 1 to 5 sub-queries, got {len(queries)}")
                if "boost" in node["hybrid"]:
                    raise SpecViolation("hybrid query does not take boost")
            knn = node.get("knn")
            if isinstance(knn, dict) and not path.endswith(".properties"):
                for field, clause in knn.items():
                    if not isinstance(clause, dict):
                        continue
                    limits = [key for key in ("k", "min_score", "max_distance") if key in clause]
                    if len(limits) != 1:
                        raise SpecViolation(f"knn on {field}: give exactly one of k, min_score, max_distance")
                    if "k" in clause and (not isinstance(clause["k"], int) or clause["k"] < 1):
                        raise SpecViolation(f"knn on {field}: k must be >= 1, got {clause['k']!r}")
                    if mapping is not None:
                        spec = mapping.get("properties", {}).get(field)
                        if spec is None or spec.get("type") != "knn_vector":
                            raise SpecViolation(f"knn on {field}: {index} maps no knn_vector field {field!r}")
                        vector = clause.get("vector") or []
                        if len(vector) != spec["dimension"]:
                            raise SpecViolation(
                                f"knn on {field}: vector has {len(vector)} dimensions, the mapping {spec['dimension']}"
                            )
            if mapping is not None:
                self._check_fields(node, mapping, path)

    def _check_fields(self, node: Json, mapping: Json, path: str) -> None:
        fields: list[str] = []
        for kind in ("term", "terms", "range", "exists", "match"):
            clause = node.get(kind)
            if isinstance(clause, dict):
                fields += [clause["field"]] if kind == "exists" else [k for k in clause if not k.startswith("_")]
        for kind in ("combined_fields", "multi_match"):
            clause = node.get(kind)
            if isinstance(clause, dict):
                fields += list(clause.get("fields", []))
        properties = mapping.get("properties", {})
        for field in fields:
            head, _, sub = field.partition(".")
            known = head in properties and (not sub or sub in properties[head].get("fields", {}))
            if not known and head != "_id":
                raise SpecViolation(f"{path}: field {field!r} is not in the mapping")

    def check_mapping(self, body: Json) -> None:
        """Rules on index bodies: knn_vector methods, index.knn on when a vector is mapped."""
        mappings = body.get("mappings") or {}
        settings = body.get("settings") or {}
        vectors = {k: v for k, v in (mappings.get("properties") or {}).items() if v.get("type") == "knn_vector"}
        for field, spec in vectors.items():
            if not isinstance(spec.get("dimension"), int) or not 1 <= spec["dimension"] <= 16000:
                raise SpecViolation(f"knn_vector {field}: dimension must be 1..16000")
            method = spec.get("method") or {}
            if method.get("name") not in ("hnsw", "ivf"):
                raise SpecViolation(f"knn_vector {field}: method.name must be hnsw or ivf")
            if method.get("engine", "faiss") not in _KNN_ENGINES:
                raise SpecViolation(f"knn_vector {field}: unknown engine {method.get('engine')!r}")
            if method.get("space_type", "l2") not in _KNN_SPACES:
                raise SpecViolation(f"knn_vector {field}: unknown space_type {method.get('space_type')!r}")
            unknown = set(method.get("parameters") or {}) - _KNN_PARAMETERS
            if unknown:
                raise SpecViolation(f"knn_vector {field}: unknown method parameters {sorted(unknown)}")
        index_settings = settings.get("index", settings)
        if vectors and str(index_settings.get("knn", settings.get("index.knn", False))).lower() != "true":
            raise SpecViolation("an index with a knn_vector field needs settings.index.knn = true")

    def check_pipeline(self, body: Json) -> None:
        """Rules on search pipelines: normalization weights in [0, 1] summing to 1."""
        for processor in body.get("phase_results_processors") or []:
            norm = processor.get("normalization-processor")
            if not norm:
                continue
            weights = ((norm.get("combination") or {}).get("parameters") or {}).get("weights")
            if weights is not None and (any(not 0.0 <= w <= 1.0 for w in weights) or abs(sum(weights) - 1.0) > 1e-6):
                raise SpecViolation(f"normalization weights must be in [0, 1] and sum to 1, got {weights}")

    # - whole requests -

    def validate_search(self, body: Json, index: str | None) -> None:
        """A ``_search`` body: spec schema, then our rules."""
        self.validate(f"{_CORE}/search/content/application~1json/schema", body, "search body")
        self.check_query(body, index)

    def validate_index_body(self, body: Json, index: str | None = None) -> None:
        """A ``PUT /{index}`` body; remembers its mapping under the index and its aliases."""
        self._validate_mappings(
            body, f"{_INDICES}/indices.create/content/application~1json/schema", "create-index body"
        )
        self.check_mapping(body)
        for name in [index, *(body.get("aliases") or {})]:
            if name is not None and "mappings" in body:
                self.mappings[name] = body["mappings"]

    def move_aliases(self, body: Json) -> None:
        """Follow a ``POST /_aliases``: an alias added to an index takes that index's mapping."""
        for action in body.get("actions") or []:
            added = action.get("add") or {}
            if added.get("index") in self.mappings and added.get("alias"):
                self.mappings[added["alias"]] = self.mappings[added["index"]]

    def validate_template(self, body: Json) -> None:
        """A ``PUT /_index_template/{name}`` body."""
        inner = body.get("template") or {}
        if "mappings" in inner:
            self.validate(_TYPE_MAPPING, inner["mappings"], "template mappings")
            body = {**body, "template": {**inner, "mappings": {}}}
        self.validate(f"{_INDICES}/indices.put_index_template/content/application~1json/schema", body, "template")
        self.check_mapping(inner)

    def validate_pipeline(self, body: Json) -> None:
        """A ``PUT /_search/pipeline/{id}`` body."""
        self.validate(
            "namespaces/search_pipeline.yaml#/components/requestBodies/search_pipeline.put/content/application~1json/schema",
            body,
            "search pipeline",
        )
        self.check_pipeline(body)

    def validate_msearch(self, lines: list[Json], index: str | None) -> None:
        """``_msearch`` NDJSON: header and body lines alternate."""
        if len(lines) % 2:
            raise SpecViolation("msearch needs header/body pairs")
        for i in range(0, len(lines), 2):
            header, body = lines[i], lines[i + 1]
            self.validate(
                "schemas/_core.msearch.yaml#/components/schemas/MultisearchHeader", header, f"msearch line {i}"
            )
            self.validate(
                "schemas/_core.msearch.yaml#/components/schemas/MultisearchBody", body, f"msearch line {i + 1}"
            )
            target = header.get("index", index)
            self.check_query(body, target if isinstance(target, str) else None)

    def validate_bulk(self, lines: list[Json]) -> None:
        """``_bulk`` NDJSON: an action line, then a source line for index/create/update."""
        i = 0
        while i < len(lines):
            action = lines[i]
            self.validate("schemas/_core.bulk.yaml#/components/schemas/OperationContainer", action, f"bulk line {i}")
            (op,) = action
            i += 1
            if op == "delete":
                continue
            if i >= len(lines):
                raise SpecViolation(f"bulk {op} at line {i - 1} has no source line")
            if op == "update":
                self.validate("schemas/_core.bulk.yaml#/components/schemas/UpdateAction", lines[i], f"bulk line {i}")
            elif not isinstance(lines[i], dict):
                raise SpecViolation(f"bulk line {i}: a document must be an object")
            i += 1

    def validate_request(self, method: str, url: str, body: Any) -> None:
        """Validate one request as a client sends it (``body``: bytes, str, dict or list, or None)."""
        path = url.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        self.seen.append((method, path))
        if body in (None, b"", ""):
            return
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        ndjson = bool(parts) and parts[-1] in ("_bulk", "_msearch")
        if isinstance(text, str):
            parsed: Any = (
                [json.loads(line) for line in text.split("\n") if line.strip()] if ndjson else json.loads(text)
            )
        else:
            parsed = text
        index = parts[0] if parts and not parts[0].startswith("_") else None
        last = parts[-1] if parts else ""
        if parts[:1] == ["_index_template"]:
            self.validate_template(parsed)
        elif parts[:2] == ["_search", "pipeline"]:
            self.validate_pipeline(parsed)
        elif last == "_search":
            self.validate_search(parsed, index)
        elif last == "_msearch":
            self.validate_msearch(parsed, index)
        elif last == "_bulk":
            self.validate_bulk(parsed)
        elif len(parts) == 1 and index is not None and method == "PUT":
            self.validate_index_body(parsed, index)
        elif len(parts) >= 2 and parts[1] in ("_doc", "_create"):
            if not isinstance(parsed, dict):
                raise SpecViolation(f"{method} {path}: a document must be an object")
        elif last == "_mget":
            self.validate(f"{_CORE}/mget/content/application~1json/schema", parsed, "mget body")
        elif last == "_count":
            self.validate(f"{_CORE}/count/content/application~1json/schema", parsed, "count body")
            self.check_query(parsed, index)
        elif last == "_delete_by_query":
            self.validate(f"{_CORE}/delete_by_query/content/application~1json/schema", parsed, "delete_by_query body")
            self.check_query(parsed, index)
        elif len(parts) >= 2 and parts[1] == "_update":
            self.validate(f"{_CORE}/update/content/application~1json/schema", parsed, "update body")
        elif parts == ["_aliases"]:
            self.validate(f"{_INDICES}/indices.update_aliases/content/application~1json/schema", parsed, "aliases")
            self.move_aliases(parsed)
        elif last == "_mapping":
            self.validate(f"{_INDICES}/indices.put_mapping/content/application~1json/schema", parsed, "mapping")
        else:
            raise SpecViolation(f"no spec schema wired for {method} {path}: add it to tests/opensearch_spec.py")


def checked_connection(validator: SpecValidator) -> type[Any]:
    """An opensearch-py connection class that validates every request with ``validator`` first."""
    from opensearchpy import Urllib3HttpConnection

    class SpecCheckedConnection(Urllib3HttpConnection):  # type: ignore[misc]
        def perform_request(
            self, method: str, url: str, params: Any = None, body: Any = None, *a: Any, **kw: Any
        ) -> Any:
            validator.validate_request(method, url, body)
            return super().perform_request(method, url, params, body, *a, **kw)

    return SpecCheckedConnection
