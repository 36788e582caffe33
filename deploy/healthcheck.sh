#!/bin/bash
# HEALTHCHECK of the reelfarm image, for every role: GET /healthz must answer 200. A
# process serving the api (`serve api` or `serve all`) answers on the port of
# REELFARM_LISTEN; a worker or notifier on the port of REELFARM_OPS_LISTEN, and without
# that key it is healthy while its process runs (it exits, and the container with it,
# when a backend it needs fails for good).
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
if ((api)); then
  listen=${REELFARM_LISTEN:-127.0.0.1:8080}
else
  listen=${REELFARM_OPS_LISTEN:-}
  [[ -n $listen ]] || exit 0
fi

port=${listen##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "nothing listens on port $port" >&2; exit 1; }
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
IFS=' ' read -r _ status _ <&3
[[ $status == 200 ]] || { echo "/healthz answered ${status:-nothing}" >&2; exit 1; }
