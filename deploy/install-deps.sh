#!/usr/bin/env bash
# install-deps.sh [--check]
#
# Installs, from Debian 12's archive, exactly what building spinnic, running its
# tests and the quick start need. Idempotent: packages already installed are
# skipped, and `apt-get update` runs only when something is missing.
# --check only lists what is missing (exit 1 if anything is).
#
# Needs root (or sudo). Hugepages are not needed: the configs use --no-huge.
set -euo pipefail

packages=(
  # toolchain and build
  g++ gcc meson ninja-build pkg-config
  # DPDK 22.11 (libdpdk-dev also pulls every PMD; the ones spinnic's configs
  # and tests load at run time are named explicitly)
  dpdk dpdk-dev libdpdk-dev
  librte-net-af-packet23 librte-net-null23 librte-net-ring23 librte-mempool-ring23
  # ISA-L's CRC32 (the zero-copy ICRC); libdpdk-dev pulls it, named because we
  # include its headers
  libisal-dev
  # control plane, config schema
  libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  # the Prometheus endpoint (--metrics_listen; prometheus-cpp's pull library
  # with civetweb) and systemd's Type=notify (sd_notify)
  prometheus-cpp-dev libsystemd-dev
  # net_pcap, unit tests, micro-benchmarks
  libpcap-dev libgtest-dev libgmock-dev libbenchmark-dev
  # eBPF handlers: libelf reads a program, clang builds the examples
  libelf-dev clang
  # instructions per iteration of the micro-benchmarks (bench/micro/callgrind.sh)
  valgrind
  # the control API's TLS tests make their certificates with the openssl CLI
  openssl
  # the capture test reads spinctl capture's pcapng back with tcpdump -r
  tcpdump
  # quick start and integration tests: namespaces + veth (ip), sysctl (procps),
  # checksum offload off (ethtool), ping, traffic/JSON helpers (python3),
  # timeout/sha256sum/mktemp (coreutils)
  iproute2 procps ethtool iputils-ping python3 coreutils
  # line-rate harness plots (bench/linerate/run; JSON and Markdown work without)
  python3-matplotlib
  # the k8s_manifest test parses deploy/k8s/*.yaml (docs/scale-out.md)
  python3-yaml
)

check_only=0
[[ ${1:-} == --check ]] && check_only=1

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [[ $check_only -eq 1 ]]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}), and installing them needs root:" >&2
    echo "install-deps: run this script as root (sudo is not available)." >&2
    exit 1
  fi
fi
command -v apt-get >/dev/null || { echo "install-deps: apt-get not found: this script is for Debian 12" >&2; exit 1; }

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=900 update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q \
  --no-install-recommends "${missing[@]}"

# Verify: a package that did not install is an error, not a later mystery.
still=()
for p in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || still+=("$p")
done
if [[ ${#still[@]} -gt 0 ]]; then
  echo "install-deps: failed to install: ${still[*]}" >&2
  exit 1
fi
echo "install-deps: done"
