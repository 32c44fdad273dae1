"""``paperclip board``: the board's address, signed in (without login, it carries the operator token)."""

from __future__ import annotations

import click

from paperclip.cli_kit.client import operator_token, url_option
from paperclip.cli_kit.output import console, emit_json
from paperclip.operator_token import board_url


@click.command("board")
@url_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON line for scripts.")
def board(url: str, as_json: bool) -> None:
    """Print the board's URL. Without login it carries the operator token, read from the data
    dir (run this as the server's user): opening it signs the browser in."""
    address = board_url(url.rstrip("/"), operator_token(url))
    if as_json:
        emit_json({"board_url": address})
    else:
        console.print(address, soft_wrap=True, highlight=False, markup=False)
