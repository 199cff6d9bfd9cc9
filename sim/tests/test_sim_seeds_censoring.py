"""What a seed changes besides the random draws of the run (the queue manager's hash key, the
flows' addresses), and transfers still running at the end of a run (censored times)."""

import fpq
import pytest
from fpq.keys import key_weakness

from fpq_sim.network import Network, unfinished_transfers
from fpq_sim.scenario import queue_config, validate, seeded_hash_key


def dumbbell(seed=1, count=20, loss=0.0, duration=20.0, warmup=0.0, discipline="fpq",
             **queue):
    q = {"discipline": discipline, "model": "exact", "p_pkts": 21.7}
    q.update(queue)
    return validate({
        "name": "seeds", "run": {"duration_s": duration, "warmup_s": warmup, "seed": seed},
        "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.045, "loss_rate": loss},
        "queue": q,
        "flows": [{"count": count, "tcp": "tahoe", "access_bw_total_bps": 1e8,
                   "workload": "transfers", "transfer_pkts": 20, "start_jitter_s": 1.0}]})


def test_each_seed_hashes_with_a_strong_key_of_its_own():
    keys = [queue_config(dumbbell(seed)).hash_key for seed in (1, 2, 3)]
    assert len(set(keys)) == 3
    assert all(len(k) == 20 and key_weakness(k) is None for k in keys)
    assert queue_config(dumbbell(2)).hash_key == keys[1]             # reproducible
    assert keys[0] != fpq.fields.RSS_KEY
    # a key the scenario gives is kept
    given = bytes(range(1, 21))
    assert queue_config(dumbbell(1, hash_key=given.hex())).hash_key == given


def test_seeded_hash_key_draws_again_past_a_weak_key():
    # the draws are SHA-256 of the seed and a draw number: some seed's first draw is weak
    # (about 2 % are); its key is then a later draw, strong
    import hashlib
    first = lambda seed: hashlib.sha256(f"fpq_sim hash_key {seed} 0 0".encode()).digest()[:20]
    weak = next(seed for seed in range(1000) if key_weakness(first(seed)) is not None)
    key = seeded_hash_key(weak, 20)
    assert key != first(weak) and key_weakness(key) is None
    assert len(seeded_hash_key(7, 41)) == 41


def test_each_seed_gives_the_flows_addresses_of_its_own():
    a, b, a2 = (Network(dumbbell(seed, count=500)) for seed in (1, 2, 1))
    keys = lambda net: [s.flow_key for s in net.senders]
    assert keys(a) == keys(a2)                                        # reproducible
    assert len(set(keys(a))) == 500 and not set(keys(a)) & set(keys(b))
    for key in keys(a):
        src, dst, sport, dport, proto = fpq.unpack_flow(key)
        assert src >> 23 == 0x0A000000 >> 23 and dst >> 23 == 0x0A800000 >> 23
        assert 1024 <= sport < 65536 and (dport, proto) == (80, 6)
    # distinct senders even when many flows draw from the /9
    big = Network(dumbbell(5, count=20000))
    assert len({fpq.unpack_flow(s.flow_key)[0] for s in big.senders}) == 20000


def test_unfinished_transfers_are_lower_bounds_of_their_times():
    """At 20 % loss with ns's 6 s initial RTO, transfers are still running at the end. Their
    elapsed times at 30 s are lower bounds of the times they take: run on, and each of them
    ends later after at least that long (or is still running)."""
    net = Network(dumbbell(seed=4, loss=0.2, duration=60.0, warmup=2.0))
    net.run(30.0)
    running = unfinished_transfers(net)
    starts = {s.index: s.transfer_start for s in net.senders if s.active
              and s.transfer_start >= 2.0}
    assert 5 <= len(running) == len(starts) <= 20
    assert sorted(running) == pytest.approx(sorted(30.0 - t for t in starts.values()))
    net.run(60.0)
    later = {i: end - start for i, start, end in net.transfers if start in starts.values()
             and starts.get(i) == start}
    assert later, "some censored transfer ends before 60 s"
    for i, took in later.items():
        assert took >= 30.0 - starts[i]
    # the summary reports them beside the finished ones
    s = net.summary(transfer_times=True)
    t = s["transfers"]
    assert t["unfinished"] == len(s["unfinished_times"]) > 0
    done, cens = s["transfer_times"], s["unfinished_times"]
    assert t["mean_lower_bound"] == pytest.approx((sum(done) + sum(cens))
                                                  / (len(done) + len(cens)))
    # the unfinished ones only move mass to later times (Efron's redistribution to the
    # right): the Kaplan-Meier median is at least the finished transfers' own
    from fpq_sim.stats import km_median
    assert t["km_median"] >= km_median(done, [True] * len(done))
