"""Registers the ``notify_webhook`` tool."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.plugin_tools import PluginTool

from paperclip_webhook.tool import DESCRIPTION, NAME, SCHEMA, WebhookHandler


@hookimpl
def paperclip_tools() -> list[PluginTool]:
    return [
        PluginTool(
            name=NAME,
            title="Notify the webhook",
            description=DESCRIPTION,
            input_schema=SCHEMA,
            handler=WebhookHandler(),
            open_world=True,
        )
    ]
