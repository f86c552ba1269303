"""hivemem core: the memory model, settings, errors and the pure domain logic.

This package imports no framework, driver or model library (no fastapi, celery, torch,
opensearchpy or sqlite3); ``api``, ``workers`` and ``search`` depend on it, never the reverse.
"""

from __future__ import annotations

from hivemem.config import Settings
from hivemem.decay import rescore, strength, trust_factor
from hivemem.embedding import Embedder, HashEmbedder
from hivemem.errors import (
    ConfigError,
    ConfirmationRequired,
    DuplicateMemoryError,
    EmbeddingError,
    EmbeddingMismatchError,
    HivememError,
    JobError,
    MemoryNotFoundError,
    StoreError,
    StoreUnavailableError,
    ValidationError,
)
from hivemem.fusion import Candidate, Fused, minmax_fuse, rrf_fuse
from hivemem.hashing import content_hash
from hivemem.model import (
    GLOBAL_SCOPE,
    AuditEvent,
    DuplicatePolicy,
    FusionMethod,
    Hit,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
    RelationType,
    RetrievalMode,
    Source,
    WriteOutcome,
)
from hivemem.resolution import Resolution, resolve
from hivemem.scope import derive_scope, recall_scopes, validate_scope

__version__ = "0.1.0"

__all__ = [
    "GLOBAL_SCOPE",
    "AuditEvent",
    "Candidate",
    "ConfigError",
    "ConfirmationRequired",
    "DuplicateMemoryError",
    "DuplicatePolicy",
    "Embedder",
    "EmbeddingError",
    "EmbeddingMismatchError",
    "Fused",
    "FusionMethod",
    "HashEmbedder",
    "Hit",
    "HivememError",
    "JobError",
    "Memory",
    "MemoryNotFoundError",
    "MemoryState",
    "MemoryType",
    "Relation",
    "RelationType",
    "Resolution",
    "RetrievalMode",
    "Settings",
    "Source",
    "StoreError",
    "StoreUnavailableError",
    "ValidationError",
    "WriteOutcome",
    "content_hash",
    "derive_scope",
    "minmax_fuse",
    "recall_scopes",
    "rescore",
    "resolve",
    "rrf_fuse",
    "strength",
    "trust_factor",
    "validate_scope",
]
