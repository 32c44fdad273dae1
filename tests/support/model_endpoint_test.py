"""The scripted model endpoint on its own: both wires, step order, recording, gates, errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import (
    FunctionCall,
    HttpError,
    Step,
    Text,
    Usage,
    calls,
    codex_shell,
    load_script,
    mcp_tool,
    reply,
    say,
    total,
    usage_of,
)

WAIT = 10.0


@pytest.fixture
def endpoint() -> Iterator[ModelEndpoint]:
    with ModelEndpoint(hold_limit=5) as served:
        yield served


def sse(response: httpx.Response) -> list[Any]:
    """The ``data`` payloads of an SSE body, ``[DONE]`` kept as a string."""
    payloads = []
    for line in response.text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def post(endpoint: ModelEndpoint, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{endpoint.url}{path}", json={"stream": True, **body}, timeout=WAIT)


def test_responses_wire_streams_text_then_completes(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [say("Hello there.")])
    response = post(endpoint, "/responses", {"model": "m", "input": []})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = sse(response)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == "Hello there."
    done = events[-2]["item"]
    assert done["role"] == "assistant" and done["content"][0]["text"] == "Hello there."
    completed = events[-1]["response"]
    assert completed["status"] == "completed" and completed["output"] == [done]
    usage = usage_of(say("Hello there."), 0)
    assert completed["usage"] == {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    # Recorded once the handler ends the response, which may be just after the client read it.
    assert endpoint.wait_for(lambda: endpoint.usage_sent("m"), 10, "the usage sent") == [usage]


def test_responses_wire_carries_namespaced_tool_calls(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [calls(mcp_tool("post_comment", {"body": "hi"}), codex_shell("ls"))])
    events = sse(post(endpoint, "/responses", {"model": "m", "input": []}))
    items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [(i["type"], i.get("namespace"), i["name"]) for i in items] == [
        ("function_call", "mcp__paperclip", "post_comment"),
        ("function_call", None, "exec_command"),
    ]
    assert json.loads(items[0]["arguments"]) == {"body": "hi"}
    assert json.loads(items[1]["arguments"])["cmd"] == "ls"
    assert items[0]["call_id"] != items[1]["call_id"]


def test_chat_wire_streams_tool_calls_usage_and_done(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [calls(Text("Looking."), FunctionCall("bash", {"command": "ls"}))])
    body = {"model": "m", "messages": [], "stream_options": {"include_usage": True}}
    chunks = sse(post(endpoint, "/chat/completions", body))
    assert chunks[-1] == "[DONE]"
    usage = chunks[-2]
    (sent,) = endpoint.wait_for(lambda: endpoint.usage_sent("m"), 10, "the usage sent")
    assert usage["choices"] == [] and usage["usage"] == {
        "prompt_tokens": sent.input_tokens,
        "completion_tokens": sent.output_tokens,
        "total_tokens": sent.input_tokens + sent.output_tokens,
        "prompt_tokens_details": {"cached_tokens": sent.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": sent.reasoning_tokens},
    }
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    assert deltas[0]["role"] == "assistant"
    assert "".join(d.get("content") or "" for d in deltas) == "Looking."
    (tool_calls,) = [d["tool_calls"] for d in deltas if "tool_calls" in d]
    assert tool_calls[0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"


def test_chat_wire_without_usage_ends_with_stop(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [say("ok")])
    chunks = sse(post(endpoint, "/chat/completions", {"model": "m", "messages": []}))
    assert chunks[-1] == "[DONE]"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in c for c in chunks[:-1])
    assert endpoint.usage_sent("m") == []  # not asked for, not sent


def test_each_request_takes_the_next_step_and_is_recorded(endpoint: ModelEndpoint) -> None:
    endpoint.script("a", [say("one"), say("two")]).script("b", [say("other")])
    user = {"role": "user", "content": [{"type": "input_text", "text": "Fix it"}]}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    texts = []
    for body in (
        {"model": "a", "input": [user]},
        {"model": "b", "input": []},
        {"model": "a", "input": [user, output]},
    ):
        events = sse(post(endpoint, "/responses", body))
        texts.append(events[-1]["response"]["output"][0]["content"][0]["text"])
    assert texts == ["one", "other", "two"]  # each model keeps its own place

    first, second = endpoint.scripted("a")
    assert (first.step, second.step) == (0, 1)
    assert first.user_texts() == ["Fix it"]
    assert second.tool_outputs() == [output]
    assert endpoint.position("a") == 2
    assert [r.model for r in endpoint.received()] == ["a", "b", "a"]

    late = post(endpoint, "/responses", {"model": "a", "input": []})
    assert late.status_code == 500 and late.json()["error"]["code"] == "script_exhausted"
    assert endpoint.exhausted("a") == [2]
    unknown = post(endpoint, "/responses", {"model": "nobody", "input": []})
    assert unknown.status_code == 404 and "nobody" in unknown.json()["error"]["message"]


def test_error_steps_answer_with_the_status(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [Step(error=HttpError(503, "overloaded")), say("recovered")])
    failed = post(endpoint, "/chat/completions", {"model": "m", "messages": []})
    assert failed.status_code == 503
    assert failed.json()["error"]["message"] == "overloaded"
    assert sse(post(endpoint, "/chat/completions", {"model": "m", "messages": []}))[-1] == "[DONE]"


def test_models_lists_the_scripted_names(endpoint: ModelEndpoint) -> None:
    endpoint.script("b", []).script("a", [])
    listed = httpx.get(f"{endpoint.url}/models", timeout=WAIT).json()
    assert [m["id"] for m in listed["data"]] == ["a", "b"]
    assert endpoint.received()[0].path == "/v1/models"


def test_a_held_step_waits_for_its_gate(endpoint: ModelEndpoint) -> None:
    endpoint.script("m", [say("after the gate", hold="slow")])
    answers: list[httpx.Response] = []
    client = threading.Thread(
        target=lambda: answers.append(post(endpoint, "/responses", {"model": "m", "input": []}))
    )
    client.start()
    gate = endpoint.gate("slow")
    gate.wait_reached(WAIT)
    assert answers == []  # the stream is open, the answer is held
    gate.release()
    client.join(WAIT)
    assert sse(answers[0])[-1]["response"]["status"] == "completed"


def test_a_gate_never_released_fails_the_response_instead_of_hanging() -> None:
    with ModelEndpoint(hold_limit=0.2) as endpoint:
        endpoint.script("m", [say("never", hold="forgotten")])
        events = sse(post(endpoint, "/responses", {"model": "m", "input": []}))
    assert events[-1]["type"] == "response.failed"
    assert "forgotten" in events[-1]["response"]["error"]["message"]


def test_gate_wait_is_bounded(endpoint: ModelEndpoint) -> None:
    with pytest.raises(TimeoutError, match="nobody"):
        endpoint.gate("nobody").wait_reached(0.05)


def test_scripts_load_from_json() -> None:
    steps = load_script(
        [
            {"text": "hi", "delay": 0.5},
            {"tool": {"name": "finish", "arguments": {"outcome": "done"}}},
            {"shell": "ls", "hold": "g"},
            {"outputs": [{"text": "a"}, {"call": {"name": "bash", "arguments": {}}}]},
            {"error": {"status": 500, "message": "boom"}},
        ]
    )
    assert steps[0] == Step(outputs=(Text("hi"),), delay=0.5)
    assert steps[1].outputs == (mcp_tool("finish", {"outcome": "done"}),)
    assert steps[2].hold == "g" and steps[2].outputs[0].name == "exec_command"  # type: ignore[union-attr]
    assert steps[3].outputs == (Text("a"), FunctionCall("bash", {}))
    assert steps[4].error == HttpError(500, "boom")
    with pytest.raises(ValueError, match="unknown step key"):
        load_script([{"txt": "typo"}])


def test_a_reply_step_is_made_from_the_request_that_arrives(endpoint: ModelEndpoint) -> None:
    def echo_the_last_tool_output(received: Any) -> Step:
        (output,) = received.tool_outputs()
        return say(f"The tool said {output['output']}.")

    endpoint.script("m", [reply(echo_the_last_tool_output)])
    body = {
        "model": "m",
        "input": [{"type": "function_call_output", "call_id": "c1", "output": "p2"}],
    }
    events = sse(post(endpoint, "/responses", body))
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "The tool said p2."
    assert endpoint.scripted("m")[0].step == 0


def test_each_response_reports_its_step_s_usage_or_one_derived_from_the_step(
    endpoint: ModelEndpoint,
) -> None:
    mine = Usage(input_tokens=5000, output_tokens=70, cached_input_tokens=4000, reasoning_tokens=9)
    steps = [say("one"), calls(mcp_tool("finish", {}), usage=mine), say("one")]
    endpoint.script("m", steps)
    for _ in steps:
        post(endpoint, "/responses", {"model": "m", "input": []})
    first, second, third = endpoint.wait_for(
        lambda: len(sent := endpoint.usage_sent("m")) == len(steps) and sent, 10, "the usages sent"
    )
    assert second == mine
    # Derived, deterministically: the same step elsewhere in the conversation differs.
    assert first == usage_of(steps[0], 0) and third == usage_of(steps[2], 2)
    assert len({first.input_tokens, third.input_tokens}) == 2
    assert len({first.output_tokens, third.output_tokens}) == 2
    assert first.cached_input_tokens == 0 < third.cached_input_tokens <= third.input_tokens
    assert 0 < third.reasoning_tokens <= third.output_tokens
    assert total([first, second]) == {
        "input_tokens": first.input_tokens + 5000,
        "cached_input_tokens": 4000,
        "output_tokens": first.output_tokens + 70,
        "reasoning_tokens": first.reasoning_tokens + 9,
    }


def test_a_response_cut_short_reports_no_usage() -> None:
    with ModelEndpoint(hold_limit=0.2) as endpoint:
        endpoint.script("m", [say("never", hold="forgotten"), Step(error=HttpError(500, "x"))])
        post(endpoint, "/responses", {"model": "m", "input": []})
        post(endpoint, "/responses", {"model": "m", "input": []})
        assert endpoint.usage_sent("m") == []


def test_usage_loads_from_json_and_must_add_up() -> None:
    (step,) = load_script([{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 2}}])
    assert step.usage == Usage(input_tokens=10, output_tokens=2)
    with pytest.raises(ValueError, match="unknown usage key"):
        load_script([{"text": "hi", "usage": {"input": 10}}])
    with pytest.raises(ValueError, match="cached input tokens"):
        Usage(input_tokens=10, output_tokens=2, cached_input_tokens=11)
    with pytest.raises(ValueError, match="reasoning tokens"):
        Usage(input_tokens=10, output_tokens=2, reasoning_tokens=3)
