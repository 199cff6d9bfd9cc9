"""Driver of the register file's bus (``fpq_hdl.registers.BusSignature``): 32-bit words at
byte addresses; a write is ``w_en`` for one clock, a read is ``r_en`` for one clock with
``r_data`` valid on the next. Accesses wait in a queue and go out one per clock, with seeded
random idle clocks between them, from the bench's clock loop (``drive``/``sample``), so bus
traffic and streams run in the same clocks. A read's callback gets the word and the clock of
its ``r_en`` (``clock()`` is the bench's clock whose inputs are being set), the clock whose
register values the word holds."""

from collections import deque

__all__ = ["RegisterBus"]


class RegisterBus:
    def __init__(self, dut, pattern, clock):
        self.addr, self.w_en, self.w_data = dut.bus__addr, dut.bus__w_en, dut.bus__w_data
        self.r_en, self.r_data = dut.bus__r_en, dut.bus__r_data
        self.pattern = pattern
        self.clock = clock
        self.queue = deque()
        self.current = None         # the access driven this clock
        self.reading = None         # callback waiting for r_data (the clock after r_en)
        self.accesses = 0
        self.w_en.value = 0
        self.r_en.value = 0
        self._en = False

    @property
    def idle(self):
        return not self.queue and self.current is None and self.reading is None

    def write(self, addr, data):
        self.queue.append(("w", addr, data & 0xFFFFFFFF))

    def read(self, addr, callback):
        self.queue.append(("r", addr, callback))

    def drive(self):
        if self.queue and self.pattern.next():
            op = self.current = self.queue.popleft()
            self.addr.value = op[1]
            if op[0] == "w":
                self.w_data.value = op[2]
                self.w_en.value = 1
                self.r_en.value = 0
            else:
                self.r_en.value = 1
                self.w_en.value = 0
            self._en = True
        else:
            self.current = None
            if self._en:
                self.w_en.value = 0
                self.r_en.value = 0
                self._en = False

    def sample(self):
        if self.reading is not None:
            (cb, at), self.reading = self.reading, None
            cb(self.r_data.value.to_unsigned(), at)
        if self.current is not None:
            self.accesses += 1
            if self.current[0] == "r":
                self.reading = (self.current[2], self.clock() - 1)
            self.current = None
