"""Prompt rendering cost must grow linearly with the number of comments.

Assembles the full execution input (normalizing, hashing, turn context, task
markdown, continuation with suppression, wake prompt, envelope) for a wake of
200 and of 2,000 comments, with the inline window opened so every comment is
rendered. Prints the median CPU times and their ratio; exits 1 when 2,000
comments cost more than 12x of 200 (a linear renderer costs about 10x), 2
when a sample is missing or not above zero.

    python bench/prompt_render.py [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

from paperclip_hookspecs.prompts import (
    AuthorKind,
    CommentAuthor,
    CommentSource,
    CommentTrust,
    ContinuationMessage,
    Lane,
    RenderLimits,
    SessionAttempt,
    TaskSource,
    WakeSource,
)

from paperclip.plugin_host import PluginHost
from paperclip.prompts import AssemblyRequest, assemble_execution_input

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict import Target, Verdict, median, ratio_of, value_problems

BUILTIN = PluginHost.with_builtins()

LIMIT = 12.0
SMALL, LARGE = 200, 2_000
ISSUE = "issue-1"
AUTHORS = (CommentAuthor(AuthorKind.USER, "u-1", "Ada"), CommentAuthor(AuthorKind.AGENT, "a-7"))


def make_request(n: int) -> AssemblyRequest:
    comments = tuple(
        CommentSource(
            id=f"c-{i}",
            issue_id=ISSUE,
            # Every fourth body repeats another: equal bodies under distinct ids.
            body=f"Comment {i % (n // 4 or 1)}: please keep the query string and add a test.\n" * 3,
            author=AUTHORS[i % 2],
            trust=CommentTrust.TRUSTED if i % 2 == 0 else CommentTrust.UNTRUSTED,
            created_at="2026-09-21T10:00:00Z",
            edited=i % 7 == 0,
            deleted=i % 11 == 0,
        )
        for i in range(n)
    )
    # Half of the comments are in the resume delta, some of them edited since.
    delta = tuple(
        ContinuationMessage(c.id, ISSUE, c.body + (" (edited)" if i % 5 == 0 else ""))
        for i, c in enumerate(comments[: n // 2])
    )
    return AssemblyRequest(
        task=TaskSource(ISSUE, "PAP-1", "Fix the login redirect", "Keep the query.\n" * 20),
        wake=WakeSource("comment", comments),
        lane=Lane.NATIVE,
        attempt=SessionAttempt.RESUMED,
        resume_delta=delta,
        limits=RenderLimits(max_inline_comments=n, max_continuation_messages=n),
    )


def cpu_seconds(request: AssemblyRequest, times: int) -> float:
    """CPU time of ``times`` assemblies, per assembly.

    CPU time, not wall time, so other processes on the machine do not count; the
    collector is off during the sample, as timeit does, so a collection landing
    in one sample does not measure the heap instead of the renderer.
    """
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(times):
            assemble_execution_input(request, BUILTIN)
        return (time.process_time() - start) / times
    finally:
        gc.enable()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    small_request, large_request = make_request(SMALL), make_request(LARGE)
    batch = LARGE // SMALL  # equal work per sample: 10 small assemblies against 1 large
    cpu_seconds(small_request, batch)  # warm up imports and caches
    cpu_seconds(large_request, 1)
    small_samples, large_samples = [], []
    for _ in range(args.repeats):
        # Interleaved, so both sizes see the same machine state.
        small_samples.append(cpu_seconds(small_request, batch))
        large_samples.append(cpu_seconds(large_request, 1))
    problems = value_problems(f"{SMALL:,} comments, CPU s", small_samples, args.repeats)
    problems += value_problems(f"{LARGE:,} comments, CPU s", large_samples, args.repeats)
    small, large = median(small_samples), median(large_samples)
    ratio = ratio_of(large, small)
    verdict = Verdict(
        "prompt_render",
        [
            Target(
                f"render {LARGE:,} comments, median CPU",
                f"{large * 1000:.2f} ms",
                f"{small * 1000:.2f} ms for {SMALL:,}",
                ratio,
                f"at most {LIMIT:g}x",
                ratio <= LIMIT,
            )
        ],
        problems,
    )
    if args.json:
        figures = {"small_ms": small * 1000, "large_ms": large * 1000, "ratio": ratio}
        print(json.dumps({**figures, "verdict": verdict.as_json()}))
    else:
        print(f"render {SMALL:,} comments: {small * 1000:.2f} ms CPU (median of {args.repeats})")
        print(f"render {LARGE:,} comments: {large * 1000:.2f} ms CPU (median of {args.repeats})")
        said = "ok" if ratio <= LIMIT else "too slow: rendering is not linear"
        print(f"ratio {LARGE:,}/{SMALL:,}: {ratio:.2f}x (limit {LIMIT:g}x) {said}")
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
