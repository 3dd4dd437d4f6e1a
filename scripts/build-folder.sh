# The one way a script gets a build folder (sourced, not run): a folder already configured
# is taken as it is — its generator, build type and options — and built; a new one is
# configured with Ninja when Ninja is installed, with CMake's default generator otherwise.
#   . scripts/build-folder.sh
#   lb_configure DIR [CMAKE_OPTION...]   configure DIR if it is new; an existing folder gets
#                                       the options (never a generator) and keeps the rest
#   lb_build DIR [TARGET...]             lb_configure DIR, then build TARGETs (all if none)
# A configure preset is given as --preset=NAME: it configures a new folder; an existing one
# keeps its own settings. Run from the repository root; LB_SOURCE_DIR names another source
# folder (the fuzz targets' project).

# DIR holds a configured build: a cache and the generator's own file (a configure that
# failed half-way leaves the cache alone, and is configured again).
lb_configured() {
  [ -f "$1/CMakeCache.txt" ] && { [ -f "$1/build.ninja" ] || [ -f "$1/Makefile" ]; }
}

lb_configure() {
  local dir=$1 arg
  shift
  if [ -f "$dir/CMakeCache.txt" ]; then
    # Options given, or a configure that did not finish: the cache's generator stays, and
    # so does everything a preset would set but its options (cmake --preset in a folder
    # configured with another generator fails).
    local options=()
    for arg in "$@"; do
      case $arg in --preset=*) ;; *) options+=("$arg") ;; esac
    done
    if [ ${#options[@]} -gt 0 ] || ! lb_configured "$dir"; then
      cmake -S "${LB_SOURCE_DIR:-.}" -B "$dir" "${options[@]}" >/dev/null
    fi
    return
  fi
  scripts/install-deps.sh
  local generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  cmake -S "${LB_SOURCE_DIR:-.}" -B "$dir" "${generator[@]}" "$@" >/dev/null
}

lb_build() {
  local dir=$1
  shift
  lb_configure "$dir"
  local targets=()
  if [ $# -gt 0 ]; then targets=(--target "$@"); fi
  cmake --build "$dir" --parallel "$(nproc)" "${targets[@]}"
}
