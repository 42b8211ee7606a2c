"""Benchmarks: `make bench` runs bench/run.py (and rewrites docs/performance.md's figures with bench/report.py); the others run directly."""
