"""Integrations: ``sbredis.contrib.kombu`` (a kombu transport) and ``sbredis.contrib.celery``.

Both need the ``celery`` extra (kombu and Celery are not dependencies of sbredis itself).
"""
