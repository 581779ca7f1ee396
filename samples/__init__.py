"""The sample logs, installed as the data-only package `kvwatch.samples` (read by `kvwatch demo`)."""
