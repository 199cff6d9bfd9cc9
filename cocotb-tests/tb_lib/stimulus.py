"""Stimulus helpers every bench uses (the per-block generators are in ``tb_lib.blocks``)."""

__all__ = ["t_clear_s"]


def t_clear_s(period_clocks, v_max, tick_hz=1e6):
    """The ``t_clear_s`` whose clear period (``t_clear_s * tick_hz / v_max``) is
    ``period_clocks`` clocks: the configuration's clear period read backwards."""
    return period_clocks * v_max / tick_hz
