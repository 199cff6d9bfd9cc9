"""The 1997 paper (TCP Behavior with Many Flows): 30 and 1500 bulk flows (``morris97-*``), with
sensitivity rows (gentle RED, the float model, the paper's five telnet sessions) and the FPQ
router on the same network as an extension."""

from .outputs import ci_cols, ci_header
from .quantities import E, Ek, span_100s, saturated_share, loss_est
from .registry import Experiment, register, telnet_group
from .template import prose, pct, overlap

FLOWS = (30, 1500)
#: The CSV's name of each variant (the first element of its keys)
LABEL = {"many": "RED as published", "many_gentle": "gentle RED", "many_fpq": "FPQ",
         "many_float": "RED, float model", "many_telnet": "RED + 5 telnet sessions"}
#: The CSV's quantities: (column name, path in a run's summary)
COLUMNS = (("loss_rate", ("loss_rate",)), ("goodput_fraction", ("goodput_fraction",)),
           ("utilisation", ("utilisation",)), ("avg_queue_pkts", ("avg_queue_pkts",)),
           ("timeouts", ("tcp", "timeouts")), ("fast_retransmits", ("tcp", "fast_retx")))


def plan(p):
    jit = ["flows.0.start_jitter_s=2.0"] if p.quick else []
    for n in FLOWS:
        name = f"morris97-{n}-flows"
        p.add(("many", n), "many", name, jit)
        if n == 30:   # sensitivity: gentle RED (not in ns-1), the float model, telnet
            p.add(("many_gentle", n), "many", name, jit + ["queue.red_gentle=true"])
            p.add(("many_float", n), "many", name, jit + ["queue.model=float"])
            p.add(("many_telnet", n), "many", name, jit,
                  extra_group=telnet_group(access_delay_s=(0.0, 0.05)))
        # extension: the FPQ router on the same network
        p.add(("many_fpq", n), "many", name,
              jit + ["queue.discipline=fpq", "queue.p_pkts=217", "queue.limit_pkts=0"])


def _many(G):
    return {k: ss for k, ss in G.items() if k[0].startswith("many")}


def write(G, out):
    many = _many(G)
    if not many:
        return
    rows = [[LABEL[v], n, len(ss)] + sum((ci_cols(Ek(ss, *path)) for _, path in COLUMNS), [])
            for (v, n), ss in sorted(many.items())]
    out.csv("morris97_many_flows.csv",
            ["router", "flows", "seeds"] + ci_header(c for c, _ in COLUMNS), rows)


def markdown(G):
    many = _many(G)
    if ("many", 30) not in many and ("many", 1500) not in many:
        return []
    L = [prose("many")]
    for n in FLOWS:
        if many.get(("many", n)):
            L += _rows(many, n)
    L += ["", prose("many.goodput"), ""]
    return L + _discussion(many)


def _rows(many, n):
    """The table's rows for ``n`` flows: RED as published, then FPQ and the sensitivity runs."""
    ss = many[("many", n)]
    span = span_100s(ss[0])
    L = [prose("many.rows", n=n, n1500=n == 1500, loss=pct(loss_est(ss), 2),
               goodput=pct(Ek(ss, "goodput_fraction")), queue=Ek(ss, "avg_queue_pkts"),
               timeouts=E(ss, lambda s: s["tcp"]["timeouts"] / n / span))]
    fs = many.get(("many_fpq", n))
    if fs:
        L.append(prose("many.many_fpq", n=n, loss=pct(loss_est(fs), 2),
                       queue_per_flow=Ek(fs, "avg_queue_pkts") / n,
                       goodput=pct(Ek(fs, "goodput_fraction"))))
    for tag in ("many_float", "many_gentle", "many_telnet"):
        xs = many.get((tag, n))
        if xs:
            L.append(prose(f"many.{tag}", n=n, loss=pct(loss_est(xs), 2)))
    return L


def _discussion(many):
    ss30, ss15 = many.get(("many", 30)), many.get(("many", 1500))
    if not (ss30 and ss15):
        return []
    l30, l15 = loss_est(ss30), loss_est(ss15)
    tel = many.get(("many_telnet", 30))
    lt = loss_est(tel) if tel else None
    f15 = many.get(("many_fpq", 1500))
    fpq_text = _fpq_discussion(f15, l15) if f15 else ""
    return [prose("many.discussion", reproduced=abs(l15.mean - 0.17) < 0.03,
                  loss_1500=pct(l15), loss_30=pct(l30, 2), saturated=pct(saturated_share(ss30)),
                  telnet=bool(tel), telnet_loss=pct(lt, 2) if tel else "",
                  telnet_same=bool(tel) and overlap(lt, l30), fpq=fpq_text), ""]


def _fpq_discussion(f15, red_loss):
    """The FPQ router with 1500 flows (runs ``f15``) against RED's drop rate ``red_loss``; its
    queueing delay is its queue of 576-byte packets at 10 Mbit/s."""
    q = Ek(f15, "avg_queue_pkts")
    return prose("many.discussion.fpq", loss=pct(loss_est(f15)), red_loss=pct(red_loss),
                 queue_per_flow=q / 1500, delay_s=float(q) * 576 * 8 / 10e6,
                 flow_count=Ek(f15, "avg_flow_count"))


EXPERIMENT = register(Experiment(
    name="many", durations={"many": (100, 20)}, quick_durations={"many": (30, 10)},
    plan=plan, write=write, markdown=markdown))
