"""The bit-exact golden model of the queue manager: what the RTL computes, arrival by arrival.

``QueueManager(config).arrive(Arrival(ts, flow, length, ecn)) -> Verdict`` and
``.depart(Departure(ts, length))``. The exact order of operations is the specification the RTL
matches; it is written out in ``sw/README.md`` ("The bit-exact contract"). In short, per arrival:

1. flow counter: clears owed up to ``ts``, then set the flow's bit; ``n = min(N, n_cap)``;
2. probability from ``n`` and the average queue after arrival ``k - avg_lag`` (0 before that);
3. early decision: FPQ ``u < p``; RED accumulates ``p`` since the last early drop and drops
   when the sum reaches a random threshold (Floyd's uniform spacing of drops); ``u`` is the
   arrival's random number, drawn in every mode;
4. ECN mark instead of an early drop when enabled and the packet is ECN-capable;
5. hard limits (packets and bytes) on the exact queue: forced drop;
6. queue occupancy and counters; then the averager takes this arrival's queue sample.

A departure applies to the exact queue immediately (departures presented in the same clock
as an arrival come first). Departing from an empty queue, or more bytes than are queued,
counts ``dep_errors`` and saturates at zero.
"""

from collections import namedtuple
import functools

from .config import Config
from .formats import PROB_ONE, COUNTER_BITS, SEQ_BITS, TIME_BITS, QAVG, CLEAR_PERIOD, RATE
from .flow_hash import ToeplitzHash
from .flow_counter import FlowCounter
from .queue_averager import QueueAverager
from .drop_probability import probability, MODE_FPQ, MODE_RED
from .random_source import XorShift128

__all__ = ["QueueManager", "Arrival", "Departure", "Verdict", "ACTIONS",
           "ENQUEUE", "MARK", "DROP_EARLY", "DROP_FORCED", "COUNTERS"]

ENQUEUE, MARK, DROP_EARLY, DROP_FORCED = 0, 1, 2, 3
ACTIONS = ("enqueue", "mark", "drop_early", "drop_forced")

Arrival = namedtuple("Arrival", "ts flow length ecn", defaults=(False,))
Arrival.__doc__ = ("Arrival descriptor: timestamp (ticks), 104-bit flow key "
                   "(fpq.flow_hash.pack_flow), length in bytes, ECN-capable.")
Departure = namedtuple("Departure", "ts length")
Departure.__doc__ = "Departure descriptor: timestamp (ticks), length in bytes."
Verdict = namedtuple("Verdict", "seq action n avg prob")
Verdict.__doc__ = ("Verdict: arrival sequence number (mod 2**32), action (ENQUEUE, MARK, "
                   "DROP_EARLY, DROP_FORCED), flow count used n, average queue used (QAVG raw), "
                   "probability (PROB raw).")

_new_verdict = functools.partial(tuple.__new__, Verdict)  # Verdict(...) without arg parsing

#: Statistics counters, in register-map order.
COUNTERS = ("arrivals", "enqueued", "marked", "early_drops", "forced_drops", "departures",
            "dep_errors")
_CMASK = (1 << COUNTER_BITS) - 1
_TMASK = (1 << TIME_BITS) - 1
_THALF = 1 << (TIME_BITS - 1)
_SMASK = (1 << SEQ_BITS) - 1
# constants of the inlined component steps in ``arrive`` (see the components for their meaning)
_CFX = CLEAR_PERIOD.frac_bits
_CMASK_RING = (1 << (TIME_BITS + _CFX)) - 1
_CHALF = 1 << (TIME_BITS + _CFX - 1)
_QFX = QAVG.frac_bits
_MBITS = RATE.mant_bits
_MMASK = (1 << _MBITS) - 1


