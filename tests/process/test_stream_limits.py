"""Event streams are capped per credential and per client address; their memory goes back.

Nothing capped them: one client opened 2,132 streams of a real server, and
its memory grew from 158 to 266 MB and stayed there. Every streaming route (a
run's events, a conversation's messages) counts.
"""

from __future__ import annotations

import asyncio
import time

import psutil
import pytest

from tests.support.processes import wait_until
from tests.support.served import Stream, make_key, running_run, serve

pytestmark = [pytest.mark.process, pytest.mark.timeout(600)]

PER_KEY, PER_ADDRESS = 3, 5


def test_streams_are_capped_per_key_and_per_address_and_given_back(
    paperclip_database_url, tmp_path
):
    server, env = serve(
        paperclip_database_url,
        tmp_path,
        PAPERCLIP_MAX_STREAMS_PER_KEY=str(PER_KEY),
        PAPERCLIP_MAX_STREAMS_PER_ADDRESS=str(PER_ADDRESS),
    )
    try:
        first, second = make_key(env, tmp_path), make_key(env, tmp_path)
        paths = asyncio.run(running_run(paperclip_database_url, server.url, first))

        async def scenario() -> None:
            mine = [await Stream(server.url, paths["run"], first).open() for _ in range(PER_KEY)]
            assert [s.status for s in mine] == [200] * PER_KEY
            # One more of the same key, on either streaming route: refused.
            for path in paths.values():
                over = (await Stream(server.url, path, first).open()).refusal()
                assert over["code"] == "too_many_streams" and "credential" in over["message"]
            # Another key from the same address, up to the address's cap.
            theirs = [
                await Stream(server.url, paths["chat"], second).open()
                for _ in range(PER_ADDRESS - PER_KEY)
            ]
            assert [s.status for s in theirs] == [200] * (PER_ADDRESS - PER_KEY)
            over = (await Stream(server.url, paths["chat"], second).open()).refusal()
            assert over["code"] == "too_many_streams" and "address" in over["message"]
            # A stream that ends gives its place back.
            await mine.pop().close()

            async def admitted() -> Stream | None:
                again = await Stream(server.url, paths["run"], first).open()
                return again if again.status == 200 else None

            again = None
            for _ in range(100):
                again = await admitted()
                if again is not None:
                    break
                await asyncio.sleep(0.05)  # the server has not seen the close yet
            assert again is not None
            for stream in [*mine, *theirs, again]:
                await stream.close()

        asyncio.run(scenario())
        assert "Traceback" not in server.tail(400)
    finally:
        server.stop()


def test_two_thousand_streams_are_capped_and_their_memory_goes_back(
    paperclip_database_url, tmp_path
):
    server, env = serve(paperclip_database_url, tmp_path)  # the default caps
    try:
        key = make_key(env, tmp_path)
        paths = asyncio.run(running_run(paperclip_database_url, server.url, key))
        process = psutil.Process(server.proc.pid)

        async def wave(count: int) -> list[int]:
            streams = [Stream(server.url, paths["run"], key) for _ in range(count)]
            opened = await asyncio.gather(*(s.open() for s in streams), return_exceptions=True)
            await asyncio.gather(*(s.close() for s in streams))
            return [s.status if isinstance(s, Stream) else 0 for s in opened]

        async def place_free() -> bool:
            return (await wave(1)) == [200]

        async def all_admitted(count: int) -> bool:
            """``count`` streams open at once, each retried while the server has not yet
            seen the last wave's ends (its places are given back as it sees them)."""
            held: list[Stream] = []
            try:
                # On a loaded machine the server may take seconds to see the ends.
                deadline = time.monotonic() + 60
                for _ in range(count):
                    while True:
                        stream = await Stream(server.url, paths["run"], key).open()
                        if stream.status == 200:
                            held.append(stream)
                            break
                        await stream.close()
                        if time.monotonic() > deadline:
                            return False
                        await asyncio.sleep(0.01)
                return True
            finally:
                await asyncio.gather(*(s.close() for s in held))

        def rss_once_free() -> float:
            wait_until(lambda: asyncio.run(place_free()), 30, message="every place given back")
            return process.memory_info().rss / 2**20

        asyncio.run(wave(40))  # the first streams and refusals fill the server's own caches
        before = rss_once_free()
        # 2,000 at once from one client: the cap's worth opens, the rest are refused.
        statuses = asyncio.run(wave(2000))
        assert statuses.count(200) == 32  # PAPERCLIP_MAX_STREAMS_PER_KEY's default
        assert statuses.count(429) == 2000 - 32
        after_burst = rss_once_free()
        # 2,000 more, opened and closed a cap's worth at a time: each one opens.
        for _ in range(2000 // 32):
            assert asyncio.run(all_admitted(32))
        after_waves = rss_once_free()
        print(f"RSS MB: {before:.1f} before, {after_burst:.1f}, {after_waves:.1f}")
        assert after_burst - before < 20
        assert after_waves - after_burst < 5  # ended streams leave nothing behind
        assert "Traceback" not in server.tail(400)
    finally:
        server.stop()
