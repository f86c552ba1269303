"""The tuning of knowledge: how documents are chunked, how far a .docx may inflate, URL fetches and
their refresh, and the bounds of `knowledge match` and `knowledge read`.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from hivemem.tuning import Tuning

__all__ = ["KnowledgeTuning"]

MiB = 1024 * 1024


class KnowledgeTuning(Tuning):
    """The numbers of document indexing and of the knowledge tools."""

    group_title: ClassVar[str] = "Knowledge"

    knowledge_chunk_chars: int = Field(
        default=1200, ge=100, le=20_000, description="Target length of a document chunk, in characters."
    )
    knowledge_chunk_overlap: int = Field(
        default=300, ge=0, le=10_000, description="Characters a long section's consecutive chunks share."
    )
    knowledge_max_inflated_bytes: int = Field(
        default=200 * MiB,
        ge=1,
        le=16384 * MiB,
        description="Most bytes the parts of a .docx (a zip) may inflate to; more is refused as a zip bomb.",
    )
    knowledge_url_timeout_s: float = Field(default=20.0, gt=0, le=600, description="Longest fetch of one URL.")
    knowledge_url_max_age_s: float = Field(
        default=86_400.0, ge=0, description="Age after which an indexed URL is fetched again by `knowledge search`."
    )
    knowledge_match_max_results: int = Field(
        default=100, ge=1, le=10_000, description="Most chunks one `knowledge match` returns."
    )
    knowledge_match_budget_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="Longest one `knowledge match` may scan before it answers with what it found.",
    )
    knowledge_read_chars: int = Field(
        default=20_000, ge=100, le=10_000_000, description="Characters `knowledge read` returns per page when not told."
    )

    @model_validator(mode="after")
    def _overlap_below_chunk(self) -> KnowledgeTuning:
        if self.knowledge_chunk_overlap >= self.knowledge_chunk_chars:
            raise ValueError(
                f"knowledge_chunk_overlap ({self.knowledge_chunk_overlap}) must be below knowledge_chunk_chars "
                f"({self.knowledge_chunk_chars})"
            )
        return self
