"""``fpq_hdl.decision.Decision`` against the golden model's own code for it:
``fpq.QueueManager.arrive`` (steps 4-5: early decision, RED spacing, ECN mark, hard limits,
occupancy) and ``depart``, imported and run unchanged.

Decision gets the probability ``p`` (with ``p_zero``, ``p == 0``) and the random number ``u``
as inputs, so the model must decide with the same ``p`` and ``u``. There is no separate
decision class in ``fpq`` (the model inlines it for speed), so :class:`DecisionModel` feeds
them in from outside: ``u`` through the model's generator hook (``_rand``), ``p`` in FPQ mode
through the published average it reads (its sampling turned off) and an r(N) table whose
every word is the rate 2**-16 (``p = avg`` exactly), in RED and drop-tail through
``fpq.queue_manager.probability`` (replaced while the model decides). Every verdict's
``prob`` must then equal the injected ``p``, which checks the injection itself.

Each clock is a slot (an arrival, a departure, both, or neither): its descriptor fields go in
``FIELDS_AHEAD`` clocks before its cycle 0, ``p``, ``p_zero`` at cycle 0 and ``u`` a clock
before, and its outputs are expected at cycle ``LATENCY``: ``out_valid``, ``action``,
``out_dep_valid``, ``dep_error``, ``occ_pkts`` / ``occ_bytes`` (the occupancy after the slot,
on every clock); ``max_queue`` a clock later (documented). A clear of ``max_queue``
(``clear_max_queue``) in a slot's cycle-0 clock acts before that slot's events, as
``fpq.QueueManager.clear_max_queue`` called before the model's ``depart``/``arrive``; the
RTL's ``max_queue`` reads 0 for one clock, then restarts from the occupancy after the
previous slot. The bench checks both.

Script items: ``("config", Config)``, ``("commit", Config)`` (slots in flight drained, one
clock to load it), ``("slots", slots[, clears[, drain[, commits]]])`` with ``slots`` a list of
``(Arrival | None, Departure | None, p, u)`` (or None: an empty slot), ``clears`` the indices
of the slots with a ``max_queue`` clear, ``drain`` False to end with slots still in flight,
``commits`` slot index -> Config on the port from that slot's fields on (the 3 slots before
must carry no arrival), ``("preset", occ_pkts, occ_bytes)`` (the occupancy registers written:
Amaranth only), ``("reset", Config)`` (reset held two clocks, the configuration loaded again).
Plan options: ``noise`` (a seed: ports of clocks without a slot carry random values, as the
top's RAM delay line gives), ``record`` (keep every slot's outcome in ``rows``)."""

import random

import fpq.queue_manager as qm_mod
from fpq import Arrival, Config, Departure
from fpq.bitfields import pack
from fpq.drop_probability import Mode
from fpq.formats import LENGTH_BITS, PROB_ONE, RATE

from fpq_hdl.decision import Decision

from ..bench import Bench

__all__ = ["DecisionModel", "DecisionBench", "OUTPUTS", "Slots", "PHASES", "mode_script",
           "rewrite_script", "random_slots", "fpq_traffic"]

MODE_NAMES = {m.value: m.name for m in Mode}
ACTION_NAMES = ("enqueue", "mark", "drop early", "drop forced")
#: the RATE word 0x8000 * 2**-(16 + 15) = 2**-16: ``p = ((0x8000 * avg) << 1) >> 16 = avg``
RATE_P_EQ_AVG = RATE.pack(0x8000, 16)
OUTPUTS = ("out_valid", "action", "out_dep_valid", "dep_error", "occ_pkts", "occ_bytes",
           "max_queue")


class DecisionModel:
    """``fpq.QueueManager`` deciding with a given ``p`` and ``u``."""

    def __init__(self, config):
        self.qm = qm_mod.QueueManager(config)
        self._inject()

    def configure(self, config, ts):
        self.qm.configure(config, ts)
        self._inject()

    def _inject(self):
        qm = self.qm
        qm.rate_table = [RATE_P_EQ_AVG] * len(qm.rate_table)
        qm.avg.next_sample = 1 << 62           # no sample: the published average stays put

    def depart(self, dep):
        qm = self.qm
        before = qm.counters["dep_errors"]
        qm.depart(dep)
        return qm.counters["dep_errors"] - before

    def arrive(self, arr, p, u):
        qm = self.qm
        qm.avg.published = p                   # FPQ: p = the average read
        qm._rand = lambda: u
        real = qm_mod.probability
        qm_mod.probability = lambda mode, avg, rate_word, regs: p     # RED / drop-tail
        try:
            v = qm.arrive(arr)
        finally:
            qm_mod.probability = real
        if v.prob != p:
            raise AssertionError(f"the model decided with p {v.prob}, not the injected {p}: "
                                 f"fpq.QueueManager changed, update DecisionModel")
        return v.action


