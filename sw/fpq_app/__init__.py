"""The application layer: the ``fpq`` command (``cli``), the demo (``demo``) and the
datasheet generator (``datasheet``). It may import every package of the project (the golden
model ``fpq``, the RTL ``fpq_hdl``, the simulator ``fpq_sim``, the boards ``fpq_boards``);
none of them imports it."""
