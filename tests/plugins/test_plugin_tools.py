"""``paperclip_tools``: a plugin adds a tool to the catalog; the engine runs it and saves its result."""

from __future__ import annotations

import uuid

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.plugin_tools import PluginTool, ToolAnswer, ToolCall
from sqlalchemy import select

from paperclip.models import ToolCall as ToolCallRow
from paperclip.plugin_host import PluginConflictError
from paperclip.wire import messages as wire
from tests.engine.memory_world import eventually, make_world, started

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1}},
    "required": ["city"],
    "additionalProperties": False,
}


class Weather:
    """A plugin tool that answers from its own world, and records who asked."""

    def __init__(self, name: str = "get_weather", fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.calls: list[ToolCall] = []

    async def call(self, call: ToolCall) -> ToolAnswer:
        self.calls.append(call)
        if self.fail:
            raise RuntimeError("the weather service is down")
        return ToolAnswer({"city": call.arguments["city"], "sky": "clear"})

    async def find_receipt(self, command_id: str) -> None:
        return None

    @hookimpl
    def paperclip_tools(self) -> list[PluginTool]:
        return [
            PluginTool(
                name=self.name,
                title="Weather",
                description="The weather in a city.",
                input_schema=SCHEMA,
                handler=self,
                read_only=True,
                idempotent=True,
                open_world=True,
            )
        ]


def test_paperclip_tools_are_listed_beside_the_core_catalog(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(Weather(), name="weather")
    [spec] = paperclip_plugin_host.tool_specs()
    assert spec.name == "get_weather" and spec.input_schema == SCHEMA
    assert spec.annotations == {
        "title": "Weather",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert paperclip_plugin_host.owner_of_tool("get_weather") == "weather"


def test_paperclip_tools_a_core_tools_name_is_refused(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(Weather(name="finish"), name="impostor")
    with pytest.raises(PluginConflictError, match=r"'finish' of .*impostor.* name of a core tool"):
        paperclip_plugin_host.tools()
    # A startup problem: the server refuses to serve with it (check_pending).
    assert any("'finish'" in problem for problem in paperclip_plugin_host.problems())


def test_paperclip_tools_one_name_from_two_plugins_is_refused(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(Weather(), name="weather")
    paperclip_register_plugin(Weather(), name="weather-too")
    with pytest.raises(PluginConflictError, match="both"):
        paperclip_plugin_host.tools()


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    built, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    yield built, engine
    await engine.stop()


async def call_tool(peer, start, tool: str, arguments: dict) -> wire.ToolResult:
    call_id = uuid.uuid4().hex
    peer.send(
        wire.ToolCall(
            seq=0,
            run_id=start.run_id,
            call_id=call_id,
            tool=tool,
            arguments=arguments,
            token=start.token,
        )
    )
    return await peer.expect(wire.ToolResult, call_id=call_id)


async def test_paperclip_tools_a_call_runs_the_handler_and_saves_its_result(
    world, paperclip_register_plugin
):
    (built, engine), weather = world, Weather()
    paperclip_register_plugin(weather, name="weather")
    await engine.start()
    peer, _ = await built.connect(await built.new_runner())
    await built.assign()
    start = await started(peer)

    answer = await call_tool(peer, start, "get_weather", {"city": "Oslo"})
    assert not answer.is_error and answer.content == {"city": "Oslo", "sky": "clear"}
    [seen] = weather.calls
    assert seen.run_id == str(start.run_id) and seen.command_id.startswith(str(start.run_id))

    refused = await call_tool(peer, start, "get_weather", {"town": "Oslo"})
    assert refused.is_error and refused.content["error"]["code"] == "invalid_arguments"
    assert len(weather.calls) == 1  # refused before the handler

    async with built.container.sessions()() as session:
        rows = (
            (await session.execute(select(ToolCallRow).where(ToolCallRow.run_id == start.run_id)))
            .scalars()
            .all()
        )
    assert [(r.tool, r.status) for r in rows] == [("get_weather", "settled")] * 2
    assert engine.calls.memory.state(rows[0].id) is None  # settled: forgotten


async def test_paperclip_tools_a_failing_handler_answers_plugin_failed(
    world, paperclip_register_plugin
):
    (built, engine), weather = world, Weather(fail=True)
    paperclip_register_plugin(weather, name="weather")
    await engine.start()
    peer, _ = await built.connect(await built.new_runner())
    await built.assign()
    start = await started(peer)
    answer = await call_tool(peer, start, "get_weather", {"city": "Oslo"})
    assert answer.is_error
    assert answer.content["error"]["code"] == "plugin_failed"
    assert answer.content["error"]["plugin"] == "weather"
    await eventually(lambda: built.run(start.run_id), lambda r: r is not None)
