"""Observability for sbredis: OpenTelemetry spans (``otel``) and Prometheus metrics (``prometheus``).

Both are optional extras (``pip install sbredis[otel]``, ``sbredis[prometheus]``) and report
through one seam, sbredis/_core/instrument.py, which costs one module-level check per operation
while neither is enabled. Import the submodule you use; this package imports neither.
"""
