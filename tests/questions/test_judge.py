"""The judge: numbers read as a person writes them, within a tolerance, one value per answer;
text by case-insensitive whole-word containment."""

from __future__ import annotations

import pytest

from agentlake.questions.judge import Tolerance, judge_number, judge_text, stated_numbers

WHOLE = Tolerance(abs=0.5)


@pytest.mark.parametrize(
    "answer",
    [
        "5,076",
        "5076.0",
        "about 5076 grams",
        "The average body mass of Gentoo penguins is 5076.02 grams [SQL].",
        "It is 5,076.4 g.",
    ],
)
def test_a_number_written_as_people_write_it_is_right(answer: str) -> None:
    assert judge_number(answer, 5076.4, WHOLE).right


@pytest.mark.parametrize(
    ("stated", "right"), [("10.5", True), ("9.5", True), ("10.51", False), ("9.49", False)]
)
def test_an_absolute_tolerance_includes_its_edge(stated: str, right: bool) -> None:
    assert judge_number(f"It is {stated}.", 10.0, WHOLE).right is right


def test_float_noise_at_the_edge_does_not_fail_a_right_answer() -> None:
    # 5076.4 - 5075.9 is 0.5000000000004547 in floats.
    assert judge_number("5075.9", 5076.4, WHOLE).right


@pytest.mark.parametrize(("stated", "right"), [("22,135", True), ("22,092", True), ("22,140", False)])
def test_a_relative_tolerance_scales_with_the_truth(stated: str, right: bool) -> None:
    # 0.1% of 22,113.4 is 22.11.
    assert judge_number(stated, 22113.4, Tolerance(abs=0.5, rel=0.001)).right is right


def test_a_count_one_off_is_wrong_under_the_default_tolerance() -> None:
    assert not judge_number("There were 190 rainy days.", 191.0, WHOLE).right


def test_a_negative_number_keeps_its_sign() -> None:
    assert judge_number("The lowest was -4.4 degrees [SQL].", -4.4, Tolerance(abs=0.05)).right


def test_a_negative_truth_stated_without_its_sign_is_wrong() -> None:
    assert not judge_number("The lowest was 4.4 degrees.", -4.4, Tolerance(abs=0.05)).right


def test_an_answer_listing_every_group_is_wrong_even_when_one_is_the_truth() -> None:
    answer = "Adelie: 3700.66, Chinstrap: 3733.09, Gentoo: 5076.02 [SQL]"
    assert not judge_number(answer, 5076.02, WHOLE).right


def test_an_answer_stating_a_second_different_number_is_wrong() -> None:
    assert not judge_number("5076 grams, over 124 penguins.", 5076.02, WHOLE).right


def test_several_numbers_that_all_agree_are_right() -> None:
    assert judge_number("5076 grams (5,076.0 g).", 5076.02, WHOLE).right


def test_numbers_the_question_names_are_set_aside() -> None:
    verdict = judge_number(
        "In 2014, 14 days were above 30 degrees.",
        14.0,
        WHOLE,
        question="How many days in 2014 had a maximum temperature above 30 degrees?",
    )
    assert verdict.right


def test_citations_are_set_aside() -> None:
    assert [n.text for n in stated_numbers("There are 12 operators [W-7995] [SQL].")] == ["12"]


@pytest.mark.parametrize(
    "answer",
    [
        "On Mar 1 2009 Apple traded at 105.12 [SQL].",
        "On March 1st, 2009 the price was 105.12.",
        "On 2009-03-01 the price was 105.12.",
        "On 2009/03/01 the price was 105.12.",
        "On 3/1/2009 the price was 105.12.",
        "On 01.03.2009 the price was 105.12.",
    ],
)
def test_dates_are_set_aside(answer: str) -> None:
    assert [n.text for n in stated_numbers(answer)] == ["105.12"]


def test_ordinals_are_set_aside() -> None:
    assert [n.text for n in stated_numbers("The 3rd highest is 12.")] == ["12"]


def test_an_id_glued_to_letters_is_no_number() -> None:
    assert stated_numbers("Customer C0001 ordered.") == []


@pytest.mark.parametrize("answer", ["134,055 thousand jobs", "134,055 jobs"])
def test_a_scale_word_is_right_as_written_or_scaled(answer: str) -> None:
    assert judge_number(answer, 134055.0, WHOLE).right


def test_a_scaled_number_reaches_the_truth() -> None:
    assert judge_number("about 3.2 million", 3_200_000.0, Tolerance(rel=0.001)).right


def test_an_answer_with_no_number_is_wrong_and_says_so() -> None:
    verdict = judge_number("The evidence does not answer the question.", 5.0, WHOLE)
    assert verdict.reason == "states no number (expected 5)"


def test_a_wrong_number_is_named_in_the_reason() -> None:
    assert judge_number("There are 7.", 5.0, WHOLE).reason == "states 7, not 5 within ±0.5"


@pytest.mark.parametrize("answer", ["Most live on dream island.", "DREAM", "Dream [SQL]"])
def test_text_is_found_whole_and_case_insensitively(answer: str) -> None:
    assert judge_text(answer, "Dream").right


def test_text_inside_a_longer_word_is_not_found() -> None:
    assert not judge_text("Dreamland has the most.", "Dream").right


def test_a_name_of_several_words_is_found_across_spacing() -> None:
    assert judge_text("The top customer is farid  xu.", "Farid Xu").right


def test_text_not_named_is_wrong() -> None:
    assert not judge_text("Biscoe has the most.", "Dream").right


def test_a_year_as_text_is_found_beside_other_numbers() -> None:
    assert judge_text("IBM peaked in 2010, at 124.85 on average.", "2010").right
