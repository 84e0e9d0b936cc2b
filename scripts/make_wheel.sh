#!/usr/bin/env bash
# Makes the Python wheel: the portable ddprun on the venv's PATH, the tracking client
# importable (`import ddprun_tracking`), and both Python files where that ddprun looks
# for them (<venv>/share/ddprun/python). Built offline with Debian's setuptools and
# wheel, then checked in a fresh venv (`pip install --no-index`).
# Usage: scripts/make_wheel.sh PORTABLE_BINARY VERSION OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "$1")
version=$2
out=$(realpath "$3")
python=/usr/bin/python3
fail() { echo "make_wheel.sh: $*" >&2; exit 1; }
# The portable binary's floor is glibc 2.36: the platform tag says so to pip.
platform="manylinux_2_36_$(uname -m)"

stage=$(mktemp -d)
trap 'rm -rf "$stage" "$stage.log"' EXIT
mkdir "$stage/src" "$stage/job"
cp "$binary" "$stage/src/ddprun"
cp tracking/python/ddprun_tracking.py agent/python/sitecustomize.py "$stage/src/"
cat > "$stage/src/setup.py" <<PY
from setuptools import setup
from wheel.bdist_wheel import bdist_wheel


class PlatformWheel(bdist_wheel):
    """Any Python 3, one platform: the wheel holds a native program, no extension."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", "$platform"


setup(
    name="ddprun",
    version="$version",
    description="native drop-in replacement for PyTorch's torchrun and its elastic agent",
    py_modules=["ddprun_tracking"],
    # Not scripts=: setuptools would read the program as Python to fix its first line.
    data_files=[("bin", ["ddprun"]),
                ("share/ddprun/python", ["ddprun_tracking.py"]),
                ("share/ddprun/python/hook", ["sitecustomize.py"])],
    cmdclass={"bdist_wheel": PlatformWheel},
)
PY
(cd "$stage/src" && "$python" setup.py -q bdist_wheel -d "$out" > "$stage.log" 2>&1) ||
  fail "setup.py bdist_wheel failed: $(tail -5 "$stage.log")"
wheel="$out/ddprun-$version-py3-none-$platform.whl"
[ -f "$wheel" ] || fail "no $wheel was made"

# A fresh venv, offline: its ddprun is the wheel's, and its workers (the venv's python)
# log to the run through the wheel's client.
venv="$stage/venv"
"$python" -m venv "$venv" >/dev/null || fail "cannot make a venv: apt-get install python3-venv"
"$venv/bin/pip" install -q --no-index "$wheel" || fail "pip could not install $wheel"
[ -x "$venv/bin/ddprun" ] || fail "the wheel put no ddprun on the venv's PATH"
scripts/check_tracked_job.sh "$stage/job" "$venv/" "$venv" \
  env -u PYTHON_EXEC PATH="$venv/bin:/usr/bin:/bin" ddprun
echo "make_wheel.sh: $(basename "$wheel") installs offline into a fresh venv and runs a tracked job"
