"""Running the jobs of a plan (one process, local worker processes or a Dask cluster), keeping
every run's JSON summary in the raw folder and reading them back, and grouping the summaries
by point."""

import json
import math
import os
from collections import defaultdict
from contextlib import contextmanager

from fpq.atomic import write_text
from fpq.messages import brief

from ..provenance import run_provenance

__all__ = ["run_jobs", "group", "save_raw", "load_raw", "load_meta", "raw_name",
           "using_saved_runs", "RawFolderError", "progress_folder",
           "resumable"]


def _work(job):
    key, sc, times = job
    if "topology" in sc:
        from ..parkinglot import run_parking_lot
        s = run_parking_lot(sc)
    else:
        from ..network import run_scenario
        s = run_scenario(sc, transfer_times=times)
    s["provenance"] = run_provenance(sc, times)
    return key, s


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
        from fpq.terminate import signals_as_exit
        with signals_as_exit(), Client(dask) as client:
            for fut in as_completed(client.map(_work, order, pure=False)):
                yield fut.result()
    elif n_jobs <= 1:
        for job in order:
            yield _work(job)
    else:
        from concurrent.futures import as_completed
        from fpq.terminate import worker_pool
        with worker_pool(n_jobs) as pool:
            for fut in as_completed([pool.submit(_work, j) for j in order]):
                yield fut.result()


def run_jobs(jobs, n_jobs=1, dask=None, progress=True, on_result=None, desc="fpq figures"):
    """Run ``jobs`` on ``n_jobs`` local processes or on the Dask scheduler ``dask``; returns
    ``{key: summary}``. Largest jobs first (better packing). ``on_result(key, summary)`` is
    called as each run finishes; ``desc`` names the progress bar. The local processes end
    with the command (``fpq.terminate.worker_pool``): a signal that ends it, or its death,
    ends them too."""
    from tqdm import tqdm
    order = sorted(jobs, key=lambda j: -_cost(j[1]))
    out = {}
    with tqdm(total=len(order), desc=desc, unit="run", disable=not progress) as bar:
        for key, s in _completed(order, n_jobs, dask):
            out[key] = s
            if on_result is not None:
                on_result(key, s)
            bar.update()
    return out


def progress_folder(raw):
    """Where a running command keeps each run's summary as it finishes, for ``--resume``
    after an interruption: a hidden sibling of the raw folder ``raw`` (the raw folder itself
    changes only as a whole, at the end)."""
    raw = os.path.abspath(raw)
    return os.path.join(os.path.dirname(raw), f".{os.path.basename(raw)}.partial")


def resumable(jobs, raw):
    """``{key: summary}`` of the saved runs, in the raw folder ``raw`` or its
    :func:`progress_folder`, that the current code would make again: those of a job of
    ``jobs`` whose saved run digest is the job's (``fpq_sim.provenance.run_digest``).
    Files that cannot be read as runs are not reused."""
    from ..provenance import run_digest
    want = {key: run_digest(sc, times) for key, sc, times in jobs}
    found = {}
    for folder in (raw, progress_folder(raw)):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            key, s = _saved_run(folder, name)
            if key in want and (s.get("provenance") or {}).get("run_digest") == want[key]:
                found[key] = s
    return found


def _saved_run(folder, name):
    """``(key, summary)`` of the file ``name`` of a raw folder, ``(None, {})`` if it is not
    a readable run."""
    if not name.endswith(".json") or name.startswith("_"):
        return None, {}
    try:
        s = _read_object(os.path.join(folder, name), name)
        return _checked_key(s.pop("key", None), name), _Saved(s, name)
    except (RawFolderError, OSError):
        return None, {}


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


class RawFolderError(ValueError):
    """A raw folder that ``--from-raw`` cannot use; the message names the file and field."""


#: The largest file of a raw folder ``--from-raw`` reads, in bytes (a run's summary with
#: every transfer time is a few MiB).
RAW_FILE_MAX = 64 << 20
#: The most parts a run's key has (experiment, variant, point values, seed).
KEY_PARTS_MAX = 16


class _NotFinite(Exception):
    """NaN or an infinity in a saved run: json writes them (``NaN``, ``Infinity``) but a
    summary never holds one (a quantile of nothing is null), and figures made from one
    would show NaN as if measured."""


def _not_finite(token):
    raise _NotFinite(token)


def _finite(token):
    """A JSON number with a fraction or exponent; one beyond a float's range (1e400) would
    be read as an infinity."""
    value = float(token)
    if not math.isfinite(value):
        raise _NotFinite(brief(token))
    return value


