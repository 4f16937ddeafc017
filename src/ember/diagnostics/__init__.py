"""Diagnostics: device-side errors and the slow-path report (``docs/design/diagnostics.md``).

* :mod:`.errors` - the per-context error record, check sites, ``KernelError``;
* :mod:`.report` - what a kernel pulls in that costs speed (``EmberPerformanceWarning``,
  ``kernel.report``);
* :mod:`.inspect` - ``kernel.inspect(stage="sass" | "resources")``.
"""
