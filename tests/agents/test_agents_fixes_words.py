"""Code's fixes of what a question's words fix about a query's shape, on a real lake
(agents.fix_words): a direction, a ranking by the group's own value, "no" on a column without
missing values, a count of different values never asked, a count of groups with a bound on
their rows, a key the question states, and the difference of two columns in a row; and the
measure a question names by a unit, an implied word or an abbreviation (fix_compare)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_support import csv_lake, fixed_rows, problem_kinds

from agentlake.agents.fix_compare import named_measure
from agentlake.agents.fix_whole import group_count, never_count, share_query
from agentlake.agents.fix_words import fix_worded, word_problems
from agentlake.agents.linking import lake_columns, named_values
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake

AIRPORTS = """iata,name,state,latitude,longitude
ADK,Adak,AK,51.9,-176.6
BRW,Wiley Post,AK,71.3,-156.8
SEA,Seattle Tacoma,WA,47.4,-122.3
BOS,Logan,MA,42.4,-71.0
JFK,Kennedy,NY,40.6,-73.8
LGA,LaGuardia,NY,40.8,-73.9
ALB,Albany,NY,42.7,-73.8
"""
RIOTS = """last_name,age,neighborhood,type,gender
Austin,64,Harvard Park,Homicide,Male
Baker,19,Hollywood,Homicide,Female
Cruz,17,Watts,Death,Male
Diaz,35,Hollywood,Accident,Female
"""
WEATHER = """date,precipitation,temp_max,temp_min,weather
2013-01-01,0.0,10.0,2.0,sun
2013-01-02,5.0,8.0,5.0,rain
2014-01-01,0.0,12.0,1.0,sun
2014-01-02,0.0,9.0,4.0,sun
2014-01-03,3.0,7.0,6.0,rain
"""
PENGUINS = """species,bill_length_mm,body_mass_g
Adelie,39.1,3750
Adelie,40.3,4200
Gentoo,46.1,4500
Gentoo,50.0,5400
Gentoo,47.0,4800
"""
CUSTOMERS = """customer_id,name,state
C1,Kofi Yilmaz,TX
C2,Maya Patel,AK
C3,Ana Lima,OH
"""
ORDERS = """order_id,customer_id,amount
100250,C1,10
100251,C2,20
100252,C2,30
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    files = {
        "airports": AIRPORTS,
        "la_riots": RIOTS,
        "weather": WEATHER,
        "penguins": PENGUINS,
        "customers": CUSTOMERS,
        "orders": ORDERS,
    }
    root = tmp_path_factory.mktemp("fixes-words")
    with csv_lake(
        root, files, keys={"orders": "order_id", "customers": "customer_id", "airports": "iata"}
    ) as opened:
        yield opened


# --- the measure a question names -----------------------------------------------------------------

PENGUIN_TYPES = {"species": "VARCHAR", "bill_length_mm": "DOUBLE", "body_mass_g": "BIGINT"}


def test_a_unit_and_a_verb_name_the_measure() -> None:
    assert (
        named_measure("How many Adelie penguins weighed at least 4000 grams?", PENGUIN_TYPES) == "body_mass_g"
    )


def test_abbreviated_words_name_the_measure() -> None:
    types = {"temp_max": "DOUBLE", "temp_min": "DOUBLE", "precipitation": "DOUBLE"}
    assert named_measure("What was the highest maximum temperature?", types) == "temp_max"


def test_a_question_naming_no_measure_names_none() -> None:
    assert named_measure("How many Adelie penguins are there?", PENGUIN_TYPES) is None


