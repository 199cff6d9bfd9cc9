"""The cross-check dumbbell in ns-3 (run by ``fpq_sim.crosscheck`` with the Python of the ns-3
venv that ``make crosscheck`` creates; ns-3 comes from PyPI, package ``ns3``).

Usage: ``python ns3_dumbbell.py '<json parameters>'``; prints one JSON line with the
bottleneck queue's counts after the warm-up and the wall time of ``Simulator::Run``.

Network (the FPQ paper's Fig. 8, with bulk transfers): N senders, each on its own
point-to-point link (``access_bw_bps``, delay uniform in ``access_delay_s``) to router A; A -> B
is the bottleneck (``bandwidth_bps``, ``delay_s``) with the queue discipline on A's device
(drop-tail with a packet limit, or RED); the receivers' sinks sit on B. TCP NewReno with classic
recovery, no SACK, no timestamps, no limited transmit, initial window 1, delayed ACKs every
second segment or 200 ms, 536-byte segments (576-byte IP packets); with ``tcp`` = ``sack`` or
``cubic``, SACK on (and ns-3's TcpCubic for ``cubic``), for the speed comparison.
"""

import json
import random
import sys
import time


def set_defaults(ns, p):
    """The run's seed and the TCP of every socket (ns-3 attribute defaults)."""
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(p["seed"])
    cfg = ns.Config
    sv, uv, bv = ns.StringValue, ns.UintegerValue, ns.BooleanValue
    tcp = p.get("tcp", "newreno")
    cfg.SetDefault("ns3::TcpL4Protocol::SocketType",
                   sv("ns3::TcpCubic" if tcp == "cubic" else "ns3::TcpNewReno"))
    cfg.SetDefault("ns3::TcpL4Protocol::RecoveryType", sv("ns3::TcpClassicRecovery"))
    cfg.SetDefault("ns3::TcpSocketBase::Sack", bv(tcp in ("sack", "cubic")))
    cfg.SetDefault("ns3::TcpSocketBase::Timestamp", bv(False))
    cfg.SetDefault("ns3::TcpSocketBase::LimitedTransmit", bv(False))
    cfg.SetDefault("ns3::TcpSocket::SegmentSize", uv(p["packet_bytes"] - 40))
    cfg.SetDefault("ns3::TcpSocket::InitialCwnd", uv(1))
    cfg.SetDefault("ns3::TcpSocket::DelAckCount", uv(2))
    cfg.SetDefault("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(0.2)))
    cfg.SetDefault("ns3::TcpSocket::SndBufSize", uv(1 << 20))
    cfg.SetDefault("ns3::TcpSocket::RcvBufSize", uv(p["max_window_bytes"]))


def nodes(ns, n):
    """``n`` senders and the two routers, with the Internet stack on every node."""
    senders = ns.NodeContainer()
    senders.Create(n)
    routers = ns.NodeContainer()
    routers.Create(2)
    ns.InternetStackHelper().InstallAll()
    return senders, routers


def access_links(ns, p, senders, routers, addr, p2p):
    """Each sender's own link to router A, its delay drawn from ``access_delay_s``, and a /24
    of addresses per link."""
    rng = random.Random(p["seed"])
    for i in range(p["flows"]):
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(p['access_bw_bps'])}bps"))
        d = rng.uniform(*p["access_delay_s"])
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(d)))
        devs = p2p.Install(senders.Get(i), routers.Get(0))
        addr.SetBase(ns.Ipv4Address(f"10.{1 + i // 250}.{i % 250}.0"),
                     ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(devs)


def queue_disc(ns, p):
    """The bottleneck's queue discipline: RED, or drop-tail with a packet limit."""
    uv, dv, bv = ns.UintegerValue, ns.DoubleValue, ns.BooleanValue
    tch = ns.TrafficControlHelper()
    if p["discipline"] == "red":
        tch.SetRootQueueDisc(
            "ns3::RedQueueDisc", "MinTh", dv(p["red_min_th"]), "MaxTh", dv(p["red_max_th"]),
            "LInterm", dv(1.0 / p["red_max_p"]), "QW", dv(p["red_wq"]),
            "MeanPktSize", uv(p["packet_bytes"]), "Gentle", bv(False),
            "LinkBandwidth", ns.DataRateValue(
                ns.DataRate(f"{int(p['bandwidth_bps'])}bps")),
            "LinkDelay", ns.TimeValue(ns.Seconds(p["delay_s"])),
            "MaxSize", ns.QueueSizeValue(ns.QueueSize("100000p")))
    else:
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                             ns.QueueSizeValue(
                                 ns.QueueSize(f"{p['limit_pkts']}p")))
    return tch