def _read_object(path, name, finite=True):
    """The JSON object in the file ``path`` of a raw folder, or RawFolderError naming
    ``name``; with ``finite``, one holding NaN or an infinity is refused too."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > RAW_FILE_MAX:
            raise RawFolderError(f"--from-raw: {name}: {size} bytes is more than a saved run "
                                 f"holds ({RAW_FILE_MAX})")
        data = f.read(RAW_FILE_MAX + 1)
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_not_finite,
                           parse_float=_finite) if finite else json.loads(data.decode("utf-8"))
    except _NotFinite as exc:
        raise RawFolderError(f"--from-raw: {name}: {exc} is not a finite number (a summary "
                             f"holds none)") from None
    except UnicodeDecodeError as exc:
        raise RawFolderError(f"--from-raw: {name}: not UTF-8 text (byte {exc.start})") \
            from None
    except RecursionError:
        raise RawFolderError(f"--from-raw: {name}: nested too deeply to read") from None
    except ValueError as exc:
        raise RawFolderError(f"--from-raw: {name}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise RawFolderError(f"--from-raw: {name}: must be a JSON object, got "
                             f"{type(value).__name__}")
    return value


#: The largest integer in a run's key (a seed, a count); math.isfinite of a larger one
#: raises OverflowError instead of answering.
KEY_INT_MAX = 2**64


def _key_part_ok(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return abs(x) <= KEY_INT_MAX
    return isinstance(x, str) and len(x) <= 100 or isinstance(x, float) and math.isfinite(x)


def _checked_key(key, name):
    """The run's key as a tuple: names and numbers, the seed (an integer) last."""
    if not (isinstance(key, list) and 1 <= len(key) <= KEY_PARTS_MAX and
            all(_key_part_ok(x) for x in key) and isinstance(key[-1], int) and
            not isinstance(key[-1], bool)):
        raise RawFolderError(f"--from-raw: {name}: key: {brief(key)} must be a list of at "
                             f"most {KEY_PARTS_MAX} names and numbers ending with the seed "
                             f"(an integer)")
    return tuple(key)


#: The numbers of a run's summary the figures read that are counts, rates or fractions: a
#: true/false, a text or a number beyond a float's range there is refused by name.
MEASURES = frozenset((
    "arrivals", "drops", "early_drops", "forced_drops", "saturated_drops", "marks",
    "wire_losses", "loss_rate", "avg_queue_pkts", "avg_delay_s", "avg_flow_count",
    "utilisation", "goodput_pkts_per_s", "goodput_fraction", "flows_total", "duration_s",
    "warmup_s", "events"))
#: The largest value of such a number (a float's range: a larger integer cannot be averaged)
MEASURE_MAX = 1e300

#: The saved field read last (file and key path), for an error the figures' code raises on a
#: value it cannot use.
_LAST_READ = ["", ""]


class _Saved(dict):
    """A saved run's summary, or a table inside it: a missing field is a RawFolderError
    naming the file and the field, and each field read is noted (:data:`_LAST_READ`)."""

    def __init__(self, data, name, where=""):
        super().__init__((k, _Saved(v, name, f"{where}{k}.") if isinstance(v, dict) else v)
                         for k, v in data.items())
        self.name, self.where = name, where

    def __getitem__(self, key):
        _LAST_READ[:] = [self.name, f"{self.where}{key}"]
        value = super().__getitem__(key)
        if key in MEASURES and not self.where and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or
                not 0 <= value <= MEASURE_MAX):
            raise RawFolderError(f"--from-raw: {self.name}: {key}: {brief(value)} must be a "
                                 f"number in [0, {MEASURE_MAX:g}]")
        return value

    def __missing__(self, key):
        raise RawFolderError(f"--from-raw: {self.name}: {self.where}{brief(key)}: missing "
                             f"(a saved run of another version, or edited?)")


def load_raw(raw):
    """``{key: summary}`` from the JSON files an earlier run left in ``raw`` (the key is
    stored in each file; older files have it only in their name). Each file must be a JSON
    object of at most ``RAW_FILE_MAX`` bytes with a valid key (RawFolderError naming it);
    a field a figure needs and the file lacks is named when it is read."""
    res = {}
    for name in sorted(os.listdir(raw)):
        if not name.endswith(".json") or name.startswith("_"):
            continue
        s = _read_object(os.path.join(raw, name), name)
        key = s.pop("key", None)
        if key is None:
            key = [_parse_key_part(x) for x in name[:-5].split("-")]
        res[_checked_key(key, name)] = _Saved(s, name)
    return res


def load_meta(raw):
    """The record of how the runs of the raw folder ``raw`` were made (``_meta.json``:
    ``where``, the RESULTS.md line that says so, and ``wall``, their wall time in seconds),
    checked."""
    path = os.path.join(raw, "_meta.json")
    if not os.path.exists(path):
        raise RawFolderError(f"--from-raw: {path} is missing (no earlier run to rebuild)")
    meta = _read_object(path, "_meta.json", finite=False)     # its fields checked by name
    if not isinstance(meta.get("where"), str) or not meta["where"].endswith("._"):
        raise RawFolderError(f"--from-raw: _meta.json: where: {brief(meta.get('where'))} must "
                             f"be the text of the run's closing line (ending in '._')")
    wall = meta.get("wall")
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or \
            not 0 <= wall < float("inf"):
        raise RawFolderError(f"--from-raw: _meta.json: wall: {brief(wall)} must be a number "
                             f"of seconds >= 0")
    return meta


@contextmanager
def using_saved_runs():
    """Errors of the figures' code on a saved value it cannot use (a string where a number
    belongs): a RawFolderError naming the field read last, instead of a traceback."""
    try:
        yield
    except (KeyError, TypeError, IndexError, AttributeError, ArithmeticError) as exc:
        _raise_unusable(exc)
    except ValueError as exc:
        if type(exc) is not ValueError:       # ours (RawFolderError, OutputPathError, ...)
            raise
        _raise_unusable(exc)


def _raise_unusable(exc):
    name, field = _LAST_READ
    raise RawFolderError(f"--from-raw: {name}: {field}: a value the figures cannot use "
                         f"({type(exc).__name__}: {brief(str(exc), 80)})") from None