def test_a_bound_in_grams_is_put_on_the_mass(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM penguins WHERE species = 'Adelie' AND bill_length_mm >= 4000"
    question = "How many Adelie penguins weighed at least 4000 grams?"
    assert fixed_rows(lake, sql, "bound", question) == [(1,)]


# --- a direction -----------------------------------------------------------------------------------

WEST = "What is the name of the airport that lies farthest west?"


def test_ordering_the_wrong_way_is_found(lake: Lake) -> None:
    assert "direction" in problem_kinds(
        lake, "SELECT name FROM airports ORDER BY longitude DESC LIMIT 1", WEST
    )


def test_farthest_west_orders_by_the_lowest_longitude(lake: Lake) -> None:
    sql = "SELECT name FROM airports ORDER BY longitude DESC LIMIT 1"
    assert fixed_rows(lake, sql, "direction", WEST) == [("Adak",)]


def test_northernmost_orders_by_latitude(lake: Lake) -> None:
    sql = "SELECT name FROM airports WHERE state = 'AK' ORDER BY name LIMIT 1"
    assert fixed_rows(lake, sql, "direction", "What is the name of the northernmost airport?") == [
        ("Wiley Post",)
    ]


def test_oldest_orders_by_age(lake: Lake) -> None:
    sql = "SELECT neighborhood FROM la_riots ORDER BY last_name DESC LIMIT 1"
    question = "In which neighborhood did the oldest person who died during the LA riots die?"
    assert fixed_rows(lake, sql, "direction", question) == [("Harvard Park",)]


def test_a_right_direction_is_no_problem(lake: Lake) -> None:
    assert "direction" not in problem_kinds(
        lake, "SELECT name FROM airports ORDER BY longitude ASC LIMIT 1", WEST
    )


# --- ranking by the group's own value ---------------------------------------------------------------

SUNNY = "In which year did Seattle have the most sunny days?"


def test_ranking_years_by_the_year_is_found(lake: Lake) -> None:
    sql = "SELECT year(date) FROM weather WHERE weather = 'sun' GROUP BY year(date) ORDER BY year(date) DESC LIMIT 1"
    assert "keyranked" in problem_kinds(lake, sql, SUNNY)


def test_years_are_ranked_by_their_rows(lake: Lake) -> None:
    sql = "SELECT year(date) FROM weather WHERE weather = 'sun' GROUP BY year(date) ORDER BY year(date) DESC LIMIT 1"
    assert fixed_rows(lake, sql, "keyranked", SUNNY) == [(2014,)]


def test_an_ungrouped_ranking_by_the_year_is_grouped(lake: Lake) -> None:
    sql = "SELECT year(date) FROM weather WHERE weather = 'sun' ORDER BY year(date) ASC LIMIT 1"
    assert fixed_rows(lake, sql, "keyranked", SUNNY) == [(2014,)]


def test_a_ranking_by_rows_is_no_problem(lake: Lake) -> None:
    sql = "SELECT year(date) FROM weather WHERE weather = 'sun' GROUP BY year(date) ORDER BY count(*) DESC LIMIT 1"
    assert "keyranked" not in problem_kinds(lake, sql, SUNNY)


# --- "no precipitation" ------------------------------------------------------------------------------

DRY = "On how many days in 2014 was there no precipitation?"


def test_a_null_test_on_a_column_without_nulls_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) FROM weather WHERE year(date) = 2014 AND precipitation IS NULL"
    assert "nullzero" in problem_kinds(lake, sql, DRY)


def test_no_precipitation_is_zero(lake: Lake) -> None:
    sql = "SELECT count(*) FROM weather WHERE year(date) = 2014 AND precipitation IS NULL"
    assert fixed_rows(lake, sql, "nullzero", DRY) == [(2,)]


def test_a_null_test_the_question_does_not_word_is_left(lake: Lake) -> None:
    sql = "SELECT count(*) FROM weather WHERE year(date) = 2014 AND precipitation IS NULL"
    assert "nullzero" not in problem_kinds(lake, sql, "On how many days in 2014 was the temperature low?")


# --- a count of different values never asked ----------------------------------------------------------

YOUNG = "How many people younger than 20 died during the LA riots?"


