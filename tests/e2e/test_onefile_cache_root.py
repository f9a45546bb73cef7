"""The one file's cache folder: the C stub and the Python launcher must name the same one.

The rule is written twice: in ``packaging/onefile/stub.c`` (which starts an unpacked
app on every later launch) and in ``packaging/onefile/launcher.py``'s ``cache_root()``
(which unpacks it on the first). Were they to differ for some environment, every
launch would unpack the app again, or never find it. The stub is compiled here with
``-DSTUB_PRINT_CACHE_ROOT`` (it then prints its folder and exits) and both run, each
in a process of its own, with the same environment.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tier_policy import part_missing

REPO = Path(__file__).resolve().parents[2]
LAUNCHER_DIR = REPO / "packaging" / "onefile"
CACHE_ENV = "DESKTOP_AGENT_BUNDLE_CACHE"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"),
                       reason="the stub is for Linux; elsewhere the launcher alone decides"),
]

PYTHON_RULE = ("import os, sys; sys.path.insert(0, sys.argv[1]); import launcher; "
               "sys.stdout.buffer.write(os.fsencode(launcher.cache_root()))")

LONG = "/tmp/" + "/".join(["a-folder-name-of-forty-characters-for-x"] * 120)  # ~4,800 bytes

#: Environments to compare (None: the variable is unset). HOME unset falls back to
#: the password database on both sides.
CASES: dict[str, dict[str, str | bytes | None]] = {
    "override": {CACHE_ENV: "/srv/bundles", "XDG_CACHE_HOME": "/x", "HOME": "/home/u"},
    "empty override": {CACHE_ENV: "", "XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"},
    "xdg": {CACHE_ENV: None, "XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"},
    "xdg with a trailing slash": {CACHE_ENV: None, "XDG_CACHE_HOME": "/x/cache/",
                                  "HOME": "/home/u"},
    "relative xdg": {CACHE_ENV: None, "XDG_CACHE_HOME": "relative/cache", "HOME": "/home/u"},
    "empty xdg": {CACHE_ENV: None, "XDG_CACHE_HOME": "", "HOME": "/home/u"},
    "home": {CACHE_ENV: None, "XDG_CACHE_HOME": None, "HOME": "/home/u"},
    "home with a trailing slash": {CACHE_ENV: None, "XDG_CACHE_HOME": None, "HOME": "/home/u/"},
    "home is the root": {CACHE_ENV: None, "XDG_CACHE_HOME": None, "HOME": "/"},
    "empty home": {CACHE_ENV: None, "XDG_CACHE_HOME": None, "HOME": ""},
    "no home": {CACHE_ENV: None, "XDG_CACHE_HOME": None, "HOME": None},
    "spaces and symbols": {CACHE_ENV: None, "XDG_CACHE_HOME": None,
                           "HOME": "/home/Ann O'Neil $HOME \"q\" * ?"},
    "not ASCII": {CACHE_ENV: None, "XDG_CACHE_HOME": "/home/zoë/キャッシュ", "HOME": "/h"},
    "not UTF-8": {CACHE_ENV: b"/srv/caf\xe9\xff", "XDG_CACHE_HOME": None, "HOME": "/h"},
    "a newline": {CACHE_ENV: None, "XDG_CACHE_HOME": "/x/two\nlines", "HOME": "/h"},
    "longer than PATH_MAX": {CACHE_ENV: None, "XDG_CACHE_HOME": LONG, "HOME": "/h"},
    "long override": {CACHE_ENV: LONG, "XDG_CACHE_HOME": None, "HOME": "/h"},
}


@pytest.fixture(scope="module")
def stub_rule(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """stub.c built to print its cache folder (the same source build.spec compiles)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        part_missing("no C compiler to build packaging/onefile/stub.c (apt-get install gcc)")
    program = tmp_path_factory.mktemp("stub-rule") / "cache-root"
    built = subprocess.run([compiler, "-Wall", "-DSTUB_PRINT_CACHE_ROOT", "-o",
                            str(program), str(LAUNCHER_DIR / "stub.c")],
                           capture_output=True, text=True, timeout=120, check=False)
    assert built.returncode == 0, built.stderr
    return program


def environment(case: dict[str, str | bytes | None]) -> dict[bytes, bytes]:
    """This process's environment with the case's variables set or removed."""
    env = {key: value for key, value in os.environb.items()
           if key.decode(errors="replace") not in case}
    for name, value in case.items():
        if value is not None:
            env[name.encode()] = os.fsencode(value)
    return env


def folder(command: list[str], env: dict[bytes, bytes]) -> bytes:
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def same_folder(path: bytes) -> bytes:
    """The path with runs of slashes as one: Linux reads ``/x//y`` and ``/x/y`` alike.

    The stub joins strings as they come (``HOME=/`` gives ``//.cache/...``); Python's
    ``os.path`` drops a trailing slash first.
    """
    return re.sub(rb"/+", b"/", path)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_the_stub_and_the_launcher_name_the_same_cache_folder(stub_rule: Path,
                                                              case: str) -> None:
    env = environment(CASES[case])
    in_c = folder([str(stub_rule)], env)
    in_python = folder([sys.executable, "-c", PYTHON_RULE, str(LAUNCHER_DIR)], env)
    assert in_c, "the stub printed no folder"
    assert same_folder(in_c) == same_folder(in_python), (
        f"{case}: stub.c says {in_c!r}, launcher.py {in_python!r}; change both rules together")


def test_without_home_both_use_the_password_databases_folder(stub_rule: Path) -> None:
    env = environment(CASES["no home"])
    expected = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "desktop-agent",
                            "bundles")
    assert same_folder(folder([str(stub_rule)], env)) == same_folder(os.fsencode(expected))