class DecisionBench(Bench):
    INPUTS = ("valid_ahead", "dep_valid_ahead", "length_ahead", "dep_length_ahead",
              "ecn_ahead", "p", "p_zero", "u_ahead", "clear_max_queue")
    PREFIX = "decision: "

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        self.build = plan["build"]
        noise = plan.get("noise")
        self.noise = None if noise is None else random.Random(noise)
        self.model = None
        self.clock = 0              # the model's clock: the cycle-0 clock of the next slot

    async def load(self, config):
        self.set("config", pack_config(self.build, config))
        await self.tick()
        self.clock += 1

    # ---- script items ------------------------------------------------------------------------
    async def do_config(self, config):
        self.clock = 0
        self.model = DecisionModel(config)
        await self.load(config)

    async def do_commit(self, config):
        self.model.configure(config, self.clock)
        self.hit("configuration rewritten mid-stream")
        await self.load(config)

    async def do_preset(self, occ_pkts, occ_bytes):
        qm = self.model.qm
        qm.occ_pkts, qm.occ_bytes, qm.max_queue = occ_pkts, occ_bytes, occ_pkts
        self.sim.preset("occ_pkts", occ_pkts)
        self.sim.preset("occ_bytes", occ_bytes)

    async def do_reset(self, config):
        # the last slots item ended without draining: its slots in flight are lost to the
        # reset, unchecked; the state after it is the documented one (occupancy, max_queue and
        # RED spacing as at power-up): a fresh model
        await self.reset()
        await self.do_config(config)
        self.hit("reset mid-stream (slots in flight)")

    async def do_slots(self, slots, clears=(), drain=True, commits=None):
        """Clock ``k`` presents the fields of slot ``k``, the cycle-0 inputs of slot ``k -
        FIELDS_AHEAD`` (its random number a clock earlier) and expects the outputs of slot
        ``k - FIELDS_AHEAD - LATENCY``."""
        ahead, lat = Decision.FIELDS_AHEAD, Decision.LATENCY
        clears, commits, n = set(clears), commits or {}, len(slots)
        end = n + ahead + lat + 1 if drain else n + ahead
        for k in range(end):
            if k in commits:
                self.set("config", pack_config(self.build, commits[k]))
            self.present_fields(slots[k] if k < n else None)
            s = k - ahead
            if 0 <= s < n:
                self.cycle_zero(slots, s, s in clears, s + 1 in clears, commits.get(s))
            else:
                self.set("clear_max_queue", 0)
                self.idle_p()
            nxt = s + 1
            u_slot = slots[nxt] if 0 <= nxt < n else None
            if u_slot is not None and u_slot[0] is not None:
                self.set("u_ahead", u_slot[3])
            elif self.noise is not None:
                self.set("u_ahead", self.noise.getrandbits(32))
            self.clock += 1
            await self.tick()
        self.hit("slots checked", n - (0 if drain else min(n, lat)))

    # ---- one clock ---------------------------------------------------------------------------
    def present_fields(self, slot):
        arr, dep = (slot[0], slot[1]) if slot is not None else (None, None)
        self.set("valid_ahead", int(arr is not None))
        self.set("dep_valid_ahead", int(dep is not None))
        rnd = self.noise
        if arr is not None:
            self.set("length_ahead", arr.length)
            self.set("ecn_ahead", int(bool(arr.ecn)))
        elif rnd is not None:
            self.set("length_ahead", rnd.getrandbits(LENGTH_BITS))
            self.set("ecn_ahead", rnd.getrandbits(1))
        if dep is not None:
            self.set("dep_length_ahead", dep.length)
        elif rnd is not None:
            self.set("dep_length_ahead", rnd.getrandbits(LENGTH_BITS))

    def idle_p(self):
        if self.noise is not None:
            p = self.noise.choice((0, self.noise.randrange(PROB_ONE + 1)))
            self.set("p", p)
            self.set("p_zero", int(p == 0))

    def cycle_zero(self, slots, s, clear, next_clear, commit):
        """Slot ``s`` at cycle 0: its ``p``, its clear, the model's outcome expected at
        ``LATENCY``."""
        slot = slots[s]
        if slot is not None and slot[0] is not None:
            self.set("p", slot[2])
            self.set("p_zero", int(slot[2] == 0))
        else:
            self.idle_p()
        self.set("clear_max_queue", int(clear))
        if commit is not None:
            self.model.configure(commit, self.clock)
        out, err, occ, mq = self.predict(slot, clear)
        want = {"out_valid": int(out is not None)}
        if out is not None:
            want["action"] = out
        want["out_dep_valid"] = int(err is not None)
        if err is not None:
            want["dep_error"] = err
        want["occ_pkts"], want["occ_bytes"] = occ
        # max_queue, a clock behind the occupancy: the largest occupancy after the slots
        # before this one, with the clears up to its cycle 0; 0 the clock after a clear
        want["max_queue"] = 0 if next_clear else mq
        self.expect(Decision.LATENCY, f"slot {s} (cycle {Decision.LATENCY} at clock "
                                      f"{self.cycle + Decision.LATENCY})", **want)
        if self.rows:
            self.rows[-1] = self.rows[-1][:4] + (mq,)
        self.record((out, err, *occ, self.model.qm.max_queue))

    def predict(self, slot, clear):
        """The model's view of one slot in its cycle-0 clock: (action or None, departure
        error or None, occupancy after it, max_queue before its events)."""
        qm = self.model.qm
        if clear:
            self.hit("max_queue cleared with packets queued" if qm.occ_pkts
                     else "max_queue cleared with the queue empty")
            if qm.max_queue > qm.occ_pkts:
                self.hit("max_queue clear lowers it")
            qm.clear_max_queue()
        mq = qm.max_queue
        if slot is None:
            self.hit("empty slot")
            return None, None, (qm.occ_pkts, qm.occ_bytes), mq
        arr, dep, p, u = slot
        err = self._depart(dep) if dep is not None else None
        out = self._arrive(arr, dep, p, u) if arr is not None else None
        if arr is None and dep is None:
            self.hit("empty slot")
        return out, err, (qm.occ_pkts, qm.occ_bytes), mq

    def _depart(self, dep):
        qm = self.model.qm
        occ, ob = qm.occ_pkts, qm.occ_bytes
        err = self.model.depart(Departure(self.clock, dep.length))
        if occ == 0:
            self.hit("departure from an empty queue (error)")
        elif dep.length > ob:
            self.hit("departure of more bytes than queued (error)")
        if occ == 1:
            self.hit("departure empties the queue")
        return err

    def _arrive(self, arr, dep, p, u):
        qm = self.model.qm
        regs, q, ob = qm.regs, qm.occ_pkts, qm.occ_bytes
        out = self.model.arrive(Arrival(self.clock, 0, arr.length, arr.ecn), p, u)
        self.hit(f"{MODE_NAMES[regs['mode']]} {ACTION_NAMES[out]}")
        if out == qm_mod.DROP_FORCED:
            self.hit("forced drop by the packet limit" if q + 1 > regs["limit_pkts"] else
                     "forced drop by the byte limit")
        if ob + arr.length == regs["limit_bytes"]:
            self.hit("byte limit decided with a departure in the slot" if dep is not None
                     else "byte limit exactly reached")
        if dep is not None:
            self.hit("departure and arrival in one slot")
        if ob >= 1 << 31:
            self.hit("byte occupancy >= 2^31")
        self.hit("p = 0" if p == 0 else "p = 1 (saturated)" if p == PROB_ONE else "0 < p < 1")
        if u == p:
            self.hit("u = p (boundary)")
        elif u == p - 1:
            self.hit("u = p - 1 (boundary)")
        return out


