"""How many "same bucket?" probes an attacker needs to build a set of colliding flows, for the
plain Toeplitz hash and for the hash with the keyed non-linear stage (``fpq.flow_hash.mix``).

The oracle: the attacker sends two flows and learns whether they share a bit of the flow
vector (from drop behaviour: the flow count N grows by one or by two). One probe is one
question to the oracle. ``python -m fpq.collision_study`` runs both attacks below on a random
secret key and prints the probes each used (docs/RELIABILITY.md, "Colliding flows").

* ``linear_attack``: the Toeplitz hash is XOR-linear, ``h(x ^ d) = h(x) ^ h(d)``. A random
  difference ``d`` keeps a base flow's bucket with probability about ``1 / v_max``; when
  ``h(d)`` is 0 in the index's bits it keeps every flow's bucket (a second base confirms
  it). ``j`` such differences span ``2^j`` flows in one bucket: about ``j * v_max`` probes.
* ``kernel_attack``: what still works after the mix, which is applied to the 32-bit
  Toeplitz hash: two flows with the same Toeplitz hash collide after any mix, and their
  difference ``d`` (``h(d) = 0``) collides every pair ``x, x ^ d``. The attacker collects
  ``K`` flows in one bucket (``K * v_max`` probes), then tests each pair's difference on a
  fresh base (one probe each, a second to confirm); a pair in one bucket has the same
  Toeplitz hash with probability ``v_max / 2^32``. ``j`` independent differences need
  ``K ~ sqrt(2 j 2^32 / v_max)``: about ``sqrt(2 j 2^32 v_max) + j 2^32 / v_max`` probes.
"""

import argparse
import math
import random
import time

from .flow_hash import ToeplitzHash, mix, reduce_index
from .formats import FLOW_BITS

__all__ = ["Oracle", "linear_attack", "kernel_attack", "kernel_attack_estimate", "main"]


class Oracle:
    """"Same bucket?" for a secret-keyed hash; counts the probes.

    Parameters
    ----------
    v_max : int
        Buckets (``reduce_index``).
    mixed : bool
        The keyed non-linear stage after the Toeplitz hash.
    seed : int
        Draws the secret keys."""

    def __init__(self, v_max, mixed, seed=1):
        rnd = random.Random(seed)
        self.toeplitz = ToeplitzHash(rnd.getrandbits(160))
        self.mix_key = rnd.getrandbits(96)
        self.mixed = mixed
        self.v_max = v_max
        self.probes = 0

    def bucket(self, flow):
        # no cache: the attacks draw millions of flows, each used once or twice
        h = self.toeplitz.compute(flow)
        if self.mixed:
            h = mix(h, self.mix_key)
        return reduce_index(h, self.v_max)

    def same(self, a, b):
        self.probes += 1
        return self.bucket(a) == self.bucket(b)


def _independent(basis, d):
    """``d`` reduced by the GF(2) ``basis`` (dict: leading bit -> vector), added if not 0."""
    while d:
        top = d.bit_length() - 1
        if top not in basis:
            basis[top] = d
            return True
        d ^= basis[top]
    return False


def _span_share(oracle, base, basis, rnd, samples=200):
    """The share of ``samples`` random flows of ``base ^ span(basis)`` (not ``base``
    itself) in ``base``'s bucket: the attacker's result, checked (not counted as probes);
    None for an empty basis."""
    vectors = list(basis.values())
    if not vectors:
        return None
    want = oracle.bucket(base)
    hits = 0
    for _ in range(samples):
        f = base
        while f == base:
            f = base
            for v in vectors:
                if rnd.getrandbits(1):
                    f ^= v
        hits += oracle.bucket(f) == want
    return hits / samples


