"""HindsightMemory against a real node: remember, recall, instructions context, tools, feedback,
and the tools inside an OpenAI Agents SDK run driven by a scripted model."""

from __future__ import annotations

import inspect
import typing
import uuid

import pytest

from hindsight_client import HindsightClient
from hindsight_client.adapters.agents import CONTEXT_HEADER, HindsightMemory, estimate_tokens

FACTS = [
    "The user prefers answers in French.",
    "The user's timezone is Europe/Berlin.",
    "The user is allergic to peanuts.",
    "The user's dog is a border collie called Pixel.",
    "The user drives an electric Renault Zoe.",
    "The user works as a structural engineer in Hamburg.",
    "The user plays the cello in an amateur orchestra on Thursdays.",
    "The user's daughter starts school in September.",
    "The user runs a half marathon every spring.",
    "The user keeps bees on the roof of the flat.",
]


@pytest.fixture
def bank(prefix: str) -> str:
    return f"{prefix}/agent-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def memory(client: HindsightClient, bank: str) -> HindsightMemory:
    return HindsightMemory(bank, client, agent_id="support-bot", session_id="s-1")


def _seed(memory: HindsightMemory) -> None:
    for fact in FACTS:
        assert memory.remember(fact, source="user").stored


def test_remember_then_recall(memory: HindsightMemory) -> None:
    written = memory.remember("The user prefers answers in French.", source="user", task_id="t-9")
    assert written.stored
    memories = memory.recall("Which language should I answer in?", top_k=3)
    assert memories[0].id == written.id
    assert memories[0].content == "The user prefers answers in French."
    provenance = memories[0].provenance
    assert (provenance.source, provenance.agent_id, provenance.session_id, provenance.task_id) == (
        "user", "support-bot", "s-1", "t-9"
    )
    assert memory.last_recall is not None and memory.last_recall.hits[0].score > 0


def test_remember_takes_a_kind_and_refuses_unknown_provenance(memory: HindsightMemory) -> None:
    written = memory.remember("Drafting the refund email for order 1182.", kind="working")
    assert written.stored
    assert memory.client.get(written.id).kind == "working"
    with pytest.raises(TypeError, match="unknown provenance"):
        memory.remember("x", user="nobody")


def test_recall_of_an_empty_bank(memory: HindsightMemory) -> None:
    assert memory.recall("anything at all?") == []
    assert memory.context_for("anything at all?") == ""


def test_context_for_holds_the_relevant_memories(memory: HindsightMemory) -> None:
    _seed(memory)
    block = memory.context_for("Is there any food the user cannot eat?", max_tokens=400)
    lines = block.splitlines()
    assert lines[0] == CONTEXT_HEADER
    assert "peanuts" in lines[1], block
    assert estimate_tokens(block) <= 400


@pytest.mark.parametrize("max_tokens", [30, 45, 80, 150])
def test_context_for_respects_max_tokens(memory: HindsightMemory, max_tokens: int) -> None:
    _seed(memory)
    block = memory.context_for("Tell me about the user", max_tokens=max_tokens)
    assert block, "a budget that holds the header and a line gives a block"
    assert estimate_tokens(block) <= max_tokens
    # Roughly four characters a token for English: the block stays near its budget.
    assert len(block) <= 4 * max_tokens + 8


def test_context_for_grows_with_the_budget(memory: HindsightMemory) -> None:
    _seed(memory)
    small = memory.context_for("Tell me about the user", max_tokens=60)
    large = memory.context_for("Tell me about the user", max_tokens=1000)
    assert len(large.splitlines()) > len(small.splitlines()) >= 2
    assert len(large.splitlines()) == 1 + len(FACTS)
    assert memory.context_for("Tell me about the user", max_tokens=5) == ""


def test_context_for_truncates_a_memory_too_long_for_the_budget(memory: HindsightMemory) -> None:
    long_fact = "The user's travel plan: " + ", ".join(f"city number {i}" for i in range(80))
    memory.remember(long_fact, source="user")
    block = memory.context_for("What is the user's travel plan?", max_tokens=60)
    assert block.splitlines()[1].endswith("…")
    assert estimate_tokens(block) <= 60


def test_tools_are_plain_typed_documented_callables(memory: HindsightMemory) -> None:
    save, search = memory.as_tools()
    assert (save.__name__, search.__name__) == ("save_memory", "search_memory")
    for tool, param in ((save, "text"), (search, "query")):
        assert list(inspect.signature(tool).parameters) == [param]
        hints = typing.get_type_hints(tool)
        assert hints == {param: str, "return": str}
        assert tool.__doc__ and "Args:" in tool.__doc__


