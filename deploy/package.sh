#!/usr/bin/env bash
# package.sh [--out DIR]                      build the Debian package
# package.sh --test [--deb FILE] [--keep]      install it into a clean Debian 12
#                                              chroot and check it (slow)
# package.sh --fast-test BUILDDIR              the install layout of a meson
#                                              build dir (seconds; a meson test)
#
# Build: copies the working tree (tracked and untracked files, not ignored
# ones, not build dirs) to a temporary directory and runs
# `dpkg-buildpackage -b -us -uc` there (debian/: release build, no tests),
# with DEB_BUILD_OPTIONS=parallel=$JOBS (default 2). The .deb, the -dbgsym
# .deb, .buildinfo and .changes go to --out (default ./dist). Installs the
# packaging tools it needs (debhelper, dpkg-dev, help2man) when missing: they
# are not in deploy/install-deps.sh because CI does not build packages; the
# libraries come from install-deps.sh (dpkg-checkbuilddeps names any missing).
#
# --test: debootstrap (minbase) of Debian 12 from $DEBIAN_MIRROR (default
# http://deb.debian.org/debian) into a temporary root, cached as a tarball in
# $SPINNIC_CHROOT_CACHE (default /var/cache/spinnic-package) so that later runs
# start from the same clean base in seconds; then apt-get installs the .deb
# (newest in ./dist unless --deb) with its dependencies from the archive, and
# checks: spinnicd --version, spinctl --help, man -w for the three man pages,
# the unit in /lib/systemd/system naming /usr/bin and /etc/spinnic,
# `systemd-analyze verify --root` of the installed unit (the host's
# systemd-analyze), the config is a conffile and passes --check_config, and
# spinnicd runs the packaged config for 3 s (proc, sys and dev bind-mounted,
# unmounted before the root is removed). --keep leaves the root for a look.
# Needs root. docs/package.md has the figures of a run.
#
# --fast-test BUILDDIR: `meson install --destdir` of a built tree into a temp
# dir, then the unit's ExecStart and config paths must be the installed binary
# and config, and `systemd-analyze verify --root` must pass (skipped, with a
# message, without systemd-analyze).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
CACHE=${SPINNIC_CHROOT_CACHE:-/var/cache/spinnic-package}
JOBS=${JOBS:-2}

mode=build
out=$REPO/dist
deb=
keep=0
builddir=
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --test) mode=test; shift ;;
    --deb) deb=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --fast-test) mode=fast; builddir=${2:?--fast-test needs a meson build dir}; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "package: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf 'package: %s\n' "$*"; }
die() { printf 'package: %s\n' "$*" >&2; exit 1; }

need_root() {
  [[ $(id -u) -eq 0 ]] || die "$1 needs root: run it as root (sudo $0 ...)"
}