def pack_config(build, config):
    """The ``config`` port's value of a configuration."""
    from fpq_hdl.layouts import config_layout
    return pack(config_layout(build), config.registers())


# ---- stimulus --------------------------------------------------------------------------------
#: (limits, packet lengths): packets; one packet; bytes hit exactly (multiples of 500; all
#: 1000 bytes, so a full queue with a departure and an arrival in one slot is exactly at
#: the limit); the largest limits with the largest packets
PHASES = [(dict(limit_pkts=25, limit_bytes=20_000), (40, 576, 1500, None)),
          (dict(limit_pkts=1), (40, 1500, 65535)),
          (dict(limit_pkts=(1 << 20) - 1, limit_bytes=3000), (500, 1000, 1500)),
          (dict(limit_pkts=4, limit_bytes=3000), (1000,)),
          (dict(limit_pkts=(1 << 20) - 1, limit_bytes=(1 << 32) - 1), (65535, 1))]
#: a queue of more than 2**31 bytes up to its byte limit: 65535-byte packets, no departures
HUGE = (dict(limit_pkts=(1 << 20) - 1, limit_bytes=3_000_000_000), (65535,))
HUGE_SLOTS = 3_000_000_000 // 65535 + 600
#: phases of the rewrite run that are reset mid-stream (RED and FPQ)
RESET_PHASES = (3, 4)


