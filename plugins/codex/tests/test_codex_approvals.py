"""How the driver answers Codex's requests when no person is there."""

from __future__ import annotations

import pytest
from paperclip_codex.approvals import NO_PERSON_ANSWER, answer_server_request
from paperclip_codex.jsonrpc import JsonRpcError


def tool_approval(server: str) -> dict[str, object]:
    return {"serverName": server, "_meta": {"codex_approval_kind": "mcp_tool_call"}}


@pytest.mark.parametrize(("approve", "decision"), [(False, "decline"), (True, "accept")])
def test_command_and_file_approvals_follow_the_setting(approve: bool, decision: str) -> None:
    for method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
        answer = answer_server_request(method, {}, approve=approve, own_server="paperclip")
        assert answer == {"decision": decision}


def test_the_runs_own_tools_are_approved_and_other_servers_follow_the_setting() -> None:
    method = "mcpServer/elicitation/request"
    own = answer_server_request(
        method, tool_approval("paperclip"), approve=False, own_server="paperclip"
    )
    other = answer_server_request(
        method, tool_approval("github"), approve=False, own_server="paperclip"
    )
    allowed = answer_server_request(
        method, tool_approval("github"), approve=True, own_server="paperclip"
    )
    assert own["action"] == "accept"
    assert other["action"] == "decline"
    assert allowed["action"] == "accept"
    # A form that is not a tool approval is never filled in on anyone's behalf.
    form = {"serverName": "paperclip", "_meta": {}, "message": "Your password?"}
    assert answer_server_request(method, form, approve=True, own_server="paperclip")["action"] == (
        "decline"
    )


def test_request_user_input_is_mapped_to_the_platforms_way_of_asking() -> None:
    params = {"questions": [{"id": "which", "header": "Pick", "question": "A or B?"}]}
    answer = answer_server_request(
        "item/tool/requestUserInput", params, approve=False, own_server=None
    )
    assert answer == {"answers": {"which": {"answers": [NO_PERSON_ANSWER]}}}
    assert "block" in NO_PERSON_ANSWER and "post_comment" in NO_PERSON_ANSWER


def test_unknown_requests_get_method_not_found() -> None:
    with pytest.raises(JsonRpcError) as raised:
        answer_server_request("attestation/generate", {}, approve=True, own_server=None)
    assert raised.value.code == -32601
