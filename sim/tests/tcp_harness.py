"""One sender and one receiver joined by a fixed-delay channel without serialisation, so that
hand-worked sequences have round numbers: every round trip takes exactly 2 * delay. A test
chooses which transmissions of which packets the channel drops, and which it marks CE (ECN)."""

from collections import Counter

from fpq_sim.engine import Simulator
from fpq_sim.tcp import TcpParams, Receiver, Counters
from fpq_sim.tcp_sack import sender_class


class Pair:
    def __init__(self, variant="tahoe", drop=(), drop_all=False, delay=0.05, boot_time=0.0,
                 rng=None, mark=(), **params):
        self.sim = sim = Simulator()
        self.counters = Counters()
        self.log = []
        self.params = TcpParams(variant=variant, **params)
        self.drop = set(drop)   # {(seq, n)}: drop the n-th transmission (1-based) of the first
        #                         transfer (epoch 1; a bulk transfer has only that one)
        self.drop_all = drop_all
        self.mark = set(mark)   # {(seq, n)}: mark the n-th transmission of the first transfer
        self.tx = Counter()
        self.dropped = 0
        self.sends = []                 # (time, seq, n-th transmission)
        self.acks = []                  # (time, ack, cwnd + dupwnd, ssthresh) after the update
        self.transfers = []
        self.delay = delay

        def send_data(pkt):
            self.tx[(pkt.epoch, pkt.seq)] += 1
            n = self.tx[(pkt.epoch, pkt.seq)]
            self.sends.append((round(sim.now, 9), pkt.seq, n))
            if self.drop_all or (pkt.epoch == 1 and (pkt.seq, n) in self.drop):
                self.dropped += 1
                return
            if pkt.epoch == 1 and (pkt.seq, n) in self.mark:
                pkt.ce = True
            sim.at(sim.now + delay, self.receiver.on_data, pkt)

        def send_ack(pkt):
            sim.at(sim.now + delay, self._on_ack, pkt)

        self.sender = sender_class(variant)(sim, self.params, 0, send_data, self.counters,
                             lambda s, a, b: self.transfers.append((a, b)), 0, self.log,
                             rng=rng, boot_time=boot_time)
        self.receiver = Receiver(sim, self.params, 0, send_ack, self.counters, self.log)
        self.sender.receiver, self.receiver.sender = self.receiver, self.sender

    def _on_ack(self, pkt):
        self.sender.on_ack(pkt)
        s = self.sender
        self.acks.append((round(self.sim.now, 9), pkt.ack, s.cwnd + s.dupwnd, s.ssthresh))

    def run(self, until):
        if not self.sender.active:
            self.sim.at(0.0, self.sender.start, None)
        self.sim.run(until)
        return self

    def sends_at(self, t):
        return [(seq, n) for (when, seq, n) in self.sends if abs(when - t) < 1e-6]

    def events(self, what):
        return [(round(t, 9), x) for (t, w, x) in self.log if w == what]
