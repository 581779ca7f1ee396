"""`kvwatch replay`: the pipeline driven over whole files on their own time; also the golden-test harness.

The replay room: the driver (`kvwatch.replay.driver`) reads whole files (`kvwatch.replay.files`), merges
their events by time and feeds one `kvwatch.pipeline.Pipeline`, as the daemon does live. Everything that
only makes a replay faster sits here too, behind one seam (`kvwatch.replay.speedups`): a big file framed
and parsed in a forked child (`kvwatch.replay.forked`), a dense read parsed whole, LMCache's records read
in runs. The daemon imports nothing of this package.
"""

from kvwatch.replay.driver import MAX_LINE, ReplayInput, ReplayResult, container_name, plan, replay

__all__ = ["MAX_LINE", "ReplayInput", "ReplayResult", "container_name", "plan", "replay"]
