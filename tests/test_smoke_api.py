async def test_health(client):
    r = await client.get("/api/health")
    assert r.status_code == 200
    assert r.json()["database"]["status"] == "ok"
