#!/usr/bin/env bash
# Usage: scripts/gpu-deps.sh [DIR]            (default DIR: .gpu-deps at the repository root)
#
# Builds, from the Debian packages installed on this machine (scripts/install-deps.sh), a small
# relocatable prefix with every non-Torch dependency of a `-DCPPLAN_GUI=OFF -DCPPLAN_BUILD_BENCH=OFF`
# configure (tests and fuzz replays included), for a machine that has none of the -dev packages:
#
#   cmake -S . -B build -DCMAKE_PREFIX_PATH="<torch.utils.cmake_prefix_path>;<DIR>" \
#         -DCPPLAN_GUI=OFF -DCPPLAN_BUILD_BENCH=OFF
#
# Layout: DIR/include (headers), DIR/lib (shared libraries with their soname links),
# DIR/lib/cmake/<package> (the packages' CMake files, rewritten to find everything relative to
# themselves: no absolute path is left in them), DIR/share/doc/<package>/copyright, DIR/MANIFEST.txt.
# Contents:
#   Eigen3, tomlplusplus, nlohmann_json, CLI11, fmt, Catch2 (v2)   headers whole (Eigen without
#                                       unsupported/ unless a source includes it)
#   Boost 1.74 (headers, graph)         only the Boost headers the sources include, transitively
#                                       (g++ -M of every source that mentions boost/, with each C++
#                                       compiler here, with and without NDEBUG) plus boost/config/.
#                                       Boost::graph is header-only here: cpplan uses no symbol of
#                                       libboost_graph (its graphviz/graphml readers), which would
#                                       drag libboost_regex and ICU (~30 MiB) along.
#   SQLite3                             sqlite3.h, sqlite3ext.h, libsqlite3.so (CMake's FindSQLite3)
#   libfmt, libtomlplusplus, libsqlite3 shared libraries (Debian's tomlplusplus is compiled, not
#                                       header-only); a build links them by full path, so CMake puts
#                                       DIR/lib in the binaries' build-tree RUNPATH.
# A file missing here is one line on stderr and exit 1.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "gpu-deps: $*" >&2; exit 1; }
need() {  # need PATH DEBIAN-PACKAGE
  [ -e "$1" ] || die "missing $1 (Debian package '$2'; scripts/install-deps.sh installs it)"
}

