#!/usr/bin/env bash
# Makes ddprun's artifacts in dist/, with no network, from a portable build (made in
# BUILD_DIR when it is not one already), and checks each:
#   ddprun-<version>-linux-<arch> and its .sha256: the one file to copy to every node
#   ddprun_<version>_<debarch>.deb: `apt-get install ./dist/ddprun_*.deb`
#   ddprun-<version>-py3-none-<platform>.whl: `pip install --no-index dist/ddprun-*.whl`
# Usage: scripts/package.sh [BUILD_DIR]   (default build-portable)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-portable}
need() {
  command -v "$1" >/dev/null || { echo "package.sh: $1 is missing: apt-get install $2" >&2; exit 1; }
}
need cmake cmake
need dpkg-deb dpkg
need /usr/bin/python3 python3
/usr/bin/python3 -c "import setuptools, wheel" 2>/dev/null ||
  { echo "package.sh: python3's setuptools or wheel is missing: apt-get install python3-setuptools python3-wheel" >&2; exit 1; }

if ! "$dir/launcher/ddprun" --version 2>/dev/null | grep -q portable; then
  scripts/build.sh "$dir" -DCMAKE_BUILD_TYPE=Release -DDDPRUN_PORTABLE=ON -DDDPRUN_BUILD_TESTS=OFF
fi
binary="$dir/launcher/ddprun"
version=$("$binary" --version | awk '{print $2}')
arch=$(uname -m)
mkdir -p dist
file="ddprun-$version-linux-$arch"
cp "$binary" "dist/$file"
(cd dist && sha256sum "$file" > "$file.sha256")

(cd "$dir" && cpack -G DEB >/dev/null)
deb=$(ls dist/ddprun_"$version"_*.deb)
scripts/check_deb.sh "$deb"

scripts/make_wheel.sh "$binary" "$version" dist
echo "package.sh: in dist/:"
(cd dist && ls -l --block-size=K "$file" "$file.sha256" "$(basename "$deb")" ddprun-"$version"-*.whl |
  awk '{print "  " $5 "  " $9}')
