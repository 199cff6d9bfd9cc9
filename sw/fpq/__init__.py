"""FPQ: Flow-Proportional Queuing. Golden models, configuration source, traces.

>>> from fpq import Config, QueueManager, Arrival, Departure, pack_flow
>>> qm = QueueManager(Config(mode="fpq", p_pkts=21.7))
>>> v = qm.arrive(Arrival(ts=1000, flow=pack_flow(0x0a000001, 0x0a000002, 1234, 80, 6), length=576))
>>> v.action, v.n
(0, 1)
"""
from .config import Config, Build
from .fields import ConfigError
from .flow_hash import pack_flow, unpack_flow, pack_flow6, unpack_flow6
from .queue_manager import (QueueManager, Arrival, Departure, Verdict, ACTIONS,
                            ENQUEUE, MARK, DROP_EARLY, DROP_FORCED)

__all__ = ["Config", "Build", "ConfigError", "pack_flow", "unpack_flow", "pack_flow6",
           "unpack_flow6", "QueueManager",
           "Arrival", "Departure", "Verdict", "ACTIONS", "ENQUEUE", "MARK", "DROP_EARLY",
           "DROP_FORCED"]
