"""Where the rule file of a program is: --config, next to a script, a -m module, the caller."""

from __future__ import annotations

import os
import sys
import types

from pysandboxes.rules import RULE_FILE_NAME, locate

# -- explicit configuration -----------------------------------------------------------------


def test_config_directory_means_its_rule_file(rules):
    rules.mkdir("conf")
    assert locate.for_config("conf", str(rules.root)) == str(rules.root / "conf" / RULE_FILE_NAME)


def test_config_file_is_taken_relative_to_the_cwd(rules):
    assert locate.for_config("sub/../my.rules", str(rules.root)) == str(rules.root / "my.rules")


def test_config_absolute_path_is_kept(rules):
    assert locate.for_config("/etc/x.rules", str(rules.root)) == "/etc/x.rules"


def test_config_expands_the_home_directory(rules):
    assert locate.for_config("~/r.rules", str(rules.root)) == str(rules.home / "r.rules")


# -- scripts --------------------------------------------------------------------------------


def test_rule_file_next_to_the_script_wins_over_the_cwd(rules):
    rules.write("", "app/" + RULE_FILE_NAME)
    rules.write("", RULE_FILE_NAME)
    rules.write("print()", "app/main.py")
    assert locate.for_script("app/main.py", str(rules.root)) == str(rules.root / "app" / RULE_FILE_NAME)


def test_script_without_a_rule_file_falls_back_to_the_cwd(rules):
    rules.write("print()", "app/main.py")
    assert locate.for_script("app/main.py", str(rules.root)) == str(rules.root / RULE_FILE_NAME)


def test_script_with_any_suffix_finds_its_rule_file(rules):
    rules.write("", "bin/" + RULE_FILE_NAME)
    rules.write("#!/usr/bin/env python3\n", "bin/tool")
    rules.write("print()", "bin/gui.pyw")
    assert locate.for_script("bin/tool", str(rules.root)) == str(rules.root / "bin" / RULE_FILE_NAME)
    assert locate.for_script("bin/gui.pyw", str(rules.root)) == str(rules.root / "bin" / RULE_FILE_NAME)


def test_script_reached_through_a_symlink_uses_its_real_directory(rules):
    real = rules.write("print()", "real/main.py")
    rules.write("", "real/" + RULE_FILE_NAME)
    rules.mkdir("bin")
    os.symlink(real, rules.root / "bin/main")
    rules.write("", "bin/" + RULE_FILE_NAME)
    assert locate.for_script("bin/main", str(rules.root)) == str(rules.root / "real" / RULE_FILE_NAME)


def test_absolute_script_path_ignores_the_cwd(rules):
    script = rules.write("print()", "app/main.py")
    rules.write("", "app/" + RULE_FILE_NAME)
    other = rules.mkdir("elsewhere")
    assert locate.for_script(str(script), str(other)) == str(rules.root / "app" / RULE_FILE_NAME)


def test_directory_named_like_the_rule_file_is_not_a_rule_file(rules):
    rules.write("print()", "app/main.py")
    rules.mkdir("app/" + RULE_FILE_NAME)
    assert locate.for_script("app/main.py", str(rules.root)) == str(rules.root / RULE_FILE_NAME)


# -- python -m ------------------------------------------------------------------------------


def test_module_of_a_package_uses_the_package_directory(rules):
    rules.write("", "src/pkg/__init__.py")
    rules.write("", "src/pkg/tool.py")
    rules.write("", "src/pkg/" + RULE_FILE_NAME)
    path = locate.for_module("pkg.tool", str(rules.root), ["src"])
    assert path == str(rules.root / "src/pkg" / RULE_FILE_NAME)


def test_package_run_with_m_uses_its_own_directory(rules):
    rules.write("", "src/pkg/__init__.py")
    rules.write("", "src/pkg/__main__.py")
    rules.write("", "src/pkg/" + RULE_FILE_NAME)
    assert locate.for_module("pkg", str(rules.root), ["src"]) == str(rules.root / "src/pkg" / RULE_FILE_NAME)


def test_top_level_module_uses_its_search_path_entry(rules):
    rules.write("", "lib/single.py")
    rules.write("", "lib/" + RULE_FILE_NAME)
    assert locate.for_module("single", str(rules.root), ["lib"]) == str(rules.root / "lib" / RULE_FILE_NAME)


