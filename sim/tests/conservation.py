"""Packet conservation checked in the middle of a run: the accounting every network test
relies on (the dumbbell's and the parking lot's, whatever the TCP and the queue discipline)."""


def run_checking_conservation(net, cuts, also=None):
    """Run ``net`` (``fpq_sim.network.Network`` or ``fpq_sim.parkinglot.ParkingLot``) to each
    time in ``cuts`` and assert there that every data packet sent was delivered, lost at a
    port (dropped or lost on the wire) or is still in flight, and every ACK sent was delivered
    or is still in flight.

    Parameters
    ----------
    cuts : iterable of float
        The times (s) to stop at, increasing.
    also : callable or None
        ``also(net)`` runs at each cut, for checks of the caller's own.

    Returns the counts of data packets in flight at each cut (a test shows with them that
    the check was not vacuous).
    """
    in_flight = []
    for cut in cuts:
        net.run(cut)
        c = net.counters
        data, acks = net.packets_in_flight()
        assert c.data_sent == c.data_delivered + net.lost_total() + data, f"data at {cut} s"
        assert c.acks_sent == c.acks_delivered + acks, f"ACKs at {cut} s"
        if also is not None:
            also(net)
        in_flight.append(data)
    return in_flight
