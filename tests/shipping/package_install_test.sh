#!/usr/bin/env bash
# The package on a fresh minimal Debian (debootstrap minbase, then chroot), as an operator
# installs it: `apt-get install ./tensortune_*.deb` pulls its dependencies from the archive;
# there `tensortune --help`, `tensortune demo --trials 4` and `import tensortune` work, the
# systemd units pass `systemd-analyze verify` against the installed binary, and `apt-get remove`
# leaves no file behind (the root's files after install, use and remove are those before).
#   package_install_test.sh REPO WORKDIR
set -euo pipefail
repo=$1
work_root=$2
source "$repo/tests/shipping/common.sh"
need_root_and debootstrap unshare systemd-analyze
deb=$(package_path)
rootfs_tar=$(cached_debian_rootfs)

root=$work_root/install-root
rm -rf "$root"
mkdir -p "$root"
trap 'rm -rf "$root"' EXIT
tar -C "$root" --numeric-owner -xf "$rootfs_tar"
cp /etc/resolv.conf "$root/etc/resolv.conf"
install -m 644 "$deb" "$root/tmp/"
deb_in_root=/tmp/$(basename "$deb")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# Each command in the root runs in a mount namespace of its own with /proc mounted (the device
# server's workers are /proc/self/exe), so nothing stays mounted whatever happens.
in_root() {
  # A clean environment, as an operator's login shell in that root would have.
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    unshare --mount --fork sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" sh -c "$1"' \
    "$root" "$1"
}
# The root's files, less what apt, dpkg and the kernel keep changing.
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp \
    -o -path ./run -o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/lib/dpkg \
    -o -path ./var/log \) -prune -o -print | sort)
}

echo "== install with its dependencies (and systemd, for verify)"
in_root "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  --no-install-recommends $deb_in_root systemd" >"$work_root/apt-install.log" 2>&1 ||
  { tail -20 "$work_root/apt-install.log"; fail "apt-get install $deb_in_root"; }
grep -E "newly installed" "$work_root/apt-install.log"
in_root "dpkg-query -W -f='\${Status} \${Version}\n' tensortune" | grep -q "install ok installed" ||
  fail "dpkg does not list tensortune as installed"
# Remove and snapshot, so that the dependencies' own files are in the reference; then the
# second install is the one whose traces must all go.
in_root "apt-get remove -y -q tensortune" >/dev/null 2>&1 || fail "the first apt-get remove failed"
before=$(snapshot)
in_root "apt-get install -y -q --no-install-recommends $deb_in_root" >/dev/null 2>&1 ||
  fail "the second install failed"

echo "== use it"
in_root "tensortune --help" | head -3
package_version=$(dpkg-deb -f "$deb" Version)
[[ $(in_root "tensortune --version") == "tensortune $package_version" ]] ||
  fail "tensortune --version says '$(in_root "tensortune --version")', the package $package_version"
in_root "cd /tmp && tensortune demo --trials 4" >"$work_root/demo.log" 2>&1 ||
  { tail -20 "$work_root/demo.log"; fail "tensortune demo --trials 4 in the fresh root"; }
grep -q "with the demo's records" "$work_root/demo.log" ||
  { tail -20 "$work_root/demo.log"; fail "the demo did not reach its compiled network"; }
tail -4 "$work_root/demo.log" | head -2
# As root, as an operator would: Python then writes bytecode beside the module.
version=$(in_root "python3 -c 'import tensortune; print(tensortune.__version__)'") ||
  fail "python3 -c 'import tensortune'"
echo "import tensortune: version $version"
[[ $version == "$package_version" ]] || fail "tensortune.__version__ $version, the package $package_version"
[[ -d $root/usr/lib/python3/dist-packages/tensortune/__pycache__ ]] ||
  fail "no bytecode beside the module after an import as root (the removal check expects some)"
in_root "python3 -c 'import tensortune; tensortune.ConfigSpace; tensortune.extract_tasks'" ||
  fail "the Python module lacks its API"

echo "== systemd-analyze verify"
for unit in tensortune-tracker.service tensortune-device@x86-avx512.service; do
  systemd-analyze verify --root="$root" "$unit" || fail "systemd-analyze verify $unit"
  echo "$unit: verified"
done

echo "== remove"
in_root "apt-get remove -y -q tensortune" >/dev/null 2>&1 || fail "apt-get remove tensortune"
in_root "dpkg-query -W -f='\${Status}\n' tensortune 2>/dev/null" | grep -q "not-installed\|deinstall" ||
  fail "tensortune is still installed"
after=$(snapshot)
left=$(comm -13 <(echo "$before") <(echo "$after"))
gone=$(comm -23 <(echo "$before") <(echo "$after"))
[[ -z $left ]] || fail "apt-get remove left files behind: $(echo "$left" | head -20 | tr '\n' ' ')"
[[ -z $gone ]] || fail "install, use and remove took files away: $(echo "$gone" | head -20 | tr '\n' ' ')"
echo "ok: installed, used and removed with no file left ($(echo "$before" | wc -l) paths compared)"
