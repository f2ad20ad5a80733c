"""The cache of ahead-of-time builds (issue 28, item 13): a group whose key matches a sound entry is
copied, not compiled; another key, a partial or damaged entry, or no cache compiles; entries and
modules are written whole (temporary names renamed into place); the cache's place follows the
environment. A fake compiler stands in for numba's ``pycc`` (tens of seconds a group); one test
restores the real, current build through the real key."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import sysconfig

import pytest

from structperc.compiled import build, loader

EXT = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
GROUPS = ["_aot_nbest", "_aot_fb"]


class FakeCompiler:
    """Writes ``<group><EXT>`` holding the group, the key's version and a serial number."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, group, folder):
        self.calls.append(group)
        path = folder / (group + EXT)
        path.write_bytes(f"{group} build {len(self.calls)}".encode() * 100)
        return path


def fake_key(version="1"):
    return lambda group, digest: {"group": group, "source_digest": str(digest), "numba": version}


def compile_into(out, store, compiler, version="1", groups=GROUPS):
    return build.compile_kernels(out, groups, cache=store, compiler=compiler, key=fake_key(version))


def entries(store):
    return sorted(p for p in store.iterdir() if not p.name.startswith("."))


def test_a_second_build_copies_the_first(tmp_path):
    store, fake = tmp_path / "cache", FakeCompiler()
    compile_into(tmp_path / "one", store, fake)
    assert fake.calls == GROUPS and len(entries(store)) == 2
    built = compile_into(tmp_path / "two", store, fake)
    assert fake.calls == GROUPS                                       # nothing compiled again
    assert built == [tmp_path / "two" / g for g in GROUPS]
    for g in GROUPS:
        assert (tmp_path / "two" / (g + EXT)).read_bytes() == (tmp_path / "one" / (g + EXT)).read_bytes()
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(g + EXT for g in GROUPS)


def test_another_key_compiles_and_both_stay_cached(tmp_path):
    store, fake = tmp_path / "cache", FakeCompiler()
    compile_into(tmp_path / "a", store, fake, version="1")
    compile_into(tmp_path / "b", store, fake, version="2")           # e.g. another numba
    assert fake.calls == GROUPS + GROUPS and len(entries(store)) == 4
    compile_into(tmp_path / "c", store, fake, version="1")
    assert len(fake.calls) == 4
    # the source digest is part of the key: an edited kernel is a miss for its group only
    digests = {g: loader.source_digest(group=g) for g in GROUPS}
    edited = lambda group, digest: fake_key()(group, digest + (group == "_aot_fb"))  # noqa: E731
    build.compile_kernels(tmp_path / "d", GROUPS, cache=store, compiler=fake, key=edited)
    assert fake.calls[4:] == ["_aot_fb"] and digests == {g: loader.source_digest(group=g) for g in GROUPS}


@pytest.mark.parametrize("damage", ["truncated", "flipped", "no manifest", "other key", "bad manifest",
                                    "no module", "path in manifest"])