def bottleneck(ns, p, routers, addr, p2p):
    """The link A -> B with the queue discipline on A's device, and the routing tables;
    returns the queue disciplines installed and B's address (the receivers')."""
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(p['bandwidth_bps'])}bps"))
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(p["delay_s"])))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
    bott = p2p.Install(routers.Get(0), routers.Get(1))
    # the queue discipline goes on before the addresses: Ipv4AddressHelper::Assign installs
    # ns-3's default (FqCoDel) only on devices that have none
    qdiscs = queue_disc(ns, p).Install(bott)
    addr.SetBase(ns.Ipv4Address("10.250.0.0"), ns.Ipv4Mask("255.255.255.0"))
    ifaces = addr.Assign(bott)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    return qdiscs, ifaces.GetAddress(1)


def bulk_transfers(ns, p, senders, routers, receiver_addr):
    """A sink per sender on router B and an endless bulk transfer from each sender to its
    sink, started at a random time in ``start_jitter_s``."""
    uv = ns.UintegerValue
    start_rng = random.Random(p["seed"] * 7 + 1)
    for i in range(p["flows"]):
        port = 5000 + i
        sink = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sink.Install(routers.Get(1)).Start(ns.Seconds(0.0))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(receiver_addr, port).ConvertTo())
        bulk.SetAttribute("MaxBytes", uv(0))
        bulk.SetAttribute("SendSize", uv(p["packet_bytes"] - 40))
        app = bulk.Install(senders.Get(i))
        app.Start(ns.Seconds(start_rng.uniform(0.0, p["start_jitter_s"])))


def measure(ns, p, q):
    """Run the warm-up, then the measured span; the queue ``q``'s counts over the span and the
    wall time of both runs."""
    wall = 0.0
    t0 = time.perf_counter()
    ns.Simulator.Stop(ns.Seconds(p["warmup_s"]))
    ns.Simulator.Run()
    wall += time.perf_counter() - t0
    s0 = q.GetStats()
    w = (s0.nTotalReceivedPackets, s0.nTotalDroppedPackets, s0.nTotalSentPackets,
         s0.nTotalSentBytes)
    t0 = time.perf_counter()
    ns.Simulator.Stop(ns.Seconds(p["duration_s"] - p["warmup_s"]))
    ns.Simulator.Run()
    wall += time.perf_counter() - t0
    s1 = q.GetStats()
    ns.Simulator.Destroy()
    arrivals = s1.nTotalReceivedPackets - w[0]
    drops = s1.nTotalDroppedPackets - w[1]
    sent_bytes = s1.nTotalSentBytes - w[3]
    span = p["duration_s"] - p["warmup_s"]
    return {
        "arrivals": int(arrivals), "drops": int(drops),
        "loss_rate": drops / arrivals if arrivals else 0.0,
        # bytes the queue handed to the device (IP packets; the link adds 2 bytes of PPP)
        "utilisation": sent_bytes * 8 / (p["bandwidth_bps"] * span),
        "bottleneck_packets": int(s1.nTotalSentPackets) + int(s1.nTotalDroppedPackets),
        "wall_seconds": wall}


def main(argv):
    p = json.loads(argv[1])
    from ns import ns       # cppyy bindings: the C++ namespace ns3, flat

    set_defaults(ns, p)
    senders, routers = nodes(ns, p["flows"])
    addr = ns.Ipv4AddressHelper()
    p2p = ns.PointToPointHelper()
    access_links(ns, p, senders, routers, addr, p2p)
    qdiscs, receiver_addr = bottleneck(ns, p, routers, addr, p2p)
    bulk_transfers(ns, p, senders, routers, receiver_addr)
    print(json.dumps(measure(ns, p, qdiscs.Get(0))))


if __name__ == "__main__":
    main(sys.argv)
