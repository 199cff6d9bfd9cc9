"""``fpq datasheet``: the generated parts of docs/DATASHEET.md, the hardware engineer's
datasheet of the core ``fpq verilog`` exports (``fpq_hdl.axi_core.FPQCore``).

Every table and timing diagram between a pair of markers ``<!-- BEGIN fpq datasheet NAME -->``
/ ``<!-- END fpq datasheet NAME -->`` comes from a command, so the datasheet stays current:

* ``ports``, ``verilog-template``: the ports of the exported Verilog itself (the text ``fpq
  verilog`` writes, parsed), for the AXI4-Lite and the Wishbone build;
* ``payload``, ``registers``: the stream layouts and the register map the export is made from;
* ``timing``, ``waves``: an Amaranth simulation of the core (:func:`measure`) that counts
  clocks at its ports (reset, latency, throughput, back-pressure, bus accesses, a commit)
  and records the WaveDrom diagrams from the same run;
* ``resources``: the measurement records of docs/benchmarks/ (``fpq.records``), each named
  with the command that made it.

``--write`` replaces the text between each pair of markers and keeps the prose around them.
"""

import json
import os
import re
from dataclasses import dataclass

from fpq.bitfields import bit_layout, pack, unpack
from fpq.marked_section import markers, replace_section, section_bounds

__all__ = ["Port", "parse_ports", "measure", "wavedrom", "sections", "replace_sections",
           "check_markers",
           "SECTIONS", "begin_marker", "end_marker", "verilog_template", "main",
           "add_arguments"]

#: The generated sections, in the order they appear in the datasheet.
SECTIONS = ("ports", "payload", "timing", "waves", "registers", "resources",
            "verilog-template")


def begin_marker(name):
    return markers(f"datasheet {name}")[0]


def end_marker(name):
    return markers(f"datasheet {name}")[1]


# ---- ports of the exported Verilog ---------------------------------------------------------
@dataclass(frozen=True)
class Port:
    """A port of a Verilog module: ``direction`` "input", "output" or "inout", ``width`` in
    bits."""
    name: str
    direction: str
    width: int


_MODULE = re.compile(r"^\s*module\s+(\w+)\s*\(([^;]*)\)\s*;", re.M)
_DECL = re.compile(r"^\s*(input|output|inout)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):(\d+)\]\s+)?"
                   r"(\w+)\s*;", re.M)


def parse_ports(verilog, module=None):
    """The ports of ``module`` (default: the first module) in the Verilog text ``verilog``
    (non-ANSI port declarations, as Yosys's ``write_verilog`` prints them), in the order of
    the module's port list. Raises ``ValueError`` if the module is not there or a port has
    no declaration."""
    for match in _MODULE.finditer(verilog):
        if module is None or match[1] == module:
            break
    else:
        raise ValueError(f"module {module!r} not found" if module else "no module found")
    names = [n.strip() for n in match[2].split(",") if n.strip()]
    body = verilog[match.end():verilog.index("endmodule", match.end())]
    decls = {}
    for d in _DECL.finditer(body):
        width = abs(int(d[2]) - int(d[3])) + 1 if d[2] is not None else 1
        decls[d[4]] = Port(d[4], d[1], width)
    missing = [n for n in names if n not in decls]
    if missing:
        raise ValueError(f"module {match[1]}: no declaration of port(s) {', '.join(missing)}")
    return [decls[n] for n in names]


#: Interfaces of the core, by port prefix, in the order the tables list them, with what
#: each carries.
INTERFACES = (
    ("", "clock and reset"),
    ("s_axis_arrival_", "AXI-Stream target: arrival descriptors (one per packet offered to "
                        "the queue)"),
    ("s_axis_departure_", "AXI-Stream target: departure descriptors (one per packet that "
                          "left the queue)"),
    ("m_axis_verdict_", "AXI-Stream initiator: one verdict per accepted arrival, in order"),
    ("s_axil_", "AXI4-Lite target: the register map (`--bus axi-lite`)"),
    ("wb_", "Wishbone B4 classic target: the register map (`--bus wishbone`)"),
)

#: Order of the signals within an interface (AXI channel order); others follow by name.
_SIGNAL_ORDER = ("clk", "rst", "tdata", "tuser", "tvalid", "tready", "awaddr", "awvalid",
                 "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid", "bready",
                 "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready", "cyc",
                 "stb", "we", "adr", "dat_w", "dat_r", "ack")

#: What each port does, by its name without the interface prefix (``DESCRIPTIONS[prefix]``).
#: A port of the export without an entry stops the generator: a new port needs its line.
DESCRIPTIONS = {
    "": {"clk": "the one clock; every port is synchronous to its rising edge",
         "rst": "synchronous reset, active high (see Reset)"},
    "s_axis_arrival_": {
        "tdata": "arrival descriptor `arrival_t`: 5-tuple, length, ECN-capable (Payloads)",
        "tvalid": "a descriptor is offered",
        "tready": "the core takes it in this clock; low while the flow vector is wiped, "
                  "during a commit, or while the verdict FIFO is full (a function of "
                  "registers only)"},
    "s_axis_departure_": {
        "tdata": "departure descriptor `departure_t`: length in bytes",
        "tvalid": "a departure is offered",
        "tready": "always high out of reset: departures are never held"},
    "m_axis_verdict_": {
        "tdata": "verdict `verdict_t`: sequence number, action, n, average, probability",
        "tuser": "the verdict's `action` (Payloads), for a fabric that routes on `tuser`",
        "tvalid": "a verdict is offered; it and `tdata` hold until `tready`",
        "tready": "the sink takes the verdict"},
    "s_axil_": {
        "awaddr": "write byte address (the two low bits ignored)",
        "awvalid": "write address valid",
        "awready": "write address taken: in the clock in which `awvalid` and `wvalid` are "
                   "both high, no access is in flight and no response is pending",
        "wdata": "write data", "wstrb": "byte strobes: `4'hf` only (else SLVERR, nothing "
                                         "written)",
        "wvalid": "write data valid", "wready": "write data taken (with `awready`)",
        "bresp": "OKAY, or SLVERR for a partial write", "bvalid": "write response valid",
        "bready": "write response taken",
        "araddr": "read byte address", "arvalid": "read address valid",
        "arready": "read address taken (no access in flight, no read data pending)", "rdata": "read data", "rresp": "always OKAY",
        "rvalid": "read data valid", "rready": "read data taken"},
    "wb_": {
        "cyc": "bus cycle", "stb": "strobe", "we": "write enable",
        "adr": "word address (the byte address without its two low bits)",
        "dat_w": "write data",
        "dat_r": "read data (valid with `ack`)", "ack": "the clock after the strobe"},
}


def _interface_of(name):
    best = ""
    for prefix, _ in INTERFACES:
        if prefix and name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return best


def _signal_key(port):
    prefix = _interface_of(port.name)
    rest = port.name[len(prefix):]
    order = _SIGNAL_ORDER.index(rest) if rest in _SIGNAL_ORDER else len(_SIGNAL_ORDER)
    return ([p for p, _ in INTERFACES].index(prefix), order, rest)


