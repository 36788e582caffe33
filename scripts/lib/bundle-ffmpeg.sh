# Sourced by scripts/package: ffmpeg's libraries built for the bundle alone.
#
# Debian's ffmpeg is built with every codec, format, filter and device it knows, and its
# libraries pull in 160 others (ICU, codec2, x265, librsvg, LAPACK, flite's voices…):
# most of the bundle's weight, for nothing reelfarm runs. This builds the same ffmpeg
# (Debian's source package of the installed version, its patches applied) with only what
# reelfarm opens: the decoders of `worker/src/media/decoders.rs`, the demuxers of
# `ALLOWED_DEMUXERS`, the encoders and muxers of the renders and conversions, and the
# filters of the GIF path. Same version, same sonames and symbol versions, so the release
# binary, compiled against Debian's headers, runs on these libraries unchanged.
#
# The build is kept in target/bundle-ffmpeg/<version>-<hash of the configuration>/ and
# made again only when the installed version or the lists below change.

# What the build needs beyond the packages of scripts/setup: the assembler of ffmpeg's
# SIMD code and the headers of the external libraries it links.
bundle_ffmpeg_packages=(dpkg-dev nasm zlib1g-dev libx264-dev libvpx-dev libopus-dev libmp3lame-dev libdav1d-dev)

# The components, by configure's names: besides what the code opens by name, the parsers
# and bitstream filters its demuxers and muxers call on, and the filters a graph inserts
# or may (format conversion, audio) — kept rather than risk a graph that cannot be built.
bundle_ffmpeg_decoders=(
  h264 hevc vp8 vp9 libdav1d libvpx_vp8 libvpx_vp9 mpeg4 mpeg1video mpeg2video
  msmpeg4v1 msmpeg4v2 msmpeg4v3 wmv1 wmv2 wmv3 vc1 flv h263 h263p mjpeg prores dnxhd
  theora png
  aac aac_fixed aac_latm mp1 mp1float mp2 mp2float mp3 mp3float flac vorbis opus wmav1
  wmav2 wmapro wmalossless alac ac3 ac3_fixed eac3
  pcm_s8 pcm_u8 pcm_s16le pcm_s16be pcm_s24le pcm_s24be pcm_s32le pcm_s32be pcm_f32le
  pcm_f32be pcm_f64le pcm_f64be pcm_alaw pcm_mulaw
)
bundle_ffmpeg_encoders=(libx264 libvpx_vp9 prores_ks aac libopus libmp3lame gif)
bundle_ffmpeg_demuxers=(mov matroska flv asf mpegps mpegts avi mp3 wav flac ogg aiff aac m4v)
bundle_ffmpeg_muxers=(mp4 ipod mov webm matroska gif mp3)
bundle_ffmpeg_parsers=(
  h264 hevc vp8 vp9 av1 mpeg4video mpegvideo vc1 h263 mjpeg png dnxhd aac aac_latm
  mpegaudio flac vorbis opus ac3
)
bundle_ffmpeg_bsfs=(
  aac_adtstoasc h264_mp4toannexb hevc_mp4toannexb vp9_superframe vp9_superframe_split
  extract_extradata av1_frame_split null
)
bundle_ffmpeg_filters=(
  buffer buffersink abuffer abuffersink palettegen paletteuse format aformat scale
  aresample null anull split
)

# A list's words joined by commas, as configure takes them.
bundle_ffmpeg_list() {
  local IFS=,
  printf '%s' "$*"
}

