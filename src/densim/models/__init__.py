"""Mechanistic models: one module per physical resource, pure array functions with units in names."""
