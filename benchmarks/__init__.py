"""Measurements of msjax: each module is a command, ``python -m benchmarks.NAME`` from the
repository's root, that prints its figures (a table, JSON lines). They use msjax's public
API; what a measurement needs that is a library concern lives in msjax, and no test
imports this package."""
