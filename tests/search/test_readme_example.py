"""The README's recall example, on the default model, in a scope holding other memories of its kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate, RecallRequest

pytest.importorskip("onnxruntime", reason="the embed extra is not installed")
pytestmark = pytest.mark.model

SCOPE = "github.com/acme/api"
DEPLOY = MemoryCreate(
    title="Deploys go through staging",
    content="Every deploy goes to staging first; prod needs a green staging run.",
    scope=SCOPE,
    memory_type="decision",
    source="user_confirmed",
)
# The rest of a team's first memories, of the same kind (the cases first).
OTHERS = [
    ("Team prefers ruff over flake8", "We lint with ruff; flake8 and isort are gone from the toolchain.", "preference"),
    (
        "Commit message style",
        "Commit subjects are imperative, under 72 characters; the release notes quote them.",
        "decision",
    ),
    ("Python version", "The service runs on Python 3.11; we test on 3.11 and 3.12.", "fact"),
    ("Database migrations", "Alembic migrations live in migrations/; each one must be reversible.", "decision"),
    ("Code review", "Every pull request needs one approval from the owning team before merge.", "decision"),
    ("Secrets", "Secrets come from Vault at start-up; never commit them or put them in env files.", "decision"),
    ("Logging format", "Logs are JSON lines with a request id; no print statements in the service.", "preference"),
    ("Test layout", "Unit tests sit in tests/unit, integration tests in tests/integration.", "fact"),
    ("Feature flags", "New endpoints ship behind a feature flag that defaults to off.", "decision"),
    ("On-call rotation", "On-call rotates weekly on Mondays; the schedule is in PagerDuty.", "fact"),
    ("API versioning", "Breaking API changes get a new /v2 prefix; /v1 stays for six months.", "decision"),
    ("Dependency updates", "Renovate opens dependency PRs every Monday; we merge them in one batch.", "preference"),
    ("Error tracking", "Exceptions are reported to Sentry with the release version tagged.", "fact"),
    ("Local setup", "make dev starts Postgres and Redis in Docker for local work.", "fact"),
    ("Formatting", "Black-compatible formatting via ruff format; line length 100.", "preference"),
    ("Incident reviews", "Every incident gets a blameless review within five working days.", "decision"),
    ("Hotfix branches", "Hotfixes branch from the last release tag and merge back into main.", "decision"),
    ("Type checking", "mypy runs in strict mode on the whole package in CI.", "decision"),
    ("Container images", "Images are built once per commit and promoted between environments.", "decision"),
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    svc = MemoryService.from_settings(Settings(data_dir=Path(tmp_path_factory.mktemp("data"))))
    yield svc
    svc.close()


def titles(service: MemoryService, query: str) -> list[str]:
    found = service.remember(RecallRequest(query=query, scope=SCOPE), Caller(default_scope=SCOPE))
    return [r.title for r in found.results]


def test_the_readme_shows_what_the_server_answers(tmp_path: Path) -> None:
    alone = MemoryService.from_settings(Settings(data_dir=tmp_path))
    try:
        alone.memorize(DEPLOY)
        found = alone.remember(RecallRequest(query="how do we release to production?", scope=SCOPE), Caller())
    finally:
        alone.close()
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    [hit] = found.results
    assert f'"title":"{hit.title}", …, "score":{hit.score}, …, "label":"{hit.label}"' in readme


def test_the_deploy_decision_answers_how_we_release_beside_three_others(service: MemoryService) -> None:
    service.memorize(DEPLOY)
    for title, content, kind in OTHERS[:3]:
        service.memorize(MemoryCreate(title=title, content=content, scope=SCOPE, memory_type=kind))
    assert titles(service, "how do we release to production?")[0] == DEPLOY.title


@pytest.mark.parametrize("others", [15, len(OTHERS)])
def test_an_inferred_deploy_decision_answers_first_among_a_projects_first_memories(tmp_path: Path, others: int) -> None:
    # Not confirmed by a user, so no boost: "release" is the word of "Commit message style" and
    # "Hotfix branches" (release notes, release tag), and only the meaning of the deploy decision's.
    fresh = MemoryService.from_settings(Settings(data_dir=tmp_path))
    try:
        fresh.memorize(MemoryCreate(**(DEPLOY.model_dump() | {"source": "agent_inferred"})))
        for title, content, kind in OTHERS[:others]:
            fresh.memorize(MemoryCreate(title=title, content=content, scope=SCOPE, memory_type=kind))
        for question in ("how do we release to production?", "what is the release process?"):
            assert titles(fresh, question)[0] == DEPLOY.title, question
    finally:
        fresh.close()


def test_and_beside_twenty(service: MemoryService) -> None:
    for title, content, kind in OTHERS[3:]:
        service.memorize(MemoryCreate(title=title, content=content, scope=SCOPE, memory_type=kind))
    assert len(titles(service, "anything at all")) == 10
    assert titles(service, "how do we release to production?")[0] == DEPLOY.title
