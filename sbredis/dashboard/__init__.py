"""``sbredis dashboard``: a web dashboard for a namespace (needs ``pip install 'sbredis[dashboard]'``).

Server-rendered pages (app.py, html.py) with a little plain JavaScript (static/app.js) that polls
``/api/overview`` to update counts and draw rate charts; every asset ships in the package, nothing
is loaded from elsewhere. counts.py reads every entity's counts in one round trip per node;
actions.py changes things through the library's public clients. docs/dashboard.md shows it.
"""

from __future__ import annotations

from .app import Settings, SettingsError, create_app

__all__ = ["Settings", "SettingsError", "create_app"]
