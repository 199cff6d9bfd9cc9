"""The bit-exact golden model of the queue manager: what the RTL computes, clock for clock.

``QueueManager(config).arrive(Arrival(ts, flow, length, ecn)) -> Verdict`` and
``.depart(Departure(ts, length))``, where ``ts`` is the clock in which the queue manager accepts
the event, counted from its time base's start. The exact order of operations is the
specification the RTL matches; it is written out in ``sw/README.md`` ("The bit-exact
contract"). In short:

* on its own clock, whatever the traffic: a clear of a random bit of the flow vector every
  ``clear_period`` clocks, and a sample of the queue into the average every
  ``avg_sample_period`` clocks, published ``Build.avg_delay`` clocks later;
* per arrival at clock ``c``: the clears due at or before ``c``, then the flow's bit;
  ``n = min(N, n_cap)``; the probability from ``n`` and the average published by ``c``; the
  early decision (FPQ ``u < p``, RED's uniform spacing of drops); ECN mark instead of an early
  drop where enabled; the hard limits on the exact queue (forced drop);
* per departure: the exact queue shrinks (saturating at zero; errors counted).

At most one arrival and one departure are accepted per clock, the departure first;
``ValueError`` names an event out of that order. Configuration changes (``configure``) apply at
a clock too.
"""

from collections import namedtuple
import functools

from .config import Config
from .register_specs import key_registers
from .formats import PROB_ONE, COUNTER_BITS, SEQ_BITS, QAVG, CLEAR_PERIOD, RATE
from .flow_hash import FlowHash
from .flow_counter import FlowCounter
from .queue_averager import QueueAverager
from .drop_probability import probability, Mode
from .random_source import XorShift128

__all__ = ["QueueManager", "Arrival", "Departure", "Verdict", "ACTIONS",
           "ENQUEUE", "MARK", "DROP_EARLY", "DROP_FORCED", "COUNTERS"]

ENQUEUE, MARK, DROP_EARLY, DROP_FORCED = 0, 1, 2, 3
ACTIONS = ("enqueue", "mark", "drop_early", "drop_forced")

Arrival = namedtuple("Arrival", "ts flow length ecn", defaults=(False,))
Arrival.__doc__ = ("Arrival descriptor: the clock it is accepted in, 104-bit flow key "
                   "(fpq.flow_hash.pack_flow; 296-bit, fpq.flow_hash.pack_flow6, with "
                   "Build.flow_key 'ipv6'; with Build.hash_input 'descriptor' a 32-bit hash "
                   "made outside), length in bytes, ECN-capable.")
Departure = namedtuple("Departure", "ts length")
Departure.__doc__ = "Departure descriptor: the clock it is accepted in, length in bytes."
Verdict = namedtuple("Verdict", "seq action n avg prob")
Verdict.__doc__ = ("Verdict: arrival sequence number (mod 2**32), action (ENQUEUE, MARK, "
                   "DROP_EARLY, DROP_FORCED), flow count used n, average queue used (QAVG raw), "
                   "probability (PROB raw).")

_new_verdict = functools.partial(tuple.__new__, Verdict)  # Verdict(...) without arg parsing

#: Statistics counters, in register-map order.
COUNTERS = ("arrivals", "enqueued", "marked", "early_drops", "forced_drops", "departures",
            "dep_errors")
_CMASK = (1 << COUNTER_BITS) - 1
_SMASK = (1 << SEQ_BITS) - 1
# constants of the inlined component steps in ``arrive`` (see the components for their meaning)
_CFX = CLEAR_PERIOD.frac_bits
_QFX = QAVG.frac_bits
_MBITS = RATE.mant_bits
_MMASK = (1 << _MBITS) - 1
_FPQ, _RED = Mode.fpq, Mode.red