def _describe(port):
    prefix = _interface_of(port.name)
    try:
        return DESCRIPTIONS[prefix][port.name[len(prefix):]]
    except KeyError:
        raise ValueError(f"port {port.name}: the datasheet has no description of it "
                         f"(fpq_hdl.datasheet.DESCRIPTIONS)") from None


def _ports_markdown(ports_by_bus):
    """Port tables: the ports every build has, then each bus's own."""
    common = None
    for ports in ports_by_bus.values():
        names = {p.name for p in ports}
        common = names if common is None else common & names
    out = []
    first = next(iter(ports_by_bus.values()))
    shared = sorted((p for p in first if p.name in common), key=_signal_key)
    out += _port_table(shared)
    for bus, ports in ports_by_bus.items():
        own = sorted((p for p in ports if p.name not in common), key=_signal_key)
        out += ["", f"`--bus {bus}` adds:", ""] + _port_table(own)
    return out


def _port_table(ports):
    rows = ["| port | direction | bits | interface | description |", "|---|---|---|---|---|"]
    titles = dict(INTERFACES)
    for p in ports:
        title = titles[_interface_of(p.name)].split(":")[0]
        rows.append(f"| `{p.name}` | {p.direction} | {p.width} | {title} | {_describe(p)} |")
    return rows


# ---- the instantiation template ------------------------------------------------------------
def _user_name(port):
    """The signal a design connects to ``port`` in the template."""
    for prefix, user in (("s_axis_", ""), ("m_axis_", ""), ("s_axil_", "axil_")):
        if port.name.startswith(prefix):
            return user + port.name[len(prefix):]
    return port.name


def verilog_template(ports, core="fpq_core", module="fpq_core_example"):
    """A Verilog module ``module`` that instantiates ``core`` with every one of ``ports``
    connected to a port of its own, grouped by interface, as text."""
    ports = sorted(ports, key=_signal_key)
    titles = dict(INTERFACES)
    width = max(len(_user_name(p)) for p in ports)
    head, inst = [], []
    group = None
    for i, p in enumerate(ports):
        prefix = _interface_of(p.name)
        if prefix != group:
            group = prefix
            head.append(f"  // {titles[prefix]}")
            inst.append(f"    // {prefix + '*' if prefix else titles[prefix]}")
        rng = f"[{p.width - 1}:0]" if p.width > 1 else ""
        last = i == len(ports) - 1
        head.append(f"  {p.direction:6} wire {rng:9} {_user_name(p)}{'' if last else ','}")
        inst.append(f"    .{p.name:{max(len(q.name) for q in ports)}} "
                    f"({_user_name(p):{width}}){'' if last else ','}")
    return "\n".join([
        f"// {module}: an instance of {core} (`fpq verilog -o build/{core}.v`), every port",
        "// connected; rename the outer signals to your design's.",
        f"module {module} (", *head, ");", "",
        f"  {core} u_fpq (", *inst, "  );", "", "endmodule", ""])


# ---- measurement in simulation -------------------------------------------------------------
def measure(build=None, bus="axi-lite"):
    """Run :class:`fpq_hdl.axi_core.FPQCore` in Amaranth's simulator and measure at its
    ports, in clocks: reset, latency, throughput, back-pressure, register-bus accesses and a
    commit. Returns ``{"build", "results": {...}, "traces": {scenario: [per-clock dict of
    every port's value, its clock number ``_clock`` and the seq the next accepted arrival
    gets ``_seq``]}, "origins": {scenario: the clock counted as 0 where it is not the
    trace's first}}``.

    Parameters
    ----------
    build : fpq.Build
        Default: ``fpq.Build()`` (the build ``fpq verilog`` exports by default).
    bus : str
        "axi-lite" or "wishbone".
    """
    from amaranth import Module, ClockDomain
    from amaranth.sim import Simulator
    from fpq import Build
    from .axi_core import FPQCore

    build = Build() if build is None else build
    if bus not in ("axi-lite", "wishbone"):
        raise ValueError(f"bus: {bus!r} is not one of axi-lite, wishbone")
    dut = FPQCore(build, bus=bus)
    top = Module()
    top.domains.sync = cd = ClockDomain("sync")
    top.submodules.core = dut
    probe = _Probe(dut, cd, build, bus)
    sim = Simulator(top)
    sim.add_clock(1e-8, domain="sync")
    sim.add_testbench(probe.run)
    sim.run()
    return {"build": build, "bus": bus, "results": probe.results, "traces": probe.traces,
            "origins": probe.origins}


