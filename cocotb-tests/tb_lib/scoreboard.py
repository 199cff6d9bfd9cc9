"""Scoreboard: the golden model ``fpq.QueueManager`` (imported, never re-implemented) predicts
every verdict from the bench's record: each event at the clock the RTL accepted it in, each
commit at the clock it applied in (as ``hdl/tests/hdl_harness.replay`` does). The bench feeds
the record as it happens (:class:`Record`), so a verdict is compared as soon as it leaves the
RTL, field by field, and the first mismatch names every field of both.

A *script* is a list of items, applied in order:

* ``("config", Config)``  -- first item: after reset (and the reset's vector wipe) the
  configuration and table are loaded and the time base restarted: the next clock is clock 0;
* ``("events", [Arrival | Departure, ...])`` -- each event asked for in the clock of its
  ``ts`` (counted from clock 0 of the current time base), presented then or, when the port
  or the bench's stream conditions held it back, as soon after as possible;
* ``("commit", Config)`` or ``("commit", Config, ts)`` -- a configuration change
  (``CONTROL.COMMIT``) after the events before it: the arrival port held until no arrival is
  in the pipeline (and no wipe under way), then applied in one clock (at the asked ``ts`` if
  that is later);
* ``("reset", Config)`` -- the DUT's reset asserted mid-stream, then as ``config``: a fresh
  model, a new time base (the events after it count their clocks from its clock 0);
* ``("idle", clocks)`` -- the events after it asked that many clocks later.

:class:`Coverage` counts the bins of the verification plan from the model's view of the
record (``Record``) and from the handshakes (the bench)."""

import copy
from collections import deque

from fpq import QueueManager as Model, Arrival, Departure
from fpq.bitfields import bit_layout, pack, unpack
from fpq.flow_hash import reduce_index
from fpq.formats import PROB_ONE, CLEAR_PERIOD
from fpq.drop_probability import Mode
from fpq.random_source import XorShift128

from fpq_hdl.layouts import VERDICT


__all__ = ["Record", "Scoreboard", "verdict_word", "Coverage", "n_bin"]

_MODE_NAMES = {m.value: m.name for m in Mode}
_FX = CLEAR_PERIOD.frac_bits
_VERDICT = bit_layout(VERDICT)         # packed once per expected verdict


def verdict_word(v):
    return pack(_VERDICT, v._asdict())


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
    for hi, label in ((0, "0"), (9, "1-9"), (99, "10-99"), (999, "100-999"),
                      (4999, "1000-4999")):
        if n <= hi:
            return label
    return ">=5000"


def _clears_in(fc, lo, hi):
    """``(clock, index)`` of the clears the model will apply in clocks ``lo..hi`` (none of
    them applied yet): the clear schedule and a copy of the clear generator, read only."""
    due, period = fc.next_due, fc.period
    if due > hi << _FX:
        return []
    skip = 0
    if due <= (lo - 1) << _FX:
        skip = (((lo - 1) << _FX) - due) // period + 1
    rng = _peek(fc.rng)
    if skip:
        rng.skip(skip)
    out = []
    d = due + skip * period
    while d <= hi << _FX:
        out.append((-(-d >> _FX), (rng.next() * fc.v_max) >> 32))
        d += period
    return out


def _peek(rng):
    """A copy of an ``fpq.random_source.XorShift128`` to draw ahead with (the model's own
    is left alone)."""
    try:
        out = XorShift128.__new__(XorShift128)
        out.x, out.y, out.z, out.w = rng.x, rng.y, rng.z, rng.w
        out._buf, out._pos = rng._buf, rng._pos
        return out
    except AttributeError:
        return copy.copy(rng)


