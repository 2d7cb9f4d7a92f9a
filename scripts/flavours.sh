# Sourced, not run: the CMake options of each build flavour, in one place, so that the scripts
# that build them and the test that configures them (tests/house/configure_flavours_test.sh)
# cannot drift apart.
#   flavour_env NAME          prints the environment the configure needs (CC/CXX), one per line
#   flavour_cmake_args NAME   prints the cmake options, one per line
# Flavours: release (build/), fuzz (build-fuzz/), address,undefined and thread
# (build-sanitize-*), package (scripts/package.sh).
flavour_names=(release fuzz address,undefined thread package)

flavour_env() {
  case "$1" in
    fuzz) printf '%s\n' CC=clang CXX=clang++ ;;
    release | address,undefined | undefined,address | address | undefined | thread | package) ;;
    *) echo "flavours.sh: no flavour '$1' (${flavour_names[*]})" >&2; return 2 ;;
  esac
}

flavour_cmake_args() {
  case "$1" in
    release) printf '%s\n' -DCMAKE_BUILD_TYPE=Release ;;
    fuzz)
      printf '%s\n' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_FUZZ=ON -DTT_BUILD_BENCH=OFF \
        -DTT_WITH_CUDA=OFF
      ;;
    address,undefined | undefined,address | address | undefined | thread)
      printf '%s\n' -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DTT_SANITIZE=$1" -DTT_BUILD_BENCH=OFF \
        -DTT_PYTHON=OFF
      ;;
    package)
      printf '%s\n' -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DTT_BUILD_TESTS=OFF \
        -DTT_BUILD_BENCH=OFF
      ;;
    *) echo "flavours.sh: no flavour '$1' (${flavour_names[*]})" >&2; return 2 ;;
  esac
}
