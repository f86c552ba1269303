"""Does a new memory contradict a similar one, add to it, or speak of something else?

The resolver asks this of pairs whose cosine falls in the contradiction band (0.65-0.85 by
default): close enough to be about the same thing, not so close that one repeats the other. The
answer decides between *supersede* (the new memory replaces the old, which stays reachable),
*merge* (one memory holding both facts) and *store* (two memories).

It is a rule path, with no model, because none that can judge entailment ships offline here, and a
rule's reason can be shown to the user in the audit record. Word lists alone fail both ways
("never deploy on Fridays" against "deploys run on Fridays" is a conflict; "deploys never run on
weekends" against it is not), so the rules work on propositions:

- Words are stemmed (Snowball), so "prefers", "preferred" and "preferring" are one word.
- **Negation has a scope.** A negator ("not", "no longer", "never", "stopped", "dropped", ...)
  reaches to the end of its clause, or to a word that opens a new one ("but", "because", "and we").
  "No more than 5" and "no later than Friday" bound a value; they deny nothing.
  A clause that ends by saying its subject is gone ("Jest is gone", "the backup job has been
  retired", "… is now deprecated") denies that subject.
- **Transitions** name an old and a new side: "switched from A to B", "replaced A with B",
  "dropped A for B", "A instead of B", "prefer A over B". The old side counts as negated.
- A pair **contradicts** when one side denies what the other affirms and the denied words are
  mostly the other's own (so a denial of something else is not a conflict); when the two say
  opposite words (enabled / disabled, always / never) about the same rest; or when they say the
  same thing with one value swapped ("the timeout is 30 s" / "the timeout is 60 s").
- Pairs that share no word of substance ("user", "service" and "prefer" are not) are **unrelated**;
  the rest are **compatible**.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

import re2
import snowballstemmer  # type: ignore[import-untyped]

from hivemem.value_edits import edited_in_place, is_plain_number

__all__ = [
    "Relation",
    "Verdict",
    "distinct_subjects",
    "distinct_values",
    "judge",
    "names_a_transition",
    "restates",
    "speaks_of_change",
    "stem_of",
    "titles_apart",
]


class Relation(StrEnum):
    """How two memories on a similar subject relate."""

    CONTRADICTS = "contradicts"
    COMPATIBLE = "compatible"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The relation and the rule that found it, in words (kept in the audit record)."""

    relation: Relation
    reason: str


def _words(text: str) -> frozenset[str]:
    """A set of words written as one string, a word list being easier to read that way."""
    return frozenset(text.split())


