"""Documents of a project's checkout are named by their path in it, so a teammate sharing the store
is cited a file of their own checkout, not someone's home folder: reading, indexing again and
pruning find the file in each machine's own checkout."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import DocumentError, DocumentNotFoundError
from hivemem.knowledge_schemas import (
    IngestRequest,
    KnowledgeDeleteRequest,
    KnowledgePruneRequest,
    KnowledgeReadRequest,
    KnowledgeSearchRequest,
)
from hivemem.scope import derive_scope
from workers.documents.sources import FileAccess

REMOTE = "git@github.com:acme/api.git"
SCOPE = "github.com/acme/api"


def _checkout(folder: Path, remote: str = REMOTE) -> Path:
    """A real git checkout at ``folder`` whose origin is ``remote``."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


def _write(path: Path, heading: str, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {heading}\n\n{body}\n", encoding="utf-8")
    return path


class Teammate:
    """One person's machine: their checkout, their CLI's caller and file access."""

    def __init__(self, service: MemoryService, checkout: Path) -> None:
        self.service, self.checkout = service, checkout
        self.caller = Caller(principal="cli", default_scope=derive_scope(checkout))
        self.access = FileAccess(project=checkout / "src")  # run from a folder inside the checkout

    def ingest(self, *paths: Path) -> None:
        report = self.service.knowledge.ingest(IngestRequest(paths=[str(p) for p in paths]), self.caller, self.access)
        assert report.failed == 0, report.failures

    def uris(self) -> set[str]:
        return {source.uri for source in self.service.knowledge.sources(self.caller)}

    def read(self, source: str) -> str:
        return self.service.knowledge.read(KnowledgeReadRequest(source=source), self.caller, self.access).text


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    """One store the team shares (here: on this machine's SQLite)."""
    opened = MemoryService.from_settings(settings)
    yield opened
    opened.close()


@pytest.fixture
def two_checkouts(service: MemoryService, tmp_path: Path) -> tuple[Teammate, Teammate]:
    ana = Teammate(service, _checkout(tmp_path / "home" / "ana" / "src" / "api"))
    bob = Teammate(service, _checkout(tmp_path / "home" / "bob" / "work" / "api-clone"))
    for person in (ana, bob):
        (person.checkout / "src").mkdir()
        _write(person.checkout / "docs" / "runbook.md", "Runbook", "Restart the payment worker with make restart.")
        _write(person.checkout / "docs" / "old" / "pager.md", "Pager", "Pager duty rotates every Monday at noon.")
    return ana, bob


def test_a_checkouts_documents_are_named_by_their_path_in_it_and_read_from_each_machines_own(
    two_checkouts: tuple[Teammate, Teammate], tmp_path: Path
) -> None:
    ana, bob = two_checkouts
    assert ana.caller.default_scope == bob.caller.default_scope == SCOPE
    ana.ingest(ana.checkout / "docs")
    assert ana.uris() == {"repo:docs/runbook.md", "repo:docs/old/pager.md"}

    # Bob is cited the name, and reading it reads his own checkout's file as it is now.
    cited = ana.service.knowledge.search(
        KnowledgeSearchRequest(query="restart the payment worker"), bob.caller, bob.access
    )
    assert cited.results[0].source == "repo:docs/runbook.md"
    _write(bob.checkout / "docs" / "runbook.md", "Runbook", "Restart it with make restart-payments now.")
    assert "restart-payments" in bob.read("repo:docs/runbook.md")
    assert "restart-payments" in bob.read(str(bob.checkout / "docs" / "runbook.md"))  # by path: the same name
    assert "make restart." in ana.read("repo:docs/runbook.md")

    # Indexing his copy replaces the one document, under the same name: no second source, no home folder.
    bob.ingest(bob.checkout / "docs")
    assert bob.uris() == {"repo:docs/runbook.md", "repo:docs/old/pager.md"}
    assert (
        "restart-payments"
        in ana.service.knowledge.search(
            KnowledgeSearchRequest(query="restart payments", source="repo:docs/runbook.md"), ana.caller, FileAccess()
        )
        .results[0]
        .text
    )  # a caller with no checkout here searches the indexed copy


def test_files_outside_the_scopes_checkout_keep_their_absolute_path(
    two_checkouts: tuple[Teammate, Teammate], tmp_path: Path
) -> None:
    ana, _ = two_checkouts
    loose = _write(tmp_path / "notes" / "lunch.md", "Lunch", "Lunch is served at half past noon.")
    other = _checkout(tmp_path / "home" / "ana" / "src" / "billing", "https://github.com/acme/billing.git")
    theirs = _write(other / "README.md", "Billing", "Invoices are sent on the first of the month.")
    ana.ingest(loose, theirs)
    # Another project's checkout could not be found again from this scope: its path stays whole.
    assert ana.uris() == {str(loose.resolve()), str(theirs.resolve())}


def test_prune_finds_a_checkouts_files_in_the_checkout_of_the_folder_named(
    two_checkouts: tuple[Teammate, Teammate],
) -> None:
    ana, bob = two_checkouts
    ana.ingest(ana.checkout / "docs")
    knowledge = ana.service.knowledge
    # Gone from Bob's checkout only: pruning Ana's folder keeps it, pruning Bob's removes it.
    (bob.checkout / "docs" / "old" / "pager.md").unlink()
    kept = knowledge.prune(KnowledgePruneRequest(folders=[str(ana.checkout / "docs")]), ana.caller, ana.access)
    assert kept.removed == []
    removed = knowledge.prune(KnowledgePruneRequest(folders=[str(bob.checkout / "docs")]), bob.caller, bob.access)
    assert [gone.source for gone in removed.removed] == ["repo:docs/old/pager.md"]
    # A folder outside any checkout of the scope cannot tell: nothing named in the checkout goes.
    elsewhere = bob.checkout.parent / "scratch"
    elsewhere.mkdir()
    assert knowledge.prune(KnowledgePruneRequest(folders=[str(elsewhere)]), bob.caller, bob.access).removed == []
    assert ana.uris() == {"repo:docs/runbook.md"}

    deleted = knowledge.delete(
        KnowledgeDeleteRequest(source=str(bob.checkout / "docs" / "runbook.md")), bob.caller, bob.access
    )
    assert (deleted.source, deleted.chunks > 0) == ("repo:docs/runbook.md", True)
    assert ana.uris() == set()


def test_a_checkout_name_is_found_only_in_a_checkout_of_its_scope_and_never_leaves_it(
    two_checkouts: tuple[Teammate, Teammate], tmp_path: Path
) -> None:
    ana, _ = two_checkouts
    ana.ingest(ana.checkout / "docs")
    outsider = FileAccess(project=tmp_path)
    with pytest.raises(DocumentNotFoundError, match=r"checkout of github\.com/acme/api"):
        outsider.located("repo:docs/runbook.md", SCOPE)
    # Read from elsewhere, the indexed copy answers.
    stored = ana.service.knowledge.read(KnowledgeReadRequest(source="repo:docs/runbook.md"), ana.caller, outsider)
    assert stored.stored and "make restart." in stored.text
    for escape in ("repo:../../bob/work/api-clone/docs/runbook.md", "repo:/etc/hostname", "repo:"):
        with pytest.raises(DocumentError, match="inside the project's checkout"):
            ana.access.located(escape, SCOPE)
