"""Simulator throughput, cocotb bench vs the lean harness, on the same TCP traces.

``python -m tb_lib.throughput`` (from cocotb-tests/, after a pytest run of the benches): for
each TCP-trace bench run found under ``build/cocotb/runs/``, the clocks and wall time of the
cocotb bench (the bench's script only: Verilator build excluded), then the same trace through
``fpq_hdl.verilated`` (batch path), the lean harness's idle clocks (nothing presented: the clocks
between events), and one arrival at a time as the TCP simulator uses it (on the same traffic
stamped with ``verdict_wait`` = the RTL's latency, as that path needs). Prints a Markdown
table."""

import pickle
import platform
import time

from fpq import QueueManager as Model, Departure

from .traffic import tcp_trace
from .verilog import BUILD_ROOT


def main():
    from fpq_hdl.verilated import VerilatedQueueManager
    from fpq_hdl.queue_manager import LATENCY
    rows = []
    for disc in ("fpq", "red"):
        for flows in (10, 75, 300, 2000):
            found = sorted((BUILD_ROOT / "runs" / f"test_tcp_trace-{disc}-{flows}").glob(
                "pid*/result.pickle"), key=lambda p: p.stat().st_mtime)
            if not found:
                continue
            r = pickle.loads(found[-1].read_bytes())
            cfg, events = tcp_trace(disc, flows, 25_000)
            rtl = VerilatedQueueManager(cfg)
            c0 = rtl.cycles
            t0 = time.perf_counter()
            got = rtl.run(events)
            t1 = time.perf_counter()
            batch_c = rtl.cycles - c0
            now = rtl.now
            t2 = time.perf_counter()
            rtl._so.fpqv_idle_to(rtl._h, now + 1_000_000)
            idle_s = time.perf_counter() - t2
            _, waited = tcp_trace(disc, flows, 25_000, verdict_wait=LATENCY)
            rtl2 = VerilatedQueueManager(cfg)
            t3 = time.perf_counter()
            one = [rtl2.depart(e) if type(e) is Departure else rtl2.arrive(e) for e in waited]
            t4 = time.perf_counter()
            want = Model(cfg).run(events)
            t5 = time.perf_counter()
            want2 = Model(cfg).run(waited)
            assert got == want and [v for v in one if v is not None] == want2
            rows.append((f"{disc} N={flows}", r["arrivals"], r["cycles"], r["wall_s"],
                         batch_c, t1 - t0, 1e6 / idle_s, t4 - t3, t5 - t4))
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}")
    print("| trace | arrivals | cocotb clocks | cocotb s | cocotb clocks/s | lean batch clocks "
          "| lean batch s | lean clocks/s | lean idle clocks/s | lean one-at-a-time "
          "arrivals/s | golden model arrivals/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, a, cc, cs, bc, bs, idle, os_, ms in rows:
        print(f"| {name} | {a} | {cc} | {cs:.2f} | {cc / cs:,.0f} | {bc} | {bs:.3f} | "
              f"{bc / bs:,.0f} | {idle:,.0f} | {a / os_:,.0f} | {a / ms:,.0f} |")
    if rows:
        tot = [sum(x[i] for x in rows) for i in range(1, 9)]
        print(f"| **all** | {tot[0]} | {tot[1]} | {tot[2]:.2f} | {tot[1] / tot[2]:,.0f} | "
              f"{tot[3]} | {tot[4]:.3f} | {tot[3] / tot[4]:,.0f} | {tot[5] / len(rows):,.0f} | "
              f"{tot[0] / tot[6]:,.0f} | {tot[0] / tot[7]:,.0f} |")


if __name__ == "__main__":
    main()