def test_an_unsound_entry_is_not_used_and_is_replaced(tmp_path, damage):
    store, fake = tmp_path / "cache", FakeCompiler()
    compile_into(tmp_path / "a", store, fake, groups=["_aot_nbest"])
    (entry,) = entries(store)
    module, manifest = entry / ("_aot_nbest" + EXT), entry / "entry.json"
    meta = json.loads(manifest.read_text())
    if damage == "truncated":                                          # a partial copy
        module.write_bytes(module.read_bytes()[:100])
    elif damage == "flipped":                                          # same size, other bytes
        data = bytearray(module.read_bytes())
        data[10] ^= 1
        module.write_bytes(bytes(data))
    elif damage == "no manifest":
        manifest.unlink()
    elif damage == "other key":
        meta["key"]["numba"] = "0"
        manifest.write_text(json.dumps(meta))
    elif damage == "bad manifest":
        manifest.write_text("{not json")
    elif damage == "no module":
        module.unlink()
    else:
        meta["file"] = "../elsewhere" + EXT
        manifest.write_text(json.dumps(meta))
    compile_into(tmp_path / "b", store, fake, groups=["_aot_nbest"])
    assert fake.calls == ["_aot_nbest", "_aot_nbest"]                  # compiled again
    assert (tmp_path / "b" / ("_aot_nbest" + EXT)).read_bytes().startswith(b"_aot_nbest build 2")
    (entry,) = entries(store)                                           # the entry was replaced ...
    compile_into(tmp_path / "c", store, fake, groups=["_aot_nbest"])
    assert len(fake.calls) == 2                                         # ... and is sound again
    meta = json.loads((entry / "entry.json").read_text())
    data = (entry / meta["file"]).read_bytes()
    assert meta["size"] == len(data) and meta["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_leftover_temporary_entry_is_ignored(tmp_path):
    """A build killed while writing its entry leaves a dot-named temporary folder, never an entry."""
    store, fake = tmp_path / "cache", FakeCompiler()
    key = fake_key()("_aot_nbest", loader.source_digest(group="_aot_nbest"))
    half = store / ".aot_nbest-x.tmp"
    half.mkdir(parents=True)
    (half / ("_aot_nbest" + EXT)).write_bytes(b"half")
    assert not build.restore(store, "_aot_nbest", key, tmp_path / "target")
    assert not (tmp_path / "target").exists()
    compile_into(tmp_path / "a", store, fake, groups=["_aot_nbest"])
    assert fake.calls == ["_aot_nbest"]


def test_without_a_cache_every_build_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("STRUCTPERC_AOT_CACHE", "off")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fake = FakeCompiler()
    for cache in (False, None, True):                                   # True: the environment's (off)
        build.compile_kernels(tmp_path / "out", ["_aot_nbest"], cache=cache, compiler=fake, key=fake_key())
    assert fake.calls == ["_aot_nbest"] * 3 and not (tmp_path / "home").exists()


def test_the_cache_place_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("STRUCTPERC_AOT_CACHE", raising=False)
    assert build.cache_root() == tmp_path / "home" / ".cache" / "structperc" / "aot"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build.cache_root() == tmp_path / "xdg" / "structperc" / "aot"
    monkeypatch.setenv("STRUCTPERC_AOT_CACHE", str(tmp_path / "mine"))
    assert build.cache_root() == tmp_path / "mine"
    for off in ("off", "0", "none", "OFF"):
        monkeypatch.setenv("STRUCTPERC_AOT_CACHE", off)
        assert build.cache_root() is None
    monkeypatch.setenv("STRUCTPERC_AOT_CACHE", str(tmp_path / "mine"))
    fake = FakeCompiler()
    build.compile_kernels(tmp_path / "out", ["_aot_nbest"], compiler=fake, key=fake_key())
    assert len(entries(tmp_path / "mine")) == 1


def test_modules_are_renamed_into_place(tmp_path):
    """A process holding the old module keeps reading the old bytes (a new file replaces it, it is not
    written in place), and no temporary file stays behind."""
    store, fake = tmp_path / "cache", FakeCompiler()
    out = tmp_path / "out"
    compile_into(out, None, fake, groups=["_aot_nbest"])
    with open(out / ("_aot_nbest" + EXT), "rb") as held:
        compile_into(out, store, fake, groups=["_aot_nbest"])
        assert held.read().startswith(b"_aot_nbest build 1")
    assert (out / ("_aot_nbest" + EXT)).read_bytes().startswith(b"_aot_nbest build 2")
    assert [p.name for p in out.iterdir()] == ["_aot_nbest" + EXT]
    assert [p.name for p in store.iterdir() if p.name.startswith(".")] == []


def test_a_failed_compilation_stores_nothing(tmp_path):
    def broken(group, folder):
        raise RuntimeError("no C compiler")

    with pytest.raises(RuntimeError, match="no C compiler"):
        compile_into(tmp_path / "out", tmp_path / "cache", broken, groups=["_aot_nbest"])
    assert not (tmp_path / "cache").exists() or entries(tmp_path / "cache") == []
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_an_unwritable_cache_only_warns(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    fake = FakeCompiler()
    with pytest.warns(UserWarning, match="not cached"):
        compile_into(tmp_path / "out", blocker / "cache", fake, groups=["_aot_nbest"])
    assert (tmp_path / "out" / ("_aot_nbest" + EXT)).exists()


def test_old_entries_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CACHE_KEEP", 2)
    store, fake = tmp_path / "cache", FakeCompiler()
    for version in "1234":
        compile_into(tmp_path / "out", store, fake, version=version, groups=["_aot_nbest"])
    compile_into(tmp_path / "out", store, fake, version="1", groups=["_aot_fb"])
    names = [p.name for p in entries(store)]
    assert sum(n.startswith("_aot_nbest-") for n in names) == 2 and sum(n.startswith("_aot_fb-") for n in names) == 1
    compile_into(tmp_path / "out", store, fake, version="4", groups=["_aot_nbest"])
    assert len(fake.calls) == 5                                         # the newest kept: a hit
    compile_into(tmp_path / "out", store, fake, version="1", groups=["_aot_nbest"])
    assert len(fake.calls) == 6                                         # the oldest pruned: a miss


def test_the_real_key_names_what_the_machine_code_depends_on():
    key = build.build_key("_aot_nbest", 123)
    import numba
    import numpy
    assert key["group"] == "_aot_nbest" and key["source_digest"] == "123"
    assert key["numba"] == numba.__version__ and key["numpy"] == numpy.__version__
    assert key["abi"] == EXT and key["cpu"] and "+" in key["features"] and key["recipe"]
    assert build.build_key("_aot_nbest", 123) == key
    assert build._entry(build.Path("c"), "_aot_nbest", key) != build._entry(build.Path("c"), "_aot_nbest",
                                                                            build.build_key("_aot_nbest", 124))


def test_the_current_build_comes_back_through_the_real_key(tmp_path):
    """The package's own build of a group, cached under the real key, is restored (no compiler runs) and
    loads as a module recording the current source digest."""
    group = "_aot_nbest"
    if loader._BUILT.get(group) is None:
        pytest.skip(f"{group} not built (python -m structperc.compiled.build {group})")
    store = tmp_path / "cache"
    built = build._PACKAGE / (group + EXT)
    build.save(store, group, build.build_key(group, loader.source_digest(group=group)), built)

    def no_compiler(group, folder):
        raise AssertionError("compiled instead of restored")

    build.compile_kernels(tmp_path / "out", [group], cache=store, compiler=no_compiler)
    path = tmp_path / "out" / (group + EXT)
    assert path.read_bytes() == built.read_bytes()
    spec = importlib.util.spec_from_file_location(f"structperc.{group}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.source_digest() == loader.source_digest(group=group)
