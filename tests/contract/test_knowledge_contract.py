"""The knowledge aggregate of the Store contract (search/base.py): sources and chunks, on every backend.

Tests of the vector leg carry ``needs_knn`` (they skip on osmem-server, which has no k-NN query).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import EmbeddingMismatchError, SourceNotFoundError
from hivemem.knowledge import DocumentFormat, KnowledgeChunk, KnowledgeSource, chunk_id
from search import Store
from search.base import ChunkFilter

AT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def source(
    uri: str, *, scope: str = "p", content_hash: str = "h1", chunks: int = 0, error: str | None = None
) -> KnowledgeSource:
    return KnowledgeSource(
        scope=scope,
        uri=uri,
        title=f"Title of {uri}",
        format=DocumentFormat.MARKDOWN,
        content_hash=content_hash,
        size=1234,
        fetched_at=AT,
        indexed_at=None if error else AT,
        chunk_count=chunks,
        last_error=error,
    )


def chunks_of(embedder: HashEmbedder, src: KnowledgeSource, texts: list[str]) -> list[KnowledgeChunk]:
    made = []
    offset = 0
    for ordinal, text in enumerate(texts):
        chunk = KnowledgeChunk(
            id=chunk_id(src.scope, src.uri, src.content_hash, ordinal),
            scope=src.scope,
            uri=src.uri,
            ordinal=ordinal,
            text=text,
            title=src.title,
            section=("Guide", f"Part {ordinal}"),
            page=ordinal + 1,
            start=offset,
            end=offset + len(text),
        )
        made.append(replace(chunk, embedding=tuple(embedder.embed_passages([chunk.context])[0])))
        offset += len(text) + 2
    return made


def test_a_source_round_trips_with_its_chunks_in_order(store: Store, embedder: HashEmbedder) -> None:
    src = source("/docs/guide.md", chunks=2)
    chunks = chunks_of(embedder, src, ["First part about the frobnicator.", "Second part about rollback."])
    store.replace_source(src, chunks)
    assert store.get_source("p", "/docs/guide.md") == src
    got = store.source_chunks("p", "/docs/guide.md")
    assert [c.id for c in got] == [c.id for c in chunks]
    assert [(c.text, c.section, c.page, c.start, c.end) for c in got] == [
        (c.text, c.section, c.page, c.start, c.end) for c in chunks
    ]
    assert got[0].embedding is not None and len(got[0].embedding) == embedder.dimension
    assert store.get_source("other", "/docs/guide.md") is None
    assert store.source_chunks("p", "/nothing") == []


def test_replacing_a_source_leaves_exactly_the_new_chunks(store: Store, embedder: HashEmbedder) -> None:
    old = source("/docs/a.md", content_hash="old", chunks=3)
    store.replace_source(old, chunks_of(embedder, old, ["alpha one", "alpha two", "alpha three"]))
    new = source("/docs/a.md", content_hash="new", chunks=1)
    store.replace_source(new, chunks_of(embedder, new, ["beta only"]))
    assert [c.text for c in store.source_chunks("p", "/docs/a.md")] == ["beta only"]
    assert store.chunk_keyword_search("alpha", ChunkFilter(scopes=["p"]), 10) == []
    assert len(store.chunk_keyword_search("beta", ChunkFilter(scopes=["p"]), 10)) == 1
    assert store.get_source("p", "/docs/a.md") == new


def test_a_batch_replaces_each_of_its_documents(store: Store, embedder: HashEmbedder) -> None:
    kept = source("/docs/kept.md", content_hash="k", chunks=1)
    old = source("/docs/changed.md", content_hash="old", chunks=2)
    store.replace_sources(
        [(kept, chunks_of(embedder, kept, ["kept text"])), (old, chunks_of(embedder, old, ["alpha one", "alpha two"]))]
    )
    new = source("/docs/changed.md", content_hash="new", chunks=1)
    added = source("/docs/added.md", scope="q", content_hash="a", chunks=1)
    store.replace_sources(
        [(new, chunks_of(embedder, new, ["beta only"])), (added, chunks_of(embedder, added, ["gamma text"]))]
    )
    assert [c.text for c in store.source_chunks("p", "/docs/changed.md")] == ["beta only"]
    assert [c.text for c in store.source_chunks("p", "/docs/kept.md")] == ["kept text"]
    assert [c.text for c in store.source_chunks("q", "/docs/added.md")] == ["gamma text"]
    assert store.chunk_keyword_search("alpha", ChunkFilter(scopes=["p"]), 10) == []
    assert len(store.chunk_keyword_search("beta", ChunkFilter(scopes=["p"]), 10)) == 1
    assert [s.uri for s in store.sources(["p", "q"])] == ["/docs/changed.md", "/docs/kept.md", "/docs/added.md"]
    assert store.get_source("p", "/docs/changed.md") == new


def test_a_document_twice_in_one_batch_is_stored_as_the_later(store: Store, embedder: HashEmbedder) -> None:
    first = source("/docs/twice.md", content_hash="one", chunks=2)
    later = source("/docs/twice.md", content_hash="two", chunks=1)
    store.replace_sources(
        [(first, chunks_of(embedder, first, ["first a", "first b"])), (later, chunks_of(embedder, later, ["later"]))]
    )
    assert [c.text for c in store.source_chunks("p", "/docs/twice.md")] == ["later"]
    assert store.get_source("p", "/docs/twice.md") == later


def test_a_wrong_vector_anywhere_in_a_batch_writes_none_of_it(store: Store, embedder: HashEmbedder) -> None:
    good = source("/docs/good.md", chunks=1)
    bad = source("/docs/bad.md", chunks=1)
    wrong = replace(chunks_of(embedder, bad, ["text"])[0], embedding=(0.1, 0.2))
    with pytest.raises(EmbeddingMismatchError):
        store.replace_sources([(good, chunks_of(embedder, good, ["good text"])), (bad, [wrong])])
    assert store.get_source("p", "/docs/good.md") is None and store.get_source("p", "/docs/bad.md") is None
    assert store.chunk_keyword_search("good", ChunkFilter(scopes=["p"]), 10) == []


def test_keyword_search_stays_in_its_scopes_and_source(store: Store, embedder: HashEmbedder) -> None:
    a, b = source("/a.md", chunks=1), source("/b.md", chunks=1)
    elsewhere = source("/a.md", scope="q", chunks=1)
    store.replace_source(a, chunks_of(embedder, a, ["The quibblefrost valve regulates coolant."]))
    store.replace_source(b, chunks_of(embedder, b, ["A quibblefrost appears here too, once."]))
    store.replace_source(elsewhere, chunks_of(embedder, elsewhere, ["quibblefrost in another project"]))
    hits = store.chunk_keyword_search("quibblefrost", ChunkFilter(scopes=["p"]), 10)
    assert {c.id for c in hits} == {chunk_id("p", "/a.md", "h1", 0), chunk_id("p", "/b.md", "h1", 0)}
    assert all(h.score > 0 for h in hits)
    only_a = store.chunk_keyword_search("quibblefrost", ChunkFilter(scopes=["p"], uri="/a.md"), 10)
    assert [c.id for c in only_a] == [chunk_id("p", "/a.md", "h1", 0)]
    assert store.chunk_keyword_search("the of and", ChunkFilter(scopes=["none"]), 10) == []
    assert store.chunk_keyword_search("   ", ChunkFilter(scopes=["p"]), 10) == []


def test_the_section_path_and_title_are_searchable(store: Store, embedder: HashEmbedder) -> None:
    src = replace(source("/s.md", chunks=1), title="Zanzibar handbook")
    store.replace_source(src, chunks_of(embedder, src, ["Nothing special in the body text."]))
    assert len(store.chunk_keyword_search("zanzibar", ChunkFilter(scopes=["p"]), 5)) == 1
    assert len(store.chunk_keyword_search("guide", ChunkFilter(scopes=["p"]), 5)) == 1  # the section path


@pytest.mark.needs_knn
def test_vector_search_finds_the_nearest_chunk_in_scope(store: Store, embedder: HashEmbedder) -> None:
    src = source("/v.md", chunks=3)
    texts = ["How to roll back a failed deploy.", "Coffee machine descaling steps.", "Quarterly budget review."]
    store.replace_source(src, chunks_of(embedder, src, texts))
    other = source("/v.md", scope="q", chunks=1)
    store.replace_source(other, chunks_of(embedder, other, ["How to roll back a failed deploy."]))
    context = chunks_of(embedder, src, texts)[0].context
    hits = store.chunk_vector_search(embedder.embed_queries([context])[0], ChunkFilter(scopes=["p"]), 2)
    assert hits[0].id == chunk_id("p", "/v.md", "h1", 0)
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert len(hits) == 2 and hits[0].score >= hits[1].score
    narrowed = store.chunk_vector_search(
        embedder.embed_queries([context])[0], ChunkFilter(scopes=["p"], uri="/nope.md"), 2
    )
    assert narrowed == []


def test_a_wrong_dimension_is_refused_and_writes_nothing(store: Store, embedder: HashEmbedder) -> None:
    src = source("/bad.md", chunks=1)
    bad = replace(chunks_of(embedder, src, ["text"])[0], embedding=(0.1, 0.2))
    with pytest.raises(EmbeddingMismatchError):
        store.replace_source(src, [bad])
    assert store.get_source("p", "/bad.md") is None
    with pytest.raises(EmbeddingMismatchError):
        store.chunk_vector_search([0.1, 0.2], ChunkFilter(scopes=["p"]), 3)


def test_an_error_keeps_the_chunks_of_the_last_good_index(store: Store, embedder: HashEmbedder) -> None:
    good = source("/e.md", chunks=1)
    store.replace_source(good, chunks_of(embedder, good, ["Good content indexed earlier."]))
    later = datetime(2026, 4, 1, tzinfo=UTC)
    store.record_source_error(replace(good, content_hash="broken", fetched_at=later, last_error="corrupt"))
    held = store.get_source("p", "/e.md")
    assert held is not None
    assert (held.last_error, held.fetched_at, held.content_hash, held.chunk_count) == ("corrupt", later, "h1", 1)
    assert [c.text for c in store.source_chunks("p", "/e.md")] == ["Good content indexed earlier."]
    store.record_source_error(source("/new.pdf", error="no text layer (needs OCR)"))
    fresh = store.get_source("p", "/new.pdf")
    assert fresh is not None and fresh.last_error == "no text layer (needs OCR)" and fresh.chunk_count == 0


def test_sources_list_and_delete(store: Store, embedder: HashEmbedder) -> None:
    for uri, scope in (("/b.md", "p"), ("/a.md", "p"), ("/c.md", "q")):
        src = source(uri, scope=scope, chunks=1)
        store.replace_source(src, chunks_of(embedder, src, [f"content of {uri}"]))
    assert [(s.scope, s.uri) for s in store.sources(["p", "q"])] == [("p", "/a.md"), ("p", "/b.md"), ("q", "/c.md")]
    assert store.sources([]) == []
    removed = store.delete_source("p", "/a.md")
    assert removed.uri == "/a.md"
    assert store.get_source("p", "/a.md") is None
    assert store.source_chunks("p", "/a.md") == []
    assert store.chunk_keyword_search("content", ChunkFilter(scopes=["p"]), 10)[0].id == chunk_id("p", "/b.md", "h1", 0)
    with pytest.raises(SourceNotFoundError):
        store.delete_source("p", "/a.md")


def test_many_sources_are_deleted_at_once(store: Store, embedder: HashEmbedder) -> None:
    for uri, scope in (("/a.md", "p"), ("/b.md", "p"), ("/c.md", "p"), ("/a.md", "q")):
        src = source(uri, scope=scope, chunks=1)
        store.replace_source(src, chunks_of(embedder, src, [f"content of {uri}"]))
    removed = store.delete_sources("p", ["/c.md", "/missing.md", "/a.md", "/c.md"])
    assert [(s.scope, s.uri, s.chunk_count) for s in removed] == [("p", "/c.md", 1), ("p", "/a.md", 1)]
    assert [(s.scope, s.uri) for s in store.sources(["p", "q"])] == [("p", "/b.md"), ("q", "/a.md")]
    assert store.source_chunks("p", "/a.md") == [] and store.source_chunks("p", "/c.md") == []
    assert len(store.source_chunks("q", "/a.md")) == 1  # the same uri in another scope stays
    found = store.chunk_keyword_search("content", ChunkFilter(scopes=["p", "q"]), 10)
    assert sorted(c.id for c in found) == sorted([chunk_id("p", "/b.md", "h1", 0), chunk_id("q", "/a.md", "h1", 0)])
    assert store.delete_sources("p", ["/a.md"]) == [] and store.delete_sources("p", []) == []


def test_get_chunks_and_scan(store: Store, embedder: HashEmbedder) -> None:
    a = source("/a.md", chunks=2)
    store.replace_source(a, chunks_of(embedder, a, ["one", "two"]))
    b = source("/b.md", scope="q", chunks=1)
    store.replace_source(b, chunks_of(embedder, b, ["three"]))
    ids = [chunk_id("q", "/b.md", "h1", 0), "missing", chunk_id("p", "/a.md", "h1", 1)]
    got = store.get_chunks(ids)
    assert [c.text for c in got] == ["three", "two"]
    assert all(c.embedding is None for c in got)
    assert [c.text for c in store.scan_chunks(ChunkFilter(scopes=["p", "q"]))] == ["one", "two", "three"]
    assert [c.text for c in store.scan_chunks(ChunkFilter(scopes=["p"], uri="/a.md"))] == ["one", "two"]
