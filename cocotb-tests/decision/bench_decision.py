"""cocotb bench of ``fpq_hdl.decision.Decision`` alone, against the golden model's own code for
it: ``fpq.QueueManager.arrive`` (steps 3-6: early decision, RED spacing, ECN mark, hard
limits, occupancy, idle tracking) and ``depart``, imported and run unchanged.

Decision gets the probability ``p`` and the random number ``u`` as inputs, so the model must
decide with the same ``p`` and ``u``. There is no separate decision class in ``fpq`` (the
model inlines it for speed), so :class:`InjectedModel` feeds them in from outside: ``u``
through the model's generator hook (``_rand``), ``p`` in FPQ mode through the lagged-average
slot it reads and an r(N) table whose every word is the rate 2**-16 (``p = avg`` exactly), in
RED and drop-tail through ``fpq.queue_manager.probability`` (patched to return ``p``). Every
verdict's ``prob`` must then equal the injected ``p``, which checks the injection itself.

Per slot (an arrival, a departure, both, or neither) the bench compares, ``Decision.LATENCY``
clocks later: ``out_valid``, ``action``, ``q`` (the queue the arrival found), ``idle`` and
(when idle) ``idle_diff``, ``out_dep_valid``, ``dep_error``, and on every clock
``occ_pkts`` / ``occ_bytes``; ``max_queue`` one clock after them (documented).

A clear of ``max_queue`` (``clear_max_queue``, a write to the register) presented with a slot
acts before that slot's arrival, as ``fpq.QueueManager.clear_max_queue`` called before the
model's ``arrive``; the RTL's ``max_queue`` reads 0 for one clock, then restarts from the
occupancy after the previous slot. The bench checks both.

Script items (plan["script"]): ``("config", Config)``, ``("commit", Config)`` (pipeline
drained), ``("events", [(Arrival | None, Departure | None, p, u), ...][, clears[, drain]])``
with ``clears`` the indices of the slots presented with a ``max_queue`` clear and ``drain``
False to end with slots still in flight, ``("reset", Config)`` (reset held two clocks, the
configuration loaded again), ``("stream", {gap, gap_burst})`` (idle clocks between slots)."""

from collections import deque

import cocotb

import fpq.queue_manager as qm_mod
from fpq.config import MODES
from fpq.formats import PROB_ONE, RATE, TIME_BITS, wrap_signed

from fpq_hdl.decision import Decision

from tb_lib.component_bench import start, reset, Ports, config_word
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage
from tb_lib.streams import Pattern

P = "decision: "
MODE_NAMES = {v: k for k, v in MODES.items()}
ACTION_NAMES = ("enqueue", "mark", "drop early", "drop forced")
TMASK = (1 << TIME_BITS) - 1
#: the RATE word 0x8000 * 2**-(16 + 15) = 2**-16: ``p = ((0x8000 * avg) << 1) >> 16 = avg``
RATE_P_EQ_AVG = RATE.pack(0x8000, 16)

_P = [0]
qm_mod.probability = lambda mode, avg, rate_word, regs: _P[0]   # RED / drop-tail: p injected


class InjectedModel:
    """``fpq.QueueManager`` deciding with a given ``p`` and ``u``."""

    def __init__(self, config):
        self.qm = qm_mod.QueueManager(config)
        self._tables()

    def configure(self, config):
        self.qm.configure(config)
        self._tables()

    def _tables(self):
        self.qm.rate_table = [RATE_P_EQ_AVG] * len(self.qm.rate_table)

    def depart(self, dep):
        qm = self.qm
        before = qm.counters["dep_errors"]
        qm.depart(dep)
        return qm.counters["dep_errors"] - before

    def arrive(self, arr, p, u):
        qm = self.qm
        _P[0] = p
        qm.history[qm.seq % qm.build.avg_lag] = p          # FPQ: p = avg_used
        qm._rand = lambda: u
        idle, since, q = qm.avg.idle, qm.avg.idle_since, qm.occ_pkts
        v = qm.arrive(arr)
        if v.prob != p:
            raise AssertionError(f"the model decided with p {v.prob}, not the injected {p}: "
                                 f"fpq.QueueManager changed, update InjectedModel")
        return v.action, q, int(idle), wrap_signed(arr.ts - since, TIME_BITS)


class DecisionTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        self.seed = plan["seed"]
        self.streams(plan)
        self.ports = Ports(dut, ["valid", "p", "u", "ecn", "length", "ts", "dep_valid",
                                 "dep_length", "dep_ts", "config", "clear_max_queue"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.model = None

    def streams(self, st):
        self.seed += 1
        self.gap = Pattern(1.0 - st.get("gap", 0.0), self.seed * 7 + 1, st.get("gap_burst", 1))

    async def load(self, config):
        self.ports.set("config", config_word(self.build, config.registers()))
        await self.edge
        self.cycle += 1

    def predict(self, slot):
        """The model's view of one slot: outputs, then occupancy after it."""
        arr, dep, p, u = slot
        m, hit, qm = self.model, self.cov.hit, self.model.qm
        err = None
        if dep is not None:
            occ, ob = qm.occ_pkts, qm.occ_bytes
            err = m.depart(dep)
            if occ == 0:
                hit(P + "departure from an empty queue (error)")
            elif dep.length > ob:
                hit(P + "departure of more bytes than queued (error)")
            if occ == 1:
                hit(P + "queue emptied (idle starts)")
        out = None
        if arr is not None:
            regs = qm.regs
            q, ob = qm.occ_pkts, qm.occ_bytes
            out = m.arrive(arr, p, u)
            mode = MODE_NAMES[regs["mode"]]
            hit(P + f"{mode} {ACTION_NAMES[out[0]]}")
            if out[0] == qm_mod.DROP_FORCED:
                hit(P + ("forced drop by the packet limit" if q + 1 > regs["limit_pkts"] else
                         "forced drop by the byte limit"))
            if ob + arr.length == regs["limit_bytes"]:
                hit(P + ("byte limit decided with a departure in the slot" if dep is not None
                         else "byte limit exactly reached"))
            if dep is not None:
                hit(P + "departure and arrival in one slot")
            if ob >= 1 << 31:
                hit(P + "byte occupancy >= 2^31")
            if out[2]:
                hit(P + "arrival after idle")
            hit(P + ("p = 0" if p == 0 else "p = 1 (saturated)" if p == PROB_ONE else
                     "0 < p < 1"))
            if u == p:
                hit(P + "u = p (boundary)")
            elif u == p - 1:
                hit(P + "u = p - 1 (boundary)")
        return out, err, (qm.occ_pkts, qm.occ_bytes), qm.max_queue

    async def run_events(self, slots, clears=(), drain=True):
        dut, ps, edge, gap = self.dut, self.ports, self.edge, self.gap
        clears = set(clears)
        zero_at = set()               # clocks whose max_queue check expects a clear's 0
        L = Decision.LATENCY
        idle_slot = (None, None, (self.model.qm.occ_pkts, self.model.qm.occ_bytes),
                     self.model.qm.max_queue)
        want = deque([idle_slot] * L, maxlen=L)
        max_prev = idle_slot[3]       # max_queue one clock behind occupancy
        o_valid, o_dep, o_occp, o_occb, o_max = (dut.out_valid, dut.out_dep_valid,
                                                  dut.occ_pkts, dut.occ_bytes, dut.max_queue)
        n, i, tail, gaps, clocks = len(slots), 0, 0, 0, 0
        exp_now = idle_slot

        def where(clocks, i):
            return f"the slot of clock {clocks - L} ({self.checked + i} slots presented so far)"
        while i < n or (drain and tail <= L + 1):
            if i < n and gap.next():
                arr, dep, p, u = slots[i]
                if arr is not None:
                    ps.set("valid", 1)
                    ps.set("p", p)
                    ps.set("u", u)
                    ps.set("ecn", int(bool(arr.ecn)))
                    ps.set("length", arr.length)
                    ps.set("ts", arr.ts & TMASK)
                else:
                    ps.set("valid", 0)
                if dep is not None:
                    ps.set("dep_valid", 1)
                    ps.set("dep_length", dep.length)
                    ps.set("dep_ts", dep.ts & TMASK)
                else:
                    ps.set("dep_valid", 0)
                if i in clears:
                    ps.set("clear_max_queue", 1)
                    qm = self.model.qm
                    self.cov.hit(P + ("max_queue cleared with packets queued" if qm.occ_pkts
                                      else "max_queue cleared with the queue empty"))
                    if qm.max_queue > qm.occ_pkts:
                        self.cov.hit(P + "max_queue clear lowers it")
                    qm.clear_max_queue()
                    # the RTL reads 0 the clock after the clear, then restarts from the
                    # occupancy after the previous slot: that slot's expected max_queue is
                    # the cleared one
                    want[-1] = want[-1][:3] + (qm.max_queue,)
                    zero_at.add(clocks + 1)
                else:
                    ps.set("clear_max_queue", 0)
                out, err, occ, mq = self.predict(slots[i])
                exp_now = (out, err, occ, mq)
                i += 1
            else:
                ps.set("clear_max_queue", 0)
                ps.set("valid", 0)
                ps.set("dep_valid", 0)
                exp_now = (None, None, exp_now[2], exp_now[3])
                if i < n:
                    gaps += 1
                else:
                    tail += 1
            out, err, occ, mq = want[0]
            want.append(exp_now)
            await edge
            if int(o_valid.value) != (out is not None):
                raise AssertionError(f"{where(clocks, i)}: RTL out_valid {o_valid.value}, "
                                     f"model {'an arrival' if out else 'none'}")
            if out is not None:
                got = (dut.action.value.to_unsigned(), dut.q.value.to_unsigned(),
                       int(dut.idle.value))
                diff = dut.idle_diff.value.to_signed()
                if got != out[:3] or (out[2] and diff != out[3]):
                    raise AssertionError(f"{where(clocks, i)}: RTL (action, q, idle, "
                                         f"idle_diff) {got + (diff,)} != model {out}")
            if int(o_dep.value) != (err is not None):
                raise AssertionError(f"{where(clocks, i)}: RTL out_dep_valid {o_dep.value}, "
                                     f"model {'a departure' if err is not None else 'none'}")
            if err is not None and int(dut.dep_error.value) != err:
                raise AssertionError(f"{where(clocks, i)}: RTL dep_error "
                                     f"{dut.dep_error.value} != model {err}")
            got_occ = (o_occp.value.to_unsigned(), o_occb.value.to_unsigned())
            if got_occ != occ:
                raise AssertionError(f"{where(clocks, i)}: RTL (occ_pkts, occ_bytes) {got_occ} "
                                     f"!= model {occ}")
            want_max = 0 if clocks in zero_at else max_prev
            if o_max.value.to_unsigned() != want_max:
                raise AssertionError(f"{where(clocks - 1, i)}: RTL max_queue "
                                     f"{o_max.value.to_unsigned()} != model {want_max}"
                                     + (" (the clock after a clear)" if clocks in zero_at
                                        else ""))
            max_prev = mq
            clocks += 1
        self.cycle += clocks
        # without the drain, the slots of the last L clocks are still in flight: lost to the
        # reset that follows, unchecked
        lost = 0 if drain else sum(1 for w in want if w[0] is not None or w[1] is not None)
        self.lost += lost
        self.checked += n - lost
        self.cov.hit(P + "slots checked", n - lost)
        self.cov.hit(P + "valid gap cycles", gaps)

    async def run(self):
        self.edge = await start(self.dut, ["valid", "p", "u", "ecn", "length", "ts",
                                           "dep_valid", "dep_length", "dep_ts",
                                           "clear_max_queue"])
        self.cycle = 2
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "config":
                self.model = InjectedModel(item[1])
                await self.load(item[1])
            elif kind == "commit":
                self.model.configure(item[1])
                self.cov.hit(P + "configuration rewritten mid-stream")
                await self.load(item[1])
            elif kind == "events":
                await self.run_events(*item[1:])
            elif kind == "stream":
                self.streams(item[1])
            elif kind == "reset":
                # the last events item ended without draining: its last Decision.LATENCY
                # slots are lost to the reset, unchecked; state after it as documented
                # (occupancy, max_queue, idle tracking and RED spacing as at power-up), which
                # is a fresh model with the same configuration
                for name in ("valid", "dep_valid", "clear_max_queue"):
                    self.ports.set(name, 0)
                await reset(self.dut, self.edge)
                self.cycle += 2
                self.ports.forget()
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