def test_counting_unnamed_different_values_is_found(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT type) FROM la_riots WHERE age < 20"
    assert "unsaiddistinct" in problem_kinds(lake, sql, YOUNG)


def test_the_rows_are_counted_instead(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT type) FROM la_riots WHERE age < 20"
    assert fixed_rows(lake, sql, "unsaiddistinct", YOUNG) == [(2,)]


def test_different_values_asked_for_are_kept(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT type) FROM la_riots WHERE age < 20"
    assert "unsaiddistinct" not in problem_kinds(lake, sql, "How many different types of death were there?")


# --- groups with a bound on their rows -----------------------------------------------------------------


def test_groups_of_a_column_with_a_bound_are_counted(lake: Lake) -> None:
    assert lake.query(group_count("How many states have more than 1 airports?", lake) or "").rows == [[2]]


def test_groups_of_another_tables_key_are_counted(lake: Lake) -> None:
    query = group_count("How many customers placed more than 1 orders?", lake) or ""
    assert lake.query(query).rows == [[1]]


def test_rows_without_rows_in_another_table_are_counted(lake: Lake) -> None:
    query = never_count("How many customers have never placed an order?", lake) or ""
    assert lake.query(query).rows == [[1]]


def test_rows_with_no_rows_in_another_table_are_counted(lake: Lake) -> None:
    query = never_count("How many customers have no orders?", lake) or ""
    assert lake.query(query).rows == [[1]]


def test_groups_over_the_named_values_are_counted(lake: Lake) -> None:
    query = group_count("How many states in the data have at least 2 airports?", lake) or ""
    assert lake.query(query).rows == [[2]]


def test_groups_of_people_rows_are_counted(lake: Lake) -> None:
    query = group_count("In how many neighborhoods did 2 or more people die during the LA riots?", lake) or ""
    assert lake.query(query).rows == [[1]]


def test_periods_whose_total_exceeds_a_bound_are_counted(lake: Lake) -> None:
    query = group_count("In 2014, in how many months did the total precipitation exceed 2 mm?", lake) or ""
    assert lake.query(query).rows == [[1]]


def test_a_question_of_another_shape_has_no_group_count(lake: Lake) -> None:
    assert group_count("How many airports are in New York?", lake) is None


def test_a_query_of_another_value_is_replaced(lake: Lake) -> None:
    sql = "SELECT count(*) FROM airports WHERE state = 'NY'"
    assert fixed_rows(lake, sql, "whole", "How many states have fewer than 2 airports?") == [(2,)]


def test_a_query_of_the_same_value_is_no_problem(lake: Lake) -> None:
    sql = "SELECT count(*) FROM (SELECT state FROM airports GROUP BY state HAVING count(*) > 1)"
    assert "whole" not in problem_kinds(lake, sql, "How many states have more than 1 airports?")


# --- a key the question states ----------------------------------------------------------------------------

NAME = "What is the name of the customer who placed order 100250?"


def test_a_stated_key_left_out_is_found(lake: Lake) -> None:
    sql = "SELECT c.name FROM customers AS c JOIN orders AS o ON c.customer_id = o.customer_id"
    assert "key" in problem_kinds(lake, sql, NAME)


def test_the_stated_key_is_compared(lake: Lake) -> None:
    sql = "SELECT c.name FROM customers AS c JOIN orders AS o ON c.customer_id = o.customer_id"
    assert fixed_rows(lake, sql, "key", NAME) == [("Kofi Yilmaz",)]


def test_a_code_that_is_a_key_is_compared(lake: Lake) -> None:
    sql = "SELECT name FROM airports ORDER BY name LIMIT 1"
    assert fixed_rows(lake, sql, "key", "What is the name of the airport with the code SEA?") == [
        ("Seattle Tacoma",)
    ]


def test_a_number_that_is_no_key_is_left(lake: Lake) -> None:
    sql = "SELECT count(*) FROM orders WHERE amount > 999"
    assert "key" not in problem_kinds(lake, sql, "How many orders were over 999?")


