"""The web dashboard (``/ui``) in a real headless Chromium, driven by Playwright, against real
``hivemem serve`` processes: search and the score explanation, a memory's page and its graph, forget
(confirmed, taken back, then done) and undo, stale memories listed and verified, an ingest watched
live as a Celery worker runs it, and a team server refusing the page's requests until a token is given.

The browser is the system's Chromium (no browser is downloaded): pytest's ``--chromium PATH`` names
it, else the first of ``chromium``, ``chromium-browser``, ``google-chrome`` on the PATH. Screenshots
go to ``--screenshots DIR`` when given, else to the test's temporary folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bench.suite.dashboard import chromium_binary
from hivemem.model import DuplicatePolicy, utcnow
from search import SearchFilter
from tests.e2e.helpers import HivememServer, open_test_store, run_cli
from tests.services import CeleryWorker

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
Page = playwright_api.Page
Route = playwright_api.Route
expect = playwright_api.expect

SCOPE = "github.com/acme/api"
# Waits for a condition on the page; generous, as CI machines are slow, and never a sleep.
WAIT_MS = 30_000
expect.set_options(timeout=WAIT_MS)
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def chromium_path(config: pytest.Config) -> str | None:
    named: str | None = config.getoption("--chromium")
    return named or chromium_binary()


@pytest.fixture(scope="module")
def browser(pytestconfig: pytest.Config) -> Iterator[object]:
    executable = chromium_path(pytestconfig)
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or pass --chromium PATH)")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=BROWSER_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: playwright_api.Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1366, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"the page threw: {errors}"


@pytest.fixture
def shots(pytestconfig: pytest.Config, tmp_path: Path) -> Path:
    folder: Path = pytestconfig.getoption("--screenshots") or tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def memorize(http: httpx.Client, title: str, content: str, **fields: object) -> str:
    answer = http.post("/v1/memories", json={"title": title, "content": content, "scope": SCOPE} | fields)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_search_explain_graph_undo_and_forget(server: HivememServer, page: Page, shots: Path) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        tuesday = memorize(http, "Deploys on Tuesday", "Deploys go out on Tuesdays after the standup.")
        thursday = memorize(
            http,
            "Deploys on Thursday",
            "Deploys go out on Thursdays since the release freeze.",
            related_to=[{"target_id": tuesday, "relationship_type": "supersedes"}],
        )
        goal = memorize(
            http, "Goal: ten-minute deploys", "A deploy takes under ten minutes end to end.", memory_type="goal"
        )
        memorize(
            http,
            "Layer caching",
            "Caching the container layers cut the deploy to six minutes.",
            related_to=[{"target_id": goal, "relationship_type": "achieves"}],
        )
        assert http.get(f"/v1/memories/{tuesday}", params={"scope": SCOPE}).json()["valid_to"] is not None

        # The scopes, then search by keyboard: "/" opens it, and the explanation opens on a result.
        page.goto(f"{server.url}/ui")
        scope_row = page.get_by_role("row").filter(has_text=SCOPE)
        expect(scope_row).to_contain_text("4")
        page.keyboard.press("/")
        query = page.get_by_role("searchbox", name="Ask")
        expect(query).to_be_visible()
        query.fill("when do deploys go out")
        page.get_by_label("in").select_option(SCOPE)
        query.press("Enter")
        first = page.locator("article.result").first
        expect(first).to_contain_text("Deploys on Thursday")
        first.get_by_text("Why this score").click()
        explanation = first.locator("details.explain table")
        for part in ("relevance", "bm25_rank", "knn_score", "strength", "trust", "superseded"):
            expect(explanation.get_by_role("rowheader", name=part, exact=True)).to_be_visible()
        page.screenshot(path=shots / "search.png", full_page=True)

        # The memory's page: provenance, its graph (the superseded memory at the other end), history.
        first.get_by_role("link", name="Deploys on Thursday").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Deploys on Thursday")
        expect(page.locator(".facts")).to_contain_text("[INFERRED]")
        graph = page.locator("svg.graph")
        expect(graph.locator(f'a.node[data-id="{tuesday}"]')).to_contain_text("Deploys on Tuesday")
        expect(graph.locator('g.edge[data-type="supersedes"]')).to_have_count(1)
        page.screenshot(path=shots / "memory.png", full_page=True)

        # Undo the supersede its history records, after a confirmation.
        history = page.get_by_role("table", name="History of this memory")
        history.get_by_role("button", name="Undo").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Undo this supersede?")
        dialog.get_by_role("button", name="Undo").click()
        expect(page.locator("#notice")).to_contain_text("Undid the supersede")
        assert http.get(f"/v1/memories/{tuesday}", params={"scope": SCOPE}).json()["valid_to"] is None
        expect(history.or_(page.get_by_role("table", name="History of this memory"))).to_contain_text("undone")

        # Forget: cancelled at the dialog, then taken back within its delay, then done.
        page.locator("#forget").click()
        page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
        page.locator("#forget").click()
        page.get_by_role("dialog").get_by_role("button", name="Forget").click()
        page.get_by_role("button", name="Undo").and_(page.locator("#undo-forget")).click()
        expect(page.locator("#notice")).to_contain_text("Kept")
        assert http.get(f"/v1/memories/{thursday}", params={"scope": SCOPE}).status_code == 200
        page.locator("#forget").click()
        page.get_by_role("dialog").get_by_role("button", name="Forget").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Forgotten")
        assert http.get(f"/v1/memories/{thursday}", params={"scope": SCOPE}).status_code == 404
        actions = [r["action"] for r in http.get("/v1/audit", params={"memory_id": thursday, "scope": SCOPE}).json()]
        assert actions[0] == "forget" and "undo" in actions

        # The jobs page by keyboard: the local caller sees every job.
        page.keyboard.press("j")
        expect(page.get_by_role("table", name="Jobs, newest first")).to_contain_text("memorize")
        page.screenshot(path=shots / "jobs.png", full_page=True)


def test_a_page_that_answers_late_does_not_draw_over_the_next_one(server: HivememServer, page: Page) -> None:
    # The scopes page's request is held until the jobs page, asked for after it, is shown; then let
    # go. Its late answer must not replace the jobs page (as it did on a busy machine).
    held: list[Route] = []
    page.route("**/v1/scopes*", lambda route: held.append(route))
    page.goto(f"{server.url}/ui")
    expect(page.get_by_role("heading", level=1)).to_have_text("Scopes")  # drawn, waiting on its data
    page.keyboard.press("j")
    expect(page.locator("#jobs")).to_be_visible()
    assert len(held) == 1
    with page.expect_response("**/v1/scopes*"):
        held[0].continue_()
    expect(page.locator("#jobs")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).not_to_have_text("Scopes")


def test_the_indexed_documents_list_a_page_at_a_time(server: HivememServer, page: Page) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for n in range(130):
            stored = http.post(
                "/v1/knowledge/store", json={"key": f"note-{n:03}", "text": f"Note {n}.", "scope": SCOPE}
            )
            assert stored.status_code == 201, stored.text
    page.goto(f"{server.url}/ui#/knowledge?scope={SCOPE}")
    listed = page.get_by_role("table", name="Indexed documents").locator("tbody tr")
    expect(listed).to_have_count(100)
    expect(page.locator("#sources")).to_contain_text("100 of 130 documents shown.")
    page.locator("#sources").get_by_role("button", name="More").click()
    expect(listed).to_have_count(130)
    expect(page.locator("#sources")).to_contain_text("130 of 130 documents shown.")
    expect(page.locator("#sources").get_by_role("button", name="More")).to_be_hidden()
    expect(listed.last).to_contain_text("Note 129.")  # the last, by key: each document once


def test_the_pages_open_on_the_project_the_caller_works_in(server: HivememServer, page: Page) -> None:
    # A first hour: 2 global preferences, 5 memories and 2 documents of the project.
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for n in range(2):
            memorize(http, f"Global preference {n}", f"The user prefers option {n}.", scope="")
        for n in range(5):
            memorize(http, f"Project decision {n}", f"The project decided thing {n}.")
        for n in range(2):
            stored = http.post("/v1/knowledge/store", json={"key": f"doc-{n}", "text": f"Doc {n}.", "scope": SCOPE})
            assert stored.status_code == 201, stored.text
    page.goto(f"{server.url}/ui#/memories")
    expect(page.get_by_role("table", name="Memories, newest first").locator("tbody tr")).to_have_count(5)
    expect(page.locator("#scope")).to_have_value(SCOPE)
    page.goto(f"{server.url}/ui#/knowledge")
    expect(page.get_by_role("table", name="Indexed documents").locator("tbody tr")).to_have_count(2)
    # Named in the address, the global scope is still there to look at.
    page.goto(f"{server.url}/ui#/memories?scope=")
    expect(page.get_by_role("table", name="Memories, newest first").locator("tbody tr")).to_have_count(2)


def _handbook(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for n in range(count):
        sections = "\n\n".join(f"## Rule {p}\n\nPage {n} rule {p}: rotate the gizmo{n} keys monthly." for p in range(4))
        (folder / f"page{n:02d}.md").write_text(f"# Handbook page {n}\n\n{sections}\n", encoding="utf-8")


def test_an_ingest_is_watched_live_while_a_worker_runs_it(
    redis_url: str, dirs: tuple[Path, Path], tmp_path: Path, page: Page, shots: Path
) -> None:
    data_dir, logs = dirs
    docs = tmp_path / "handbook"
    _handbook(docs, 6)
    env = {"HIVEMEM_KNOWLEDGE_ALLOWED_PATHS": str(docs)}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    gateway.start()
    try:
        page.goto(f"{gateway.url}/ui#/knowledge")
        expect(page.locator("#sources")).to_contain_text("No documents")
        page.get_by_label("Files, folders or URLs").fill(str(docs))
        page.get_by_label("into").select_option(label="your default scope")
        page.get_by_role("button", name="Ingest").click()
        progress = page.locator("#ingest-progress")
        # No worker yet: the page shows the job waiting, nothing done.
        expect(progress).to_have_attribute("data-state", "queued")
        expect(progress).to_contain_text("queued: 0 of 6 documents")
        page.screenshot(path=shots / "ingest-queued.png", full_page=True)

        worker.start(concurrency=1, wait=False)
        expect(progress).to_have_attribute("data-state", "done", timeout=120_000)
        expect(progress).to_contain_text("done: 6 of 6 documents")
        assert progress.locator("progress").evaluate("bar => [bar.value, bar.max]") == [6, 6]
        items = progress.get_by_role("table", name="Documents of this ingest")
        expect(items.locator("tbody tr")).to_have_count(6)
        expect(items.locator("tbody")).not_to_contain_text("failed")
        expect(page.get_by_role("table", name="Indexed documents").locator("tbody tr")).to_have_count(6)
        page.screenshot(path=shots / "ingest-done.png", full_page=True)

        # The documents are searched, and a passage opens in its document, under its heading, marked.
        page.get_by_label("Search the documents").fill("how often are the gizmo3 keys rotated")
        page.get_by_label("Search the documents").press("Enter")
        passages = page.locator("#passages article")
        expect(passages.first).to_contain_text("gizmo3")
        expect(passages.first.locator(".meta")).to_contain_text("Handbook page 3 › Rule")
        page.screenshot(path=shots / "knowledge-search.png", full_page=True)
        passages.first.get_by_role("link").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Handbook page 3")
        expect(page.locator("mark").first).to_contain_text("gizmo3")
        expect(page.get_by_role("heading", level=2).first).to_contain_text("Handbook page 3 › Rule 0")
        expect(page.locator('nav a[data-view="knowledge"]')).to_have_attribute("aria-current", "page")
        page.screenshot(path=shots / "document.png", full_page=True)
        # A document of the list opens from its title, read from the start.
        page.go_back()
        page.go_back()
        page.get_by_role("table", name="Indexed documents").get_by_role("link", name="Handbook page 5").click()
        expect(page.locator("main pre").first).to_contain_text("Page 5 rule 0")

        page.keyboard.press("j")
        jobs = page.get_by_role("table", name="Jobs, newest first")
        expect(jobs.get_by_role("row").filter(has_text="ingest")).to_contain_text("6/6")
        # The scopes page counts the documents too, and links them to the Knowledge page.
        page.keyboard.press("s")
        expect(page.locator("main p").first).to_contain_text("0 memories and 6 documents in 1 scopes")
        page.get_by_role("table", name="Scopes and their sizes").get_by_role("link", name="6").click()
        expect(page.get_by_role("table", name="Indexed documents").locator("tbody tr")).to_have_count(6)
        # A document leaves the index once the dialog is confirmed; cancelled, it stays.
        listed = page.get_by_role("table", name="Indexed documents")
        listed.get_by_role("button", name="delete Handbook page 0").click()
        page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
        expect(listed.locator("tbody tr")).to_have_count(6)
        listed.get_by_role("button", name="delete Handbook page 0").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("and its 4 chunks leave global")
        dialog.get_by_role("button", name="Delete").click()
        expect(listed.locator("tbody tr")).to_have_count(5)
        expect(listed).not_to_contain_text("Handbook page 0")
    finally:
        gateway.stop()
        worker.stop()


def test_a_team_server_refuses_the_page_until_a_token_is_given(
    dirs: tuple[Path, Path], tmp_path: Path, page: Page, shots: Path
) -> None:
    data_dir, logs = dirs
    created = run_cli("token", "create", "root", "--grant", "*:admin", data_dir=data_dir, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    admin_token = created.stdout.strip().splitlines()[-1]
    reader = run_cli("token", "create", "rita", "--grant", f"{SCOPE}:read", data_dir=data_dir, cwd=tmp_path)
    reader_token = reader.stdout.strip().splitlines()[-1]
    team = HivememServer(data_dir, logs, HIVEMEM_TEAM="true")
    team.start()
    try:
        refused: list[int] = []
        page.on("response", lambda r: refused.append(r.status) if "/v1/" in r.url and r.status == 401 else None)
        page.goto(f"{team.url}/ui")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        assert refused, "the page's request was not refused"
        page.screenshot(path=shots / "team-sign-in.png", full_page=True)

        page.get_by_label("Token").fill("hm_000000000000_not-a-real-token")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("The token was refused")

        # A reader may see the scopes, but not every scope's jobs.
        page.get_by_label("Token").fill(reader_token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#who")).to_contain_text("rita")
        page.keyboard.press("j")
        expect(page.locator("#jobs")).to_contain_text(re.compile("admin on '\\*'"))

        page.get_by_role("button", name="Sign out").click()
        page.get_by_label("Token").fill(admin_token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#who")).to_contain_text("root")
        page.keyboard.press("a")
        expect(page.get_by_role("table", name="Tokens")).to_contain_text("rita")
    finally:
        team.stop()


def test_stale_memories_are_listed_and_verified_from_the_page(
    server: HivememServer, data_dir: Path, page: Page, shots: Path
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        fact = memorize(http, "Primary database host", "The primary database runs on db-3.internal.")
        memorize(http, "Database choice", "We chose PostgreSQL.", memory_type="decision")
    store = open_test_store(data_dir)  # the server's own file: written four months ago, never verified
    try:
        old = utcnow() - timedelta(days=120)
        for memory in store.list_memories(SearchFilter(scopes=[SCOPE]), 10):
            store.put(replace(memory, created_at=old, updated_at=old), DuplicatePolicy.OVERWRITE)
    finally:
        store.close()
    page.goto(f"{server.url}/ui#/memories?scope={SCOPE}")
    stale = page.locator("#stale")
    expect(stale.get_by_role("heading")).to_have_text("May be stale (1)")  # the fact; a decision does not go stale
    expect(stale.locator("tbody tr")).to_contain_text("120 days ago")
    page.screenshot(path=shots / "stale.png")
    stale.get_by_role("link", name="Primary database host").click()
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("body")).to_contain_text('Verified "Primary database host".')
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/v1/status", params={"scope": SCOPE}).json()["stale"] == []
        history = http.get("/v1/audit", params={"memory_id": fact, "scope": SCOPE}).json()
        assert [record["action"] for record in history] == ["verify"]
    page.goto(f"{server.url}/ui#/memories?scope={SCOPE}")
    expect(page.get_by_role("table", name="Memories, newest first").locator("tbody tr")).to_have_count(2)
    expect(stale).to_be_empty()
