"""Plain Python implementations of what the product computes in compiled code (predigest_native).

They define the results: tests/processors/test_native_equality.py holds the compiled pass equal to them on
random text and on every real note of examples/root and tests/corpus. Nothing in the product imports them.
"""
