"""The step cache between builds: results come back under the same settings, never under other
settings, and a stale file is not even unpickled (at a million chunks it holds gigabytes)."""

from __future__ import annotations

from pathlib import Path

from docbuild.util.step_cache import StepCache

UNPICKLED: list[str] = []


class Parsed:
    """A result that records each time it is unpickled."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __setstate__(self, state: dict) -> None:
        UNPICKLED.append(state["text"])
        self.__dict__.update(state)


def build_once(path: Path, settings: object, texts: list[str]) -> StepCache[Parsed]:
    """One build's use of the cache: every text through ``get``, then ``save``."""
    cache: StepCache[Parsed] = StepCache(path, settings)
    for text in texts:
        cache.get(text, lambda text=text: Parsed(text))
    cache.save()
    return cache


def test_results_come_back_under_the_same_settings_only(tmp_path: Path):
    path = tmp_path / "parse.pickle"
    build_once(path, {"max_tokens": 256}, ["a", "b"])
    again = build_once(path, {"max_tokens": 256}, ["a", "b", "c"])
    assert again.reused == 2
    UNPICKLED.clear()
    other = StepCache(path, {"max_tokens": 512})
    assert other.previous == {}
    assert UNPICKLED == []  # the stale results were skipped, not read and thrown away
    same = StepCache(path, {"max_tokens": 256})
    assert sorted(UNPICKLED) == ["a", "b", "c"]
    assert same.has("c") and same.previous["c"].text == "c"


def test_a_damaged_cache_means_a_cold_run(tmp_path: Path):
    path = tmp_path / "parse.pickle"
    build_once(path, "settings", ["a", "b"])
    path.write_bytes(path.read_bytes()[:-20])  # a build killed while writing (without os.replace)
    assert StepCache(path, "settings").previous == {}
    path.write_bytes(b"not a pickle")
    assert StepCache(path, "settings").previous == {}
    cache = build_once(path, "settings", ["a"])
    assert cache.reused == 0 and StepCache(path, "settings").has("a")