class _Probe:
    """The testbench of :func:`measure`: drives FPQCore's ports clock by clock, one short
    coroutine per scenario, each adding its figures to ``results`` and, where the datasheet
    draws it, its clocks to ``traces``.

    Every clock goes through :meth:`step`, which records the ports into the current trace
    (``self.trace``, None while a scenario is not drawn) and counts accepted arrivals, so
    that the seq each verdict carries is known (``seq_next``)."""

    def __init__(self, dut, cd, build, bus):
        from fpq.regmap import registers
        from .layouts import ARRIVAL, VERDICT
        self.dut, self.cd, self.bus = dut, cd, bus
        self.regs = {r.name: r for r in registers(build)}
        self.port_names = list(dut.signature.members)
        self.arrival_layout, self.verdict_layout = bit_layout(ARRIVAL), bit_layout(VERDICT)
        self.results, self.traces, self.origins = {}, {}, {}
        self.trace = None
        self.clock = 0
        self.seq_next = 0               # the seq the next accepted arrival gets
        # every scenario's clocks together are far fewer than this; more means a hang
        self.clock_limit = 4 * build.vec_bits + 50_000
        self.ctx = None

    # -- ports and clocks
    def set(self, name, value):
        self.ctx.set(getattr(self.dut, name), value)

    def get(self, name):
        return self.ctx.get(getattr(self.dut, name))

    def handshake(self, prefix):
        return self.get(prefix + "tvalid") and self.get(prefix + "tready")

    def verdict_seq(self):
        return unpack(self.verdict_layout, self.get("m_axis_verdict_tdata"))["seq"]

    def arrival(self, i):
        from fpq import pack_flow
        flow = pack_flow(0x0A000000 + i, 0x0A800001, 1024 + i, 80, 6)
        return pack(self.arrival_layout, dict(flow=flow, length=64 + i % 1400, ecn=0))

    async def step(self):
        """Sample every port (inputs as driven, outputs settled), then one clock. The
        arrival source holds its descriptor until it is taken (AXI-Stream)."""
        self.set("s_axis_arrival_tdata",
                 self.arrival(self.seq_next) if self.get("s_axis_arrival_tvalid") else 0)
        if self.trace is not None:
            self.trace.append({n: self.get(n) for n in self.port_names}
                              | {"rst": self.ctx.get(self.cd.rst), "_seq": self.seq_next,
                                 "_clock": self.clock})
        if self.get("s_axis_arrival_tvalid") and self.get("s_axis_arrival_tready"):
            self.seq_next += 1
        await self.ctx.tick()
        self.clock += 1
        if self.clock > self.clock_limit:
            raise RuntimeError(f"measure: the core has not answered in {self.clock_limit} "
                               f"clocks (a port that never becomes ready or valid)")

    async def steps(self, n):
        for _ in range(n):
            await self.step()

    async def drain(self):
        """Clocks until no verdict is waiting."""
        while self.get("m_axis_verdict_tvalid"):
            await self.step()

    # -- the scenarios, in the order they run
    async def run(self, ctx):
        self.ctx = ctx
        await self.reset()
        await self.handshake_latency()
        for sink_every, label in ((1, "sink_always_ready"), (2, "sink_ready_half")):
            await self.throughput(sink_every, label)
        await self.backpressure()
        if self.bus == "wishbone":
            await self.wishbone_accesses()
            return
        await self.axil_accesses()
        for label, flowing in (("commit_arrivals_flowing", True), ("commit_idle", False)):
            await self.commit(label, flowing)

    async def reset(self):
        """Two clocks of rst, then the clocks until each port is ready; on AXI4-Lite,
        register reads during the wipe, one after another."""
        self.trace = self.traces["reset"] = []
        self.ctx.set(self.cd.rst, 1)
        self.set("m_axis_verdict_tready", 1)
        await self.steps(2)
        self.ctx.set(self.cd.rst, 0)
        start = self.origins["reset"] = self.clock
        self.set("s_axis_arrival_tvalid", 1)
        first, reads = await self._until_ready(start)
        self.trace = self.traces["reset"]
        await self.steps(3)
        self.results["reset"] = {
            "arrival_ready_clocks": first["s_axis_arrival_tready"],
            "departure_ready_clocks": first.get("s_axis_departure_tready"),
            "first_arrival_accept_clock": first["s_axis_arrival_tready"],
        }
        if self.bus == "axi-lite":
            self.results["reset"] |= {
                "id_read": dict(zip(("arready_clock", "rvalid_clock", "value"), reads["id"])),
                "reads": {name: value for name, (_, _, value) in reads.items()},
                "defaults": {name: self.regs[name].reset for name in reads}}
        self.set("s_axis_arrival_tvalid", 0)
        self.trace = None
        while self.get("m_axis_verdict_tvalid") or not self.get("s_axis_arrival_tready"):
            await self.step()
        await self.steps(40)

    async def _until_ready(self, start):
        """Clocks from ``start`` until the arrival port is ready: ``({port: the clock it
        became ready}, {register: (arready clock, rvalid clock, value)})``, with what the
        registers hold out of reset (read before any arrival is accepted)."""
        to_read = ["id", "status", "mode", "arrivals"] if self.bus == "axi-lite" else []
        first, reads, issued = {}, {}, None
        while "s_axis_arrival_tready" not in first:
            for name in ("s_axis_arrival_tready", "s_axis_departure_tready"):
                if name not in first and self.get(name):
                    first[name] = self.clock - start
            if to_read and issued is None:
                self.set("s_axil_araddr", self.regs[to_read[0]].offset)
                self.set("s_axil_arvalid", 1)
                self.set("s_axil_rready", 1)
                if self.get("s_axil_arready"):
                    issued = self.clock - start
            elif to_read:
                self.set("s_axil_arvalid", 0)
                if self.get("s_axil_rvalid"):
                    reads[to_read.pop(0)] = (issued, self.clock - start,
                                             self.get("s_axil_rdata"))
                    issued = None
            # the wipe's thousands of clocks are not drawn
            drawn = self.clock - start <= 12 or self.get("s_axis_arrival_tready")
            self.trace = self.traces["reset"] if drawn else None
            await self.step()
        return first, reads

    async def handshake_latency(self):
        """Three arrivals (two back to back, then one after a gap) and a departure, the sink
        always ready. Latency = verdict clock - accept clock."""
        self.trace = self.traces["handshake"] = []
        base = self.clock
        accepted, verdicts = {}, {}
        for k in range(40):
            self.set("s_axis_arrival_tvalid", int(k in (0, 1, 4)))
            self.set("s_axis_departure_tvalid", int(k == 2))
            self.set("s_axis_departure_tdata", 64 if k == 2 else 0)
            if self.handshake("s_axis_arrival_"):
                accepted[self.seq_next] = k
            if self.handshake("m_axis_verdict_"):
                verdicts[self.verdict_seq()] = k
            await self.step()
        self.set("s_axis_departure_tvalid", 0)
        latencies = [verdicts[s] - accepted[s] for s in sorted(accepted)]
        self.results["latency"] = {"clocks": sorted(set(latencies)),
                                   "arrivals": len(latencies), "trace_start": base}

    async def throughput(self, sink_every, label, n_clocks=2000):
        """Arrivals offered and a departure in every clock for ``n_clocks``, the sink ready
        in every ``sink_every``-th clock."""
        self.trace = None
        acc = ver = dep = 0
        first_v = last_v = None
        seqs = []
        accept_clock, latency, seqs_valid = {}, set(), set()
        for k in range(n_clocks + 200):
            offering = k < n_clocks
            self.set("s_axis_arrival_tvalid", int(offering))
            self.set("s_axis_departure_tvalid", int(offering))
            self.set("s_axis_departure_tdata", 64)
            self.set("m_axis_verdict_tready", int(k % sink_every == 0))
            if self.handshake("s_axis_arrival_"):
                acc += 1
                accept_clock[self.seq_next] = k
            if self.handshake("s_axis_departure_"):
                dep += 1
            if self.get("m_axis_verdict_tvalid"):
                seq = self.verdict_seq()
                if seq in accept_clock and seq not in seqs_valid:
                    latency.add(k - accept_clock[seq])   # first clock valid
                    seqs_valid.add(seq)
            if self.handshake("m_axis_verdict_"):
                ver += 1
                seqs.append(self.verdict_seq())
                first_v = k if first_v is None else first_v
                last_v = k
            await self.step()
        self.set("m_axis_verdict_tready", 1)
        self.set("s_axis_departure_tvalid", 0)
        self.results.setdefault("throughput", {})[label] = {
            "clocks_offered": n_clocks, "arrivals_accepted": acc, "departures_accepted": dep,
            "verdicts": ver, "verdicts_in_order": all(b == a + 1 for a, b in zip(seqs, seqs[1:])),
            "verdict_clocks": (last_v - first_v + 1) if ver else 0,
            "latency_clocks": sorted(latency)}

    async def backpressure(self, stall=60):
        """Arrivals in every clock, the sink not ready for ``stall`` clocks."""
        await self.drain()
        self.trace = self.traces["backpressure"] = []
        acc_stalled = ver = acc = 0
        held_ok, seen = True, None
        tready_low_at = tready_high_at = None
        for k in range(stall + 60):
            self.set("s_axis_arrival_tvalid", int(k < stall + 40))
            self.set("m_axis_verdict_tready", int(k >= stall))
            if self.handshake("s_axis_arrival_"):
                acc += 1
                acc_stalled += k < stall
            elif (tready_low_at is None and self.get("s_axis_arrival_tvalid")
                  and not self.get("s_axis_arrival_tready")):
                tready_low_at = k
            if k >= stall and tready_high_at is None and self.get("s_axis_arrival_tready"):
                tready_high_at = k
            if k < stall and self.get("m_axis_verdict_tvalid"):
                now = self.get("m_axis_verdict_tdata")
                held_ok &= seen is None or now == seen
                seen = now
            if self.handshake("m_axis_verdict_"):
                ver += 1
            await self.step()
        self.trace = None
        while self.get("m_axis_verdict_tvalid"):
            ver += 1
            await self.step()
        self.results["backpressure"] = {
            "sink_stall_clocks": stall, "arrivals_accepted_while_stalled": acc_stalled,
            "arrival_tready_low_from_clock": tready_low_at,
            "arrival_tready_high_clocks_after_sink_ready": tready_high_at - stall,
            "verdict_held_while_stalled": held_ok,
            "arrivals_accepted": acc, "verdicts_delivered": ver}
        await self.steps(40)

    async def wishbone_accesses(self):
        """A read of id, a write of ecn and its read-back; the clocks to each ack."""
        self.trace = self.traces["bus"] = []
        acks = []
        for addr, data in ((self.regs["id"].offset, None), (self.regs["ecn"].offset, 1),
                           (self.regs["ecn"].offset, None)):
            self.set("wb_cyc", 1)
            self.set("wb_stb", 1)
            self.set("wb_we", int(data is not None))
            self.set("wb_adr", addr >> 2)
            self.set("wb_dat_w", data or 0)
            k = 0
            await self.step()
            while not self.get("wb_ack"):
                k += 1
                await self.step()
            acks.append((k + 1, self.get("wb_dat_r") if data is None else None))
            self.set("wb_cyc", 0)
            self.set("wb_stb", 0)
            await self.step()
        self.results["bus"] = {"wishbone_ack_clocks": sorted({a for a, _ in acks}),
                               "id": acks[0][1], "readback": acks[2][1]}

    async def axil_write(self, addr, value, strobe=0xF):
        """One AXI4-Lite write: the clocks (from its valids) of its ready and its bvalid."""
        self.set("s_axil_awaddr", addr)
        self.set("s_axil_wdata", value)
        self.set("s_axil_wstrb", strobe)
        self.set("s_axil_awvalid", 1)
        self.set("s_axil_wvalid", 1)
        self.set("s_axil_bready", 1)
        k, taken = 0, None
        while True:
            if taken is None and self.get("s_axil_awready") and self.get("s_axil_wready"):
                taken = k
                done = k
            if self.get("s_axil_bvalid"):
                resp, done = self.get("s_axil_bresp"), k
                await self.step()
                break
            await self.step()
            if taken is not None:
                self.set("s_axil_awvalid", 0)
                self.set("s_axil_wvalid", 0)
            k += 1
        self.set("s_axil_bready", 0)
        return {"ready_clock": taken, "bvalid_clock": done, "bresp": resp}

    async def axil_read(self, addr):
        """One AXI4-Lite read: the clocks (from its valid) of its ready and its rvalid."""
        self.set("s_axil_araddr", addr)
        self.set("s_axil_arvalid", 1)
        self.set("s_axil_rready", 1)
        k, taken = 0, None
        while True:
            if taken is None and self.get("s_axil_arready"):
                taken = k
            if self.get("s_axil_rvalid"):
                value, resp, done = self.get("s_axil_rdata"), self.get("s_axil_rresp"), k
                await self.step()
                break
            await self.step()
            if taken is not None:
                self.set("s_axil_arvalid", 0)
            k += 1
        self.set("s_axil_rready", 0)
        return {"ready_clock": taken, "rvalid_clock": done, "value": value, "rresp": resp}

    async def axil_accesses(self):
        """A write, its read-back, a partial write (refused) and a read-back."""
        ecn = self.regs["ecn"].offset
        self.trace = self.traces["bus"] = []
        w = await self.axil_write(ecn, 1)
        r = await self.axil_read(ecn)
        part = await self.axil_write(ecn, 0, strobe=0x3)
        after = await self.axil_read(ecn)
        self.results["bus"] = {"write": w, "read": r, "partial_write": part,
                               "after_partial_write": after["value"]}
        self.trace = None
        await self.steps(4)

    async def commit(self, label, flowing):
        """A write of ecn, then CONTROL.COMMIT with arrivals flowing (``flowing``) or none
        in flight: the arrival port's tready low from the commit until the new
        configuration applies; then STATUS and ecn read back."""
        from fpq.regmap import STATUS_BITS
        self.trace = self.traces.setdefault("commit", []) if flowing else None
        self.set("s_axis_arrival_tvalid", int(flowing))
        await self.steps(3)
        value = 0 if flowing else 1
        await self.axil_write(self.regs["ecn"].offset, value)
        commit_at, low_from, high_again = await self._commit_write(label)
        self.set("s_axil_bready", 0)
        await self.steps(4)
        self.set("s_axis_arrival_tvalid", 0)
        status = await self.axil_read(self.regs["status"].offset)
        readback = await self.axil_read(self.regs["ecn"].offset)
        self.results[label] = {
            "write_taken_clock": commit_at,
            "arrival_tready_low_clocks": high_again - low_from,
            "low_from_clocks_after_write": low_from - commit_at,
            "status_after": status["value"],
            "rejected": bool(status["value"] >> STATUS_BITS["COMMIT_REJECTED"] & 1),
            "readback": readback["value"], "written": value}
        self.trace = None
        await self.drain()
        await self.steps(40)

    async def _commit_write(self, label):
        """Write CONTROL.COMMIT; the clocks (from the write's valids) it is taken in, the
        arrival port goes low and it is high again."""
        from fpq.regmap import CONTROL_COMMIT
        self.set("s_axil_awaddr", self.regs["control"].offset)
        self.set("s_axil_wdata", CONTROL_COMMIT)
        self.set("s_axil_wstrb", 0xF)
        self.set("s_axil_awvalid", 1)
        self.set("s_axil_wvalid", 1)
        self.set("s_axil_bready", 1)
        k = 0
        commit_at = low_from = high_again = None
        while high_again is None and k < 400:
            if commit_at is None and self.get("s_axil_awready"):
                commit_at = k
            elif commit_at is not None:
                self.set("s_axil_awvalid", 0)
                self.set("s_axil_wvalid", 0)
                if low_from is None and not self.get("s_axis_arrival_tready"):
                    low_from = k
                elif low_from is not None and self.get("s_axis_arrival_tready"):
                    high_again = k
            await self.step()
            k += 1
        if high_again is None:
            raise RuntimeError(f"measure: {label}: the arrival port did not stall and "
                               f"recover within {k} clocks of the commit")
        return commit_at, low_from, high_again


