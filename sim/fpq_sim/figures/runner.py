"""Running the jobs of a plan (one process, local worker processes or a Dask cluster), keeping
every run's JSON summary in the raw folder and reading them back, and grouping the summaries
by point."""

import json
import os
from collections import defaultdict

from fpq.atomic import write_text

__all__ = ["run_jobs", "group", "save_raw", "load_raw", "raw_name"]


def _work(job):
    key, sc, times = job
    if "topology" in sc:
        from ..parkinglot import run_parking_lot
        return key, run_parking_lot(sc)
    from ..network import run_scenario
    return key, run_scenario(sc, transfer_times=times)


def _cost(sc):
    """A rough relative cost, to start the longest runs first: packets the bottleneck links
    can carry, or the flows' own packets where these are fewer."""
    b = sc["bottleneck"]
    flows = sum(g["count"] for g in sc["flows"])
    link = b["bandwidth_bps"] / (8 * b["packet_bytes"]) * sc.get("topology", {}).get("hops", 1)
    own = sum(g["count"] * (g["transfer_pkts"] / 2 if g["workload"] == "transfers"
                            else 200.0) for g in sc["flows"])
    return sc["run"]["duration_s"] * (min(link, own) + flows)


def _completed(order, n_jobs, dask):
    """``(key, summary)`` of every job of ``order``, as each run finishes."""
    if dask:
        from distributed import Client, as_completed
        with Client(dask) as client:
            for fut in as_completed(client.map(_work, order, pure=False)):
                yield fut.result()
    elif n_jobs <= 1:
        for job in order:
            yield _work(job)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            for fut in as_completed([pool.submit(_work, j) for j in order]):
                yield fut.result()


def run_jobs(jobs, n_jobs=1, dask=None, progress=True):
    """Run ``jobs`` on ``n_jobs`` local processes or on the Dask scheduler ``dask``; returns
    ``{key: summary}``. Largest jobs first (better packing)."""
    from tqdm import tqdm
    order = sorted(jobs, key=lambda j: -_cost(j[1]))
    out = {}
    with tqdm(total=len(order), desc="fpq figures", unit="run", disable=not progress) as bar:
        for key, s in _completed(order, n_jobs, dask):
            out[key] = s
            bar.update()
    return out


def group(res):
    """``{key without seed: [summaries ordered by seed]}``."""
    g = defaultdict(list)
    for key in sorted(res, key=lambda k: k[-1]):
        g[key[:-1]].append(res[key])
    return dict(g)


def raw_name(key):
    """The file name of a run's JSON summary in the raw folder."""
    return "-".join(str(k) for k in key) + ".json"


def save_raw(res, raw):
    """Write every run's summary, with its key, to the folder ``raw`` (created if missing)."""
    os.makedirs(raw, exist_ok=True)
    for key, s in res.items():
        write_text(os.path.join(raw, raw_name(key)), json.dumps(dict(s, key=list(key))))


def _parse_key_part(x):
    for conv in (int, float):
        try:
            return conv(x)
        except ValueError:
            pass
    return x


def load_raw(raw):
    """``{key: summary}`` from the JSON files an earlier run left in ``raw`` (the key is
    stored in each file; older files have it only in their name)."""
    res = {}
    for name in sorted(os.listdir(raw)):
        if not name.endswith(".json") or name.startswith("_"):
            continue
        with open(os.path.join(raw, name)) as f:
            s = json.load(f)
        key = s.pop("key", None)
        if key is None:
            key = [_parse_key_part(x) for x in name[:-5].split("-")]
        res[tuple(key)] = s
    return res