def test_module_is_found_without_being_imported(rules):
    name = "pysb_locate_probe_module"
    rules.write("raise RuntimeError('imported')\n", f"lib/{name}.py")
    rules.write("", "lib/" + RULE_FILE_NAME)
    assert locate.for_module(name, str(rules.root), ["lib"]) == str(rules.root / "lib" / RULE_FILE_NAME)
    assert name not in sys.modules


def test_first_search_path_entry_holding_the_module_wins(rules):
    rules.write("", "a/mod.py")
    rules.write("", "a/" + RULE_FILE_NAME)
    rules.write("", "b/mod.py")
    rules.write("", "b/" + RULE_FILE_NAME)
    assert locate.for_module("mod", str(rules.root), ["a", "b"]) == str(rules.root / "a" / RULE_FILE_NAME)


def test_empty_search_path_entry_is_the_cwd(rules):
    rules.write("", "mod.py")
    assert locate.module_directory("mod", [""], str(rules.root)) == str(rules.root)


def test_module_without_a_rule_file_falls_back_to_the_cwd(rules):
    rules.write("", "lib/mod.py")
    assert locate.for_module("mod", str(rules.root), ["lib"]) == str(rules.root / RULE_FILE_NAME)


def test_unknown_module_falls_back_to_the_cwd(rules):
    assert locate.for_module("no_such_module_x", str(rules.root), ["lib"]) == str(rules.root / RULE_FILE_NAME)


def test_invalid_module_name_has_no_directory(rules):
    assert locate.module_directory("not-a-name", [str(rules.root)], str(rules.root)) is None
    assert locate.module_directory("a..b", [str(rules.root)], str(rules.root)) is None


def test_missing_submodule_has_no_directory(rules):
    rules.write("", "lib/pkg/__init__.py")
    assert locate.module_directory("pkg.absent", ["lib"], str(rules.root)) is None


# -- the caller of sandboxes() --------------------------------------------------------------


def fake_module(monkeypatch, name, *, file=None, path=None):
    mod = types.ModuleType(name)
    if file is not None:
        mod.__file__ = str(file)
    if path is not None:
        mod.__path__ = [str(path)]
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


def test_caller_module_directory_holding_the_rule_file(rules, monkeypatch):
    module_file = rules.write("", "app/worker.py")
    rules.write("", "app/" + RULE_FILE_NAME)
    fake_module(monkeypatch, "pysb_fake_worker", file=module_file)
    assert locate.for_caller("pysb_fake_worker", str(rules.root)) == str(rules.root / "app" / RULE_FILE_NAME)


def test_caller_falls_back_to_the_nearest_parent_package(rules, monkeypatch):
    rules.write("", "pkg/" + RULE_FILE_NAME)
    sub_file = rules.write("", "pkg/sub/mod.py")
    fake_module(monkeypatch, "pysb_fake_pkg", path=rules.root / "pkg")
    fake_module(monkeypatch, "pysb_fake_pkg.sub", path=rules.root / "pkg/sub")
    fake_module(monkeypatch, "pysb_fake_pkg.sub.mod", file=sub_file)
    assert locate.for_caller("pysb_fake_pkg.sub.mod", str(rules.root)) == str(
        rules.root / "pkg" / RULE_FILE_NAME
    )


def test_caller_without_a_rule_file_falls_back_to_the_cwd(rules, monkeypatch):
    fake_module(monkeypatch, "pysb_fake_bare", file=rules.write("", "bare/m.py"))
    assert locate.for_caller("pysb_fake_bare", str(rules.root)) == str(rules.root / RULE_FILE_NAME)


def test_unknown_or_missing_caller_falls_back_to_the_cwd(rules):
    assert locate.for_caller(None, str(rules.root)) == str(rules.root / RULE_FILE_NAME)
    assert locate.for_caller("pysb_not_loaded.anything", str(rules.root)) == str(rules.root / RULE_FILE_NAME)


def test_caller_lookup_with_another_file_name(rules, monkeypatch):
    module_file = rules.write("", "app/worker.py")
    rules.write("", "app/custom.rules")
    fake_module(monkeypatch, "pysb_fake_custom", file=module_file)
    assert locate.for_caller("pysb_fake_custom", str(rules.root), "custom.rules") == str(
        rules.root / "app/custom.rules"
    )