# ---- WaveDrom ------------------------------------------------------------------------------
def wavedrom(trace, lanes, keep, title, origin=None):
    """A WaveDrom diagram (a JSON-able dict) of the clocks of ``trace`` (per-clock dicts of
    port values, each with its clock number ``_clock``) that lie in one of the ``keep``
    ranges ``[(first, last), ...]`` of clocks counted from ``origin`` (default: the
    trace's first clock), with a gap mark (``|``) where clocks are left out.

    ``lanes`` is a list of ``(label, key, kind)``: ``kind`` "bit" draws the port ``key``'s
    level; otherwise ``kind`` is a function of the clock's dict that returns a label or None
    (``x``, no data) and the lane draws data."""
    origin = trace[0]["_clock"] if origin is None else origin
    rows = [row for row in trace
            if any(a <= row["_clock"] - origin <= b for a, b in keep)]
    signal = [{"name": "clk", "wave": ""}, {"name": "clock", "wave": "", "data": []}]
    for label, key, kind in lanes:
        signal.append({"name": label, "wave": ""} | ({} if kind == "bit" else {"data": []}))
    previous = [None] * len(signal)
    last_clock = None
    for row in rows:
        c = row["_clock"]
        gap = last_clock is not None and c != last_clock + 1
        values = [("clk",), ("n", str(c - origin))]
        for label, key, kind in lanes:
            if kind == "bit":
                values.append(("b", str(int(bool(row[key])))))
            else:
                v = kind(row)
                values.append(("x",) if v is None else ("d", v))
        for i, value in enumerate(values):
            lane = signal[i]
            if value[0] == "clk":
                ch = "p" if last_clock is None else ("|" if gap else ".")
            elif value[0] == "n":
                ch, lane["data"] = "=", lane["data"] + [value[1]]
            elif value == previous[i]:
                ch = "|" if gap else "."
            elif value[0] == "b":
                ch = value[1]
            elif value[0] == "x":
                ch = "x"
            else:
                ch = "="
                lane["data"].append(value[1])
            lane["wave"] += ch
            previous[i] = value
        last_clock = c
    return {"signal": signal, "head": {"text": title}}


