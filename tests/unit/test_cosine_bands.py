"""Each model's cosines read against its own bands: a cosine that means "related" for MiniLM is
noise for e5-small-v2, and resolution must not link or fold a scope's memories on it.

The pairs are the resolution dev set's (bench/resolution/pairs.jsonl) with their cosines as each
model embeds them (title and content, as passages): the session cache and its TTL 0.716 under
MiniLM, 0.923 under e5-small-v2; the session cache and the brand colours 0.126 and 0.837."""

from __future__ import annotations

import pytest

from hivemem.cosine_bands import MINILM_BANDS, CosineBands, bands_for, is_measured
from hivemem.hashing import content_hash
from hivemem.model import Memory, RelationType, utcnow
from hivemem.resolution import Neighbour, resolve
from workers.jobs import resolution_policy
from workers.lifecycle_tuning import LifecycleTuning

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "intfloat/e5-small-v2"
BGE = "BAAI/bge-small-en-v1.5"

CACHE = ("Session cache", "We use Redis for the session cache.")
CACHE_TTL = ("Session cache TTL", "The Redis session cache has a TTL of 24 hours.")  # compatible
COLOURS = ("Brand colours", "The design team moved the brand colours to Figma tokens.")  # unrelated


def _memory(memory_id: str, title: str, content: str) -> Memory:
    return Memory(
        id=memory_id, scope="s", title=title, content=content, content_hash=content_hash(content), embedding=[1.0, 0.0]
    )


def _written(model: str, neighbour: tuple[str, str], cosine: float, incoming: tuple[str, str]) -> tuple[str, bool]:
    """What writing ``incoming`` next to ``neighbour`` at ``cosine`` does with ``model``'s bands:
    its outcome, and whether it is linked ``similar`` to the neighbour."""
    old = _memory("old", *neighbour)
    new = _memory("new", *incoming)
    decided = resolve(new, None, utcnow(), [Neighbour(old, cosine)], resolution_policy(model, LifecycleTuning()))
    linked = any(r.type is RelationType.SIMILAR and r.target_id == "old" for r in decided.relations)
    return decided.outcome.value, linked


def test_unrelated_memories_at_e5s_usual_cosine_are_linked_on_minilms_bands_and_not_on_e5s() -> None:
    # Read on MiniLM's bands, e5's cosine for two unrelated facts says "related": every pair of a
    # scope was linked (20 of the dev set's 20 unrelated pairs).
    assert _written(MINILM, CACHE, 0.837, COLOURS) == ("stored", True)
    assert _written(E5, CACHE, 0.837, COLOURS) == ("stored", False)
    assert _written(MINILM, CACHE, 0.126, COLOURS) == ("stored", False)  # MiniLM's own cosine


def test_a_compatible_fact_at_e5s_cosine_keeps_its_text_on_e5s_bands() -> None:
    # On MiniLM's bands 0.923 is "the same fact": the TTL was reinforced into the cache's memory,
    # and its words lost. On e5's it is the same subject: merged, both texts kept word for word.
    assert _written(MINILM, CACHE, 0.923, CACHE_TTL) == ("reinforced", False)
    assert _written(E5, CACHE, 0.923, CACHE_TTL) == ("merged", False)
    assert _written(MINILM, CACHE, 0.716, CACHE_TTL) == ("merged", False)  # as MiniLM does at its own cosine


def test_each_measured_model_has_its_bands_and_any_other_reads_minilms() -> None:
    assert bands_for(MINILM) == MINILM_BANDS
    assert bands_for("hash:64") == bands_for("/models/my-finetune") == MINILM_BANDS
    for model in (BGE, E5):
        bands = bands_for(model)
        assert bands.related > MINILM_BANDS.related and bands.same_fact > MINILM_BANDS.same_fact
    with pytest.raises(ValueError, match="related, named_change <= same_subject"):
        CosineBands(same_fact=0.9, same_subject=0.5, related=0.6, named_change=0.4, query_related=0.3)


def test_an_operator_is_told_when_a_models_cosines_are_read_against_minilms_bands() -> None:
    for model in (MINILM, BGE, E5):
        assert is_measured(model) and LifecycleTuning().borrowed_bands_warning(model) is None
    warning = LifecycleTuning().borrowed_bands_warning("/models/my-finetune")
    assert warning is not None and not is_measured("/models/my-finetune")
    assert "no measured cosine bands" in warning and "bench cosine-bands --model /models/my-finetune" in warning
    # a deployer who set the bands has measured them
    assert LifecycleTuning(resolution_reinforce_cosine=0.9).borrowed_bands_warning("/models/my-finetune") is None


def test_a_band_set_by_the_deployer_replaces_the_models_and_keeps_their_order() -> None:
    tuning = LifecycleTuning(resolution_contradiction_cosine=0.75)
    assert tuning.bands(E5) == CosineBands(
        same_fact=0.96, same_subject=0.75, related=0.75, named_change=0.75, query_related=0.80
    )
    policy = resolution_policy(BGE, LifecycleTuning(resolution_reinforce_cosine=0.9, resolution_link_cosine=0.5))
    assert (policy.reinforce_at, policy.contradiction_at, policy.auto_link_at) == (0.9, 0.70, 0.5)
    assert LifecycleTuning().sleep_cosine(E5) == 0.96 and LifecycleTuning(sleep_threshold=0.9).sleep_cosine(E5) == 0.9
