"""icetide benchmarks: one command each; results appended to docs/benchmarks.md."""