def _wavedrom_json(diagram):
    """``diagram`` as JSON, one lane per line."""
    lanes = ",\n".join("  " + json.dumps(lane) for lane in diagram["signal"])
    return "{\"signal\": [\n" + lanes + "\n],\n \"head\": " + json.dumps(diagram["head"]) + "}"


def _stream_lanes():
    """The AXI-Stream lanes of the diagrams: arrival valid, ready and the seq its verdict
    will carry; departure valid; verdict valid, ready and its seq."""
    from .layouts import VERDICT
    seq = VERDICT["seq"]

    def arrival_label(row):
        # the seq its verdict will carry, for an arrival taken in this clock
        if not row["s_axis_arrival_tvalid"]:
            return None
        return f"#{row['_seq']}"

    def verdict_label(row):
        if not row["m_axis_verdict_tvalid"]:
            return None
        return f"#{(row['m_axis_verdict_tdata'] >> seq.offset) & 0xFFFFFFFF}"

    return [("s_axis_arrival_tvalid", "s_axis_arrival_tvalid", "bit"),
            ("s_axis_arrival_tready", "s_axis_arrival_tready", "bit"),
            ("s_axis_arrival_tdata", None, arrival_label),
            ("s_axis_departure_tvalid", "s_axis_departure_tvalid", "bit"),
            ("m_axis_verdict_tvalid", "m_axis_verdict_tvalid", "bit"),
            ("m_axis_verdict_tready", "m_axis_verdict_tready", "bit"),
            ("m_axis_verdict_tdata (seq)", None, verdict_label)]


def _rdata(row):
    return hex(row["s_axil_rdata"]) if row["s_axil_rvalid"] else None


def _axil_lanes(build):
    """The AXI4-Lite lanes of the diagrams, ``(write lanes, read lanes)``; addresses by
    register name."""
    from fpq.regmap import registers
    names = {r.offset: r.name for r in registers(build)}

    def address(channel):
        def label(row):
            addr = row[f"s_axil_{channel}addr"]
            return names.get(addr, hex(addr)) if row[f"s_axil_{channel}valid"] else None
        return label

    def wdata(row):
        return hex(row["s_axil_wdata"]) if row["s_axil_wvalid"] else None

    def bresp(row):
        return _RESP[row["s_axil_bresp"]] if row["s_axil_bvalid"] else None

    write = [("s_axil_awvalid", "s_axil_awvalid", "bit"),
             ("s_axil_awready", "s_axil_awready", "bit"),
             ("s_axil_awaddr", None, address("aw")),
             ("s_axil_wvalid", "s_axil_wvalid", "bit"),
             ("s_axil_wdata", None, wdata),
             ("s_axil_bvalid", "s_axil_bvalid", "bit"),
             ("s_axil_bresp", None, bresp)]
    read = [("s_axil_arvalid", "s_axil_arvalid", "bit"),
            ("s_axil_arready", "s_axil_arready", "bit"),
            ("s_axil_araddr", None, address("ar")),
            ("s_axil_rvalid", "s_axil_rvalid", "bit"),
            ("s_axil_rdata", None, _rdata)]
    return write, read


def _reset_diagram(measured):
    reset = measured["results"]["reset"]
    ready = reset["arrival_ready_clocks"]
    # the first clocks up to the ID read's data (when there is a bus), then the port's ready
    first = max(5, (reset.get("id_read") or {}).get("rvalid_clock") or 0)
    lanes = [("rst", "rst", "bit"),
             ("s_axis_departure_tready", "s_axis_departure_tready", "bit"),
             ("s_axis_arrival_tvalid", "s_axis_arrival_tvalid", "bit"),
             ("s_axis_arrival_tready", "s_axis_arrival_tready", "bit")]
    if "s_axil_arvalid" in measured["traces"]["reset"][0]:
        lanes += [("s_axil_arvalid", "s_axil_arvalid", "bit"),
                  ("s_axil_arready", "s_axil_arready", "bit"),
                  ("s_axil_rvalid", "s_axil_rvalid", "bit"),
                  ("s_axil_rdata", None, _rdata)]
    return wavedrom(
        measured["traces"]["reset"], lanes, [(-2, first), (ready - 1, ready + 3)],
        f"Reset: clock 0 is the first with rst low; the arrival port is ready from clock "
        f"{ready} (the flow vector wiped), departures and the register bus at once",
        origin=measured["origins"]["reset"])


def _backpressure_diagram(measured, stream, lat):
    bp = measured["results"]["backpressure"]
    low = bp["arrival_tready_low_from_clock"]
    stall = bp["sink_stall_clocks"]
    return wavedrom(
        measured["traces"]["backpressure"], stream[:3] + stream[4:],
        [(0, 3), (lat - 1, lat + 1), (low - 2, low + 2), (stall - 2, stall + bp[
            "arrival_tready_high_clocks_after_sink_ready"] + 2)],
        f"Back-pressure: the sink not ready in clocks 0-{stall - 1}; the arrival port takes "
        f"{bp['arrivals_accepted_while_stalled']} arrivals, then is not ready until the "
        f"verdicts drain")


