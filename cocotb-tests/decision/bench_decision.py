"""cocotb bench of ``fpq_hdl.decision.Decision`` alone, against the golden model's own code for
it: ``fpq.QueueManager.arrive`` (steps 4-5: early decision, RED spacing, ECN mark, hard
limits, occupancy) and ``depart``, imported and run unchanged.

Decision gets the probability ``p`` (with ``p_zero``, ``p == 0``) and the random number ``u``
as inputs, so the model must decide with the same ``p`` and ``u``. There is no separate
decision class in ``fpq`` (the model inlines it for speed), so :class:`InjectedModel` feeds
them in from outside: ``u`` through the model's generator hook (``_rand``), ``p`` in FPQ mode
through the published average it reads (its sampling turned off) and an r(N) table whose
every word is the rate 2**-16 (``p = avg`` exactly), in RED and drop-tail through
``fpq.queue_manager.probability`` (patched to return ``p``). Every verdict's ``prob`` must
then equal the injected ``p``, which checks the injection itself.

Each clock is a slot (an arrival, a departure, both, or neither): its descriptor fields go in
``FIELDS_AHEAD`` clocks before its cycle 0, ``p``, ``p_zero`` and ``u`` at cycle 0, and its
outputs are compared at cycle ``LATENCY``: ``out_valid``, ``action``, ``out_dep_valid``,
``dep_error``, ``occ_pkts`` / ``occ_bytes`` (the occupancy after the slot, on every clock);
``max_queue`` a clock later (documented). The model's events carry the slot's clock.

A clear of ``max_queue`` (``clear_max_queue``, a write to the register) in a slot's cycle-0
clock acts before that slot's events, as ``fpq.QueueManager.clear_max_queue`` called before
the model's ``depart``/``arrive``; the RTL's ``max_queue`` reads 0 for one clock, then
restarts from the occupancy after the previous slot. The bench checks both.

Script items (plan["script"]): ``("config", Config)``, ``("commit", Config)`` (slots in
flight drained), ``("slots", [(Arrival | None, Departure | None, p, u) or None, ...][,
clears[, drain]])`` with ``clears`` the indices of the slots with a ``max_queue`` clear and
``drain`` False to end with slots still in flight (their descriptors are not used),
``("reset", Config)`` (reset held two clocks, the configuration loaded again)."""

import cocotb

import fpq.queue_manager as qm_mod
from fpq import Arrival, Departure
from fpq.drop_probability import Mode
from fpq.formats import PROB_ONE, RATE

from fpq_hdl.decision import Decision

from tb_lib.component_bench import start, reset, Ports, config_word
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage

P = "decision: "
MODE_NAMES = {m.value: m.name for m in Mode}
ACTION_NAMES = ("enqueue", "mark", "drop early", "drop forced")
#: the RATE word 0x8000 * 2**-(16 + 15) = 2**-16: ``p = ((0x8000 * avg) << 1) >> 16 = avg``
RATE_P_EQ_AVG = RATE.pack(0x8000, 16)

_P = [0]
qm_mod.probability = lambda mode, avg, rate_word, regs: _P[0]   # RED / drop-tail: p injected


class InjectedModel:
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
        _P[0] = p
        qm.avg.published = p                   # FPQ: p = the average read
        qm._rand = lambda: u
        v = qm.arrive(arr)
        if v.prob != p:
            raise AssertionError(f"the model decided with p {v.prob}, not the injected {p}: "
                                 f"fpq.QueueManager changed, update InjectedModel")
        return v.action


class DecisionTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        self.ports = Ports(dut, ["valid_ahead", "dep_valid_ahead", "length_ahead",
                                 "dep_length_ahead", "ecn_ahead", "p", "p_zero", "u_ahead",
                                 "config", "clear_max_queue"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.model = None
        self.clock = 0              # the model's clock: the cycle-0 clock of the next slot

    async def load(self, config):
        self.ports.set("config", config_word(self.build, config.registers()))
        await self.edge
        self.cycle += 1
        self.clock += 1

    def predict(self, slot, clear):
        """The model's view of one slot in its cycle-0 clock: (action or None, departure
        error or None, occupancy after it, max_queue before its events)."""
        m, hit, qm = self.model, self.cov.hit, self.model.qm
        ts = self.clock
        if clear:
            hit(P + ("max_queue cleared with packets queued" if qm.occ_pkts
                     else "max_queue cleared with the queue empty"))
            if qm.max_queue > qm.occ_pkts:
                hit(P + "max_queue clear lowers it")
            qm.clear_max_queue()
        mq = qm.max_queue
        if slot is None:
            return None, None, (qm.occ_pkts, qm.occ_bytes), mq
        arr, dep, p, u = slot
        err = None
        if dep is not None:
            occ, ob = qm.occ_pkts, qm.occ_bytes
            err = m.depart(Departure(ts, dep.length))
            if occ == 0:
                hit(P + "departure from an empty queue (error)")
            elif dep.length > ob:
                hit(P + "departure of more bytes than queued (error)")
            if occ == 1:
                hit(P + "departure empties the queue")
        out = None
        if arr is not None:
            regs = qm.regs
            q, ob = qm.occ_pkts, qm.occ_bytes
            out = m.arrive(Arrival(ts, 0, arr.length, arr.ecn), p, u)
            mode = MODE_NAMES[regs["mode"]]
            hit(P + f"{mode} {ACTION_NAMES[out]}")
            if out == qm_mod.DROP_FORCED:
                hit(P + ("forced drop by the packet limit" if q + 1 > regs["limit_pkts"] else
                         "forced drop by the byte limit"))
            if ob + arr.length == regs["limit_bytes"]:
                hit(P + ("byte limit decided with a departure in the slot" if dep is not None
                         else "byte limit exactly reached"))
            if dep is not None:
                hit(P + "departure and arrival in one slot")
            if ob >= 1 << 31:
                hit(P + "byte occupancy >= 2^31")
            hit(P + ("p = 0" if p == 0 else "p = 1 (saturated)" if p == PROB_ONE else
                     "0 < p < 1"))
            if u == p:
                hit(P + "u = p (boundary)")
            elif u == p - 1:
                hit(P + "u = p - 1 (boundary)")
        elif dep is None:
            hit(P + "empty slot")
        return out, err, (qm.occ_pkts, qm.occ_bytes), mq

    async def run_slots(self, slots, clears=(), drain=True):
        """Clock ``k`` presents the fields of slot ``k``, the cycle-0 inputs of slot
        ``k - FIELDS_AHEAD`` (its random number a clock earlier) and checks the outputs of slot ``k - FIELDS_AHEAD - LATENCY``."""
        dut, ps, edge = self.dut, self.ports, self.edge
        A, L = Decision.FIELDS_AHEAD, Decision.LATENCY
        clears = set(clears)
        n = len(slots)
        want = {}                     # slot -> (action, dep error, occupancy, max_queue)
        zero = set()                  # slots after whose cycle 0 max_queue reads 0
        o_valid, o_act, o_dep, o_err, o_occp, o_occb, o_max = (
            dut.out_valid, dut.action, dut.out_dep_valid, dut.dep_error, dut.occ_pkts,
            dut.occ_bytes, dut.max_queue)
        end = n + A + L + 1 if drain else n + A
        for k in range(end):
            nxt = slots[k] if k < n else None
            if nxt is not None and (nxt[0] is not None or nxt[1] is not None):
                arr, dep, _, _ = nxt
                ps.set("valid_ahead", int(arr is not None))
                ps.set("dep_valid_ahead", int(dep is not None))
                if arr is not None:
                    ps.set("length_ahead", arr.length)
                    ps.set("ecn_ahead", int(bool(arr.ecn)))
                if dep is not None:
                    ps.set("dep_length_ahead", dep.length)
            else:
                ps.set("valid_ahead", 0)
                ps.set("dep_valid_ahead", 0)
            s = k - A
            if 0 <= s < n:
                slot = slots[s]
                if slot is not None and slot[0] is not None:
                    ps.set("p", slot[2])
                    ps.set("p_zero", int(slot[2] == 0))
                ps.set("clear_max_queue", int(s in clears))
                if s in clears:
                    zero.add(s)
                want[s] = self.predict(slot, s in clears)
            else:
                ps.set("clear_max_queue", 0)
            # the random number a clock ahead of its slot's cycle 0
            if 0 <= s + 1 < n and slots[s + 1] is not None and slots[s + 1][0] is not None:
                ps.set("u_ahead", slots[s + 1][3])
            self.clock += 1
            await edge
            self.cycle += 1
            o = k - A - L
            if o < 0 or o >= n:
                continue
            out, err, occ, _ = want[o]
            where = f"slot {self.checked} (cycle {L} at clock {self.cycle - 1})"
            if int(o_valid.value) != (out is not None):
                raise AssertionError(f"{where}: RTL out_valid {o_valid.value}, model "
                                     f"{'an arrival' if out is not None else 'none'}")
            if out is not None and o_act.value.to_unsigned() != out:
                raise AssertionError(f"{where}: RTL action {o_act.value.to_unsigned()} != "
                                     f"model {out}")
            if int(o_dep.value) != (err is not None):
                raise AssertionError(f"{where}: RTL out_dep_valid {o_dep.value}, model "
                                     f"{'a departure' if err is not None else 'none'}")
            if err is not None and int(o_err.value) != err:
                raise AssertionError(f"{where}: RTL dep_error {o_err.value} != model {err}")
            got_occ = (o_occp.value.to_unsigned(), o_occb.value.to_unsigned())
            if got_occ != occ:
                raise AssertionError(f"{where}: RTL (occ_pkts, occ_bytes) {got_occ} != "
                                     f"model {occ}")
            # max_queue, a clock behind the occupancy: the largest occupancy after the slots
            # before ``o``, with the clears up to slot o's cycle 0; 0 the clock after a clear
            if o + 1 in zero:
                want_max, why = 0, " (the clock after a clear)"
            else:
                want_max, why = want[o][3], ""
            if o_max.value.to_unsigned() != want_max:
                raise AssertionError(f"{where}: RTL max_queue {o_max.value.to_unsigned()} "
                                     f"!= model {want_max}{why}")
            self.checked += 1
            del want[o]
        lost = 0 if drain else min(n, L)
        self.lost += lost
        self.cov.hit(P + "slots checked", n - lost)

    async def run(self):
        self.edge = await start(self.dut, ["valid_ahead", "dep_valid_ahead", "length_ahead",
                                           "dep_length_ahead", "ecn_ahead", "p", "p_zero",
                                           "u_ahead", "clear_max_queue"])
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "config":
                self.clock = 0
                self.model = InjectedModel(item[1])
                await self.load(item[1])
            elif kind == "commit":
                self.model.configure(item[1], self.clock)
                self.cov.hit(P + "configuration rewritten mid-stream")
                await self.load(item[1])
            elif kind == "slots":
                await self.run_slots(*item[1:])
            elif kind == "reset":
                # the last slots item ended without draining: its slots in flight are lost
                # to the reset, unchecked; the state after it is the documented one
                # (occupancy, max_queue and RED spacing as at power-up): a fresh model
                for name in ("valid_ahead", "dep_valid_ahead", "clear_max_queue"):
                    self.ports.set(name, 0)
                await reset(self.dut, self.edge)
                self.cycle += 2
                self.ports.forget()
                self.clock = 0
                self.model = InjectedModel(item[1])
                await self.load(item[1])
                self.cov.hit(P + "reset mid-stream (slots in flight)")
            else:
                raise ValueError(f"script item {kind!r}")
        return {"inputs": self.checked, "lost_to_reset": self.lost, "cycles": self.cycle,
                "coverage": self.cov.bins}


@cocotb.test()
async def decision(dut):
    save_result(await DecisionTB(dut, load_plan()).run())