# --- the difference of two columns --------------------------------------------------------------------------

RANGE = "What was the largest difference between the maximum and the minimum temperature on one day?"


def test_a_difference_of_extremes_is_found(lake: Lake) -> None:
    assert "difference" in problem_kinds(lake, "SELECT max(temp_max) - min(temp_min) FROM weather", RANGE)


def test_the_largest_difference_is_taken_in_a_row(lake: Lake) -> None:
    assert fixed_rows(lake, "SELECT max(temp_max) - min(temp_min) FROM weather", "difference", RANGE) == [
        (11.0,)
    ]


def test_the_average_difference_is_taken_in_a_row(lake: Lake) -> None:
    question = "What was the average difference between the maximum and the minimum temperature in 2014?"
    sql = "SELECT avg(temp_max) FROM weather WHERE year(date) = 2014"
    assert fixed_rows(lake, sql, "difference", question) == [(17.0 / 3,)]


def test_a_difference_taken_in_a_row_is_no_problem(lake: Lake) -> None:
    sql = "SELECT max(temp_max - temp_min) FROM weather"
    assert word_problems(sql, RANGE, lake, lake.query(sql).rows, []) == []


# --- a share, a "how many" answered with a value, a ranked column held to one value ------------------

SHARE = "What percentage of the penguins are Gentoo penguins?"


def test_a_share_of_another_value_is_found(lake: Lake) -> None:
    sql = "SELECT 100.0 * sum(CASE WHEN species = 'Adelie' THEN 1 ELSE 0 END) / count(*) FROM penguins"
    rows = lake.query(sql).rows
    kinds = [kind for kind, _ in word_problems(sql, SHARE, lake, rows, [("species", "Gentoo")])]
    assert "whole" in kinds


def test_the_share_of_the_named_value_is_written_whole(lake: Lake) -> None:
    sql = "SELECT 100.0 * sum(CASE WHEN species = 'Adelie' THEN 1 ELSE 0 END) / count(*) FROM penguins"
    rows = lake.query(sql).rows
    fixed = fix_worded(sql, "whole", SHARE, lake, rows, [("species", "Gentoo")])
    assert lake.query(fixed[0] if fixed else "").rows == [[60.0]]


def test_a_share_of_an_amount_sums_the_measure(lake: Lake) -> None:
    question = "What percentage of the precipitation in 2013 fell on rain days?"
    assert lake.query(share_query(question, lake, [("weather", "rain")]) or "").rows == [[100.0]]


def test_a_share_filtered_on_its_own_condition_is_fixed(lake: Lake) -> None:
    sql = "SELECT 100.0 * count(*) FILTER (WHERE species = 'Gentoo') / count(*) FROM penguins WHERE species = 'Gentoo'"
    assert fixed_rows(lake, sql, "share", SHARE) == [(60.0,)]


def test_how_many_answered_with_a_value_is_counted(lake: Lake) -> None:
    sql = "SELECT month(date) FROM weather WHERE precipitation = 0 GROUP BY month(date) ORDER BY month(date) DESC LIMIT 1"
    assert fixed_rows(lake, sql, "uncounted", "On how many days was there no precipitation?") == [(3,)]


def test_a_ranked_column_held_to_one_value_is_let_go(lake: Lake) -> None:
    sql = "SELECT type FROM la_riots WHERE type = 'Death' GROUP BY type ORDER BY count(*) DESC LIMIT 1"
    assert fixed_rows(lake, sql, "heldgroup", "Which type of death was most common?") == [("Homicide",)]


def test_shortest_orders_the_named_length_by_its_alias(lake: Lake) -> None:
    sql = "SELECT species, avg(bill_length_mm) AS a FROM penguins GROUP BY species ORDER BY a DESC LIMIT 1"
    question = "Which species has the shortest bills on average?"
    assert fixed_rows(lake, sql, "direction", question) == [("Adelie", 39.7)]


