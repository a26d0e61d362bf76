"""The benchmarks (`python bench/NAME.py`) and the modules they share.

A package so that the entry scripts and the crash-recovery tests, which load
bench/soak_crash.py from its file, import the shared modules one way: as `bench.harness`,
`bench.soak_model`, ..., with the repository root on sys.path.
"""
