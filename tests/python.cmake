# test_python: python/tests with the package from python/src (not
# installed) and GPULEASE_LIBRARY naming this build's libgpulease.
# `make check-wheel` tests the installed package and the wheel.
find_program(GL_DEBIAN_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(GL_DEBIAN_PYTHON AND NOT GL_SANITIZE)
  add_test(NAME test_python
    COMMAND ${CMAKE_COMMAND} -E env
      PYTHONPATH=${PROJECT_SOURCE_DIR}/python/src
      GPULEASE_LIBRARY=$<TARGET_FILE:gpulease>
      GL_TEST_BIN_DIR=${PROJECT_BINARY_DIR}
      ${GL_DEBIAN_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(test_python PROPERTIES TIMEOUT 600 LABELS python)
endif()
