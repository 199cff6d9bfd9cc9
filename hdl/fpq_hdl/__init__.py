"""Amaranth RTL of the FPQ queue manager, bit-exact with the golden model in ``fpq``.

Components (one per file, each named after its golden model in ``sw/fpq``):
``flow_hash.FlowHash``, ``flow_counter.FlowCounter``, ``queue_averager.QueueAverager``,
``drop_probability.DropProbability``, ``random_source.RandomSource``, ``decision.Decision``,
and the top ``queue_manager.QueueManager``.
"""
