"""Fixtures for the in-process API tests: the real app (lifespan included) over a temporary store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from hivemem.config import Settings

LOCAL_URL = "http://127.0.0.1:8765"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """A TestClient entered as a context manager, so the lifespan opens and closes the service."""
    # The Host a local client sends: the test client's default, "testserver", is a foreign host.
    with TestClient(create_app(settings), base_url=LOCAL_URL) as test_client:
        yield test_client
