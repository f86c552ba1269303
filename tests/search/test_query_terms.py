"""The words a keyword leg searches: a question's word also finds the word a team's notes use."""

from __future__ import annotations

from search.query_terms import query_terms


def test_a_question_searches_the_short_and_long_forms_of_its_words() -> None:
    terms = query_terms("how do we release to production?")
    assert terms is not None and not terms[1]
    assert terms[0][:2] == ["release", "production"]  # the words asked come first
    assert {"deploy", "deploys", "ship", "prod"} <= set(terms[0])


def test_words_of_no_group_and_stop_words_are_searched_as_before() -> None:
    assert query_terms("Which linter replaced flake8?") == (["linter", "replaced", "flake8"], False)
    assert query_terms("how do we") == (["how", "do", "we"], True)
    assert query_terms("...") is None