def _commit_diagram(measured, write_lanes, stream):
    t = measured["traces"]["commit"]
    c = measured["results"]["commit_arrivals_flowing"]
    # the trace: 3 clocks of arrivals, the data write, then the commit's write
    starts = [k for k, row in enumerate(t) if row["s_axil_awvalid"] and (
        k == 0 or not t[k - 1]["s_axil_awvalid"])]
    commit = starts[1] if len(starts) > 1 else starts[0]
    low = commit + c["low_from_clocks_after_write"]
    high = low + c["arrival_tready_low_clocks"]
    return wavedrom(
        t, write_lanes + stream[:3] + stream[4:5] + stream[6:],
        [(0, low + 2), (high - 2, high + 2)],
        f"Register write and commit (AXI4-Lite): ecn written, then CONTROL.COMMIT; the "
        f"arrival port is not ready for {c['arrival_tready_low_clocks']} clocks while "
        f"the pipeline drains and the configuration applies")


def _diagrams(measured):
    """The WaveDrom diagrams of ``measure``'s traces, by scenario (the commit and the bus
    accesses of an AXI4-Lite run only)."""
    stream = _stream_lanes()
    lat = measured["results"]["latency"]["clocks"][0]
    out = {"reset": _reset_diagram(measured)}
    out["handshake"] = wavedrom(
        measured["traces"]["handshake"], stream, [(0, 6), (lat - 1, lat + 6)],
        f"Arrival, departure and verdict: the verdict of the arrival accepted in clock c is "
        f"valid in clock c + {lat} (#k: the arrival that gets seq k, and its verdict)")
    out["backpressure"] = _backpressure_diagram(measured, stream, lat)
    if "commit" in measured["traces"]:
        write_lanes, read_lanes = _axil_lanes(measured["build"])
        out["commit"] = _commit_diagram(measured, write_lanes, stream)
        t = measured["traces"]["bus"]
        out["bus"] = wavedrom(t, write_lanes + read_lanes, [(0, len(t) - 1)],
                              "AXI4-Lite: a write of ecn, its read-back, a write with wstrb "
                              "4'h3 (SLVERR, nothing written), a read-back")
    return out


# ---- the sections --------------------------------------------------------------------------
def _measure_command(build):
    from fpq import Build
    opts = "" if build == Build() else " (a build other than the default)"
    return f"`fpq datasheet` (`fpq_hdl.datasheet.measure`: Amaranth simulation of FPQCore{opts})"


def _span(values):
    return f"{min(values)}" if min(values) == max(values) else \
        f"{min(values)} to {max(values)}"


#: AXI response codes by value.
_RESP = ("OKAY", "EXOKAY", "SLVERR", "DECERR")


def _stream_rows(r):
    """The Timing table's rows of the streams: latency, throughput, back-pressure."""
    lat, bp = r["latency"], r["backpressure"]
    t1, t2 = r["throughput"]["sink_always_ready"], r["throughput"]["sink_ready_half"]
    return [
        ("arrival to verdict latency (sink ready)",
         f"{', '.join(map(str, lat['clocks']))} clocks (each of {lat['arrivals']} arrivals; "
         f"the verdict of the arrival accepted in clock c is valid in c + "
         f"{lat['clocks'][0]})"),
        ("throughput, arrival and departure in every clock, sink ready",
         f"{t1['arrivals_accepted']} arrivals and {t1['departures_accepted']} departures "
         f"accepted in {t1['clocks_offered']} clocks; {t1['verdicts']} verdicts in "
         f"{t1['verdict_clocks']} clocks, in order: "
         f"{'yes' if t1['verdicts_in_order'] else 'NO'}; latency of each: "
         f"{', '.join(map(str, t1['latency_clocks']))} clocks"),
        ("throughput, sink ready every other clock",
         f"{t2['arrivals_accepted']} arrivals in {t2['clocks_offered']} clocks; "
         f"{t2['verdicts']} verdicts, in order: {'yes' if t2['verdicts_in_order'] else 'NO'}; "
         f"from accept to valid: {_span(t2['latency_clocks'])} clocks (the stalls of the "
         f"sink added)"),
        ("back-pressure: arrivals taken while the sink stalls",
         f"{bp['arrivals_accepted_while_stalled']} (sink stalled {bp['sink_stall_clocks']} "
         f"clocks; `s_axis_arrival_tready` low from clock "
         f"{bp['arrival_tready_low_from_clock']})"),
        ("back-pressure: arrival port ready again after the sink is ready",
         f"{bp['arrival_tready_high_clocks_after_sink_ready']} clocks"),
        ("back-pressure: verdicts lost or duplicated",
         f"{bp['arrivals_accepted'] - bp['verdicts_delivered']} "
         f"({bp['arrivals_accepted']} accepted, {bp['verdicts_delivered']} delivered; "
         f"verdict and tdata held while stalled: "
         f"{'yes' if bp['verdict_held_while_stalled'] else 'NO'})"),
    ]


def _commit_row(what, c):
    return (what, f"{c['arrival_tready_low_clocks']} clocks, from "
                  f"{c['low_from_clocks_after_write']} clock(s) after the CONTROL write is "
                  f"taken (STATUS after: {c['status_after']:#x}, ecn reads {c['readback']})")


def _bus_rows(r, wb):
    """The Timing table's rows of the register bus: AXI4-Lite accesses, Wishbone's ack and
    the commits."""
    bus = r["bus"]
    return [
        ("AXI4-Lite write: `awready`/`wready`, `bvalid`",
         f"clock {bus['write']['ready_clock']} and clock {bus['write']['bvalid_clock']} after "
         f"`awvalid`+`wvalid` rise (bresp {_RESP[bus['write']['bresp']]})"),
        ("AXI4-Lite read: `arready`, `rvalid`",
         f"clock {bus['read']['ready_clock']} and clock {bus['read']['rvalid_clock']} after "
         f"`arvalid` rises (read-back {bus['read']['value']}, rresp "
         f"{_RESP[bus['read']['rresp']]})"),
        ("AXI4-Lite write with `wstrb` 4'h3",
         f"bresp {_RESP[bus['partial_write']['bresp']]}; the register still reads "
         f"{bus['after_partial_write']}"),
        ("Wishbone access: `ack`",
         f"{', '.join(map(str, wb['results']['bus']['wishbone_ack_clocks']))} clock(s) after "
         f"the strobe (ID read {wb['results']['bus']['id']:#010x})"),
        _commit_row("commit with arrivals flowing: arrival port not ready",
                    r["commit_arrivals_flowing"]),
        _commit_row("commit with no arrival in flight: arrival port not ready",
                    r["commit_idle"]),
    ]


def _reset_rows(rs, b):
    """The Reset table: when each port is ready, and what registers read during the
    wipe."""
    from fpq.regmap import STATUS_BITS
    idr = rs.get("id_read", {})
    out = [f"| `s_axis_departure_tready` high | clock {rs['departure_ready_clocks']} |",
           f"| `s_axis_arrival_tready` high (the flow vector wiped) | clock "
           f"{rs['arrival_ready_clocks']} (vec_bits {b.vec_bits}) |",
           f"| AXI4-Lite read of `id` issued in clock 0 | `arready` clock "
           f"{idr.get('arready_clock')}, `rvalid` clock {idr.get('rvalid_clock')}, value "
           f"{idr.get('value', 0):#010x} |"]
    for name, value in rs.get("reads", {}).items():
        if name == "status":
            bits = [b for b, i in STATUS_BITS.items() if value >> i & 1]
            out.append(f"| `status` read during the wipe | {value:#x} "
                       f"({', '.join(bits) if bits else 'no bit'} set) |")
        elif name != "id":
            out.append(f"| `{name}` read during the wipe | {value:#x} (the map's reset value: "
                       f"{rs['defaults'][name]:#x}) |")
    return out


