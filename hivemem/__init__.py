"""hivemem core: the memory model, settings, errors and the pure domain logic.

This package imports no framework, driver or model library (no fastapi, celery, torch,
opensearchpy or sqlite3); ``api``, ``workers`` and ``search`` depend on it, never the reverse.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Where each name below lives: imported on first use, so that ``import hivemem`` (every CLI call)
# does not import the whole core (0.1 s of a CLI call that goes to a server).
_LAZY = {
    "AuditEvent": "hivemem.model",
    "Candidate": "hivemem.fusion",
    "ConfigError": "hivemem.errors",
    "ConfirmationRequired": "hivemem.errors",
    "DuplicateMemoryError": "hivemem.errors",
    "DuplicatePolicy": "hivemem.model",
    "Embedder": "hivemem.embedding",
    "EmbeddingError": "hivemem.errors",
    "EmbeddingMismatchError": "hivemem.errors",
    "Fused": "hivemem.fusion",
    "FusionMethod": "hivemem.model",
    "GLOBAL_SCOPE": "hivemem.model",
    "HashEmbedder": "hivemem.embedding",
    "Hit": "hivemem.model",
    "HivememError": "hivemem.errors",
    "JobError": "hivemem.errors",
    "Memory": "hivemem.model",
    "MemoryNotFoundError": "hivemem.errors",
    "MemoryState": "hivemem.model",
    "MemoryType": "hivemem.model",
    "Relation": "hivemem.model",
    "RelationType": "hivemem.model",
    "Resolution": "hivemem.resolution",
    "RetrievalMode": "hivemem.model",
    "Settings": "hivemem.config",
    "Source": "hivemem.model",
    "StoreError": "hivemem.errors",
    "StoreUnavailableError": "hivemem.errors",
    "ValidationError": "hivemem.errors",
    "WriteOutcome": "hivemem.model",
    "content_hash": "hivemem.hashing",
    "derive_scope": "hivemem.scope",
    "minmax_fuse": "hivemem.fusion",
    "recall_scopes": "hivemem.scope",
    "rescore": "hivemem.decay",
    "resolve": "hivemem.resolution",
    "rrf_fuse": "hivemem.fusion",
    "strength": "hivemem.decay",
    "trust_factor": "hivemem.decay",
    "validate_scope": "hivemem.scope",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hivemem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
