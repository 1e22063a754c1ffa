# Installation layout and Debian packages (`make deb`: CPack's DEB
# generator, one package per component):
#   gpuleased        component daemon   the daemon, its systemd unit, the
#                                       default configuration, gpuleased(8)
#   libgpulease1     component runtime  the shared library (libgpulease.so.1:
#                                       the package's name carries the soname's
#                                       number, GL_SOVERSION, src/lib)
#   libgpulease-dev  component dev      header, .so link, pkg-config file,
#                                       CMake package, libgpulease(3)
#   gpulease-tools   component tools    the CLI, gpulease(1)
#   gpulease-cuda    component cuda     the CUDA driver and NVML libraries,
#                                       $libdir/gpulease/libcuda.so.1 and
#                                       libnvidia-ml.so.1, that `gpulease
#                                       exec` runs programs on
#                                       (docs/cuda-driver.md, src/cuda, src/nvml)
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for packages (GNUInstallDirs
# then puts the configuration in /etc).
include(CMakePackageConfigHelpers)

# The systemd unit and the default configuration (a conffile).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/gpuleased.service
  DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system COMPONENT daemon)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/gpuleased.conf
  DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/gpulease COMPONENT daemon)

# find_package(gpulease) then target_link_libraries(app gpulease::gpulease).
install(EXPORT gpuleaseTargets NAMESPACE gpulease::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpulease COMPONENT dev)
file(WRITE ${PROJECT_BINARY_DIR}/gpuleaseConfig.cmake.in
  "@PACKAGE_INIT@\ninclude(\"\${CMAKE_CURRENT_LIST_DIR}/gpuleaseTargets.cmake\")\n")
configure_package_config_file(${PROJECT_BINARY_DIR}/gpuleaseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpuleaseConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpulease)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpuleaseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpuleaseConfig.cmake
  ${PROJECT_BINARY_DIR}/gpuleaseConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpulease COMPONENT dev)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpulease)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gpulease developers <gpulease@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "lease remote NVIDIA GPUs and run CUDA kernels over QUIC")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/gpulease/gpulease")
set(CPACK_COMPONENTS_ALL daemon runtime dev tools cuda)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME gpuleased)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
  "GPU-node daemon of gpulease\n gpuleased grants leases on this node's NVIDIA GPUs (VRAM for a TTL) to\n clients over QUIC and runs their CUDA kernels (PTX, cubin, fatbin) in\n sandboxed per-lease workers; everything a lease held is freed when it\n ends. Without a GPU it offers an emulated device that runs PTX on the\n CPU.")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/packaging/debian/conffiles;${PROJECT_SOURCE_DIR}/packaging/debian/postinst;${PROJECT_SOURCE_DIR}/packaging/debian/prerm;${PROJECT_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# Named after the soname (Debian policy 8.1): libgpulease${GL_SOVERSION}.
# Another soname is another package, installable beside this one (their
# files differ: libgpulease.so.0 and libgpulease.so.0.1.0 for 0.1's
# libgpulease0), so programs built against 0.1 keep their library; no
# Conflicts or Replaces. GENERATE_SHLIBS writes its shlibs file from the
# soname, so programs linked against it depend on libgpulease1.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libgpulease${GL_SOVERSION})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "client library of gpulease\n libgpulease leases GPUs on gpuleased nodes and runs CUDA kernels on them\n over QUIC, with no CUDA toolkit or driver on the client.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libgpulease-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "client library of gpulease: development files\n The header <gpulease/gpulease.h>, the pkg-config file, the CMake package\n (find_package(gpulease)) and libgpulease(3).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME gpulease-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DEPENDS cuda) # gpulease exec runs programs on the shim
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "command-line tool of gpulease\n gpulease leases GPUs on gpuleased nodes, submits kernels, drives sessions\n and shows a node live (gpulease top); gpulease exec runs a CUDA program on\n a leased GPU.")

# Its own directory, never beside a real driver: only programs started by
# gpulease exec (or pointed at it) load it.
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME gpulease-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_CUDA_DEPENDS runtime) # it links libgpulease.so.1
# dpkg-shlibdeps cannot see libgpulease1's shlibs while the packages are
# being built, so the dependencies are given: libgpulease1 (above, the
# same version) and glibc (the shim needs nothing else).
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "libc6 (>= 2.34)")
set(CPACK_COMPONENT_CUDA_DESCRIPTION
  "CUDA driver library of gpulease\n A libcuda.so.1 in a directory of its own ($libdir/gpulease/) that\n carries the CUDA driver API to a leased GPU on a gpuleased node, so that\n unmodified CUDA programs (the driver API, nvcc's CUDA runtime) run there\n under gpulease exec, and a\n libnvidia-ml.so.1 beside it that answers NVML's device queries for the\n lease. Neither loads a real NVIDIA driver.")
include(CPack)