def _timing_markdown(m, wb):
    """The Timing section: ``measure``'s AXI4-Lite run ``m`` and Wishbone run ``wb``."""
    b = m["build"]
    rows = _stream_rows(m["results"]) + _bus_rows(m["results"], wb)
    out = [f"Build: vec_bits {b.vec_bits}, table_depth {b.table_depth}, avg_delay "
           f"{b.avg_delay}, `--bus axi-lite` (the Wishbone row: `--bus wishbone`). Measured "
           f"by {_measure_command(b)}; clocks of `clk`.", "",
           "| what | measured |", "|---|---|"]
    out += [f"| {a} | {v} |" for a, v in rows]
    out += ["", "Reset (two clocks of `rst`, then clocks counted from the first with `rst` "
                "low):", "",
            "| what | measured |", "|---|---|", *_reset_rows(m["results"]["reset"], b)]
    return out


#: Synthesis records of whole designs (``results.component``) the datasheet lists, and what
#: each is.
_WHOLE_DESIGNS = {"queue_manager": "the queue manager (no register file)",
                  "axi_core": "the core's top (`FPQCore`) with the project's Lattice "
                              "primitives"}


def _vendor_markdown(recs):
    """The exported file in each family's plain flow (``vendor-flow`` records ``[(name,
    record)]``): what an integrator gets."""
    from fpq.benchmarks import VENDOR_HEAD, vendor_rows
    if not recs:
        return ["The exported core has no plain-flow record yet (`python -m "
                "fpq_hdl.vendor_flow --family ecp5 --seeds 1,2,3,4,5 --record ...`).", ""]
    return ["The exported file (`fpq verilog`, the bus and `--target` of each row) in the "
            "family's plain flow: Yosys's default `synth_<family>` script, nextpnr out of "
            "context where the family allows it, no project script in between "
            "(`python -m fpq_hdl.vendor_flow`):", "", *VENDOR_HEAD, *vendor_rows(recs), ""]


