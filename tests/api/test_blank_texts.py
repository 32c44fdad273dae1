"""What is blank is the same for the server and for every reader of its API document.

The document said ``pattern: \\S``, whose ``\\s`` differs between regex engines
(Python's has \\x1c-\\x1f and \\x85, JavaScript's has \\ufeff, an ASCII engine's
has neither): schemathesis sent a hold whose reason was ``"\\x1c"``, valid by
the document, and the server refused it (``400 validation_error``).
"""

from __future__ import annotations

import re

import pytest

TRICKY = ["\x1c", "\x1f", "\x85", "\ufeff", "\u3000", "\xa0", " \t", "x", " x\x1c"]


def text_patterns(document: dict) -> dict[str, str]:
    """Every ``pattern`` of a string property in the document's schemas, by where it is."""
    found = {}
    for name, schema in document["components"]["schemas"].items():
        for field, prop in (schema.get("properties") or {}).items():
            for option in [prop, *prop.get("anyOf", []), *prop.get("oneOf", [])]:
                if option.get("type") == "string" and "pattern" in option:
                    found[f"{name}.{field}"] = option["pattern"]
    return found


async def test_every_pattern_means_the_same_in_any_regex_engine(paperclip_client):
    document = (await paperclip_client.get("/api/docs/openapi.json")).json()
    patterns = text_patterns(document)
    assert "HoldCreate.reason" in patterns and "CompanyCreate.name" in patterns
    for where, pattern in patterns.items():
        unicode, ascii_only = re.compile(pattern), re.compile(pattern, re.ASCII)
        for text in TRICKY:
            assert bool(unicode.search(text)) == bool(ascii_only.search(text)), (where, text)


@pytest.mark.parametrize(("name", "status"), [("\x1c", 400), ("\ufeff", 400), ("\x1cA", 201)])
async def test_the_server_agrees_with_its_document(paperclip_client, name, status):
    document = (await paperclip_client.get("/api/docs/openapi.json")).json()
    pattern = text_patterns(document)["CompanyCreate.name"]
    assert bool(re.search(pattern, name)) == (status == 201)
    r = await paperclip_client.post("/api/companies", json={"name": name})
    assert r.status_code == status, r.text