def test_tools_write_and_find(memory: HindsightMemory, client: HindsightClient, bank: str) -> None:
    save, search = memory.as_tools()
    answer = save("The user's favourite tea is genmaicha.")
    assert answer.startswith("Saved as memory "), answer
    memory_id = answer.removeprefix("Saved as memory ").rstrip(".")
    stored = client.get(memory_id)
    assert stored.bank == bank
    assert (stored.provenance.source, stored.provenance.agent_id) == ("agent", "support-bot")

    found = search("Which tea does the user like?")
    assert found.splitlines()[0].startswith("- The user's favourite tea is genmaicha."), found
    assert "No memories found." == HindsightMemory(f"{bank}-empty", client).as_tools()[1]("tea?")


def test_save_memory_reports_a_restatement(memory: HindsightMemory) -> None:
    save, _ = memory.as_tools()
    first = save("The user's favourite tea is genmaicha.")
    again = save("The user's favourite tea is genmaicha.")
    assert first.startswith("Saved as memory ")
    assert again.startswith("Already known"), again


def test_feedback_after_a_run(memory: HindsightMemory, client: HindsightClient) -> None:
    _seed(memory)
    memory.context_for("Which language should I answer in?", max_tokens=200)
    top = memory.last_recall.hits[0].memory
    _, search = memory.as_tools()
    search("Does the user have a dog?")

    # Only the memory the run relied on.
    results = memory.feedback("helpful", memory_ids=[top.id])
    assert [r.memory.id for r in results] == [top.id]
    assert results[0].confidence_after >= results[0].confidence_before
    assert memory.feedback("used") == [], "feedback covers each recall once"

    memory.recall("Does the user have a dog?", top_k=2)
    ids = memory.last_recall.ids
    results = memory.feedback("wrong")
    assert sorted(r.memory.id for r in results) == sorted(ids)
    assert all(r.confidence_after < r.confidence_before for r in results)
    logged = client.get_recall(memory.last_recall.recall_id)
    assert {f.outcome for f in logged.feedback} == {"wrong"}


def test_memory_from_a_url(node, bank: str) -> None:
    with HindsightMemory(bank, base_url=node.url, api_key="") as memory:
        assert memory.remember("The user likes jazz.", source="user").stored
        assert memory.recall("music?")[0].content == "The user likes jazz."


# -- OpenAI Agents SDK ------------------------------------------------------------------------


def test_as_function_tools_are_agents_function_tools(memory: HindsightMemory) -> None:
    import agents

    tools = memory.as_function_tools()
    assert all(isinstance(t, agents.FunctionTool) for t in tools)
    assert [t.name for t in tools] == ["save_memory", "search_memory"]
    save, search = tools
    assert save.params_json_schema["required"] == ["text"]
    assert search.params_json_schema["required"] == ["query"]
    assert "durable fact" in save.description
    assert "self-contained sentence" in save.params_json_schema["properties"]["text"]["description"]


def test_an_agent_run_saves_and_finds_through_the_tools(
    memory: HindsightMemory, client: HindsightClient, bank: str
) -> None:
    import agents
    from agents.testing import ScriptedModel, assistant_message, function_call

    memory.remember("The user's timezone is Europe/Berlin.", source="user")
    question = "Remember that I am vegetarian, and tell me my timezone."
    model = ScriptedModel(
        [
            [function_call("save_memory", {"text": "The user is vegetarian."}, call_id="c1")],
            [function_call("search_memory", {"query": "Which timezone is the user in?"},
                           call_id="c2")],
            [assistant_message("Noted. Your timezone is Europe/Berlin.")],
        ]
    )
    agent = agents.Agent(
        name="assistant",
        instructions="You are a helpful assistant.\n\n"
        + memory.context_for(question, max_tokens=200),
        tools=memory.as_function_tools(),
        model=model,
    )
    result = agents.Runner.run_sync(agent, question)
    assert result.final_output == "Noted. Your timezone is Europe/Berlin."

    assert "Europe/Berlin" in model.first_call.system_instructions
    outputs = [
        item.output for item in result.new_items if isinstance(item, agents.ToolCallOutputItem)
    ]
    assert outputs[0].startswith("Saved as memory "), outputs
    assert "Europe/Berlin" in outputs[1].splitlines()[0], outputs
    saved = client.recall(bank, "Is the user vegetarian?").hits[0].memory
    assert saved.content == "The user is vegetarian."
    assert saved.provenance.source == "agent"

    assert memory.feedback("used"), "the run's recalls are there to give feedback on"
