"""docs/api.md's "Served resources" section stays true: it is what `tools/api_table.py` renders from the
registry, and, read back as a table, it names every served resource and subresource under its
group/version and nothing the registry does not serve.

Out of scope: whether the registry itself matches discovery (tests/api, tests/kubectl/test_discovery.py).
"""

from __future__ import annotations

import re

from cp import resources as res
from tools import api_table

RESOURCE = re.compile(r"([a-z0-9]+)(?: \(([^)]*)\))?(?: \[[^\]]*\])?")


def _table() -> dict[str, set[str]]:
    """group/version -> {resource, resource/subresource} as docs/api.md's table lists them."""
    section = api_table.current(api_table.DOC.read_text())
    out: dict[str, set[str]] = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `([^`]+)` \| (.*) \|", line)
        if not m:
            continue
        entries = out.setdefault(m.group(1), set())
        for item in RESOURCE.finditer(m.group(2)):
            resource, subs = item.group(1), item.group(2)
            entries.add(resource)
            entries.update(f"{resource}/{s}" for s in (subs or "").split(", ") if s)
    return out


def test_the_served_resources_section_is_current() -> None:
    assert api_table.current(api_table.DOC.read_text()) == api_table.render(), \
        "docs/api.md is stale: run `.venv/bin/python -m tools.api_table --write`"


def test_the_table_names_every_served_resource_and_nothing_else() -> None:
    table = _table()
    served: dict[str, set[str]] = {}
    for gv, entry in api_table.served_entries():
        if not gv.startswith(res.SIM_GROUP):
            served.setdefault(gv, set()).add(entry)
    assert table == served
    assert table["v1"] >= {"pods", "pods/binding", "pods/status", "secrets", "services/status"}
    assert table["resource.k8s.io/v1"] >= {"deviceclasses", "resourceclaims/status", "resourceclaimtemplates"}


def test_nothing_served_is_listed_as_not_served() -> None:
    section = api_table.current(api_table.DOC.read_text())
    not_served = section.split("Enabled by default upstream but not served:")[1].split("Served beyond")[0]
    for gv, entry in api_table.served_entries():
        assert f"`{gv}` {entry}:" not in not_served and f"`{gv}` {entry}," not in not_served
