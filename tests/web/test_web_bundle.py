"""The committed bundle is built from the committed front-end sources (``npm run build`` stamps
their hash into its first line), so a clean clone serves what the sources say without npm."""

from __future__ import annotations

import hashlib
import re

from agentlake.web.routes import STATIC_DIR

FRONTEND = STATIC_DIR.parent / "frontend"


def test_the_bundle_is_built_from_the_current_sources() -> None:
    digest = hashlib.sha256()
    for path in sorted((FRONTEND / "src").glob("*.js"), key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update((FRONTEND / "package-lock.json").read_bytes())
    first_line = (STATIC_DIR / "app.js").read_text(encoding="utf-8").split("\n", 1)[0]
    stamped = re.search(r"sources sha256:([0-9a-f]{64})", first_line)
    assert stamped is not None, first_line
    assert stamped.group(1) == digest.hexdigest(), (
        "static/app.js is stale: cd src/agentlake/web/frontend && npm ci && npm run build"
    )


def test_the_bundle_carries_cytoscape_and_its_licence_notice() -> None:
    bundle = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    assert "cytoscape" in bundle.lower()
    assert "MIT" in (STATIC_DIR / "app.js.LEGAL.txt").read_text(encoding="utf-8")