dir=${1:-$root/.gpu-deps}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
dir=${dir%/}
[ -n "$dir" ] || die "DIR must not be /"
if [ -e "$dir" ] && [ ! -f "$dir/MANIFEST.txt" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  die "$dir exists and is not a bundle made by this script (no MANIFEST.txt): not replacing it"
fi

cxx=${CXX:-c++}
command -v "$cxx" >/dev/null || die "no C++ compiler '$cxx' (Debian package 'build-essential')"
multiarch=$("$cxx" -print-multiarch 2>/dev/null || true)
[ -n "$multiarch" ] || multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
usrlib=/usr/lib/$multiarch
usrcmake=$usrlib/cmake
inc=/usr/include

# --- Everything this machine must have, checked before anything is written. --------------------
need "$inc/eigen3/Eigen/Core" libeigen3-dev
need /usr/share/eigen3/cmake/Eigen3Config.cmake libeigen3-dev
need "$inc/boost/version.hpp" libboost1.74-dev
need "$usrcmake/Boost-1.74.0/BoostConfig.cmake" libboost1.74-dev
need "$usrcmake/boost_headers-1.74.0/boost_headers-config.cmake" libboost1.74-dev
need "$usrcmake/boost_graph-1.74.0/boost_graph-config-version.cmake" libboost-graph1.74-dev
need "$inc/boost/graph/adjacency_list.hpp" libboost-graph1.74-dev
need "$inc/toml++/toml.h" libtomlplusplus-dev
need "$usrcmake/tomlplusplus/tomlplusplusConfig.cmake" libtomlplusplus-dev
need "$usrlib/libtomlplusplus.so" libtomlplusplus-dev
need "$inc/nlohmann/json.hpp" nlohmann-json3-dev
need /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake nlohmann-json3-dev
need "$inc/CLI/CLI.hpp" libcli11-dev
need /usr/share/cmake/CLI11/CLI11Config.cmake libcli11-dev
need "$inc/fmt/format.h" libfmt-dev
need "$usrcmake/fmt/fmt-config.cmake" libfmt-dev
need "$usrlib/libfmt.so" libfmt-dev
need "$inc/catch2/catch.hpp" catch2
need /usr/lib/cmake/Catch2/Catch2Config.cmake catch2
need /usr/lib/libCatch2WithMain.a catch2
need "$inc/sqlite3.h" libsqlite3-dev
need "$usrlib/libsqlite3.so" libsqlite3-dev
for tool in perl objdump; do
  command -v $tool >/dev/null || die "missing the tool '$tool' (Debian packages 'perl', 'binutils')"
done

# Built next to DIR, then moved into place: an interrupted run leaves the old bundle intact.
new=$dir.new.$$
trap 'rm -rf "$new"' EXIT
mkdir -p "$new/include" "$new/lib/cmake" "$new/share/doc"

# --- Headers. ------------------------------------------------------------------------------------
for d in toml++ fmt CLI nlohmann catch2; do cp -R "$inc/$d" "$new/include/"; done
cp "$inc/sqlite3.h" "$inc/sqlite3ext.h" "$new/include/"
mkdir -p "$new/include/eigen3"
cp -R "$inc/eigen3/Eigen" "$inc/eigen3/signature_of_eigen3_matrix_library" "$new/include/eigen3/"

# The project's sources (tracked and new, not ignored); a tree without git: every source file.
sources() {
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files -z -co --exclude-standard -- \
      '*.cpp' '*.cc' '*.cxx' '*.h' '*.hpp' '*.cu' '*.cuh' | tr '\0' '\n'
  else
    (cd "$root" && find . \( -name 'build*' -o -name '.*' \) -prune -o -type f \
       \( -name '*.cpp' -o -name '*.cc' -o -name '*.cxx' -o -name '*.h' -o -name '*.hpp' \
          -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||')
  fi
}
mapfile -t all_sources < <(sources)
uses() { (cd "$root" && grep -lE "$1" -- "${all_sources[@]}" 2>/dev/null || true); }
if [ -n "$(uses '#[[:space:]]*include[[:space:]]*[<"]unsupported/Eigen')" ]; then
  cp -R "$inc/eigen3/unsupported" "$new/include/eigen3/"
fi

# Boost: the transitive closure of what the sources include, exactly as a compiler resolves it.
mapfile -t boost_sources < <(uses '#[[:space:]]*include[[:space:]]*[<"]boost/')
compilers=("$cxx")
for c in g++ clang++; do
  command -v $c >/dev/null && [ "$(command -v $c)" != "$(command -v "$cxx")" ] && compilers+=($c)
done
deps=$(mktemp)
trap 'rm -rf "$new" "$deps" "$deps.d"' EXIT
for f in "${boost_sources[@]}"; do
  for c in "${compilers[@]}"; do
    for ndebug in "" -DNDEBUG; do
      # -x c++: headers and .cu files too; the project's include dirs: the repository root, Eigen.
      if ! err=$(cd "$root" && "$c" -x c++ -std=c++20 $ndebug -DBOOST_ALL_NO_LIB -I"$root" \
                   -isystem "$inc/eigen3" -M -MF "$deps.d" -MT x "$f" 2>&1 >/dev/null); then
        die "cannot list the Boost headers of $f with $c: $(echo "$err" | grep -m1 -i error || echo "$err" | head -1)"
      fi
      tr ' \\' '\n\n' <"$deps.d" | grep "^$inc/boost/" >>"$deps" || true
    done
  done
done
{ sed 's|/\./|/|g' "$deps" | xargs -r realpath -s --relative-to="$inc" | grep '^boost/'
  echo boost/version.hpp
  (cd "$inc" && find boost/config -type f)
} | sort -u >"$deps.list"
(cd "$inc" && xargs -r -d '\n' cp --parents -t "$new/include" <"$deps.list")
boost_headers=$(wc -l <"$deps.list")
rm -f "$deps.list"

# --- Shared libraries: the real file and its soname and development links. ----------------------
copy_lib() {  # copy_lib /usr/lib/.../libX.so
  local dev=$1 real soname
  real=$(readlink -f "$dev")
  soname=$(objdump -p "$real" | awk '$1 == "SONAME" {print $2}')
  [ -n "$soname" ] || die "no SONAME in $real"
  cp "$real" "$new/lib/"
  [ "$soname" = "$(basename "$real")" ] || ln -sf "$(basename "$real")" "$new/lib/$soname"
  ln -sf "$soname" "$new/lib/$(basename "$dev")"
}
copy_lib "$usrlib/libfmt.so"
copy_lib "$usrlib/libtomlplusplus.so"
copy_lib "$usrlib/libsqlite3.so"
# Catch2's exported Catch2WithMain target checks that its archive exists (cpplan links Catch2::Catch2).
cp /usr/lib/libCatch2WithMain.a "$new/lib/"

# --- CMake package files, made relative to their new place (DIR/lib/cmake/<package>/). ------------
cm=$new/lib/cmake
cp -R /usr/share/eigen3/cmake "$cm/Eigen3"
cp -R /usr/share/cmake/nlohmann_json "$cm/nlohmann_json"
cp -R /usr/share/cmake/CLI11 "$cm/CLI11"
cp -R /usr/lib/cmake/Catch2 "$cm/Catch2"
cp -R "$usrcmake/fmt" "$cm/fmt"
cp -R "$usrcmake/tomlplusplus" "$cm/tomlplusplus"
cp -R "$usrcmake/Boost-1.74.0" "$usrcmake/boost_headers-1.74.0" "$cm/"
mkdir "$cm/boost_graph-1.74.0"
cp "$usrcmake/boost_graph-1.74.0/boost_graph-config-version.cmake" "$cm/boost_graph-1.74.0/"

edit() {  # edit FILE PERL-SUBSTITUTION WHAT: the substitution must change the file
  local file=$cm/$1 before
  before=$(cksum <"$file")
  perl -0pi -e "$2" "$file"
  [ "$(cksum <"$file")" != "$before" ] || die "cannot relocate $1 ($3): its Debian package changed; update scripts/gpu-deps.sh"
}
# configure_package_config_file's "/usr move" check sets the prefix to /usr when the files are
# loaded from /usr: dropped, the prefix is then always the files' own location.
usrmove='s/^# Use original install prefix when loaded through a.*?^unset\(_realCurr\)\n//gms'
edit fmt/fmt-config.cmake "$usrmove" '/usr move'
edit fmt/fmt-targets.cmake "$usrmove" '/usr move'
edit tomlplusplus/tomlplusplusConfig.cmake "$usrmove" '/usr move'
edit Catch2/Catch2Config.cmake "$usrmove" '/usr move'
edit Catch2/Catch2Targets.cmake "$usrmove" '/usr move'
# lib/<multiarch>/cmake/<package> is one level deeper than lib/cmake/<package>.
edit fmt/fmt-config.cmake 's|"\$\{CMAKE_CURRENT_LIST_DIR\}/\.\./\.\./\.\./\.\./"|"\${CMAKE_CURRENT_LIST_DIR}/../../../"|' 'prefix depth'
edit fmt/fmt-targets.cmake 's/((get_filename_component\(_IMPORT_PREFIX "\$\{_IMPORT_PREFIX\}" PATH\)\n){3})\2/$1/' 'prefix depth'
edit fmt/fmt-targets-none.cmake "s|/lib/$multiarch/|/lib/|g" 'library path'
edit tomlplusplus/tomlplusplusConfig.cmake 's|"\$\{CMAKE_CURRENT_LIST_DIR\}/\.\./\.\./\.\./\.\."|"\${CMAKE_CURRENT_LIST_DIR}/../../.."|' 'prefix depth'
edit tomlplusplus/tomlplusplusConfig.cmake "s|/lib/$multiarch/|/lib/|g" 'library path'
# Boost: the build tree's path, kept for symlink-equivalent installs, dropped; include dir depth.
edit boost_headers-1.74.0/boost_headers-config.cmake \
  's/^# If the computed and the original directories are symlink-equivalent.*?^  unset\(_BOOST_CMAKEDIR_ORIGINAL\)\nendif\(\)\n//ms' 'build-tree path'
edit boost_headers-1.74.0/boost_headers-config.cmake 's|\$\{_BOOST_CMAKEDIR\}/\.\./\.\./\.\./include/|\${_BOOST_CMAKEDIR}/../../include/|' 'include dir depth'
# Boost::graph, header-only: the same target as Debian's minus the library (see the top).
cat >"$cm/boost_graph-1.74.0/boost_graph-config.cmake" <<'EOF'
# Boost.Graph 1.74.0, header-only (made by cpplan's scripts/gpu-deps.sh from Debian's
# boost_graph-config.cmake). cpplan uses only Boost.Graph's templates, none of libboost_graph's
# compiled graphviz/graphml readers, so Boost::graph links no library here.

if(TARGET Boost::graph)
  return()
endif()

if(Boost_VERBOSE OR Boost_DEBUG)
  message(STATUS "Found boost_graph ${boost_graph_VERSION} at ${boost_graph_DIR} (header-only)")
endif()

get_filename_component(_BOOST_CMAKEDIR "${CMAKE_CURRENT_LIST_DIR}/../" ABSOLUTE)
find_package(boost_headers 1.74.0 EXACT CONFIG QUIET HINTS ${_BOOST_CMAKEDIR})
unset(_BOOST_CMAKEDIR)
if(NOT boost_headers_FOUND)
  set(boost_graph_FOUND 0)
  set(boost_graph_NOT_FOUND_MESSAGE "A required dependency, boost_headers, has not been found.")
  return()
endif()

add_library(Boost::graph INTERFACE IMPORTED)
set_target_properties(Boost::graph PROPERTIES
  INTERFACE_LINK_LIBRARIES Boost::headers
  INTERFACE_COMPILE_DEFINITIONS "BOOST_ALL_NO_LIB"
)

mark_as_advanced(boost_graph_DIR)
EOF
# Nothing may point outside the bundle any more.
if left=$(grep -rnE '"/(usr|build)/|"/usr"' "$cm" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#'); then
  die "absolute paths left in the bundle's CMake files: $(echo "$left" | head -1)"
fi

# --- Licenses and manifest. -------------------------------------------------------------------------
pkgs=(libeigen3-dev libboost1.74-dev libboost-graph1.74-dev libtomlplusplus-dev nlohmann-json3-dev
      libcli11-dev libfmt-dev catch2 libsqlite3-dev)
for p in "${pkgs[@]}"; do
  c=/usr/share/doc/$p/copyright
  [ -f "$c" ] || continue
  mkdir -p "$new/share/doc/$p"
  if [ "$(stat -c %s "$c")" -gt 100000 ]; then gzip -9c "$c" >"$new/share/doc/$p/copyright.gz"
  else cp "$c" "$new/share/doc/$p/"; fi
done
version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo '?'; }
upstream() { version "$1" | sed -E "s/^[0-9]+://; s/[+~-].*//"; }
maxver() {  # highest GLIBC_ / GLIBCXX_ version the bundle's libraries need
  objdump -T "$new"/lib/*.so.* | grep -oE "\b$1_[0-9]+(\.[0-9]+)*\b" | sort -uV | tail -1
}
{
  echo "cpplan's non-Torch build dependencies (scripts/gpu-deps.sh), from $(. /etc/os-release && echo "$PRETTY_NAME")."
  echo "Use: cmake -DCMAKE_PREFIX_PATH=\"<torch prefix>;<this directory>\" -DCPPLAN_GUI=OFF -DCPPLAN_BUILD_BENCH=OFF ..."
  echo "The shared libraries in lib/ need at least $(maxver GLIBC) and $(maxver GLIBCXX) at run time."
  echo "Boost: $boost_headers headers (what the sources include, transitively); Boost::graph is header-only."
  for p in "${pkgs[@]}"; do echo "package $p $(version "$p")"; done
} >"$new/MANIFEST.txt"

rm -rf "$dir"
mv "$new" "$dir"
trap 'rm -f "$deps" "$deps.d"' EXIT
size=$(du -sh "$dir" | cut -f1)
echo "gpu-deps: $dir $size: Eigen3 $(upstream libeigen3-dev), Boost $(upstream libboost1.74-dev) (graph, header-only;" \
     "$boost_headers headers), tomlplusplus $(upstream libtomlplusplus-dev) (.so), nlohmann_json $(upstream nlohmann-json3-dev)," \
     "CLI11 $(upstream libcli11-dev), fmt $(upstream libfmt-dev) (.so), Catch2 $(upstream catch2), SQLite3 $(upstream libsqlite3-dev) (.so)"
