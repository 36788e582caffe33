#!/bin/bash
# HEALTHCHECK of the reelfarm image, for every role. A process serving the api (`serve
# api` or `serve all`) must answer GET /healthz with 200 on the port of REELFARM_LISTEN;
# worker and notifier have no HTTP port and are healthy while their process runs (they
# exit, and the container with them, when a backend they need fails for good).
set -uo pipefail

api=0 running=0
for cmdline in /proc/[0-9]*/cmdline; do
  args=$(tr '\0' ' ' 2>/dev/null <"$cmdline") || continue
  case "$args" in
    *reelfarm*" serve api "* | *reelfarm*" serve all "*) api=1 running=1 ;;
    *reelfarm*" serve "*) running=1 ;;
  esac
done
((running)) || { echo "no reelfarm serve process" >&2; exit 1; }
((api)) || exit 0

listen=${REELFARM_LISTEN:-127.0.0.1:8080}
port=${listen##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "nothing listens on port $port" >&2; exit 1; }
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
IFS=' ' read -r _ status _ <&3
[[ $status == 200 ]] || { echo "/healthz answered ${status:-nothing}" >&2; exit 1; }
