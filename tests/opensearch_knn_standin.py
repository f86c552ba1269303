"""An exact stand-in for the k-NN plugin, for tests of the OpenSearch store's own logic around k-NN.

osmem-server has no ``knn`` query, and no real cluster can run here. The store's answer to a k-NN
search is not the plugin's to test (a real cluster, ``HIVEMEM_TEST_OPENSEARCH_URL``, runs the
``needs_knn`` tests against it), but what the store does with that answer is: the planned writes'
neighbours, joined with the unit's own writes, and recall's vector leg. This connection class answers
a ``_search`` whose query is one ``knn`` clause, and each such search of an ``_msearch``, the way the
plugin does on an exact graph (Lucene, ``cosinesimil``):
the documents passing the clause's filter, scored ``(1 + cosine) / 2``, best ``k`` first. It reads
them from osmem-server with an ordinary search, so the filter is osmem's own. Every other request
goes to the server untouched, and every request, this one included, is spec-validated first.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tests.opensearch_spec import SpecValidator

__all__ = ["exact_knn_connection"]

_FIELD = "embedding"


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def _scored(clause: dict[str, Any], size: int, hits: list[dict[str, Any]], source: Any) -> list[dict[str, Any]]:
    """The plugin's answer over ``hits`` (the documents passing the filter): best ``k`` by cosine,
    each with the ``_source`` fields the body asked for (none when it asked for none)."""
    scored = [
        {
            "_id": h["_id"],
            "_score": (1.0 + _cosine(clause["vector"], h["_source"][_FIELD])) / 2.0,
            **({"_source": {k: v for k, v in h["_source"].items() if k in source}} if source else {}),
        }
        for h in hits
        if h["_source"].get(_FIELD)
    ]
    return sorted(scored, key=lambda h: (-h["_score"], h["_id"]))[: min(int(clause["k"]), size)]


def _knn_clause(body: dict[str, Any]) -> tuple[dict[str, Any], int, list[str]] | None:
    """The ``knn`` clause, ``size`` and asked ``_source`` fields of a body that is one k-NN query, else None."""
    query = body.get("query", {})
    if list(query) != ["knn"]:
        return None
    source = body.get("_source", False)
    return query["knn"][_FIELD], int(body.get("size", 10)), list(source) if isinstance(source, list) else []


def exact_knn_connection(validator: SpecValidator | None) -> type[Any]:
    """An opensearch-py connection class that answers k-NN searches exactly (see the module)."""
    from opensearchpy import Urllib3HttpConnection

    class ExactKnnConnection(Urllib3HttpConnection):  # type: ignore[misc]
        def perform_request(
            self, method: str, url: str, params: Any = None, body: Any = None, *a: Any, **kw: Any
        ) -> Any:
            if validator is not None:
                validator.validate_request(method, url, body)
            path = url.split("?")[0]
            if method == "POST" and body is not None and path.endswith("/_msearch"):
                return self._msearch(body, *a, **kw)
            if method == "POST" and body is not None and path.endswith("/_search"):
                knn = _knn_clause(json.loads(body))
                if knn is not None:
                    status, headers, answer = self._knn(path.removesuffix("/_search"), *knn, *a, **kw)
                    return status, headers, json.dumps(answer)
            return super().perform_request(method, url, params, body, *a, **kw)

        def _search(self, index: str, body: dict[str, Any], *a: Any, **kw: Any) -> tuple[int, Any, dict[str, Any]]:
            status, headers, raw = super().perform_request("POST", f"{index}/_search", None, json.dumps(body), *a, **kw)
            return status, headers, json.loads(raw)

        def _knn(
            self, index: str, clause: dict[str, Any], size: int, source: list[str], *a: Any, **kw: Any
        ) -> tuple[int, Any, Any]:
            fields = [_FIELD, *source]
            scan = {"size": 10_000, "query": clause.get("filter", {"match_all": {}}), "_source": fields}
            status, headers, found = self._search(index, scan, *a, **kw)
            hits = _scored(clause, size, found["hits"]["hits"], source)
            return status, headers, {"took": 0, "timed_out": False, "hits": {"max_score": None, "hits": hits}}

        def _msearch(self, body: Any, *a: Any, **kw: Any) -> tuple[int, Any, str]:
            text = body.decode("utf-8") if isinstance(body, bytes) else str(body)
            lines = [json.loads(line) for line in text.split("\n") if line.strip()]  # NDJSON: line feeds only
            responses, headers = [], None
            for header, search in zip(lines[::2], lines[1::2], strict=True):
                index = "/" + str(header["index"])
                knn = _knn_clause(search)
                if knn is None:
                    _, headers, answer = self._search(index, search, *a, **kw)
                else:
                    _, headers, answer = self._knn(index, *knn, *a, **kw)
                responses.append({**answer, "status": 200})
            return 200, headers, json.dumps({"took": 0, "responses": responses})

    return ExactKnnConnection
