"""Hardening benches (issue 8): flood of spoofed flows, X-propagation with random initial
state, reset at any cycle. See docs/RELIABILITY.md."""