class Slots:
    """(Arrival | None, Departure | None, p, u) per slot (the bench gives the model each
    slot's clock); departures come in phases of slow and fast service, so the queue fills up
    to its limits and empties."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)

    def make(self, n, lengths, p_arr=0.75, p_dep=None):
        """``n`` slots: an arrival with probability ``p_arr``, a departure with ``p_dep``
        (or phases of 150 slots at 0.25 and 0.9), lengths drawn from ``lengths``."""
        rnd, out = self.rnd, []

        def length():
            w = rnd.choice(lengths)
            return rnd.randint(1, 65535) if w is None else w
        for k in range(n):
            pd = p_dep if p_dep is not None else 0.25 if (k // 150) % 2 == 0 else 0.9
            arr = Arrival(0, 0, length(), rnd.random() < 0.5) if rnd.random() < p_arr else None
            dep = Departure(0, length()) if rnd.random() < pd else None
            p = u = 0
            if arr is not None:
                p = rnd.choice((0, PROB_ONE, rnd.randrange(1 << 28), rnd.randrange(PROB_ONE + 1),
                                rnd.randrange(PROB_ONE // 2, PROB_ONE)))
                u = min(max(p + rnd.choice((-1, 0, 1)), 0), (1 << 32) - 1) \
                    if rnd.random() < 1 / 3 else rnd.getrandbits(32)
            out.append((arr, dep, p, u))
        return out

    def probe(self, n, p):
        """``n`` back-to-back arrivals of probability ``p``, each after the departure of
        the one before (so that no limit, even of one packet, forces a drop): after a reset
        RED's spacing state must be the documented one (acc 0, thresh 2**32 - 1), so with
        ``p = 2**32 - 2`` the first arrival is not early and the second is, whatever came
        before (any other state makes the first one early)."""
        return [(Arrival(0, 0, 64, False), Departure(0, 64) if k else None, p,
                 self.rnd.getrandbits(32)) for k in range(n)]

    def clears(self, n):
        """Slots presented with a ``max_queue`` clear: the first, two back to back, a few
        more."""
        rnd = self.rnd
        at = rnd.randrange(1, n - 1)
        return sorted({0, at, at + 1, *(rnd.randrange(n) for _ in range(4))})


def cfg(build, mode, ecn, **kw):
    return Config(build=build, mode=mode, ecn=ecn, n_cap=build.table_depth - 1, **kw)


def mode_script(build, mode, ecn, n):
    """Each of ``PHASES`` for ``n`` slots, committed one after the other."""
    sl = Slots(seed=("fpq", "red", "droptail").index(mode) * 2 + ecn)
    script = []
    for k, (limits, lengths) in enumerate(PHASES):
        script += [("commit" if k else "config", cfg(build, mode, ecn, **limits)),
                   ("slots", sl.make(n, lengths))]
    return script


def rewrite_script(build, n):
    """Mode, ECN and limits rewritten every ``n`` slots (the RED spacing state and the
    occupancy carry over), ``max_queue`` cleared a few times per phase; then a queue that
    grows beyond 2**31 bytes to a byte limit of 3e9 (drop-tail, no departures) and
    drains."""
    sl, rnd, crnd = Slots(seed=77), random.Random(78), Slots(seed=79)
    script = []
    for k in range(12):
        limits, lengths = PHASES[rnd.randrange(len(PHASES))]
        config = cfg(build, ("red", "fpq", "droptail")[k % 3], bool(k & 1), **limits)
        script += [("commit" if k else "config", config)]
        if k in RESET_PHASES:
            # reset with slots in flight (a queue built up, RED spacing under way), the same
            # configuration loaded again, then the phase once more from power-up state
            script += [("slots", sl.make(n, lengths), crnd.clears(n), False),
                       ("reset", config), ("slots", sl.probe(6, PROB_ONE - 2))]
        script += [("slots", sl.make(n, lengths), crnd.clears(n))]
    script += [("commit", cfg(build, "droptail", False, **HUGE[0])),
               ("slots", sl.make(HUGE_SLOTS, HUGE[1], p_arr=1.0, p_dep=0.0)),
               ("slots", sl.make(n, HUGE[1], p_dep=1.0))]
    return script


def random_slots(rnd, n, p_arr=0.7, p_dep=0.5, lengths=None, dep_lengths=None, phases=None):
    """Random slots with injected ``p`` (0, small, any, 1) and ``u``; ``phases``: a list of
    ``(p_arr, p_dep)`` cycled every 500 slots."""
    slots = []
    for t in range(n):
        if phases:
            p_arr, p_dep = phases[(t // 500) % len(phases)]
        p = rnd.choice((0, 0, rnd.randrange(1 << 28), rnd.randrange(PROB_ONE + 1), PROB_ONE))
        length = rnd.choice(lengths or (40, 1500, rnd.randint(1, 65535)))
        arr = Arrival(t, 0, length, rnd.random() < 0.5) if rnd.random() < p_arr else None
        dep = Departure(t, rnd.choice(dep_lengths or (40, 576, 1500, rnd.randint(1, 3000)))) \
            if rnd.random() < p_dep else None
        slots.append((arr, dep, p, rnd.getrandbits(32)))
    return slots


class _PickedU:
    """The random number of one FPQ arrival, picked once the model has its probability:
    the model's FPQ decision is ``u < p``, so the compare hands ``p`` over."""

    def __init__(self, pick):
        self.pick, self.value = pick, None

    def __lt__(self, p):
        self.value = self.pick(p)
        return self.value < p