_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*(?:['’][a-z]+)?(?:[.\-/][a-z0-9+#]+)*")
_CLAUSE_END = re.compile(r"[.;!?:]+(?:\s|$)|\s[-–—]\s|\(|\)|\n\s*\n")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")

_STOP = frozenset(
    _words("""a an the this that these those it its it's we our us i me my you your they them their he she
    his her is are was were be been being am do does did doing have has had having will would shall
    should can could may might must of in on at to for from by with about into onto as than then so
    too very just also still again now currently today yesterday recently already anymore any some
    all each every both either which who whom whose what when where why how there here and or if
    while up out over under all per via based team decided decide decision going get got
    make made let lets use uses used using new old""")
)
# Words about time, hedging or the note itself ("reminder:", "as agreed"): they differ between two
# wordings of one fact.
_FILLER = frozenset(
    _words("""last next week weeks month months year years day days ago since now today yesterday tomorrow
    recently lately currently soon later earlier first finally actually really please note
    noticed found think thought believe seems seem probably maybe always reminder remember agreed
    fyi update updated important todo heads psst""")
)
_NEGATORS = frozenset(
    _words("""not no never none nobody nothing neither nor without cannot cant dont doesnt didnt isnt arent
    wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt stop stops stopped stopping
    quit quits quitting drop drops dropped dropping ditch ditched abandon abandoned abandoning avoid
    avoids avoided avoiding remove removed removing deprecate deprecated deprecating retire retired
    ban banned forbid forbids forbidden against disallow disallowed reject rejected""")
)
# Words that end a negation's reach: what follows is a proposition of its own.
_SCOPE_BREAKERS = _words("but because since although though whereas however yet instead unless except")
_SUBJECTS = _words("we i they you he she it everyone people teams")
# The second word of a two-word negator ("no longer", "no more"): part of the negation, not of what it denies.
_NEGATION_TAILS = _words("longer more")
# A clause that ends "X is gone" / "X has been retired" denies X.
_RETIRED = _words("""gone dead deprecated retired removed dropped disabled abandoned discontinued decommissioned
    sunset sunsetted obsolete deleted""")
_COPULAS = _words("is are was were been be got gets become became")
_ADVERBS = _words("completely entirely fully officially finally permanently")
# "no more than", "no later than": a bound on a value, not a negation.
_BOUNDS = tuple([word, "than"] for word in _words("more longer fewer less later earlier"))

# Opposites, by stem: each side of a pair is a set of stems that mean one pole.
_ANTONYMS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (_words(a), _words(b))
    for a, b in (
        ("enabl on activ", "disabl off deactiv"),
        ("allow permit", "forbid prohibit block deni disallow"),
        ("alway", "never"),
        ("increas rais grow", "decreas reduc lower shrink"),
        ("add", "remov delet"),
        ("accept approv", "reject declin"),
        ("includ", "exclud"),
        ("true", "fals"),
        ("start", "stop"),
        ("success succeed pass", "fail"),
        ("requir mandatori", "option"),
        ("sync synchron", "async asynchron"),
        ("public", "privat intern"),
        ("like love prefer", "dislik hate"),
        ("keep", "drop"),
        ("open", "close"),
        ("fast quick", "slow"),
        ("safe", "unsaf danger"),
        ("correct right", "wrong incorrect"),
        ("manual", "automat"),
        ("higher more larger bigger", "lower less fewer smaller"),
        ("strict", "lenient loos"),
        ("stabl", "unstabl flaki"),
        ("work", "broken"),
        ("befor", "after"),
        ("encrypt", "plaintext unencrypt"),
        ("up", "down"),
    )
)

# Transitions: (pattern, which group is the old side, which is the new side). RE2's: its time is
# linear in the clause, where Python's re took 3 s over one clause of "pwd =" and 10,000 spaces
# (`.+?\s+` splits a run of spaces in every way).
_TRANSITIONS: tuple[tuple[Any, str, str], ...] = tuple(
    (re2.compile(pattern), "old", "new")
    for pattern in (
        r"\b(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|went|go|going|"
        r"change|changed|changing|convert|converted|port|ported|transition|transitioned|upgrade|upgraded|"
        r"upgrading|downgrade|downgraded|downgrading|bump|bumped|bumping|update|updated|updating)\b"
        r"(?:\s+\w+){0,3}?\s+from\s+(?P<old>.+?)\s+(?:to|onto|into)\s+(?P<new>.+)",
        r"\b(?:replace|replaced|replacing|swap|swapped|swapping|substitute|substituted)\s+(?P<old>.+?)\s+"
        r"(?:with|by|for)\s+(?P<new>.+)",
        r"(?P<old>\b.+?)\s+(?:was|is|has been|have been|got|gets|will be)\s+replaced\s+(?:with|by)\s+(?P<new>.+)",
        r"\b(?:drop|dropped|dropping|ditch|ditched|abandon|abandoned|leave|left|retire|retired|dump|dumped)\s+"
        r"(?P<old>.+?)\s+(?:for|in favou?r of)\s+(?P<new>.+)",
        r"(?P<new>\b.+?)\s+(?:instead of|rather than|in place of)\s+(?P<old>.+)",
        r"\b(?:prefer|prefers|preferred|preferring|favou?r|favou?rs|favou?red|choose|chose|chosen)\s+"
        r"(?P<new>.+?)\s+(?:over|to)\s+(?P<old>.+)",
        r"\bno longer\s+(?:\w+\s+){0,2}?(?P<old>.+?)[,]?\s+(?:but|now|we now)\s+(?:\w+\s+){0,2}?(?P<new>.+)",
    )
)

# Stems that say nothing of a memory's subject: two memories sharing only these are about different
# things ("the user prefers dark mode" / "the user prefers short standups").
_GENERIC = frozenset(
    _words("""user prefer like want need run work servic system app applic code file error thing way time
    everi peopl answer show shown keep find befor after""")
)
_MIN_SHARED = 2  # stems a one-value swap must leave in common
_NUMBER = re.compile(r"^\d[\d:.,]*$|^(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundr|thousand)$")
_DENIAL_COVERAGE = 0.5  # more than this share of a denial's words must be the other memory's


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def stem_of(word: str) -> str:
    """A word as the rules compare it (folded, stemmed): what their reasons name."""
    return _stem(_normal(word.lower()))


def _normal(word: str) -> str:
    """A word as the rules compare it: contractions folded ("don't" → "dont"), then stemmed."""
    word = word.replace("’", "'")
    if word.endswith("n't"):
        return "not"
    return word.replace("'", "")


@dataclass(frozen=True, slots=True)
class _Reading:
    """One memory as the rules see it: each content stem with its polarity, and its denials."""

    polarity: dict[str, int]  # stem -> +1 affirmed, -1 denied (the last reading wins)
    denials: tuple[frozenset[str], ...]  # the stems under each negation or old side

    @property
    def stems(self) -> set[str]:
        return set(self.polarity)


def _content(words: list[str]) -> list[str]:
    return [_stem(w) for w in words if w not in _STOP and w not in _NEGATORS and w not in _FILLER]


def _clauses(text: str) -> list[str]:
    return [part.strip() for part in _CLAUSE_END.split(text.lower()) if part and part.strip()]


def _read_clause(clause: str, polarity: dict[str, int], denials: list[frozenset[str]]) -> None:
    for pattern, old_group, new_group in _TRANSITIONS:
        match = pattern.search(clause)
        if match:
            old = _content([_normal(w) for w in _WORD.findall(match.group(old_group))])
            new = _content([_normal(w) for w in _WORD.findall(match.group(new_group))])
            before = clause[: match.start()]
            _read_plain(before, polarity, denials)
            for stem in new:
                polarity[stem] = 1
            for stem in old:
                polarity[stem] = -1
            if old:
                denials.append(frozenset(old))
            return
    _read_plain(clause, polarity, denials)


def _retired_subject(words: list[str]) -> tuple[int, int] | None:
    """Where the subject of a clause that ends by saying it is gone ("Jest is gone", "the nightly
    backup job has been retired", "… is now deprecated") starts and ends: the words between the
    last break and the verb. None for any other clause, and for one that negates ("is not gone")."""
    end = len(words)
    while end and (words[end - 1] in _STOP or words[end - 1] in _FILLER or words[end - 1] in _ADVERBS):
        end -= 1
    if end < 3 or words[end - 1] not in _RETIRED:
        return None
    verb = end - 2
    while verb > 0 and (words[verb] in _ADVERBS or words[verb] in ("now", "already", "just")):
        verb -= 1
    if words[verb] not in _COPULAS or any(w in _NEGATORS for w in words[:verb]):
        return None
    start = max((i + 1 for i, w in enumerate(words[:verb]) if w in _SCOPE_BREAKERS or w == "and"), default=0)
    return (start, verb) if start < verb else None


def _read_plain(clause: str, polarity: dict[str, int], denials: list[frozenset[str]]) -> None:
    words = [_normal(w) for w in _WORD.findall(clause)]
    retired = _retired_subject(words)
    if retired is not None:
        start, verb = retired
        if start:
            _read_plain(" ".join(words[:start]), polarity, denials)  # what the clause said before the break
        gone = [_stem(w) for w in words[start:verb] if w not in _STOP and w not in _FILLER]
        for stem in gone:
            polarity[stem] = -1
        if gone:
            denials.append(frozenset(gone))
        return
    negated = False
    denied: list[str] = []
    for i, word in enumerate(words):
        if word in _SCOPE_BREAKERS or (word == "and" and i + 1 < len(words) and words[i + 1] in _SUBJECTS):
            if denied:
                denials.append(frozenset(denied))
            negated, denied = False, []
            continue
        if word == "no" and words[i + 1 : i + 3] in _BOUNDS:
            continue  # "no more than 5 retries" bounds a number, it denies nothing
        if word in _NEGATORS:
            negated = not negated if word in ("not", "no", "never") and negated else True
            continue
        if word in _NEGATION_TAILS and i > 0 and words[i - 1] == "no":
            continue  # "no longer", "no more": one negator, the second word says nothing of the subject
        if word in _STOP or word in _FILLER:
            continue
        stem = _stem(word)
        polarity[stem] = -1 if negated else 1
        if negated:
            denied.append(stem)
    if denied:
        denials.append(frozenset(denied))


def _read(text: str) -> _Reading:
    """``text`` as the rules see it, read a paragraph at a time.

    A paragraph break ends a clause, so a text's reading is its paragraphs' readings in order
    (a later polarity wins). A merged memory is its earlier text plus a paragraph per merge, so
    judging it against each newcomer of its topic reads only the paragraph it gained.
    """
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    if len(paragraphs) == 1:
        return _read_paragraph(paragraphs[0])
    polarity: dict[str, int] = {}
    denials: list[frozenset[str]] = []
    for paragraph in paragraphs:
        reading = _read_paragraph(paragraph)
        polarity.update(reading.polarity)
        denials.extend(reading.denials)
    return _Reading(polarity, tuple(denials))


@lru_cache(maxsize=8192)
def _read_paragraph(text: str) -> _Reading:
    """One paragraph's reading; cached, and never mutated by its readers."""
    polarity: dict[str, int] = {}
    denials: list[frozenset[str]] = []
    for clause in _clauses(text):
        _read_clause(clause, polarity, denials)
    return _Reading(polarity, tuple(denials))


def _plain_stems(text: str) -> frozenset[str]:
    """Every content stem, "always" and "never" included (the antonym rule needs them)."""
    return frozenset().union(*(_paragraph_stems(p) for p in _PARAGRAPH_BREAK.split(text)))


@lru_cache(maxsize=8192)
def _paragraph_stems(text: str) -> frozenset[str]:
    return frozenset({_stem(_normal(w)) for w in _WORD.findall(text.lower()) if _normal(w) not in _STOP})


_SHORTEST_NAME = 5  # a stem this long that opens a longer one names the same thing


def _same_name(a: str, b: str) -> bool:
    """One stem the short form of the other: "postgr" (Postgres) and "postgresql", "kube" aside."""
    short, long = sorted((a, b), key=len)
    return len(short) >= _SHORTEST_NAME and short != long and long.startswith(short)


def _denial_conflict(denier: _Reading, other: _Reading) -> str | None:
    """A denial of ``denier`` that takes back what ``other`` affirms."""
    affirmed = [s for s, sign in other.polarity.items() if sign == 1]
    for denial in denier.denials:
        shared = {s for s in denial if other.polarity.get(s) == 1 or any(_same_name(s, a) for a in affirmed)}
        if shared and len(shared) / len(denial) > _DENIAL_COVERAGE:
            return f"one denies what the other affirms: {', '.join(sorted(shared))}"
    return None


def _antonym_conflict(a: frozenset[str], b: frozenset[str]) -> str | None:
    """Opposite words about the same rest: each side says one pole, and little else differs."""
    for one, other in _ANTONYMS:
        for left, right in ((a, b), (b, a)):
            said, opposed = left & one, right & other
            if not said or not opposed or (left & other) or (right & one):
                continue
            rest_left, rest_right = left - one - other - _FILLER, right - one - other - _FILLER
            if len(rest_left & rest_right) >= 1 and len(rest_left ^ rest_right) <= 2:
                return f"opposite words about the same thing: {min(said)} / {min(opposed)}"
    return None


_NEGATING_PREFIXES = ("a", "un", "in", "im", "dis", "non", "non-")


def _negated_form(word: str, other: str) -> bool:
    """Whether ``other`` is ``word`` with a prefix that negates it: synchronous / asynchronous."""
    return any(other == prefix + word for prefix in _NEGATING_PREFIXES)


def _variants(one: str, other: str) -> bool:
    """Two codes of one thing that may both hold: one part the same, another not ("7/tcp" / "7/udp")."""
    a, b = one.split("/"), other.split("/")
    return len(a) == len(b) > 1 and a != b and any(x == y for x, y in zip(a, b, strict=True))


def _value_swap(first: _Reading, second: _Reading, values: frozenset[str]) -> str | None:
    """The same statement with one value swapped: one word each ("uses Postgres" / "uses MySQL"),
    or a number each, with at most one more word of difference ("PostgreSQL 14" / "16 since the upgrade").
    A one-word swap must swap a value (``values``: a name, a number, a code): "logs are shipped to
    Loki" / "our logs go to Loki" swaps two verbs and says the same."""
    a, b = first.stems, second.stems
    only_a, only_b = a - b, b - a
    if len(a & b) < _MIN_SHARED or not only_a or not only_b:
        return None
    if any(first.polarity[w] < 0 for w in only_a) or any(second.polarity[w] < 0 for w in only_b):
        return None  # a value denied is not a value stated: "runs on Fridays" / "never on weekends"
    if len(only_a) == 1 and len(only_b) == 1:
        one, other = next(iter(only_a)), next(iter(only_b))
        if _variants(one, other):
            return None
        if (only_a | only_b) & values:
            return f"the same statement with another value: {one} / {other}"
        if _negated_form(one, other) or _negated_form(other, one):
            return f"opposite words about the same thing: {one} / {other}"
    numbers_a, numbers_b = {w for w in only_a if _NUMBER.match(w)}, {w for w in only_b if _NUMBER.match(w)}
    # One number each: two ("service 3 on port 8003" / "service 5 on port 8005") name a subject too.
    if len(numbers_a) == len(numbers_b) == 1 and len(only_a - numbers_a) + len(only_b - numbers_b) <= 1:
        return f"the same statement with another number: {min(numbers_a)} / {min(numbers_b)}"
    return None


# Title words that say a memory is an update of another, not what it is about.
_UPDATE_MARKERS = _words("chang revis correct fix latest switch move migrat replac decis")
_MONTHS = _words("""jan feb mar apr may jun jul aug sep oct nov dec
    januari februari march april june juli august septemb octob novemb decemb""")


def _named(title: str) -> frozenset[str]:
    """The stems of substance a title names: no generic words, numbers, dates or update markers."""
    return frozenset(
        stem
        for stem in _paragraph_stems(title)
        if stem not in _GENERIC
        and stem not in _FILLER
        and stem not in _NEGATORS
        and stem not in _UPDATE_MARKERS
        and stem not in _MONTHS
        and not _NUMBER.match(stem)
        and stem not in ("am", "pm")
    )


_DAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
_CODE_MARKS = re.compile(r"[0-9#@$_./:-]")
_NUMBER_LED = re.compile(r"\d[\d.,:]*\d|\d")


def _leading_number(word: str) -> str | None:
    """The number a word opens with ("100/min", "30s", "2.5x": 100, 30, 2.5): the value it states."""
    match = _NUMBER_LED.match(word)
    return match.group() if match else None


def _mentions(text: str) -> frozenset[str]:
    """Every content stem of ``text``, and the number each number-led word states."""
    words = _plain_stems(text)
    return words | {n for w in words if (n := _leading_number(w))}


_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")


@lru_cache(maxsize=8192)
def _value_stems(text: str, *, sentence_starts: bool = True) -> frozenset[str]:
    """The stems of the words ``text`` writes as values: names (a capital letter; one that opens a
    sentence only with ``sentence_starts``, as any word there has one), numbers, codes (digits,
    ``#``, ``@``, dots, dashes: ``#oncall``, ``eu-west-1``, ``marker03q``), days and months.
    Words of the stop and filler lists are never values."""
    lowered = text.lower()
    found: set[str] = set()
    for match in _WORD.finditer(lowered):
        word = _normal(match.group())
        if word in _STOP or word in _FILLER or word in _NEGATORS:
            continue
        start, end = match.span()
        written = text[start:end]
        marked = start > 0 and text[start - 1] in "#@$"
        named = written[:1].isupper() and (
            sentence_starts or written[1:2].isupper() or not _SENTENCE_START.search(text[:start])
        )
        coded = marked or bool(_CODE_MARKS.search(written)) or bool(_NUMBER.match(word))
        # A code is its whole self ("7/tcp" and "7/udp" are two); a number with a unit is its number.
        stem = word if coded and not is_plain_number(word) and re.search(r"[a-z]", word) else None
        stem = stem or _leading_number(word) or _stem(word)
        if named or coded or stem in _DAYS or stem in _MONTHS:
            found.add(stem)
    return frozenset(found)


def distinct_values(older: str, newer: str) -> str | None:
    """Why two texts may not be folded into one memory: each names a value the other never
    mentions ("Team 3 owns marker03q" / "Team 4 owns marker04q", "port 8003" / "port 8004",
    "Alice on Mondays" / "Bob on Tuesdays"). None when one's values are all the other's too (a
    rewording, or a fact that adds a detail). A value changed in place is the contradiction check's
    to find (:func:`judge`); this only keeps two facts of one template apart, however close their vectors.
    """
    older_words, newer_words = _mentions(older), _mentions(newer)
    # A capital that opens a sentence says nothing ("Rate limit is 100/min" / "The API allows 100/min").
    only_older = _value_stems(older, sentence_starts=False) - newer_words
    only_newer = _value_stems(newer, sentence_starts=False) - older_words
    if only_older and only_newer:
        return f"different values: {min(only_older)} / {min(only_newer)}"
    return None


_RESTATED = 0.6  # of the shorter text's content stems, the share the other must say too


def restates(older: str, newer: str) -> bool:
    """Whether one text says what the other says, in other words or with less: most content stems
    of the shorter are the longer's ("logs are shipped to Loki" / "our logs go to Loki"). A text
    with words of its own beyond that is a fact of its own, never merged into another."""
    a, b = _read(older).stems - _GENERIC, _read(newer).stems - _GENERIC
    shorter = min(len(a), len(b))
    return shorter > 0 and len(a & b) >= _RESTATED * shorter


def names_a_transition(text: str) -> bool:
    """Whether ``text`` names an old and a new side ("moved from A to B", "drop A for B")."""
    return any(pattern.search(clause) for clause in _clauses(text) for pattern, _, _ in _TRANSITIONS)


def speaks_of_change(text: str) -> bool:
    """Whether ``text`` denies something or names a transition ("no longer", "moved from A to B"):
    a fact of that kind that the rules find no conflict in is one they are unsure of, never merged."""
    return bool(_read(text).denials)


def _unsaid(names: frozenset[str], said: frozenset[str]) -> set[str]:
    """The stems of ``names`` that ``said`` has in no form ("postgresql" is said by "postgres")."""
    return {n for n in names if n not in said and not any(_same_name(n, s) for s in said)}


def distinct_subjects(older: tuple[str, str], newer: tuple[str, str]) -> str | None:
    """Why two memories, each a (title, content), are about different subjects; None when they may be one.

    They are when each names in its title, and speaks of in its text, something the other never
    mentions: "Billing owner" and "Search owner" ("Alice owns the billing service" / "… the search
    service") are two facts, not one value changed; "Deploy target" and "Deploy target changed"
    may be one, and so may "CI provider" and "CI moved to Buildkite". The title is where a caller
    says what a memory is about, so it tells a subject from a value that the text alone cannot.
    """
    older_text, newer_text = _plain_stems(older[1]), _plain_stems(newer[1])
    older_said, newer_said = _paragraph_stems(older[0]) | older_text, _paragraph_stems(newer[0]) | newer_text
    # A subject is named in its title and spoken of in its text; a title word its text lacks
    # ("CI provider" over "CI runs on GitHub Actions") is a label, and labels vary between wordings.
    only_older = _unsaid(_named(older[0]) & older_text, newer_said)
    only_newer = _unsaid(_named(newer[0]) & newer_text, older_said)
    if only_older and only_newer:
        return f"different subjects: {min(only_older)} / {min(only_newer)}"
    # A number in the title that the text repeats numbers the subject ("Alert rule 3: … queue 3",
    # "Runbook step 4: … node 4"): two of them are two entries of a list, not one value changed.
    numbered_older = (_title_numbers(older[0]) & older_text) - _title_numbers(newer[0])
    numbered_newer = (_title_numbers(newer[0]) & newer_text) - _title_numbers(older[0])
    if numbered_older and numbered_newer:
        return f"different numbered subjects: {min(numbered_older)} / {min(numbered_newer)}"
    return None


def titles_apart(older: tuple[str, str], newer: tuple[str, str]) -> str | None:
    """Why two compatible memories, each a (title, content), may not be merged by their titles;
    None when they may.

    A merge files one memory's text under the other's title, so the titles must name one subject:
    they share at least half of the stems of substance of the shorter. "Terraform module location"
    and "Terraform directory structure" are two decisions of one project, each to be found by its
    own title; "Session cache" and "Session cache TTL", or "Log shipping" and "Log destination",
    may be one. A title that is only the opening of its own text, or has no stem of substance,
    names no subject of its own and never stops a merge.
    """
    if _is_opening(*older) or _is_opening(*newer):
        return None
    a, b = _named(older[0]), _named(newer[0])
    if not a or not b or 2 * len(a & b) >= min(len(a), len(b)):
        return None
    return f"their titles name different subjects ({older[0]!r} / {newer[0]!r})"


def _is_opening(title: str, content: str) -> bool:
    return " ".join(content.split()).casefold().startswith(" ".join(title.split()).casefold())


def _title_numbers(title: str) -> frozenset[str]:
    return frozenset(stem for stem in _paragraph_stems(title) if _NUMBER.match(stem))


def judge(older: str, newer: str) -> Verdict:
    """How ``newer`` relates to ``older``: contradicts it, adds to it, or is about something else.

    Symmetric except in its wording of the reason; pure and fast (a few microseconds per pair).
    """
    edited = edited_in_place(older, newer)
    if edited:
        return Verdict(Relation.CONTRADICTS, edited)
    a, b = _read(older), _read(newer)
    shared = a.stems & b.stems
    values = _value_stems(older) | _value_stems(newer)
    if not shared - _GENERIC:
        return Verdict(Relation.UNRELATED, f"no subject in common (shared: {', '.join(sorted(shared)) or 'nothing'})")
    for reason in (
        _denial_conflict(b, a),
        _denial_conflict(a, b),
        _antonym_conflict(_plain_stems(older), _plain_stems(newer)),
        _value_swap(a, b, values),
    ):
        if reason:
            return Verdict(Relation.CONTRADICTS, reason)
    return Verdict(Relation.COMPATIBLE, f"same subject ({', '.join(sorted(shared)[:5])}), no conflict")
