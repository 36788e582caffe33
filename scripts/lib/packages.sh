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

# Prints those of the packages "$@" that are not installed, one a line (all of them
# where dpkg is missing).
missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
  done
}

# Installs those of the packages "$@" that are missing with apt-get, as root or through
# sudo; apt's output is shown unless APT_QUIET=1. Without apt-get, or neither root nor
# sudo, it names the packages and the command to run, and fails.
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
  if [[ ${APT_QUIET:-0} == 1 ]]; then
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    "${as_root[@]}" apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
}
