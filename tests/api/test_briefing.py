"""The session briefing of a project: everything it settled while it fits, and the team-wide
preferences of the global scope beside them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate

SCOPE = "github.com/acme/api"
# A team's first decisions, as a first hour wrote them; the seventh was the one left out.
DECISIONS = [
    ("Commit message style", "Commit subjects are imperative, under 72 characters."),
    ("Database migrations", "Alembic migrations live in migrations/; each one must be reversible."),
    ("Code review", "Every pull request needs one approval from the owning team before merge."),
    ("Secrets", "Secrets come from Vault at start-up; never commit them."),
    ("Feature flags", "New endpoints ship behind a feature flag that defaults to off."),
    ("API versioning", "Breaking API changes get a new /v2 prefix; /v1 stays for six months."),
    ("Deploys go through staging", "Every deploy goes to staging first; prod needs a green staging run."),
    ("Hotfix branches", "Hotfixes branch from the last release tag and merge back into main."),
]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    svc = MemoryService.from_settings(Settings(data_dir=tmp_path, embed_model="hash:64"))
    yield svc
    svc.close()


def test_a_projects_briefing_carries_every_decision_and_the_global_preferences(service: MemoryService) -> None:
    for title, content in DECISIONS:
        service.memorize(MemoryCreate(title=title, content=content, scope=SCOPE, memory_type="decision"))
    service.memorize(
        MemoryCreate(
            title="Answers in British English",
            content="The user writes British English.",
            scope="",
            memory_type="preference",
        )
    )
    briefing = service.briefing(Caller(default_scope=SCOPE), scope=SCOPE)
    assert {title for title, _ in DECISIONS} <= {m.title for m in briefing.key_memories}
    assert all(title in briefing.text for title, _ in DECISIONS)
    assert [m.title for m in briefing.team_wide] == ["Answers in British English"]
    assert "Team-wide (global scope):" in briefing.text
    # The global scope's own briefing does not list its memories twice.
    assert service.briefing(Caller(), scope="").team_wide == []
