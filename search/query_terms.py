"""The words a BM25 query searches: one rule for every store, so their keyword legs agree.

Words are ``\\w+`` runs, casefolded and deduplicated in order. Stop words are left out: words that
match nearly every memory only add noise to BM25, and min-max fusion would turn a match on "the"
alone into a full-weight leg score. The set is Lucene's English stop set plus the words a question
is made of (pronouns, auxiliaries, question words: "how do we", "what can our"): a memory's text
keeps them ("We lint with ruff"), so a question's "we" made that memory BM25's best match for
"how do we release to production?" over "Deploys go through staging". A query of stop words only
still searches them. Each word also brings the other words of its meaning in software work
(``_ONE_MEANING``: "prod" / "production", "release" / "deploy"), after the words asked.
"""

from __future__ import annotations

import re

__all__ = ["ENGLISH_STOPWORDS", "LUCENE_STOPWORDS", "MAX_QUERY_TERMS", "QUESTION_WORDS", "query_terms"]

# The Lucene English stop set, word for word (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`).
# fmt: off
LUCENE_STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
])
# What questions are made of: pronouns, auxiliaries and modals, question words, and the function
# words of NLTK's English list that Lucene's leaves in (both lists are the field's standard ones).
QUESTION_WORDS = frozenset([
    "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "its", "itself",
    "them", "theirs", "themselves",
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    "am", "were", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "done",
    "can", "could", "shall", "should", "would", "may", "might", "must", "ought",
    "those", "from", "about", "so", "than", "too", "very", "just", "any", "some", "all", "each", "both",
    "other", "own", "same", "only", "again", "once", "here", "up", "out", "off", "over", "s", "t", "d", "ll",
    "re", "ve", "m",
])
# fmt: on
ENGLISH_STOPWORDS = LUCENE_STOPWORDS | QUESTION_WORDS
MAX_QUERY_TERMS = 64
_WORD = re.compile(r"\w+", re.UNICODE)

# The words a team writes for one thing in its notes: a question's word finds a note's other one.
# Each group is one meaning in software work: its short and long forms ("prod", "production") and
# the verbs of getting a build out ("release", "deploy", "ship"). Searched besides the word asked.
_ONE_MEANING: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "prod production",
        "release releases deploy deploys deployment deployments ship ships",
        "db database databases",
        "repo repos repository repositories",
        "env envs environment environments",
        "config configs configuration",
        "auth authentication",
        "docs documentation",
        "deps dependencies dependency",
        "infra infrastructure",
        "perf performance",
        "k8s kubernetes",
        "ci pipeline pipelines",
    )
)
_ALSO = {word: sorted(group - {word}) for group in _ONE_MEANING for word in group}


def query_terms(text: str) -> tuple[list[str], bool] | None:
    """The terms to search (at most ``MAX_QUERY_TERMS``) and whether they are stopwords only;
    None when ``text`` has no word at all."""
    words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))
    if not words:
        return None
    kept = [w for w in words if w not in ENGLISH_STOPWORDS]
    if not kept:
        return words[:MAX_QUERY_TERMS], True
    also = [other for w in kept for other in _ALSO.get(w, ()) if other not in kept]
    return list(dict.fromkeys(kept + also))[:MAX_QUERY_TERMS], False
