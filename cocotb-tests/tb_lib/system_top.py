"""The register file and the queue manager wired together (as a board top would): the
memory-mapped bus and the three streams are the ports. hdl/ has no such top yet; this one
connects every register-file port to the queue-manager port of the same name, and brings the
register file's outputs the bench needs to see as monitor ports: ``restart`` starts the queue
manager's time base (clock 0 is the clock after it); a commit applies in the clock in which
``config`` or ``rate_bank`` change (the golden model's ``configure`` at that clock); ``hold``
and the queue manager's ``busy`` say why the arrival port refuses an arrival."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out, flipped

from fpq_hdl.queue_manager import QueueManager
from fpq_hdl.registers import RegisterFile

__all__ = ["System"]


class System(wiring.Component):
    def __init__(self, build, queue_manager=None):
        self.build = build
        self.rf = RegisterFile(build)
        self.qm = queue_manager if queue_manager is not None else QueueManager(build)
        members = {"bus": self.rf.signature.members["bus"]}
        for name in ("arrivals", "departures", "verdicts"):
            members[name] = self.qm.signature.members[name]
        members.update({"mon_hold": Out(1), "mon_restart": Out(1), "mon_busy": Out(1),
                        "mon_config": Out(self.rf.signature.members["config"].shape),
                        "mon_rate_bank": Out(1)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.registers = rf = self.rf
        m.submodules.queue_manager = qm = self.qm
        wiring.connect(m, flipped(self.bus), rf.bus)
        for name in ("arrivals", "departures"):
            wiring.connect(m, flipped(getattr(self, name)), getattr(qm, name))
        wiring.connect(m, qm.verdicts, flipped(self.verdicts))
        for name, member in rf.signature.members.items():
            if name == "bus":
                continue
            a, b = getattr(rf, name), getattr(qm, name)
            m.d.comb += (b.eq(a) if member.flow == Out else a.eq(b))
        m.d.comb += [self.mon_hold.eq(rf.hold), self.mon_restart.eq(rf.restart),
                     self.mon_busy.eq(qm.busy), self.mon_config.eq(rf.config),
                     self.mon_rate_bank.eq(rf.rate_bank)]
        return m
