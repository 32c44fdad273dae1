"""After a crash: what an earlier controller left is proven ownerless and settled once.

- ``reconciler``: every replica, in the background, runs the recovery policies;
- ``port``: the operations those policies are given (``RecoveryPort``);
- ``call_recovery``: tool inputs left without a result, and calls a runner still waits for;
- ``resumption``: lost runs go on in a queued turn, or fail with their task held;
- ``presentation_recovery``: an answer whose status decision committed, presented;
- ``cleanup_holds``, ``boots``: cleanup holds of completed turns, and the proof that a
  closing controller's process is gone.

Imports: calls, context, endings, links, logs, loop, ownership, turns
"""
