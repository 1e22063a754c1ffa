# Third-party dependencies, all from Debian packages (scripts/deps.sh
# installs them; on Debian 12 ngtcp2 1.x comes from bookworm-backports, whose
# -dev packages ship the .a archives too). With GL_STATIC_DEPS the static
# archives are linked so the binaries run on hosts that lack these libraries
# (the GPU nodes); GnuTLS is always linked dynamically (libgnutls30 is on
# every target).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls>=3.7)
pkg_check_modules(NGTCP2 REQUIRED libngtcp2>=1.0)
pkg_check_modules(NGTCP2_CRYPTO REQUIRED libngtcp2_crypto_gnutls>=1.0)
pkg_check_modules(JSONC REQUIRED json-c)

find_path(LIBEV_INCLUDE_DIR ev.h REQUIRED)

function(gl_find_lib var name)
  if(GL_STATIC_DEPS)
    find_library(${var} NAMES lib${name}.a ${name} REQUIRED)
  else()
    find_library(${var} NAMES ${name} REQUIRED)
  endif()
endfunction()

gl_find_lib(GL_NGTCP2_LIB ngtcp2)
gl_find_lib(GL_NGTCP2_CRYPTO_LIB ngtcp2_crypto_gnutls)
gl_find_lib(GL_LIBEV_LIB ev)
gl_find_lib(GL_JSONC_LIB json-c)
gl_find_lib(GL_SECCOMP_LIB seccomp)
find_path(SECCOMP_INCLUDE_DIR seccomp.h REQUIRED)
gl_find_lib(GL_SODIUM_LIB sodium)
find_path(SODIUM_INCLUDE_DIR sodium.h REQUIRED)
gl_find_lib(GL_ZSTD_LIB zstd)
find_path(ZSTD_INCLUDE_DIR zstd.h REQUIRED)
gl_find_lib(GL_LZ4_LIB lz4)
find_path(LZ4_INCLUDE_DIR lz4.h REQUIRED)
gl_find_lib(GL_INIH_LIB inih)
find_path(INIH_INCLUDE_DIR ini.h REQUIRED)

add_library(gl_dep_ngtcp2 INTERFACE)
target_include_directories(gl_dep_ngtcp2 INTERFACE ${NGTCP2_INCLUDE_DIRS} ${NGTCP2_CRYPTO_INCLUDE_DIRS})
target_link_libraries(gl_dep_ngtcp2 INTERFACE ${GL_NGTCP2_CRYPTO_LIB} ${GL_NGTCP2_LIB} PkgConfig::GNUTLS)

add_library(gl_dep_libev INTERFACE)
target_include_directories(gl_dep_libev INTERFACE ${LIBEV_INCLUDE_DIR})
target_link_libraries(gl_dep_libev INTERFACE ${GL_LIBEV_LIB} m)

add_library(gl_dep_seccomp INTERFACE)
target_include_directories(gl_dep_seccomp INTERFACE ${SECCOMP_INCLUDE_DIR})
target_link_libraries(gl_dep_seccomp INTERFACE ${GL_SECCOMP_LIB})

# libsodium: capability tokens' HMACs, constant-time compares, random keys.
add_library(gl_dep_sodium INTERFACE)
target_include_directories(gl_dep_sodium INTERFACE ${SODIUM_INCLUDE_DIR})
target_link_libraries(gl_dep_sodium INTERFACE ${GL_SODIUM_LIB})

# libmicrohttpd: the daemon's Prometheus endpoint (--metrics-listen).
gl_find_lib(GL_MHD_LIB microhttpd)
find_path(MHD_INCLUDE_DIR microhttpd.h REQUIRED)
add_library(gl_dep_mhd INTERFACE)
target_include_directories(gl_dep_mhd INTERFACE ${MHD_INCLUDE_DIR})
target_link_libraries(gl_dep_mhd INTERFACE ${GL_MHD_LIB} PkgConfig::GNUTLS Threads::Threads)

# libinih: the daemon's config and tenants files.
# A fatbin's compressed images (src/backend/fatbin.c).
add_library(gl_dep_fatbin INTERFACE)
target_include_directories(gl_dep_fatbin INTERFACE ${ZSTD_INCLUDE_DIR} ${LZ4_INCLUDE_DIR})
target_link_libraries(gl_dep_fatbin INTERFACE ${GL_ZSTD_LIB} ${GL_LZ4_LIB})

add_library(gl_dep_inih INTERFACE)
target_include_directories(gl_dep_inih INTERFACE ${INIH_INCLUDE_DIR})
target_link_libraries(gl_dep_inih INTERFACE ${GL_INIH_LIB})

add_library(gl_dep_jsonc INTERFACE)
target_include_directories(gl_dep_jsonc INTERFACE ${JSONC_INCLUDE_DIRS})
target_link_libraries(gl_dep_jsonc INTERFACE ${GL_JSONC_LIB})

find_program(GL_NVCC nvcc PATHS /usr/local/cuda/bin)

# libgpulease.so cannot take Debian's libngtcp2.a (not built as PIC): the
# shared library links the shared ngtcp2 instead.
find_library(GL_NGTCP2_SO NAMES libngtcp2.so ngtcp2 REQUIRED)
find_library(GL_NGTCP2_CRYPTO_SO NAMES libngtcp2_crypto_gnutls.so ngtcp2_crypto_gnutls REQUIRED)
add_library(gl_dep_ngtcp2_shared INTERFACE)
target_link_libraries(gl_dep_ngtcp2_shared INTERFACE ${GL_NGTCP2_CRYPTO_SO} ${GL_NGTCP2_SO} PkgConfig::GNUTLS)

# libsystemd: readiness and reload notices to systemd (sd_notify). Linked
# dynamically: libsystemd0 is on every systemd host, and Debian ships no
# static archive of it.
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
add_library(gl_dep_systemd INTERFACE)
target_link_libraries(gl_dep_systemd INTERFACE PkgConfig::SYSTEMD)

# libcurl (GnuTLS flavour): `gpulease top` reads a daemon's /metrics over
# HTTP. Linked dynamically (its static archive needs a dozen more).
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
add_library(gl_dep_curl INTERFACE)
target_link_libraries(gl_dep_curl INTERFACE PkgConfig::CURL)

# scdoc: the man pages (docs/man/*.scd), generated at build time.
find_program(GL_SCDOC scdoc)
