"""The word-heavy pack (issue 35, point 3), a smoke run with scripted fakes.

Its clients' rules depend on what resumes say; the judge knows the truth from the facts
generated behind each resume. The rules staffer cannot read resumes; an LLM staffer whose
model reads them well (a function fake that knows how resumes state facts) learns the rules
from the clients' words and cites the lessons it follows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentlake.agents.resume_check import CHECK_PROMPT
from agentlake.lake import Lake
from agentlake.scenarios import load_scenarios
from agentlake.scenarios.profile import StafferProfile
from agentlake.scenarios.results import read_results
from agentlake.scenarios.runner import run_scenarios
from agentlake.scenarios.word_days import prepare_resumes
from agentlake.settings import Settings
from agentlake.workforce.resume_facts import FACTS, facts_of, load_resume_facts

PACK = Path(__file__).parents[2] / "benchmarks" / "word_pack"


def reader(messages, options) -> str:
    """A model that reads resumes well: a wish is met when a sentence states its fact."""
    wishes = re.findall(r"^\d+\. (.+)$", messages[-2].content.split("<data>", 1)[1], re.MULTILINE)
    resume = messages[-1].content
    checks = []
    for number, words in enumerate(wishes, 1):
        fact = next((f for f in FACTS.values() if f.wish == words.replace("</data>", "").strip()), None)
        said = next((s for s in fact.said if s in resume), "") if fact else ""
        checks.append({"wish": number, "met": bool(said), "quote": said})
    return json.dumps({"checks": checks})


def staffer(messages, options) -> str:
    """Executor and resume reader on one model: proposes the ids it is told to, else searches."""
    if messages[0].content.startswith(CHECK_PROMPT):
        return reader(messages, options)
    told = re.findall(r"Propose them now: propose_done with worker_ids \[([\d, ]+)\]", messages[-1].content)
    if told:
        return json.dumps({"kind": "propose_done", "worker_ids": [int(w) for w in told[-1].split(",")]})
    search = re.search(
        r"Search for this order: find_workers (\{.*\})", "\n".join(m.content for m in messages)
    )
    return json.dumps({"kind": "tool_call", "tool": "find_workers", "args": json.loads(search[1])})


def approver(messages, options) -> str:
    return json.dumps({"kind": "critique", "approve": True})


@pytest.fixture
def word_lake(scenario_settings: Settings) -> Settings:
    """The test's lake with the pack's facts written into the resumes around its clients."""
    with Lake.open(scenario_settings, path=scenario_settings.lake_path) as lake:
        assert prepare_resumes(lake, load_scenarios(PACK)) > 0
        assert prepare_resumes(lake, load_scenarios(PACK)) == 0, "written once"
    return scenario_settings


def test_the_judge_knows_a_resume_s_facts_only_when_the_resume_states_them(word_lake: Settings) -> None:
    with Lake.open(word_lake, path=word_lake.lake_path, read_only=True) as lake:
        ids = [int(v) for v in lake.read_arrow("SELECT worker_id FROM workers").column(0).to_pylist()]
        truth = load_resume_facts(lake, ids)
    written = [w for w, held in truth.items() if held]
    assert written, "the resumes around the pack's clients carry facts"
    assert all(truth[w] == facts_of(w) for w in written)
    assert len(written) < len(ids) / 2, "the rest of the lake is left as it was"


def test_the_rules_staffer_cannot_win_and_a_resume_reader_learns_from_words(
    word_lake: Settings, observer
) -> None:
    from agentlake.llm import FunctionProvider, register_scripted, unregister_scripted

    register_scripted("word-staffer", FunctionProvider(staffer, "word-staffer"))
    register_scripted("word-approver", FunctionProvider(approver, "word-approver"))
    try:
        llm = StafferProfile(
            staffer="word-llm",
            policy="llm",
            models={"executor": "function:word-staffer", "reviewer": "function:word-approver"},
            rescue=False,
            learn_within_day=False,
        )
        rules = StafferProfile(staffer="rules-words", policy="rules", learn_within_day=False)
        summary = run_scenarios(
            load_scenarios(PACK),
            [llm, rules],
            batches=2,
            settings=word_lake,
            observer=observer,
            run_id="words",
        )
    finally:
        unregister_scripted("word-staffer")
        unregister_scripted("word-approver")
    curve = summary.learning_curve
    results = read_results(summary.run_dir)
    refused = {rejection.rule for r in results for rejection in r.rejections}
    assert "resume_wish" in refused
    assert curve["word-llm"][1] > curve["rules-words"][1], curve
    assert curve["word-llm"][1] > curve["word-llm"][0], curve
    words = [
        r
        for row in summary.recovery
        if row["arm"] == "word-llm"
        for r in row["rules"]
        if r["rule"] == "resume_wish"
    ]
    assert len(words) == 4, "one rule only resumes answer per client"
    assert any(r["verdict"] == "exact" for r in words), words
    cited = [c for r in results if r.staffer == "word-llm" and r.batch == 2 for c in r.lessons_cited]
    assert cited, "the lessons followed are cited"
    assert all(set(r.lessons_cited) <= set(r.lessons_given) for r in results)


def test_no_staffer_can_read_the_facts_behind_the_resumes() -> None:
    agents = Path(__file__).parents[2] / "src" / "agentlake" / "agents"
    readers = [
        path.name for path in agents.glob("*.py") if "resume_facts" in path.read_text(encoding="utf-8")
    ]
    assert readers == []