class QueueManager:
    """Bit-exact model. ``config`` is a :class:`fpq.config.Config` (defaults if omitted)."""

    def __init__(self, config=None):
        self.config = config or Config()
        self.build = self.config.build
        regs = self.config.registers()
        self.fc = FlowCounter(self.build.vec_bits, regs["v_max"], regs["clear_period"],
                              regs["flush_after"], regs["clear_literal"],
                              regs["rng_clear_state"])
        self.avg = QueueAverager(regs["wq_shift"], regs["idle_cell_log"],
                                 self.config.decay_table())
        self.rng = XorShift128(regs["rng_decide_state"])
        self.history = [0] * self.build.avg_lag
        self.seq = 0
        self.occ_pkts = 0
        self.occ_bytes = 0
        self.max_queue = 0
        self.red_acc = 0
        self.red_thresh = PROB_ONE - 1
        self._count = [0, 0, 0, 0]   # per action: enqueue, mark, drop_early, drop_forced
        self._departures = 0
        self._dep_errors = 0
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
        self.hash = ToeplitzHash(regs["hash_key"])
        self._index_cache = {}
        # bound methods of the components, looked up once (the per-arrival path is hot)
        self._advance = self.fc.advance
        self._rand = self.rng.next
        self._rand_clear = self.fc.rng.next
        self._lag = self.build.avg_lag
        self._n_cap = regs["n_cap"]
        self._ecn = regs["ecn"]
        self._limit_pkts = regs["limit_pkts"]
        self._limit_bytes = regs["limit_bytes"]
        self._rekey_hold = regs["rekey_hold"]

    def configure(self, config):
        """Apply a new configuration between two arrivals (the hardware's COMMIT).

        State is kept: the vector (wiped if v_max changes), average, queue, counters. Seeds are
        reloaded only if they changed.

        Live re-key: a new ``hash_key`` wipes the vector (its bits were set under the old key)
        and latches ``N``; from the next arrival on, for ``rekey_hold`` ticks, decisions use
        that held count while the vector refills under the new key. A re-key during a hold
        keeps the count held by the first and restarts the hold; ``rekey_hold`` 0 ends it."""
        regs = config.registers()
        old = self.regs
        if config.build != self.build:
            raise ValueError("build: build-time parameters cannot change at runtime")
        if regs["hash_key"] != old["hash_key"]:
            if not self._hold:
                self._n_held = self.fc.n_raw
            self._hold = 1 if regs["rekey_hold"] else 0
            if regs["v_max"] == old["v_max"]:
                self.fc.wipe()                 # (a new v_max wipes it in fc.configure)
        self.fc.configure(regs["v_max"], regs["clear_period"], regs["flush_after"],
                          regs["clear_literal"])
        self.avg.configure(regs["wq_shift"], regs["idle_cell_log"], config.decay_table())
        if regs["rng_decide_state"] != old["rng_decide_state"]:
            self.rng.load(regs["rng_decide_state"])
        if regs["rng_clear_state"] != old["rng_clear_state"]:
            self.fc.rng.load(regs["rng_clear_state"])
        self.config = config
        self._apply(regs, config.rate_table())

    # ---- events ------------------------------------------------------------------------------
    def arrive(self, desc):
        """Decide one arrival. ``desc`` is an :class:`Arrival` (or any (ts, flow, length, ecn)).

        This is the hot path of every simulation, so the components' common cases are inlined
        here (each marked with the component method it stands for); the methods remain the
        reference and the tests compare the two."""
        ts, flow, length, ecn = desc
        ts &= _TMASK
        fc = self.fc
        # 1. flow counter: clears owed up to ts (FlowCounter.advance; the common cases, none
        # or exactly one clear in carry mode, inline)
        backlog = (((ts << _CFX) - fc.next_due + _CHALF) & _CMASK_RING) - _CHALF
        if backlog >= 0:
            if backlog < fc.period and backlog < fc.flush_after and not fc.literal:
                idx = (self._rand_clear() * fc.v_max) >> 32
                bits = fc.bits
                if bits[idx]:
                    bits[idx] = 0
                    fc.n_raw -= 1
                fc.next_due = (fc.next_due + fc.period) & _CMASK_RING
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
        # 2. probability from the lagged average
        seq = self.seq
        slot = seq % self._lag
        avg_used = self.history[slot]
        mode = self.mode
        u = self._rand()
        early = False
        if mode == MODE_FPQ:
            w = self.rate_table[n]           # drop_probability.probability, FPQ branch
            p = (((w & _MMASK) * avg_used) << 1) >> (w >> _MBITS)
            if p > PROB_ONE:
                p = PROB_ONE
            # 3. early decision
            early = u < p
        else:
            p = probability(mode, avg_used, 0, self.regs)
            if mode == MODE_RED:
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
        # 6. averager sample (the queue this arrival found), into the lag line
        av = self.avg
        if av.idle:
            a = av.update(q, ts)
        else:                                # QueueAverager.update, busy branch
            a = av.avg
            a += ((q << _QFX) - a) >> av.wq_shift
            av.avg = a
        self.history[slot] = a
        self.seq = seq + 1
        return _new_verdict((seq & _SMASK, action, n, avg_used, p))

    def _held_count(self, ts, n):
        """The count an arrival at ``ts`` decides with while a re-key hold is armed or
        running (``n`` is the rebuilding vector's count)."""
        if self._hold == 1:                  # the first arrival after the re-key
            self._hold_end = (ts + self._rekey_hold) & _TMASK
            self._hold = 2
            return self._n_held
        if (ts - self._hold_end) & _TMASK >= _THALF:   # ts before the end (signed)
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
            if occ == 1:
                self.avg.went_idle(ts & _TMASK)

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

    def snapshot(self):
        """Readable state, with the names the register map uses for its telemetry registers."""
        n = self._n_held if self._hold else self.fc.n_raw
        return {"n_raw": self.fc.n_raw, "n": min(n, self.regs["n_cap"]),
                "avg": self.avg.avg, "occ_pkts": self.occ_pkts, "occ_bytes": self.occ_bytes,
                "max_queue": self.max_queue, **self.counters}
