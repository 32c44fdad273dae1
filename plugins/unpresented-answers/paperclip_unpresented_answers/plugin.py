"""Registers the unpresented-answers policy."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.presentation import UnpresentedTurn

from paperclip_unpresented_answers.rule import accepts


@hookimpl
def paperclip_accept_unpresented_turn(turn: UnpresentedTurn) -> bool:
    return accepts(turn)