# --- days between two dates of a row ---------------------------------------------------------------------

SHIPPED = "How many orders were shipped within 3 days of being placed?"


@pytest.fixture(scope="module")
def shipping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    text = "order_id,order_date,shipped_date\n1,2017-01-01,2017-01-02\n2,2017-01-01,2017-01-09\n3,2017-02-01,2017-02-04\n"
    with csv_lake(tmp_path_factory.mktemp("shipping"), {"orders": text}) as opened:
        yield opened


def test_days_between_two_dates_left_out_are_found(shipping: Lake) -> None:
    assert "days" in problem_kinds(shipping, "SELECT count(*) FROM orders", SHIPPED)


def test_within_days_filters_the_later_minus_the_earlier(shipping: Lake) -> None:
    assert fixed_rows(shipping, "SELECT count(*) FROM orders", "days", SHIPPED) == [(2,)]


def test_a_difference_of_the_dates_taken_is_no_problem(shipping: Lake) -> None:
    sql = "SELECT count(*) FROM orders WHERE shipped_date - order_date <= 3"
    assert "days" not in problem_kinds(shipping, sql, SHIPPED)


# --- who, a column no table has, a gender in words, a state code unsaid, the cheapest -------------------


def test_who_selects_the_name_for_the_key(lake: Lake) -> None:
    sql = "SELECT customer_id FROM customers WHERE state = 'AK'"
    assert fixed_rows(lake, sql, "whoname", "Who lives in Alaska?") == [("Maya Patel",)]


def test_a_selected_column_no_table_has_is_dropped(lake: Lake) -> None:
    sql = "SELECT name, symbol FROM customers WHERE state = 'AK'"
    error = 'Binder Error: Referenced column "symbol" not found in FROM clause!'
    assert fixed_rows(lake, sql, "error", "Who lives in Alaska?", error) == [("Maya Patel",)]


def test_men_names_male(lake: Lake) -> None:
    listed = listed_values(lake)
    assert ("gender", "Male") in named_values("How old were the men who died?", listed, lake_columns(lake))


def test_a_state_code_the_question_does_not_name_is_dropped(tmp_path_factory: pytest.TempPathFactory) -> None:
    text = "customer_id,state\n" + "".join(
        f"C{i},{state}\n" for i, state in enumerate("TX OH OR CA NY WA".split())
    )
    with csv_lake(tmp_path_factory.mktemp("states"), {"customers": text}) as states:
        sql = "SELECT count(*) FROM customers WHERE state = 'OR'"
        assert fixed_rows(states, sql, "unnamed", "How many customers are there?") == [(6,)]


def test_cheapest_orders_by_the_lowest_price(tmp_path_factory: pytest.TempPathFactory) -> None:
    text = "symbol,price\nAAA,30\nBBB,10\nCCC,20\n"
    with csv_lake(tmp_path_factory.mktemp("cheap"), {"stocks": text}) as stocks:
        sql = "SELECT symbol FROM stocks ORDER BY price DESC LIMIT 1"
        assert fixed_rows(stocks, sql, "direction", "Which symbol was the cheapest?") == [("BBB",)]


def test_a_copied_column_counted_and_grouped_is_let_go(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT country) AS n FROM customers WHERE state = 'AK' GROUP BY country ORDER BY n DESC LIMIT 1"
    error = 'Binder Error: Referenced column "country" not found in FROM clause!'
    assert fixed_rows(lake, sql, "error", "How many customers live in Alaska?", error) == [(1,)]


def test_a_year_column_the_table_lacks_is_the_year_of_its_first_date(shipping: Lake) -> None:
    sql = "SELECT year, count(*) AS n FROM orders GROUP BY year ORDER BY n DESC LIMIT 1"
    error = 'Binder Error: Referenced column "year" not found in FROM clause!'
    assert fixed_rows(shipping, sql, "error", "In which year were the most orders placed?", error) == [
        (2017, 3)
    ]
