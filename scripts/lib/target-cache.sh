# Sourced by scripts/test: a checkout without a `target/` gets one shared with every other
# checkout of this machine with the same Cargo.lock and toolchain, the way CI services
# cache `target/` (keyed by the lock file and rustc's version). A clean clone then builds
# only the workspace's own crates, not its 600 dependencies. A checkout that has its own
# `target/` directory keeps it; CARGO_TARGET_DIR, when set, wins over both.
#
# The caches live in REELFARM_TARGET_CACHE (default ~/.cache/reelfarm); the two most
# recently used are kept, older ones (a previous Cargo.lock) are removed.

link_target_cache() {
  [[ -z ${CARGO_TARGET_DIR:-} && ! -e target ]] || return 0
  local root=${REELFARM_TARGET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reelfarm}
  local key
  key=$({ cat Cargo.lock; rustc -vV; } | sha256sum | cut -c1-16)
  mkdir -p "$root/target-$key"
  touch "$root/target-$key"
  ln -s "$root/target-$key" target
  printf '[test] target/ -> %s (shared build cache)\n' "$root/target-$key" >&2
  # Older keys: everything but the two most recently used.
  find "$root" -mindepth 1 -maxdepth 1 -name 'target-*' -printf '%T@ %p\n' | sort -rn |
    tail -n +3 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
}