class Record:
    """The golden model fed the bench's record in order: ``depart(ts, length)``,
    ``arrive(ts, flow, length, ecn)`` (returns the expected verdict word), ``configure(cfg,
    ts)``; ``events`` keeps the record. Coverage
    of the flow vector's hazards comes from the clear schedule and the arrivals' indices."""

    def __init__(self, config, cov):
        self.model = Model(config)
        self.config = config
        self.cov = cov
        self.events = []
        self._sets = deque(maxlen=2)       # (clock, index) of the last two arrivals
        self._clears = []                  # (clock, index) of the clears near the last one
        self._last_dep = None

    def configure(self, config, ts):
        self.model.configure(config, ts)
        self.events.append(("configure", config, ts))
        self.config = config

    def depart(self, ts, length):
        d = Departure(ts, length)
        self.model.depart(d)
        self.events.append(d)
        self._last_dep = ts

    def arrive(self, ts, flow, length, ecn):
        model, hit = self.model, self.cov.hit
        fc = model.fc
        # the clears of this clock and the two before (those an earlier arrival applied are
        # remembered from its call)
        clears = {c: i for c, i in self._clears if c >= ts - 2}
        clears.update(_clears_in(fc, ts - 2, ts))
        self._clears = list(clears.items())
        hold_before = model._hold
        a = Arrival(ts, flow, length, ecn)
        v = model.arrive(a)
        self.events.append(a)
        idx = model._index_cache.get(flow)
        if idx is None:
            idx = reduce_index(model.hash(flow), fc.v_max)
        # the flow vector's hazards: sets and clears of one bit in nearby slots
        for c, pidx in self._sets:
            if pidx == idx and ts - c in (1, 2):
                hit(f"forwarding hazard: same vector bit {ts - c} clock(s) apart")
        for c, cidx in clears.items():
            if c == ts:
                hit("clear in the clock of an arrival (one slot)")
                if cidx == idx:
                    hit("clear and set of the same bit in one slot")
                for pc, pidx in self._sets:
                    if pidx == cidx and ts - pc in (1, 2):
                        hit(f"clear of the bit set {ts - pc} clock(s) earlier")
            elif cidx == idx:
                hit(f"set of the bit cleared {ts - c} clock(s) earlier")
        self._sets.append((ts, idx))
        if self._last_dep == ts:
            hit("departure and arrival in one clock")
        if hold_before or model._hold:
            hit("arrival during a re-key hold")
        regs = model.regs
        hit(f"mode {_MODE_NAMES[regs['mode']]}")
        hit(f"N {n_bin(v.n)}")
        if v.n == regs["n_cap"] and fc.n_raw > regs["n_cap"]:
            hit("N capped at n_cap")
        if v.prob >= PROB_ONE:
            hit("probability saturated (p = 1)")
        elif v.prob:
            hit("probability 0 < p < 1")
        if v.avg:
            hit("average > 0")
        hit(("enqueue", "mark", "drop early", "drop forced")[v.action])
        if v.action == 2:
            hit("early drop of an ECN-capable packet (ECN off)" if ecn else
                "early drop of a packet not ECN-capable")
        return verdict_word(v)


class Scoreboard:
    """Expected verdict words in accept order (``expect``); each received word is compared
    with the oldest one (``check``); the first mismatch raises with every field of both."""

    def __init__(self):
        self.expected = deque()
        self.clocks = deque()        # the accept clock of each expected verdict's arrival
        self.count = 0               # verdicts checked
        self.accepted = 0            # arrivals accepted (expected words queued)
        self.lost = 0                # verdicts lost to a reset

    def expect(self, word, clock):
        self.expected.append(word)
        self.clocks.append(clock)
        self.accepted += 1

    @property
    def outstanding(self):
        return len(self.expected)

    def check(self, word):
        i = self.count
        if not self.expected:
            raise AssertionError(f"verdict {i}: one more verdict than arrivals: "
                                 f"{unpack(VERDICT, word)}")
        exp = self.expected.popleft()
        self.clocks.popleft()
        if word != exp:
            raise AssertionError(f"verdict {i}: RTL {unpack(VERDICT, word)} != model "
                                 f"{unpack(VERDICT, exp)}")
        self.count = i + 1

    def lose(self):
        """A reset: the verdicts still expected never come."""
        n = len(self.expected)
        self.lost += n
        self.count += n
        self.expected.clear()
        self.clocks.clear()
        return n

    def done(self):
        if self.expected:
            raise AssertionError(f"{self.count} verdicts for {self.accepted} arrivals")