class QueueManager:
    """Bit-exact model. ``config`` is a :class:`fpq.config.Config` (defaults if omitted).

    A new model is the hardware's state at clock 0, the first clock of its time base (after
    reset)."""

    def __init__(self, config=None):
        self.config = config or Config()
        self.build = self.config.build
        regs = self.config.registers()
        self.fc = FlowCounter(self.build.vec_bits, regs["v_max"], regs["clear_period"],
                              regs["rng_clear_state"])
        self.avg = QueueAverager(regs["wq_shift"], regs["avg_sample_period"],
                                 self.build.avg_delay)
        self.rng = XorShift128(regs["rng_decide_state"])
        self.seq = 0
        self.occ_pkts = 0
        self.occ_bytes = 0
        self.max_queue = 0
        self.red_acc = 0
        self.red_thresh = PROB_ONE - 1
        self._count = [0, 0, 0, 0]   # per action: enqueue, mark, drop_early, drop_forced
        self._departures = 0
        self._dep_errors = 0
        # the clock order of events: the latest arrival's and departure's clocks, and the
        # earliest clock the next event may have (after ``configure`` or ``advance``)
        self._last_arr = -1
        self._last_dep = -1
        self._floor = 0
        self._clock = 0              # the latest clock the model has reached
        # live re-key (see configure): 0 no hold, 1 armed (the next arrival starts the hold),
        # 2 holding until _hold_end; decisions meanwhile use _n_held
        self._hold = 0
        self._n_held = 0
        self._hold_end = 0
        self._apply(regs, self.config.rate_table())

    # ---- configuration -----------------------------------------------------------------------
    def _apply(self, regs, rate_table):
        self.regs = regs
        self.mode = regs["mode"]
        self.rate_table = rate_table
        self.hash = FlowHash(self.build, regs["hash_key"], regs["hash_mix_key"])
        self._index_cache = {}
        # bound methods of the components, looked up once (the per-arrival path is hot)
        self._advance = self.fc.advance
        self._rand = self.rng.next
        self._rand_clear = self.fc.rng.next
        self._n_cap = regs["n_cap"]
        self._ecn = regs["ecn"]
        self._limit_pkts = regs["limit_pkts"]
        self._limit_bytes = regs["limit_bytes"]
        self._rekey_hold = regs["rekey_hold"]

    def configure(self, config, ts):
        """Apply a new configuration at clock ``ts`` (the hardware's ``CONTROL.COMMIT``):
        every event accepted before ``ts`` and every clear and sample due before it was handled
        under the old configuration, everything from ``ts`` on is under the new one. ``ts``
        must be later than every event given so far.

        State is kept: the vector (wiped if v_max changes), average, queue, counters, and the
        clear and sample already scheduled. Seeds are reloaded only if they changed.

        Live re-key: a new ``hash_key`` (or ``hash_mix_key``, in a build with
        ``Build.hash_mix``) wipes the vector (its bits were set under the old key)
        and latches ``N``; from the next arrival on, for ``rekey_hold`` clocks, decisions use
        that held count while the vector refills under the new key. A re-key during a hold
        keeps the count held by the first and restarts the hold; ``rekey_hold`` 0 ends it."""
        if config.build != self.build:
            raise ValueError("build: build-time parameters cannot change at runtime")
        ts = self._check_clock(ts, max(self._last_arr, self._last_dep) + 1, "configure")
        # everything due before ts, under the old configuration
        self.fc.advance(ts - 1)
        self.avg.sample_until(ts, self.occ_pkts)
        self._floor = ts
        self._clock = max(self._clock, ts)
        regs = config.registers()
        old = self.regs
        # a key register of the build (the mix key only in builds that mix the hash)
        if any(regs[k] != old[k] for k in key_registers(self.build)):
            if not self._hold:
                self._n_held = self.fc.n_raw
            self._hold = 1 if regs["rekey_hold"] else 0
            if regs["v_max"] == old["v_max"]:
                self.fc.wipe()                 # (a new v_max wipes it in fc.configure)
        self.fc.configure(regs["v_max"], regs["clear_period"], ts)
        self.avg.configure(regs["wq_shift"], regs["avg_sample_period"], ts)
        if regs["rng_decide_state"] != old["rng_decide_state"]:
            self.rng.load(regs["rng_decide_state"])
        if regs["rng_clear_state"] != old["rng_clear_state"]:
            self.fc.rng.load(regs["rng_clear_state"])
        self.config = config
        self._apply(regs, config.rate_table())

    def advance(self, ts):
        """Bring the clock-driven state (clears, samples, the published average) up to clock
        ``ts``, as the hardware is at the end of that clock with no more events; the next
        event must come later. For telemetry at a given clock (``snapshot``)."""
        ts = self._check_clock(ts, max(self._last_arr, self._last_dep), "advance")
        self.fc.advance(ts)
        self.avg.sample_until(ts + 1, self.occ_pkts, first_read=ts)
        self.avg.read(ts)
        self._floor = ts + 1
        self._clock = max(self._clock, ts)

    def _check_clock(self, ts, lowest, what):
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < max(lowest, self._floor):
            raise ValueError(f"{what}: ts {ts!r} must be an integer clock >= "
                             f"{max(lowest, self._floor, 0)} (events in clock order, at most "
                             f"one arrival and one departure per clock, the departure first)")
        return ts

    # ---- events ------------------------------------------------------------------------------
    def arrive(self, desc):
        """Decide one arrival. ``desc`` is an :class:`Arrival` (or any (ts, flow, length, ecn)).

        This is the hot path of every simulation, so the components' common cases are inlined
        here (each marked with the component method it stands for); the methods remain the
        reference and the tests compare the two."""
        ts, flow, length, ecn = desc
        if ts <= self._last_arr or ts < self._last_dep or ts < self._floor or \
                type(ts) is not int:
            self._check_clock(ts, max(self._last_arr + 1, self._last_dep), "arrival")
        self._last_arr = ts
        if ts > self._clock:
            self._clock = ts
        fc = self.fc
        # 1. flow counter: the clears due at or before ts (FlowCounter.advance; the common
        # cases, none or exactly one, inline)
        due = fc.next_due
        if due <= ts << _CFX:
            if due + fc.period > ts << _CFX and fc.then_period is None:
                idx = (self._rand_clear() * fc.v_max) >> 32
                bits = fc.bits
                if bits[idx]:
                    bits[idx] = 0
                    fc.n_raw -= 1
                fc.next_due = due + fc.period
                fc.clears += 1
            else:
                self._advance(ts)
        idx = self._index_cache.get(flow)
        if idx is None:
            idx = self._index(flow)
        bits = fc.bits                       # FlowCounter.set
        if not bits[idx]:
            bits[idx] = 1
            fc.n_raw += 1
        n = fc.n_raw
        if self._hold:
            n = self._held_count(ts, n)
        if n > self._n_cap:
            n = self._n_cap
        # 2. the average published by ts (QueueAverager.sample_until, .read)
        av = self.avg
        if av.next_sample < ts:
            av.sample_until(ts, self.occ_pkts)
        pending = av.pending
        if pending and pending[0][0] <= ts:
            avg_used = av.read(ts)
        else:
            avg_used = av.published
        # 3. probability, early decision
        seq = self.seq
        mode = self.mode
        u = self._rand()
        early = False
        if mode == _FPQ:
            w = self.rate_table[n]           # drop_probability.probability, FPQ branch
            p = (((w & _MMASK) * avg_used) << 1) >> (w >> _MBITS)
            if p > PROB_ONE:
                p = PROB_ONE
            early = u < p
        else:
            p = probability(mode, avg_used, 0, self.regs)
            if mode == _RED:
                if p == 0:
                    self.red_acc = 0
                    self.red_thresh = u
                else:
                    acc = self.red_acc + p
                    if acc >= self.red_thresh:
                        early = True
                        self.red_acc = 0
                        self.red_thresh = u
                    else:
                        self.red_acc = acc
        # 4.-5. mark, hard limits
        q = self.occ_pkts
        if early and not (self._ecn and ecn):
            action = DROP_EARLY
        elif q + 1 > self._limit_pkts or self.occ_bytes + length > self._limit_bytes:
            action = DROP_FORCED
        else:
            action = MARK if early else ENQUEUE
            self.occ_pkts = q + 1
            self.occ_bytes += length
            if q + 1 > self.max_queue:
                self.max_queue = q + 1
        self._count[action] += 1
        self.seq = seq + 1
        return _new_verdict((seq & _SMASK, action, n, avg_used, p))

    def _held_count(self, ts, n):
        """The count an arrival at ``ts`` decides with while a re-key hold is armed or
        running (``n`` is the rebuilding vector's count)."""
        if self._hold == 1:                  # the first arrival after the re-key
            self._hold_end = ts + self._rekey_hold
            self._hold = 2
            return self._n_held
        if ts < self._hold_end:
            return self._n_held
        self._hold = 0
        return n

    def _index(self, flow):
        """The flow's vector index ``(hash * v_max) >> 32``, cached per flow (the cache is
        rebuilt whenever the key or v_max changes, in ``_apply``)."""
        cache = self._index_cache
        if len(cache) > 1 << 20:
            cache.clear()
        idx = cache[flow] = (self.hash(flow) * self.fc.v_max) >> 32
        return idx

    def depart(self, desc):
        """Apply one departure. ``desc`` is a :class:`Departure` (or any (ts, length))."""
        ts, length = desc
        if ts <= self._last_dep or ts <= self._last_arr or ts < self._floor or \
                type(ts) is not int:
            self._check_clock(ts, max(self._last_dep, self._last_arr) + 1, "departure")
        self._last_dep = ts
        if ts > self._clock:
            self._clock = ts
        av = self.avg
        if av.next_sample < ts:
            av.sample_until(ts, self.occ_pkts)
        self._departures += 1
        occ = self.occ_pkts
        left = self.occ_bytes - length
        if occ == 0 or left < 0:
            self._dep_errors += 1
            if left < 0:
                left = 0
        self.occ_bytes = left
        if occ:
            self.occ_pkts = occ - 1

    def run(self, events):
        """Feed a sequence of Arrival/Departure events; returns the list of verdicts."""
        out = []
        arrive, depart = self.arrive, self.depart
        for ev in events:
            if type(ev) is Departure:
                depart(ev)
            else:
                out.append(arrive(ev))
        return out

    # ---- telemetry ---------------------------------------------------------------------------
    def clear_max_queue(self):
        """A write to the ``max_queue`` register (clear-on-write): the largest occupancy
        restarts from the queue as it is now. (The RTL applies it before the arrival presented
        in the same clock and shows 0 for the clock after the write.)"""
        self.max_queue = self.occ_pkts

    @property
    def counters(self):
        """The statistics counters (64-bit, wrapping), named as in the register map."""
        enq, mark, early, forced = self._count
        values = (enq + mark + early + forced, enq + mark, mark, early, forced,
                  self._departures, self._dep_errors)
        return {name: v & _CMASK for name, v in zip(COUNTERS, values)}

    @property
    def n_raw(self):
        return self.fc.n_raw

    @property
    def clock(self):
        """The latest clock the model has reached (an event's, ``configure``'s or
        ``advance``'s)."""
        return self._clock

    def snapshot(self):
        """Readable state at ``clock``, with the names the register map uses for its
        telemetry registers (``advance`` first for the state at a later clock)."""
        held = self._hold == 1 or (self._hold == 2 and self._clock < self._hold_end)
        n = self._n_held if held else self.fc.n_raw
        return {"n_raw": self.fc.n_raw, "n": min(n, self.regs["n_cap"]),
                "avg": self.avg.read(self._clock), "occ_pkts": self.occ_pkts,
                "occ_bytes": self.occ_bytes, "max_queue": self.max_queue, **self.counters}