# Prints the directory holding the built libraries (lib/), building them first when
# needed. Logs go to stderr; fails (status 1) unless the build is complete.
bundle_ffmpeg() {
  local version key root src build prefix
  version=$(dpkg-query -W -f '${source:Version}' libavcodec-dev 2>/dev/null) || true
  [[ -n "$version" ]] || { log "libavcodec-dev is not installed: no ffmpeg version to build"; return 1; }
  # Debian's hardening flags (stack protector, fortify, RELRO), as its own build has them:
  # these libraries parse untrusted uploads.
  local configure=(--enable-shared --disable-static --enable-pic --toolchain=hardened
    --disable-programs --disable-doc --disable-avdevice --disable-postproc
    --disable-network --disable-autodetect --disable-everything --disable-debug
    --enable-pthreads --enable-gpl --enable-zlib --enable-libx264 --enable-libvpx
    --enable-libopus --enable-libmp3lame --enable-libdav1d
    --enable-protocol=file
    --enable-decoder="$(bundle_ffmpeg_list "${bundle_ffmpeg_decoders[@]}")"
    --enable-encoder="$(bundle_ffmpeg_list "${bundle_ffmpeg_encoders[@]}")"
    --enable-demuxer="$(bundle_ffmpeg_list "${bundle_ffmpeg_demuxers[@]}")"
    --enable-muxer="$(bundle_ffmpeg_list "${bundle_ffmpeg_muxers[@]}")"
    --enable-parser="$(bundle_ffmpeg_list "${bundle_ffmpeg_parsers[@]}")"
    --enable-bsf="$(bundle_ffmpeg_list "${bundle_ffmpeg_bsfs[@]}")"
    --enable-filter="$(bundle_ffmpeg_list "${bundle_ffmpeg_filters[@]}")"
    --extra-version=reelfarm-bundle)
  # One build per version and configuration: a component added to a list builds anew.
  key=$(printf '%s\n' "$version" "${configure[@]}" | sha256sum | cut -c1-12)
  root="$PWD/target/bundle-ffmpeg/${version//[:~+]/_}-$key"
  prefix="$root/prefix"
  # A finished build is reused only while its files are what it made: `.complete` holds
  # the hash of every file and the target of every link under the prefix (libraries,
  # CONFIGURATION), made when the build ended and compared again each time.
  if [[ -f "$prefix/.complete" ]]; then
    if [[ "$(bundle_ffmpeg_manifest "$prefix")" == "$(cat "$prefix/.complete")" ]]; then
      printf '%s\n' "$prefix/lib"
      return
    fi
    log "the ffmpeg build in $root is not what it made (its manifest differs): building it again"
  fi
  log "building ffmpeg $version for the bundle in $root (a few minutes)"
  install_missing_packages "${bundle_ffmpeg_packages[@]}" >&2 || return 1
  # One build is kept: this one replaces any other version's or configuration's.
  rm -rf "$PWD/target/bundle-ffmpeg"
  mkdir -p "$root" || return 1
  # Debian's source package of the installed version: its sources and patches, checked
  # against the archive's signatures by apt.
  if ! apt-get source --print-uris ffmpeg="$version" >/dev/null 2>&1; then
    [[ -f /etc/apt/sources.list.d/debian.sources ]] ||
      { log "no /etc/apt/sources.list.d/debian.sources to add Debian's source archive from"; return 1; }
    log "adding Debian's source archive to apt (deb-src of the configured suites)"
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
      >/etc/apt/sources.list.d/reelfarm-debian-src.sources || return 1
    apt-get update -qq >&2 || return 1
  fi
  (cd "$root" && apt-get source -qq -o APT::Sandbox::User=root --only-source ffmpeg="$version" >/dev/null) ||
    { log "ffmpeg $version's source package could not be fetched (use --ffmpeg system)"; return 1; }
  src=$(find "$root" -mindepth 1 -maxdepth 1 -type d -name 'ffmpeg-*' | head -n 1)
  [[ -d "$src" ]] || { log "no ffmpeg source unpacked in $root"; return 1; }
  build="$root/build"
  mkdir -p "$build" || return 1
  (
    cd "$build" || exit 1
    "$src/configure" --prefix="$prefix" "${configure[@]}" >"$root/configure.log" 2>&1 ||
      { tail -n 20 "$root/configure.log" >&2; exit 1; }
    grep -q '^#define HAVE_THREADS 1' config.h || { log "configure left ffmpeg without threads"; exit 1; }
    # Minutes of compiling: say how far it got every 30 s (its own output goes to the log).
    log "compiling ffmpeg on $(nproc) cores (log: $root/make.log)"
    make -j"$(nproc)" >"$root/make.log" 2>&1 &
    maker=$!
    ticks=0
    while kill -0 "$maker" 2>/dev/null; do
      sleep 1
      if ((++ticks % 30 == 0)); then log "… $(grep -c '^CC' "$root/make.log") files compiled"; fi
    done
    wait "$maker" || { tail -n 30 "$root/make.log" >&2; exit 1; }
    make install >>"$root/make.log" 2>&1 || { tail -n 30 "$root/make.log" >&2; exit 1; }
  ) || return 1
  compgen -G "$prefix/lib/libavcodec.so.*" >/dev/null || { log "the build installed no libavcodec"; return 1; }
  # What a user of the bundle needs to rebuild these libraries (GPL: the source is Debian's).
  printf 'ffmpeg %s (Debian source package), configured with:\n%s\n' "$version" "${configure[*]}" \
    >"$prefix/CONFIGURATION" || return 1
  bundle_ffmpeg_manifest "$prefix" >"$prefix/.complete.new" && mv "$prefix/.complete.new" "$prefix/.complete" ||
    return 1
  printf '%s\n' "$prefix/lib"
}

# The SHA-256 of every file and the target of every link under the build's prefix but
# its manifest, sorted: what `.complete` records.
bundle_ffmpeg_manifest() {
  (
    cd "$1" || exit 1
    find . -path ./.complete -prune -o -path ./.complete.new -prune -o -type f -print0 | sort -z |
      xargs -0 -r sha256sum
    find . -type l -printf '%p -> %l\n' | sort
  )
}
