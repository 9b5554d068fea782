"""Workloads: trace readers and synthetic profiles, exposed as streaming demand sources."""
