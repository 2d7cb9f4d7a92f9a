# What `cmake --install` puts where, and the Debian package CPack makes of it
# (scripts/package.sh; docs/deploy.md). Installed under CMAKE_INSTALL_PREFIX (/usr in the
# package):
#   bin/tensortune                              the command line (tracker, device, tune, ...)
#   lib/python3/dist-packages/tensortune/       the Python module, where Debian's python3 looks
#   lib/systemd/system/tensortune-*.service     the units of deploy/systemd, naming bin/ above
#   share/doc/tensortune/                       the README and the operator's docs
include(GNUInstallDirs)

install(TARGETS tensortune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

if(TT_PYTHON)
  # Debian's python3 searches dist-packages (not site-packages) for packaged modules.
  set(TT_PYTHON_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/python3/dist-packages/tensortune)
  if(CMAKE_INSTALL_LIBDIR MATCHES "^lib/")
    set(TT_PYTHON_INSTALL_DIR lib/python3/dist-packages/tensortune)
  endif()
  install(TARGETS _tensortune LIBRARY DESTINATION ${TT_PYTHON_INSTALL_DIR})
  install(FILES python/tensortune/__init__.py python/tensortune/__init__.pyi
                python/tensortune/callbacks.py python/tensortune/py.typed
          DESTINATION ${TT_PYTHON_INSTALL_DIR})
endif()

# The units in deploy/systemd name /usr/local (a binary installed by hand); installed, they name
# the prefix the binary is installed under, which is known only at install time (cpack installs
# under /usr whatever the build's prefix).
foreach(unit tensortune-tracker.service tensortune-device@.service)
  install(CODE "
    file(READ \"${PROJECT_SOURCE_DIR}/deploy/systemd/${unit}\" text)
    string(REPLACE \"/usr/local/\" \"\${CMAKE_INSTALL_PREFIX}/\" text \"\${text}\")
    file(WRITE \"${CMAKE_BINARY_DIR}/systemd/${unit}\" \"\${text}\")")
  install(FILES ${CMAKE_BINARY_DIR}/systemd/${unit} DESTINATION lib/systemd/system)
endforeach()

install(FILES README.md docs/deploy.md docs/security.md docs/python.md docs/records.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Debian package. Its runtime dependencies are what dpkg-shlibdeps finds the binary and the
# Python module linked against; the Python module adds the one Python version it was built for.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tensortune)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tensortune maintainers <tensortune@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "autotuning of tensor programs: tuners, device farm, compiler")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "autotuning of tensor programs: tuners, device farm, compiler\n\
tensortune tunes schedules of convolutions and dense layers for CPUs (LLVM) and\n\
NVIDIA GPUs (NVRTC, loaded at run time when present), records every measurement\n\
in SQLite, runs a tracker and device servers that tune across a farm of machines,\n\
and compiles whole ONNX networks with the best records. This package holds the\n\
tensortune command, its Python module and systemd units for a tracker and device\n\
servers (not enabled: they need credentials, see the deploy documentation).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/tensortune/tensortune")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Beside the shared libraries: the tracker unit reloads with /bin/kill.
set(CPACK_DEBIAN_PACKAGE_DEPENDS procps)
if(TT_PYTHON)
  math(EXPR tt_next_python_minor "${Python_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
      ", python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}), python3 (<< ${Python_VERSION_MAJOR}.${tt_next_python_minor})")
endif()
# numpy arrays in and out of Network.run; the rest of the module works without it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3-numpy)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/cmake/debian/postinst ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
    ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/dist)
include(CPack)
