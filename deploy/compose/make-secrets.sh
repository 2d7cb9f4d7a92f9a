#!/usr/bin/env bash
# Makes deploy/compose/secrets/: a tokens file (one device credential, one client, one admin)
# and the device's token file, each mode 0440, owned by root and the image's group (10001) so
# that the container's non-root user can read them and nobody else can (tensortune refuses a
# secret file others can read, and a group-readable one that root does not own).
#   sudo deploy/compose/make-secrets.sh
# Give the client token (secrets/client.token, for tune --token-file) to the farm's users.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)/secrets
mkdir -p "$dir"
token() { head -c 24 /dev/urandom | base64 | tr '+/' '-_'; }
device=$(token) client=$(token) admin=$(token)
umask 077
printf 'devices device %s\nusers client+builder %s\nops admin %s\n' "$device" "$client" "$admin" \
  > "$dir/tokens"
printf '%s\n' "$device" > "$dir/device.token"
printf '%s\n' "$client" > "$dir/client.token"
printf '%s\n' "$admin" > "$dir/admin.token"
if [[ $(id -u) -eq 0 ]]; then
  chown root:10001 "$dir/tokens" "$dir/device.token"
  chmod 0440 "$dir/tokens" "$dir/device.token"
else
  echo "make-secrets: not root: run 'sudo chown root:10001 $dir/tokens $dir/device.token &&" \
       "sudo chmod 0440 $dir/tokens $dir/device.token' so the containers can read them" >&2
fi
echo "make-secrets: wrote $dir (client token: $dir/client.token, admin: $dir/admin.token)"
