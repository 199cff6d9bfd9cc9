"""``fpq bench``: golden-model throughput, arrivals per second on one core.

Each case replays the same pre-built event list (synthetic Poisson traffic of 1000 flows into
a FIFO link at 1.1 times its rate, so the queue, the averager and the drop paths are all
exercised) through a fresh model; the best of ``--repeat`` runs is reported, because other
work on the machine only ever makes a run slower. Time is the process's CPU time, so that
other jobs waiting for the same cores do not count (cache and memory-bandwidth sharing still
do). Event generation is outside the timing.
``--record PATH`` writes the results as a measurement record (``fpq.records``), from which
``fpq benchmarks`` writes the table in docs/BENCHMARKS.md.
"""

import os
import platform
import random
import time

from .config import Config
from .float_model import FloatQueueManager
from .queue_manager import QueueManager, Departure
from .synthetic import flow_keys, poisson_arrivals, serve_link

__all__ = ["main", "measure", "MAX_ARRIVALS"]

#: The largest ``--arrivals``. The event list is built in memory before the timing, so that
#: every case replays the same events: the peak resident memory grows by about 0.62 KB per
#: arrival (measured with /usr/bin/time: 223 MB at 300,000 arrivals, 659 MB at a million,
#: 1.9 GB at three million), and the earlier maximum of 10**8 would have needed about 62 GB.
MAX_ARRIVALS = 1_000_000


def _events(arrivals, flows, seed):
    cfg = Config()
    keys = flow_keys(flows, seed)
    link = 1250.0
    duration = arrivals / (1.1 * link)
    arr = poisson_arrivals(keys, 1.1 * link / flows, 0.0, duration, cfg.tick_hz,
                           random.Random(seed))
    # the event order one model produces; the others replay it verbatim (same work per event)
    return serve_link(QueueManager(Config(limit_pkts=2000)), arr, link, 1000, cfg.tick_hz).events


def measure(make_model, events, repeat=3):
    """Best arrivals/s of ``make_model()`` over ``repeat`` replays of ``events``."""
    n_arr = sum(1 for e in events if type(e) is not Departure)
    best = 0.0
    for _ in range(repeat):
        model = make_model()
        t0 = time.process_time()
        model.run(events)
        best = max(best, n_arr / (time.process_time() - t0))
    return best, n_arr


def main(args):
    if not 1000 <= args.arrivals <= MAX_ARRIVALS:
        raise ValueError(f"--arrivals: {args.arrivals} is out of range [1000, {MAX_ARRIVALS}]")
    if not 1 <= args.repeat <= 100:
        raise ValueError(f"--repeat: {args.repeat} is out of range [1, 100]")
    record = getattr(args, "record", None)
    if record:
        from .atomic import check_output_path
        check_output_path(record, "--record")
    events = _events(args.arrivals, 1000, 1)
    cases = [
        ("bit-exact, fpq", lambda: QueueManager(Config(limit_pkts=2000))),
        ("bit-exact, red", lambda: QueueManager(Config(mode="red", limit_pkts=2000))),
        ("bit-exact, droptail", lambda: QueueManager(Config(mode="droptail", limit_pkts=2000))),
        ("float (paper), fpq", lambda: FloatQueueManager(Config(limit_pkts=2000))),
    ]
    print(f"fpq bench {time.strftime('%Y-%m-%d')}: {platform.python_implementation()} "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores; "
          f"{len(events)} events, best of {args.repeat}")
    print("| model | arrivals | arrivals/s |")
    print("|---|---|---|")
    rows = []
    for name, make in cases:
        rate, n = measure(make, events, args.repeat)
        print(f"| {name} | {n} | {rate:,.0f} |")
        rows.append({"model": name, "arrivals": n, "arrivals_per_s": round(rate)})
    if record:
        from .records import write_record
        write_record(record, "bench", {"events": len(events), "repeat": args.repeat,
                                       "rows": rows},
                     ["fpq", "bench", "--arrivals", str(args.arrivals), "--repeat",
                      str(args.repeat)])
        print(f"wrote {record}")
    return 0