def fpq_traffic(rnd, config, n):
    """FPQ traffic decided by an unmodified model (FPQ probability from n, the r(N) table
    and the sampled average), its random numbers picked at its probability (u = p - 1, p,
    p + 1) for a third of the arrivals. Returns the slots (with the ``p`` each verdict
    reports and the ``u`` used) and the model's per-slot ``(action, dep_error, occ_pkts,
    occ_bytes, max_queue)``."""
    model = qm_mod.QueueManager(config)
    flows = [rnd.getrandbits(104) for _ in range(2)]

    def pick(p):
        if rnd.random() < 1 / 3:
            return min(max(p + rnd.choice((-1, 0, 1)), 0), (1 << 32) - 1)
        return rnd.getrandbits(32)
    slots, rows = [], []
    for t in range(n):
        arr = Arrival(t, rnd.choice(flows), rnd.choice((40, 576, 1500)), rnd.random() < 0.5) \
            if rnd.random() < 0.6 else None
        p_dep = 0.2 if (t // 800) % 2 == 0 else 0.97
        dep = Departure(t, rnd.choice((40, 576))) if rnd.random() < p_dep else None
        err = None
        if dep:
            before = model._dep_errors
            model.depart(dep)
            err = model._dep_errors - before
        u, p, action = rnd.getrandbits(32), rnd.randrange(PROB_ONE + 1), None
        if arr:
            picked = _PickedU(pick)
            model._rand = lambda: picked
            v = model.arrive(arr)
            assert picked.value is not None            # the model compared u with p
            u, p, action = picked.value, v.prob, v.action
        rows.append((action, err, model.occ_pkts, model.occ_bytes, model.max_queue))
        slots.append((arr, dep, p, u))
    return slots, rows

