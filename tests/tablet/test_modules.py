"""The tablet's scripts as ES modules, served as they are (no build step):
small files, imports that resolve and run one way, each module served as
JavaScript (a module script refuses any other type) and in the service
worker's list, so that the coup screen reloads while the Wi-Fi is down."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.templatetags.static import static
from playwright.sync_api import expect

from tables.tablet.coup import ASSETS, SW_VERSION

from .conftest import TRANSACTIONAL

STATIC = Path(__file__).resolve().parents[2] / "static"
TABLET = STATIC / "tablet"
ENTRY = TABLET / "coup.js"
MAX_LINES = 500  # issue 26: a module that passes it wants splitting
# The coup screen's modules from the top down (README, "Layout"; coup.js's
# header): each imports only modules after it here.
LAYERS = (
    "coup.js",
    "coup/keys.js",
    "coup/accept.js",
    "coup/save.js",
    "coup/send.js",
    "coup/screen.js",
    "coup/result.js",
    "coup/stakes.js",
    "coup/cards.js",
    "coup/queue.js",
    "coup/words.js",
    "coup/dom.js",
    "coup/state.js",
    "chemmy.js",
    "refusals.js",
)
# import x from "./a.js"; import { a, b } from "./a.js"; import "./a.js";
# export { a } from "./a.js"; import("./a.js")
IMPORT = re.compile(
    r"""(?:^|;|\s)(?:import|export)\s*(?:[\w*{}\s,$]*?\s*from\s*)?["']([^"']+)["']"""
    r"""|import\(\s*["']([^"']+)["']\s*\)""",
    re.M,
)
COMMENT = re.compile(r"/\*.*?\*/|^\s*//[^\n]*", re.S | re.M)


def imports_of(path: Path) -> list[str]:
    text = COMMENT.sub("", path.read_text(encoding="utf-8"))
    return [a or b for a, b in IMPORT.findall(text)]


def module_graph(entry: Path = ENTRY) -> dict[Path, list[Path]]:
    """Every file the entry imports, directly or not: {file: its imports}."""
    graph: dict[Path, list[Path]] = {}
    todo = [entry.resolve()]
    while todo:
        path = todo.pop()
        if path in graph:
            continue
        graph[path] = []
        for spec in imports_of(path):
            # no build step: the browser resolves only relative URLs here
            assert spec.startswith(("./", "../")), (path.name, spec)
            target = (path.parent / spec).resolve()
            assert target.is_file(), f"{path.relative_to(STATIC)} imports {spec}"
            assert TABLET in target.parents, (path.name, spec)
            graph[path].append(target)
            todo.append(target)
    return graph


def static_name(path: Path) -> str:
    return path.relative_to(STATIC).as_posix()


def test_no_file_of_the_tablet_is_over_500_lines():
    files = [p for p in TABLET.rglob("*") if p.is_file()]
    assert len(files) > 10  # the modules are there
    long = {
        static_name(p): n
        for p in files
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_coup_screen_imports_run_one_way_and_every_module_is_cached():
    graph = module_graph()
    names = {static_name(p) for p in graph}
    assert {"tablet/coup.js", "tablet/chemmy.js", "tablet/coup/state.js"} <= names
    assert len(names) >= 10
    # the offline cache holds every module, and nothing that is not there
    assert names - set(ASSETS) == set()
    assert [a for a in ASSETS if not (STATIC / a).is_file()] == []
    # no circle: a module's imports are all settled before it (depth first)
    done: set[Path] = set()

    def visit(path: Path, stack: tuple[Path, ...]) -> None:
        assert path not in stack, " -> ".join(
            static_name(p) for p in (*stack[stack.index(path) :], path)
        )
        if path in done:
            return
        for target in graph[path]:
            visit(target, (*stack, path))
        done.add(path)

    visit(ENTRY.resolve(), ())
    assert done == set(graph)
    # and downward only: a module imports what is below it in LAYERS
    layer = {(TABLET / name).resolve(): i for i, name in enumerate(LAYERS)}
    assert set(layer) == set(graph)
    upward = [
        f"{static_name(a)} imports {static_name(b)}"
        for a, targets in graph.items()
        for b in targets
        if layer[b] <= layer[a]
    ]
    assert upward == []


def test_a_module_under_static_tablet_is_reached_from_the_page():
    """A module no page imports is dead weight in the cache (or a page's
    import forgotten)."""
    reached = {static_name(p) for p in module_graph()}
    classic = {"tablet/pad.js", "tablet/tablet.js"}  # <script src>, not modules
    scripts = {static_name(p) for p in TABLET.rglob("*.js")}
    assert scripts - reached - classic == set()


@pytest.mark.django_db
def test_every_module_is_served_as_javascript_and_listed_by_the_worker(
    client, settings
):
    # WhiteNoise as in production, reading the files where collectstatic
    # would find them (the suite runs no collectstatic).
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True
    worker = client.get("/tablet/sw.js").content.decode()
    listed = re.search(r"const ASSETS = \[(.*?)\];", worker)[1]
    for path in module_graph():
        url = static(static_name(path))
        assert f'"{url}"' in listed, url
        r = client.get(url)
        assert r.status_code == 200, url
        assert r["Content-Type"].startswith("text/javascript"), (url, r["Content-Type"])
        body = b"".join(r.streaming_content) if r.streaming else r.content
        assert body == path.read_bytes(), url  # as it is: no build step


@pytest.mark.django_db
def test_the_page_names_every_module_it_imports_for_preloading(
    client, ready_turn, croupier
):
    """The coup page lists each module coup.js reaches (rel=modulepreload):
    the browser fetches them at once, not one level of imports after the
    other; a module added to the imports and not to the list fails here."""
    shoe, _ = ready_turn
    client.force_login(croupier)
    page = client.get(f"/tablet/shoes/{shoe.pk}/")
    assert page.status_code == 200
    preload = re.findall(r'<link rel="modulepreload" href="([^"]+)">',
                         page.content.decode())
    graph = {static(static_name(p)) for p in module_graph()}
    assert len(preload) == len(set(preload)), preload  # each once
    assert set(preload) == graph - {static("tablet/coup.js")}


@pytest.mark.browser
@TRANSACTIONAL
def test_the_page_loads_each_module_once_and_the_worker_keeps_them(
    page, live_server, signed_in, ready_turn, croupier
):
    shoe, _ = ready_turn
    signed_in(croupier)
    loaded: dict[str, int] = {}

    def seen(response):
        request = response.request
        if request.resource_type == "script":
            path = response.url.removeprefix(live_server.url)
            loaded[path] = response.status

    page.on("response", seen)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)
    graph = {static(static_name(p)) for p in module_graph()}
    tablet_scripts = {p for p in loaded if p.startswith(static("tablet/"))}
    assert tablet_scripts == graph | {
        static("tablet/pad.js"),
        static("tablet/tablet.js"),
    }
    assert {p: s for p, s in loaded.items() if s != 200} == {}
    # the worker has installed: every script the page ran is in its cache
    page.wait_for_function(
        "() => navigator.serviceWorker && navigator.serviceWorker.controller",
        polling=100,
    )
    cached = page.evaluate(
        """async (name) => {
          const cache = await caches.open(name);
          return (await cache.keys()).map((r) => new URL(r.url).pathname);
        }""",
        SW_VERSION,
    )
    assert {p for p in loaded if p.startswith(static(""))} - set(cached) == set()
    # and the screen comes back from it with the Wi-Fi down (once the worker
    # has a copy of the screen itself: a reload through it)
    page.reload()
    expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("#net")).to_contain_text("Offline")
    assert page.evaluate("typeof window.ChemmyTablet.flush") == "function"
    assert page.evaluate("Chemmy.total(['9H', '8S'])") == 7
    page.context.set_offline(False)
