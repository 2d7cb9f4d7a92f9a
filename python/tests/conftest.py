"""Shared fixtures: the `tensortune` binary the CLI comparisons run (TT_CLI, set by ctest; else
the build tree's), and a scratch directory per test."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TT_CLI", str(ROOT / "build" / "cli" / "tensortune"))
    if not os.path.exists(path):
        pytest.skip(f"the tensortune binary is not at {path} (set TT_CLI)")

    def run(*args, parse_json=False):
        done = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if parse_json else done.stdout

    return run


@pytest.fixture
def scratch(tmp_path):
    return tmp_path
