"""Every JSON body the API takes is documented as refusing unknown fields, as it does.

The bodies' structs say ``forbid_unknown_fields``; the document says
``additionalProperties: false`` for each (``paperclip.api.openapi``). A body
that the server refuses extras of but the document does not close is a lie a
client generator (or the fuzz) trips on.
"""

from __future__ import annotations


def closed(schema: dict) -> bool:
    """Whether the schema refuses unknown fields: itself, or each of its variants (an agent's
    body is one variant per provider kind)."""
    variants = schema.get("oneOf") or schema.get("anyOf")
    if variants:
        return all(closed(variant) for variant in variants)
    return schema.get("additionalProperties") is False


def referenced(schema: dict) -> str | None:
    ref = schema.get("$ref", "")
    return ref.removeprefix("#/components/schemas/") if ref else None


async def test_every_request_body_is_closed(paperclip_client):
    document = (await paperclip_client.get("/api/docs/openapi.json")).json()
    components = document["components"]["schemas"]
    bodies = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            schema = content.get("application/json", {}).get("schema", {})
            name = referenced(schema)
            if name is not None:
                bodies[name] = f"{method.upper()} {path}"
    assert len(bodies) >= 20  # the API's bodies, not an empty document
    open_bodies = {name: where for name, where in bodies.items() if not closed(components[name])}
    assert open_bodies == {}
