"""Benchmarks: `make bench` runs bench/run.py; near_dup_eval.py and near_dup_speed.py are run directly."""
