#!/usr/bin/env bash
# A farm from a fresh clone, one command per host (installs what is missing and builds first):
#   scripts/farm.sh tracker                     # on the tracker host: makes farm/ with named
#                                               # tokens, starts the tracker (9190) and its
#                                               # dashboard (http://HOST:9191/)
#   scripts/farm.sh device HOST:9190 TOKENFILE [KEY] [-- device flags...]
#                                               # on each device host (KEY: x86-avx512 by
#                                               # default; `-- --gpus 0,1` for a GPU server)
# The tracker prints the device and client token files to copy to the other hosts. For
# services that restart by themselves use deploy/ (systemd, compose, Kubernetes:
# docs/deploy.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/build/cli/tensortune"
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 ]] || usage
role=$1
shift
"$root/scripts/build.sh" --target tensortune >/dev/null
case "$role" in
  tracker)
    dir="$root/farm"
    mkdir -p "$dir"
    umask 077
    token() { head -c 24 /dev/urandom | base64 | tr '+/' '-_'; }
    if [[ ! -f "$dir/tokens" ]]; then
      device=$(token) client=$(token) admin=$(token)
      # The users build kernels on their own cores (the default for CUDA tasks), which the
      # devices then run: the builder role beside client (docs/security.md).
      printf 'devices device %s\nusers client+builder %s\nops admin %s\n' "$device" "$client" "$admin" \
        > "$dir/tokens"
      printf '%s\n' "$device" > "$dir/device.token"
      printf '%s\n' "$client" > "$dir/client.token"
      printf '%s\n' "$admin" > "$dir/admin.token"
    fi
    echo "farm: tokens in $dir: copy device.token to the device hosts, client.token to users;"
    echo "farm: sign in to the dashboard with client.token; reload tokens with kill -HUP"
    exec "$bin" tracker --port 9190 --db "$dir/tracker.db" --tokens-file "$dir/tokens" \
      --metrics-port 9191 "$@"
    ;;
  device)
    [[ $# -ge 2 ]] || usage
    tracker=$1 token_file=$2
    shift 2
    key=
    if [[ $# -ge 1 && $1 != "--" ]]; then key=$1; shift; fi
    [[ ${1:-} == "--" ]] && shift
    # A GPU server's key defaults to cuda-smXY of its GPUs; a CPU server's to x86-avx512.
    [[ -z $key && " $* " != *" --gpus "* ]] && key=x86-avx512
    exec "$bin" device --tracker "$tracker" ${key:+--key "$key"} --token-file "$token_file" "$@"
    ;;
  *) usage ;;
esac
