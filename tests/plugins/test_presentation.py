"""``paperclip_decide_presentation``: one rule for the live path and restart recovery (seed 002)."""

from __future__ import annotations

import pytest
from paperclip_hookspecs.presentation import (
    COMMITTED_CONVERSATION_INTERACTION_PRESENTED,
    PendingCard,
    PresentationDecision,
    PresentationMode,
    PresentationPath,
)

from tests.plugins.samples import conversation_turn


@pytest.mark.parametrize("path", list(PresentationPath))
def test_paperclip_decide_presentation_a_finished_turn_presents_its_answer(
    paperclip_plugin_host, path
):
    decision = paperclip_plugin_host.decide_presentation(conversation_turn(path=path))
    assert decision == PresentationDecision(PresentationMode.ANSWER, "conversation_turn_finished")


@pytest.mark.parametrize("result", ["done", "yielded"])
def test_paperclip_decide_presentation_a_held_turn_presents_its_answer(
    paperclip_plugin_host, result
):
    held = conversation_turn(status_reason="governed_response_waiting", result=result)
    decision = paperclip_plugin_host.decide_presentation(held)
    assert decision == PresentationDecision(PresentationMode.ANSWER, "governed_response_waiting")


@pytest.mark.parametrize("path", list(PresentationPath))
def test_paperclip_decide_presentation_records_none_when_its_own_card_presents_it(
    paperclip_plugin_host, path
):
    carded = conversation_turn(
        status_reason="governed_response_waiting",
        pending_cards=(PendingCard(id="card-1", kind="approval"),),
        path=path,
    )
    decision = paperclip_plugin_host.decide_presentation(carded)
    assert decision.mode is PresentationMode.NONE and decision.mode == "none"
    assert decision.reason == COMMITTED_CONVERSATION_INTERACTION_PRESENTED
    assert decision.reason == "committed_conversation_interaction_presented"


def test_paperclip_decide_presentation_a_finished_turn_presents_even_with_a_card(
    paperclip_plugin_host,
):
    finished = conversation_turn(pending_cards=(PendingCard(id="card-1", kind="question"),))
    assert paperclip_plugin_host.decide_presentation(finished).mode is PresentationMode.ANSWER
