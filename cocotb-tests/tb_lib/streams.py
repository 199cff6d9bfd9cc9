"""Stream helpers for cocotb: the verdict sink and seeded on/off patterns.

The rule of ``amaranth.lib.stream``: a transfer happens at a rising edge where ``valid`` and
``ready`` are both high; a source never waits for ``ready`` before raising ``valid`` and holds
its payload until the transfer (the queue manager's bench drives its sources itself:
``blocks.queue_manager``). :class:`StreamSink` does no awaiting of its own: the bench's clock
loop (``tb_lib.bench``) calls ``drive()`` before an edge and ``sample()`` right after it (cocotb reads the values of the
cycle that just ended), so a bench pays one ``await`` per clock for all its ports together,
and a signal is written only when its value changes.

Random idle cycles (``gap``) and random back-pressure (``busy``) come from seeded
:class:`Pattern` objects, so every failing run replays exactly.
"""

import random

__all__ = ["Pattern", "StreamSink"]


class Pattern:
    """A seeded on/off pattern: ``next()`` is True with probability ``p_on``; bursts of
    ``burst`` cycles (geometric lengths) when ``burst > 1``, so long stalls happen too."""

    def __init__(self, p_on, seed, burst=1):
        self.p_on = float(p_on)
        self.rnd = random.Random(seed)
        self.burst = burst
        self._left = 0
        self._state = True

    def next(self):
        if self.p_on >= 1.0:
            return True
        if self.burst <= 1:
            return self.rnd.random() < self.p_on
        if self._left <= 0:
            self._state = self.rnd.random() < self.p_on
            self._left = 1 + int(self.rnd.expovariate(1.0 / self.burst))
        self._left -= 1
        return self._state


class StreamSink:
    """Drives ``ready`` of an output stream from a :class:`Pattern` (back-pressure) and
    collects the transferred payloads as integers."""

    def __init__(self, valid, ready, payload, pattern):
        self.valid, self.ready, self.payload = valid, ready, payload
        self.pattern = pattern
        self.words = []
        self._ready_on = None
        self.backpressure = 0          # cycles valid was high and ready low

    def drive(self):
        r = self.pattern.next()
        if r != self._ready_on:
            self.ready.value = int(r)
            self._ready_on = r

    def hold_off(self):
        """Ready low until the next ``drive`` (e.g. over clocks the bench skips)."""
        if self._ready_on is not False:
            self.ready.value = 0
            self._ready_on = False

    def sample(self):
        """Call right after the edge; returns the word taken at it, or None."""
        if self.valid.value:
            if self._ready_on:
                w = self.payload.value.to_unsigned()
                self.words.append(w)
                return w
            self.backpressure += 1
        return None
