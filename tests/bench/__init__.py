"""Smoke tests of the benchmark harness pieces (the benchmark itself runs only in `make bench`)."""
