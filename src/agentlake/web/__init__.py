"""The dashboard: a thin door onto the graph runtime, the observer, lessons and scenarios.

``routes`` (the page, its assets, ``/ws``, ``/api/graphs``, ``/api/scenarios``; included by the
gateway through ``mount_web``), ``socket`` (one WebSocket connection's pumps), ``panels`` (the
latest scenario run for the page) and ``schemas``. ``static/`` holds the page and the built
bundle the package serves; ``frontend/`` its sources (``npm ci && npm run build`` rebuilds
``static/app.js``). The conversation itself is ``agentlake.graph``'s.
"""
