# FindADIOS2C: the ADIOS2 C library, found the way chimbuko-mpi's own build
# finds it (adios2-sys/build.rs), for C/C++ programs of this project.
#
#   1. ADIOS2_DIR            a prefix with include/ and lib/ (or lib64/)
#   2. adios2-config on PATH (spack and module installs on HPC systems)
#   3. the Python `adios2` wheel of ${Python_EXECUTABLE} / the project's .venv
#
# Defines the imported target ADIOS2C::adios2_c and ADIOS2C_FOUND.

set(_adios2c_tried "")

function(_adios2c_try_prefix prefix)
  find_path(_adios2c_inc adios2_c.h PATHS "${prefix}/include" NO_DEFAULT_PATH)
  find_library(_adios2c_lib adios2_c PATHS "${prefix}/lib" "${prefix}/lib64" "${prefix}" NO_DEFAULT_PATH)
  if(_adios2c_inc AND _adios2c_lib)
    set(ADIOS2C_INCLUDE_DIR "${_adios2c_inc}" PARENT_SCOPE)
    set(ADIOS2C_LIBRARY "${_adios2c_lib}" PARENT_SCOPE)
  endif()
  unset(_adios2c_inc CACHE)
  unset(_adios2c_lib CACHE)
endfunction()

if(DEFINED ENV{ADIOS2_DIR} AND NOT ADIOS2C_LIBRARY)
  list(APPEND _adios2c_tried "ADIOS2_DIR=$ENV{ADIOS2_DIR}")
  _adios2c_try_prefix("$ENV{ADIOS2_DIR}")
endif()

if(NOT ADIOS2C_LIBRARY)
  find_program(_adios2_config adios2-config)
  if(_adios2_config)
    list(APPEND _adios2c_tried "adios2-config (${_adios2_config})")
    execute_process(COMMAND "${_adios2_config}" --prefix
                    OUTPUT_VARIABLE _prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_prefix)
      _adios2c_try_prefix("${_prefix}")
    endif()
  endif()
endif()

if(NOT ADIOS2C_LIBRARY)
  set(_pythons "${Python_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/../.venv/bin/python" python3)
  foreach(py IN LISTS _pythons)
    if(py AND NOT ADIOS2C_LIBRARY)
      execute_process(COMMAND "${py}" -c "import adios2, os; print(os.path.dirname(adios2.__file__))"
                      OUTPUT_VARIABLE _wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      list(APPEND _adios2c_tried "Python adios2 wheel of ${py}")
      if(_wheel)
        _adios2c_try_prefix("${_wheel}")
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ADIOS2C
  REQUIRED_VARS ADIOS2C_LIBRARY ADIOS2C_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "tried: ${_adios2c_tried}")

if(ADIOS2C_FOUND AND NOT TARGET ADIOS2C::adios2_c)
  add_library(ADIOS2C::adios2_c SHARED IMPORTED)
  set_target_properties(ADIOS2C::adios2_c PROPERTIES
    IMPORTED_LOCATION "${ADIOS2C_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ADIOS2C_INCLUDE_DIR}")
  get_filename_component(ADIOS2C_LIBRARY_DIR "${ADIOS2C_LIBRARY}" DIRECTORY)
endif()
