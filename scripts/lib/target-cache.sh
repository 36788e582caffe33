# Sourced by scripts/test: a checkout without a `target/` directory of its own gets one
# shared with every other checkout of this machine, kept the way CI services cache
# `target/`: keyed by Cargo.lock and rustc's version, and when no cache has that key, the
# most recently used one is taken over (cargo rebuilds what changed). A clean clone then
# builds only the workspace's own crates, not its 600 dependencies. CARGO_TARGET_DIR,
# when set, wins; so does a checkout's own `target/` directory.
#
# The caches live in REELFARM_TARGET_CACHE (default ~/.cache/reelfarm); at most two are
# kept.

link_target_cache() {
  [[ -z ${CARGO_TARGET_DIR:-} ]] || return 0
  [[ -L target || ! -e target ]] || return 0
  local root=${REELFARM_TARGET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reelfarm}
  local key dir newest
  key=$({ cat Cargo.lock; rustc -vV; } | sha256sum | cut -c1-16)
  dir=$root/target-$key
  mkdir -p "$root"
  if [[ ! -d $dir ]]; then
    newest=$(find "$root" -mindepth 1 -maxdepth 1 -name 'target-*' -printf '%T@ %p\n' | sort -rn | head -1 | cut -d' ' -f2-)
    if [[ -n $newest ]]; then mv "$newest" "$dir"; else mkdir "$dir"; fi
  fi
  touch "$dir"
  ln -sfn "$dir" target
  printf '[test] target/ -> %s (shared build cache)\n' "$dir" >&2
  find "$root" -mindepth 1 -maxdepth 1 -name 'target-*' -printf '%T@ %p\n' | sort -rn |
    tail -n +3 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
}
