#!/usr/bin/env bash
# Installs what ddprun needs to build, test and benchmark, from Debian's packages.
# Idempotent: installs only what is missing, and runs apt-get update only then.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libboost-dev libboost-program-options-dev libspdlog-dev nlohmann-json3-dev libsodium-dev
  libsqlite3-dev libgtest-dev libgmock-dev
  clang libclang-rt-14-dev            # libFuzzer targets and sanitizer runtimes
  clang-tidy                          # scripts/tidy.sh, the checks in .clang-tidy
  python3-torch                       # the reference torchrun and real DDP jobs
  python3-setuptools python3-wheel python3-venv python3-pip  # scripts/package.sh's wheel
  iproute2 procps time                # multi-host tests, process checks, benchmarks
  chromium                            # the HTML report and the dashboard, checked headless
  libjs-dygraphs                      # the charts of the dashboard and report (built in)
  protobuf-compiler                   # decodes the TensorBoard files `runs export` writes, in a test
  etcd-server etcd-client             # the etcd rendezvous backend, tested against real etcd
  elfutils gdb                        # native stacks of hung workers (eu-stack; gdb as fallback)
  slurm-wlm munge                     # a real Slurm cluster on this machine for the tests
  openssh-server openssh-client       # --hostfile over real ssh (an sshd per loopback address)
  tcsh                                # its completion script is loaded in a test
  debootstrap                         # Debian roots with PyTorch 2.6 and 2.14 (scripts/torch_root.sh)
  prometheus                          # scrapes --metrics_port in a test; promtool checks the exposition
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