def _synth_markdown(synth):
    def mhz(v):
        return "not routed" if v is None else f"{v:.1f}"
    out = ["Synthesised alone (`python -m fpq_hdl.synth`: the design's inputs from a shift "
           "register, its outputs XOR-reduced, so that its ports need no pins):", "",
           "| record | design | device | speed | vec_bits / table_depth | Fmax min / median "
           "/ max over seeds (MHz) | seeds routed | LUT4 | FF | LUT RAM (RAMW) | DP16KD | "
           "MULT18X18D |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in synth:
        res = r["results"]
        f, u = res.get("fmax_mhz") or {}, res.get("utilization") or {}
        out.append(f"| `{n}` | {_WHOLE_DESIGNS[res['component']]} | "
                   f"{res.get('device', '-')} | {res['speed']} | {res['vec_bits']} "
                   f"/ {res['table_depth']} | {mhz(f.get('min'))} / {mhz(f.get('median'))} "
                   f"/ {mhz(f.get('max'))} | {f.get('routed', '-')} of {f.get('runs', '-')} "
                   f"| {u.get('TRELLIS_COMB', '-')} | {u.get('TRELLIS_FF', '-')} | "
                   f"{u.get('TRELLIS_RAMW', '-')} | {u.get('DP16KD', '-')} | "
                   f"{u.get('MULT18X18D', '-')} |")
    return out


def _boards_markdown(boards):
    from fpq.benchmarks import board_logic, board_used
    out = ["", "Whole board designs (the queue manager, its register file behind a UART "
               "bridge, a traffic generator and the self-test logic; `fpq board build`):", "",
           "| record | board (FPGA) | vec_bits / table_depth | fixed fields | clock (MHz) | "
           "routed Fmax (MHz) | met | logic | FF | block RAM | DSP |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    fpga = {"ulx3s": "ECP5 LFE5U-85F-6", "icebreaker": "iCE40 UP5K"}
    for n, r in boards:
        res = r["results"]
        b = res.get("build", {})
        fixed = len(b.get("fixed") or {})
        fmax = res.get("fmax_mhz")
        out.append(f"| `{n}` | {res['board']} ({fpga.get(res['board'], '?')}) | "
                   f"{b.get('vec_bits', '-')} / {b.get('table_depth', '-')} | "
                   f"{fixed or 'none'} | {res['clock_mhz']:g} | "
                   f"{'not routed' if fmax is None else f'{fmax:.1f}'} | "
                   f"{'yes' if res.get('met') else 'no'} | {board_logic(res)} | "
                   f"{board_used(res, 'FF')} | {board_used(res, 'BRAM')} | "
                   f"{board_used(res, 'DSP')} |")
    return out


def _resources_markdown(records):
    synth = sorted((n, r) for n, r in records.items() if r["kind"] == "synth"
                   and r["results"].get("component") in _WHOLE_DESIGNS)
    boards = sorted((n, r) for n, r in records.items() if r["kind"] == "board")
    from fpq.benchmarks import vendor_records
    vendor = vendor_records(records)
    out = _vendor_markdown(vendor) + _synth_markdown(synth) + _boards_markdown(boards)
    # the commit each was measured at is its record's to say, not repeated here
    out += ["", "Records (`docs/benchmarks/NAME.json`, with the commit each was measured at) "
                "and the commands that made them (run again to measure again):", ""]
    for n, r in vendor + synth + boards:
        out.append(f"- [`{n}`](benchmarks/{n}.json) ({r['date']}): `{r['command']}`")
    return out


def _registers_markdown(build):
    from fpq.regmap import registers, tables, ID_VALUE, CONTROL_COMMIT, \
        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT
    from .registers import ADDR_BITS
    regs = registers(build)
    kinds = {}
    for r in regs:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    byname = {r.name: r for r in regs}
    out = [f"{len(regs)} registers ({', '.join(f'{v} {k}' for k, v in kinds.items())}) and "
           f"{len(tables(build))} table(s) in a {ADDR_BITS}-bit byte address space, 32-bit "
           f"words; wide registers take consecutive words, least significant first "
           f"(`fpq.regmap.registers`, the same declaration `fpq verilog`, the C header and the "
           f"SystemVerilog package are made from). The full map: "
           f"[REGISTERS.md](REGISTERS.md) (`fpq regmap`).", "",
           "| register | address | use |", "|---|---|---|",
           f"| `id` | {byname['id'].offset:#07x} | reads {ID_VALUE:#010x} ('FPQ1') |",
           f"| `control` | {byname['control'].offset:#07x} | write {CONTROL_COMMIT:#x}: "
           f"COMMIT (apply the shadows); {CONTROL_CLEAR_ERRORS:#x}: CLEAR_ERRORS |",
           f"| `status` | {byname['status'].offset:#07x} | bits: "
           + ", ".join(f"{n} {b}" for n, b in STATUS_BITS.items())
           + f", REJECT_INDEX from bit {STATUS_REJECT_INDEX_SHIFT} |"]
    first_cfg = min(r.offset for r in regs if r.kind == "config")
    last_cfg = max(r.offset for r in regs if r.kind == "config")
    out.append(f"| configuration shadows | {first_cfg:#07x}-{last_cfg:#07x} | "
               f"{kinds.get('config', 0)} registers, applied together by COMMIT |")
    counters = [r for r in regs if r.kind == "counter"]
    out.append(f"| counters | {counters[0].offset:#07x}-{counters[-1].offset + 4:#07x} | "
               f"{len(counters)} x 64 bits; a write clears |")
    tele = [r for r in regs if r.kind == "telemetry"]
    out.append(f"| telemetry | {tele[0].offset:#07x}-{tele[-1].offset:#07x} | "
               + ", ".join(f"`{r.name}`" for r in tele) + " |")
    for t in tables(build):
        out.append(f"| `{t.name}` | {t.offset:#07x} | {t.depth} x {t.width} bits ({t.fmt}), "
                   f"write-only, double-buffered: a commit swaps it in |")
    return out


def _payload_markdown():
    from fpq.queue_manager import ENQUEUE, MARK, DROP_EARLY, DROP_FORCED
    from .layouts import ARRIVAL, DEPARTURE, VERDICT
    from .axi_core import tdata_width
    actions = ", ".join(f"{v} {name}" for v, name in ((ENQUEUE, "enqueue"), (MARK, "mark"),
                                                        (DROP_EARLY, "early drop"),
                                                        (DROP_FORCED, "forced drop")))
    out = [f"`action` (and `m_axis_verdict_tuser`): {actions} (`fpq.queue_manager`).", "",
           "| stream | tdata bits | field | bits of tdata |", "|---|---|---|---|"]
    for stream, layout in (("s_axis_arrival", ARRIVAL), ("s_axis_departure", DEPARTURE),
                           ("m_axis_verdict", VERDICT)):
        for fname, f in layout:
            out.append(f"| `{stream}` | {tdata_width(layout)} | `{fname}` | "
                       f"[{f.offset + f.width - 1}:{f.offset}] |")
        if tdata_width(layout) > layout.size:
            out.append(f"| `{stream}` | {tdata_width(layout)} | pad (0 out, ignored in) | "
                       f"[{tdata_width(layout) - 1}:{layout.size}] |")
    return out


def sections(records_dir, build=None, progress=None):
    """The generated sections, ``{name: markdown}`` (each ending with a newline), for
    ``build`` (default ``fpq.Build()``) and the records in ``records_dir``."""
    from fpq import Build
    from fpq.records import read_records
    from .axi_core import core_verilog
    build = Build() if build is None else build
    say = progress or (lambda msg: None)
    ports = {}
    for bus in ("axi-lite", "wishbone"):
        say(f"exporting the core (--bus {bus})")
        text, _ = core_verilog(build, bus)
        ports[bus] = parse_ports(text, "fpq_core")
    say("simulating the core (AXI4-Lite)")
    measured = measure(build, "axi-lite")
    say("simulating the core (Wishbone)")
    wb = measure(build, "wishbone")
    diagrams = _diagrams(measured)
    waves = []
    for name, title in (("reset", "Reset"),
                        ("handshake", "Arrival / verdict handshake"),
                        ("backpressure", "Back-pressure"),
                        ("commit", "Register write and commit"),
                        ("bus", "AXI4-Lite write and read")):
        waves += [f"#### {title}", "", "```wavedrom", _wavedrom_json(diagrams[name]), "```",
                  ""]
    cmd = "`fpq datasheet --write` (from `fpq_hdl.datasheet.measure`'s simulation)"
    waves.append(f"Drawn from the simulation the Timing table comes from ({cmd}); `clock` "
                 f"numbers the clocks of each scenario, `|` marks clocks left out.")
    out = {
        "ports": _ports_markdown(ports) + [
            "", f"From the Verilog `fpq verilog --bus axi-lite` and `--bus wishbone` write "
                f"(vec_bits {build.vec_bits}, table_depth {build.table_depth}; the widths "
                f"do not depend on the build), parsed by `fpq datasheet`."],
        "payload": _payload_markdown() + [
            "", "From `fpq_hdl.layouts` (the structs of `build/fpq_core_pkg.sv` are made "
                "from the same layouts)."],
        "timing": _timing_markdown(measured, wb),
        "waves": waves,
        "registers": _registers_markdown(build),
        "resources": _resources_markdown(read_records(records_dir)),
        "verilog-template": ["```verilog", verilog_template(ports["axi-lite"]).rstrip("\n"),
                             "```", "", "Generated from the ports of `fpq verilog`'s "
                             "output by `fpq datasheet`; "
                             "sw/tests/test_datasheet.py lints it with Verilator "
                             "against the exported core."],
    }
    return {name: "\n".join(lines) + "\n" for name, lines in out.items()}


def check_markers(text, names=SECTIONS):
    """Raise ``ValueError`` naming the first of the sections ``names`` whose markers in
    ``text`` are missing, repeated or out of order."""
    for name in names:
        begin, end = markers(f"datasheet {name}")
        try:
            bounds = section_bounds(text, begin, end)
        except ValueError:
            bounds = None
        if bounds is None:
            raise ValueError(f"section {name!r}: needs one {begin} and one {end} after it")


def replace_sections(text, generated):
    """``text`` with the lines between each section's markers replaced by ``generated``'s.
    Raises ``ValueError`` naming a section whose markers are missing or out of order."""
    check_markers(text, generated)
    for name, body in generated.items():
        text = replace_section(text, body, *markers(f"datasheet {name}"))
    return text


def main(args):
    import sys
    from fpq.atomic import check_output_path, write_text
    if not os.path.isdir(args.records):
        raise ValueError(f"--records: {args.records!r} is not a folder of measurement "
                         f"records")
    if args.write:
        check_output_path(args.write, "--write")
        try:
            with open(args.write) as f:
                old = f.read()
        except OSError as exc:
            raise ValueError(f"--write: cannot read {args.write!r}: {exc.strerror} (the "
                             f"datasheet's prose and markers must be there)") from None
        try:
            check_markers(old)
        except ValueError as exc:
            raise ValueError(f"--write: {args.write}: {exc}") from None
    generated = sections(args.records, progress=lambda m: print(m, file=sys.stderr))
    if args.write:
        write_text(args.write, replace_sections(old, generated))
        print(f"wrote {args.write} ({len(generated)} sections)")
    else:
        for name in SECTIONS:
            print(begin_marker(name))
            print(generated[name], end="")
            print(end_marker(name))
    return 0


def add_arguments(p):
    from fpq.benchmarks import report_arguments
    report_arguments(p, "DATASHEET.md", "the generated sections")
