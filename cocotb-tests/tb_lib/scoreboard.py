"""Scoreboard: the golden model ``fpq.QueueManager`` (imported, never re-implemented) predicts
every verdict of a script of events; the bench's verdict words are compared field by field.

A *script* is a list of items, applied in order:

* ``("config", Config)``  -- first item: the configuration loaded after reset;
* ``("commit", Config)``  -- a configuration change between two events (``CONTROL.COMMIT``);
* ``("reset", Config)``   -- the DUT's reset asserted mid-stream, then the configuration loaded
  again; the model restarts from its documented reset state (a fresh model);
* ``("events", [Arrival | Departure, ...])``;
* ``("idle", cycles)``    -- nothing presented for that many clocks.

:func:`predict` runs the model over the script and returns the expected verdict words plus,
per arrival, what the coverage bins need (vector index, clears owed, mode)."""

from fpq import QueueManager as Model, Arrival, Departure
from fpq.flow_hash import reduce_index
from fpq.formats import PROB_ONE
from fpq.config import MODES

from fpq_hdl.layouts import VERDICT

from .streams import pack, unpack

__all__ = ["predict", "Scoreboard", "verdict_word", "Coverage"]

_MODE_NAMES = {v: k for k, v in MODES.items()}
_V = {name: (f.offset, f.width) for name, f in VERDICT}


def verdict_word(v):
    o = _V
    return ((v.seq << o["seq"][0]) | (v.action << o["action"][0]) | (v.n << o["n"][0])
            | (v.avg << o["avg"][0]) | (v.prob << o["prob"][0]))


class Coverage:
    """Named bins with hit counts. ``hit(name, k=1)``; ``bins`` is the dict."""

    def __init__(self):
        self.bins = {}

    def hit(self, name, k=1):
        self.bins[name] = self.bins.get(name, 0) + k

    def merge(self, other):
        for k, v in other.items():
            self.hit(k, v)


def n_bin(n):
    for hi, label in ((9, "1-9"), (99, "10-99"), (999, "100-999"), (4999, "1000-4999")):
        if n <= hi:
            return label
    return ">=5000"


def predict(script, cov=None):
    """Expected verdict words and per-arrival facts; final model (for counters/snapshot)."""
    model = None
    words, facts = [], []
    cov = cov if cov is not None else Coverage()
    for item in script:
        kind = item[0]
        if kind in ("config", "reset"):
            model = Model(item[1])
            if kind == "reset":
                cov.hit("reset mid-stream")
        elif kind == "commit":
            model.configure(item[1])
            cov.hit("registers rewritten mid-stream")
        elif kind in ("bad_commit", "bad_write", "idle"):
            pass                      # the model's state does not change
        elif kind == "events":
            mode = _MODE_NAMES[model.regs["mode"]]
            fc = model.fc
            arrive, depart, hash_ = model.arrive, model.depart, model.hash
            n_cap = model.regs["n_cap"]
            for ev in item[1]:
                if type(ev) is Departure:
                    depart(ev)
                    continue
                c0, w0 = fc.clears, fc.wipes
                v = arrive(ev)
                words.append(verdict_word(v))
                idx = reduce_index(hash_(ev.flow), fc.v_max)
                facts.append((idx, fc.clears - c0, fc.wipes - w0))
                cov.hit(f"mode {mode}")
                cov.hit(f"N {n_bin(v.n)}")
                if v.n == n_cap and fc.n_raw > n_cap:
                    cov.hit("N capped at n_cap")
                if v.prob >= PROB_ONE:
                    cov.hit("probability saturated (p = 1)")
                elif v.prob:
                    cov.hit("probability 0 < p < 1")
                cov.hit(("enqueue", "mark", "drop early", "drop forced")[v.action])
                if v.action == 2:
                    cov.hit("early drop of an ECN-capable packet (ECN off)" if ev.ecn else
                            "early drop of a packet not ECN-capable")
    return words, facts, model


class Scoreboard:
    """Compares each received verdict word with the next expected one; the first mismatch
    raises with every field of both."""

    def __init__(self, expected):
        self.expected = expected
        self.count = 0

    def check(self, word):
        i = self.count
        if i >= len(self.expected):
            raise AssertionError(f"verdict {i}: one more verdict than arrivals: "
                                 f"{unpack(VERDICT, word)}")
        exp = self.expected[i]
        if word != exp:
            raise AssertionError(f"verdict {i}: RTL {unpack(VERDICT, word)} != model "
                                 f"{unpack(VERDICT, exp)}")
        self.count = i + 1

    def done(self):
        if self.count != len(self.expected):
            raise AssertionError(f"{self.count} verdicts for {len(self.expected)} arrivals")