# apt_install PKG...: the missing ones, from Debian's archive.
apt_install() {
  local missing=() p status
  for p in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ $status == installed ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  need_root "installing ${missing[*]}"
  say "installing ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=900 update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# unit_check ROOT: the unit under ROOT names the binary and config that are
# there, and systemd-analyze accepts it.
unit_check() {
  local root=$1 unit exec_path config
  local d
  unit=
  for d in lib usr/lib usr/local/lib; do
    if [[ -f $root/$d/systemd/system/spinnicd.service ]]; then
      unit=$root/$d/systemd/system/spinnicd.service
      break
    fi
  done
  [[ -n $unit ]] || die "no spinnicd.service installed under $root ({,usr/,usr/local/}lib/systemd/system)"
  exec_path=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
  config=$(sed -n 's/^ConditionPathExists=//p' "$unit")
  [[ -x $root$exec_path ]] || die "the unit runs $exec_path, which is not installed"
  [[ -f $root$config ]] || die "the unit reads $config, which is not installed"
  grep -q "^ExecStartPre=$exec_path --check_config --config $config\$" "$unit" ||
    die "the unit's ExecStartPre does not check $config with $exec_path"
  grep -q "^ExecStart=$exec_path --config $config\$" "$unit" ||
    die "the unit's ExecStart does not run $config"
  say "unit ${unit#"$root"}: ExecStart $exec_path, config $config: installed"
  if ! command -v systemd-analyze >/dev/null; then
    say "SKIP systemd-analyze verify: systemd-analyze is not installed"
    return 0
  fi
  # Verified on the host, as a copy whose paths point into ROOT: ROOT need not
  # hold systemd's own units (a destdir, a minimal chroot).
  local dir
  dir=$(mktemp -d)
  sed -e "/^[A-Z]/s|$exec_path|$root$exec_path|g" -e "/^[A-Z]/s|$config|$root$config|g" \
    "$unit" >"$dir/spinnicd.service"
  # Any warning fails: an unknown directive is only a warning (exit 0).
  # --man=no: Documentation='s pages are outside this root's MANPATH (the
  # chroot test checks them with man -w).
  if ! systemd-analyze verify --man=no "$dir/spinnicd.service" >"$dir/log" 2>&1 || [[ -s $dir/log ]]; then
    sed 's/^/    /' "$dir/log" >&2
    rm -rf "$dir"
    die "systemd-analyze verify rejects the installed unit (above)"
  fi
  rm -rf "$dir"
  say "systemd-analyze verify (host's systemd, paths under $root): ok"
}

# --- --fast-test -------------------------------------------------------------
if [[ $mode == fast ]]; then
  [[ -f $builddir/build.ninja ]] || die "$builddir is not a meson build dir"
  stage=$(mktemp -d /tmp/spinnic-fasttest.XXXXXX)
  trap 'rm -rf "$stage"' EXIT
  meson install -C "$builddir" --no-rebuild --quiet --destdir "$stage" >/dev/null
  unit_check "$stage"
  for page in spinnicd spinctl spinnic-impair; do
    if ! find "$stage" -name "$page.1" | grep -q .; then
      say "no man page $page.1 (help2man not installed: -Dman=auto skips them)"
    fi
  done
  say "fast test: ok"
  exit 0
fi

# --- build -----------------------------------------------------------------------
if [[ $mode == build ]]; then
  apt_install debhelper dpkg-dev help2man
  cd "$REPO"
  dpkg-checkbuilddeps ||
    die "install the build dependencies above (bash deploy/install-deps.sh has them)"
  version=$(dpkg-parsechangelog -S Version)
  meson_version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" meson.build | head -1)
  [[ $version == "$meson_version" ]] ||
    die "debian/changelog is at $version but meson.build at $meson_version: add a changelog entry (dch -v $meson_version)"
  work=$(mktemp -d /tmp/spinnic-package.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  src=$work/spinnic-$version
  mkdir -p "$src"
  # Tracked and untracked files, as in the working tree; never build dirs.
  git ls-files -z --cached --others --exclude-standard |
    grep -zv -E '^(build[^/]*|dist|obj-[^/]*)/' |
    xargs -0 tar -cf - | tar -xf - -C "$src"
  say "building spinnic $version in $src (parallel=$JOBS)"
  start=$(date +%s)
  (cd "$src" && DEB_BUILD_OPTIONS="parallel=$JOBS${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" \
      dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log" >&2
    die "dpkg-buildpackage failed (the last 40 lines are above)"
  }
  seconds=$(($(date +%s) - start))
  mkdir -p "$out"
  cp "$work/build.log" "$out/spinnic_${version}_build.log"
  for f in "$work"/*.deb "$work"/*.ddeb "$work"/*.buildinfo "$work"/*.changes; do
    [[ -e $f ]] && cp "$f" "$out/"
  done
  say "built in ${seconds} s; in $out:"
  (cd "$out" && ls -l --block-size=K ./*"_${version}_"*)
  for f in "$out"/spinnic_"${version}"_*.deb; do
    dpkg-deb --contents "$f" | awk '{print "  " $6}' | grep -v '/$'
  done
  exit 0
fi

# --- --test: a clean Debian 12 chroot --------------------------------------------
need_root "--test (debootstrap, chroot)"
apt_install debootstrap
if [[ -z $deb ]]; then
  deb=$(ls -t "$out"/spinnic_*_amd64.deb 2>/dev/null | head -1 || true)
  [[ -n $deb ]] || die "no package in $out: build one first (bash deploy/package.sh)"
fi
[[ -f $deb ]] || die "$deb does not exist"

root=$(mktemp -d /tmp/spinnic-chroot.XXXXXX)
mounts=()
cleanup() {
  local m i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    umount -l "$m" 2>/dev/null || true
  done
  if [[ $keep -eq 1 ]]; then
    say "kept the root in $root (proc/sys/dev unmounted)"
    return
  fi
  # Never remove through a mount that is still there (it would be the host's).
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "package: something is still mounted under $root; not removing it" >&2
    return
  fi
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
bind() {
  mkdir -p "$root$1"
  mount --bind "$1" "$root$1"
  mounts+=("$root$1")
}
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
# The root's apt runs as root: its _apt user cannot read a temp dir's files.
APT=(apt-get -q -o APT::Sandbox::User=root)

base=$CACHE/bookworm-minbase.tar.gz
start=$(date +%s)
if [[ ! -f $base ]]; then
  say "debootstrap --variant=minbase bookworm from $MIRROR (once; cached in $base)"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.debootstrap.log" 2>&1 || {
    tail -20 "$root.debootstrap.log" >&2
    die "debootstrap failed (is $MIRROR reachable? set DEBIAN_MIRROR)"
  }
  rm -f "$root.debootstrap.log"
  tar -C "$root" -czf "$base.tmp" . && mv "$base.tmp" "$base"
else
  say "clean Debian 12 root from $base"
  tar -C "$root" -xzf "$base"
fi
cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
bind /proc
bind /sys
bind /dev
say "root ready after $(($(date +%s) - start)) s"

cp "$deb" "$root/tmp/"
start=$(date +%s)
in_root "${APT[@]}" update >/dev/null
# man-db for `man -w`; the package brings everything else.
in_root env DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y \
  "/tmp/$(basename "$deb")" man-db >"$root/tmp/install.log" 2>&1 || {
  tail -30 "$root/tmp/install.log" >&2
  die "apt-get install of $(basename "$deb") in the clean root failed"
}
say "installed $(basename "$deb") with its dependencies in $(($(date +%s) - start)) s" \
  "($(grep -c '^Setting up' "$root/tmp/install.log") packages)"

check() {  # check DESCRIPTION COMMAND...: run in the root, show its output
  local desc=$1
  shift
  say "\$ $desc"
  if ! in_root "$@" 2>&1 | sed 's/^/    /'; then
    die "FAILED: $desc"
  fi
}
set -o pipefail
check "spinnicd --version" spinnicd --version
check "spinctl --version" spinctl --version
check "spinctl --help | head -5" sh -c 'spinctl --help | head -5'
check "man -w spinnicd spinctl spinnic-impair" man -w spinnicd spinctl spinnic-impair
check "man spinnicd | head -12" sh -c 'MANWIDTH=80 man spinnicd 2>/dev/null | head -12'
check "dpkg-query conffiles" dpkg-query -W -f='${Conffiles}\n' spinnic
in_root dpkg-query -W -f='${Conffiles}\n' spinnic | grep -q '/etc/spinnic/spinnic.textproto' ||
  die "/etc/spinnic/spinnic.textproto is not a conffile"
check "ls /usr/share/doc/spinnic/examples" ls /usr/share/doc/spinnic/examples
unit_check "$root"
[[ -e $root/etc/systemd/system/multi-user.target.wants/spinnicd.service ]] &&
  die "the package enabled spinnicd.service; it must wait for the operator"
check "spinnicd --check_config --config /etc/spinnic/spinnic.textproto" \
  spinnicd --check_config --config /etc/spinnic/spinnic.textproto
mkdir -p "$root/run/spinnic"
check "spinnicd --config /etc/spinnic/spinnic.textproto --duration_s 3 (last lines)" \
  sh -c 'spinnicd --config /etc/spinnic/spinnic.textproto --duration_s 3 >/tmp/run.log 2>&1
          rc=$?; tail -6 /tmp/run.log; exit $rc'
say "installed size: $(in_root dpkg-query -W -f='${Installed-Size}' spinnic) KiB"
say "chroot test: ok"