def linear_attack(oracle, dims, budget, seed=2):
    """The attack on linearity: random differences kept by one base and confirmed on
    another. Returns ``(the probes used when each independent difference was found, the
    probes used in all, the share of their span in one bucket)``: at most ``budget``
    probes, stopping at ``dims`` differences."""
    rnd = random.Random(seed)
    x, y = rnd.getrandbits(FLOW_BITS), rnd.getrandbits(FLOW_BITS)
    basis = {}
    start = oracle.probes
    found = []
    while len(basis) < dims and oracle.probes - start < budget:
        d = rnd.getrandbits(FLOW_BITS)
        if oracle.same(x, x ^ d) and oracle.same(y, y ^ d) and _independent(basis, d):
            found.append(oracle.probes - start)
    return found, oracle.probes - start, _span_share(oracle, x, basis, rnd)


def kernel_attack(oracle, dims, budget, seed=3):
    """The attack that survives the mix (module docstring). Returns what
    ``linear_attack`` does, at most ``budget`` probes."""
    rnd = random.Random(seed)
    base = rnd.getrandbits(FLOW_BITS)
    z = rnd.getrandbits(FLOW_BITS)               # the fresh base that tests a difference
    w = rnd.getrandbits(FLOW_BITS)               # and the one that confirms it
    members = [base]
    basis = {}
    found = []
    start = oracle.probes
    while len(basis) < dims and oracle.probes - start < budget:
        f = rnd.getrandbits(FLOW_BITS)
        if not oracle.same(base, f):
            continue
        for g in members:                         # the new member's pairs
            d = f ^ g
            if oracle.same(z, z ^ d) and oracle.same(w, w ^ d) and _independent(basis, d):
                found.append(oracle.probes - start)
                if len(basis) == dims:
                    break
        members.append(f)
    return found, oracle.probes - start, _span_share(oracle, base, basis, rnd)


def kernel_attack_estimate(dims, v_max, hash_bits=32):
    """Probes ``kernel_attack`` needs on average for ``dims`` differences (module
    docstring): collecting ``K`` flows in a bucket plus testing their pairs."""
    k = math.sqrt(2 * dims * 2 ** hash_bits / v_max)
    return k * v_max + k * k / 2


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fpq.collision_study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--v-max", type=int, default=5000, help="buckets (default 5000)")
    p.add_argument("--dims", type=int, default=20,
                   help="differences sought: a set of 2^dims colliding flows (default 20)")
    p.add_argument("--budget", type=float, default=2e6,
                   help="probes each attack may use (default 2e6)")
    p.add_argument("--seed", type=int, default=1, help="draws the secret keys (default 1)")
    p.add_argument("--hash", choices=("plain", "mixed"), action="append",
                   help="the hash attacked (repeatable; default both)")
    p.add_argument("--attack", choices=("linear", "kernel"), action="append",
                   help="the attack (repeatable; default both)")
    args = p.parse_args(argv)
    if not 2 <= args.v_max <= 65536:
        p.error(f"--v-max: {args.v_max} is out of range [2, 65536]")
    if not 1 <= args.dims <= 64:
        p.error(f"--dims: {args.dims} is out of range [1, 64]")
    if not (math.isfinite(args.budget) and 1 <= args.budget <= 1e9):
        p.error(f"--budget: {args.budget} is out of range [1, 1e9]")
    attacks = {"linear": linear_attack, "kernel": kernel_attack}
    for mixed in [h == "mixed" for h in args.hash or ("plain", "mixed")]:
        for name in args.attack or attacks:
            attack = attacks[name]
            t0 = time.perf_counter()
            oracle = Oracle(args.v_max, mixed, args.seed)
            found, probes, share = attack(oracle, args.dims, int(args.budget))
            shown = "-" if share is None else f"{100 * share:.0f} %"
            print(f"{'mixed' if mixed else 'plain'} hash, {name} attack: {len(found)} of "
                  f"{args.dims} differences in {probes:,} probes (found at "
                  f"{', '.join(f'{n:,}' for n in found) or 'none'}); their span in one "
                  f"bucket: {shown} ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"kernel attack estimate for {args.dims} differences, v_max {args.v_max}: "
          f"{kernel_attack_estimate(args.dims, args.v_max):,.0f} probes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
