# cmake/cuda.cmake - the optional CUDA backend (cuDNN + cuBLAS), included by
# the top-level CMakeLists.txt after the `nas` library target exists.
#
#   NAS_CUDA        AUTO (default): build it when nvcc, cuDNN and cuBLAS are all
#                   found; ON: they must be found (configure fails otherwise);
#                   OFF: never (CPU-only build).
#   NAS_CUDA_ARCHS  GPU architectures compiled for (CMAKE_CUDA_ARCHITECTURES
#                   syntax), default "80;90" (A100/A30 and H100/H200 SASS).
#
# When found: trainer/cuda/*.cu are built into their own shared object,
# libnas_cuda.so (target nas_cuda, written beside the nas binary), which
# links CUDA::cudart, CUDA::cublas and cuDNN. libnas itself does not: it
# defines NAS_HAVE_CUDA PUBLIC (so trainer/backend.c registers "cuda" and
# the tests see it) and dlopen()s libnas_cuda.so the first time the cuda
# backend or the CUDA devices are asked for (trainer/backend_cuda.c), so
# commands that need no GPU do not load cuDNN and cuBLAS (issue 29).
# Search hints: CUDAToolkit_ROOT / CUDNN_ROOT (cache or environment), then
# /usr/local/cuda, then the system directories.

string(TOUPPER "${NAS_CUDA}" _nas_cuda_mode)
if(NOT _nas_cuda_mode MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "NAS_CUDA must be AUTO, ON or OFF (got '${NAS_CUDA}')")
endif()
if(_nas_cuda_mode MATCHES "^(TRUE|YES|1)$")
  set(_nas_cuda_mode ON)
elseif(_nas_cuda_mode MATCHES "^(FALSE|NO|0)$")
  set(_nas_cuda_mode OFF)
endif()

set(NAS_HAVE_CUDA OFF)

# Report why the backend is not built: fatal when NAS_CUDA=ON, a status line
# otherwise.
macro(_nas_cuda_unavailable why)
  if(_nas_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "NAS_CUDA=ON but ${why}")
  endif()
  message(STATUS "nas: CUDA backend NOT built: ${why} (NAS_CUDA=${NAS_CUDA}; CPU-only build)")
endmacro()

if(_nas_cuda_mode STREQUAL "OFF")
  message(STATUS "nas: CUDA backend NOT built: disabled by NAS_CUDA=OFF")
  return()
endif()

# ---- the compiler ----------------------------------------------------------
# nvcc is often not on PATH; point CheckLanguage at the usual install.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  foreach(_root $ENV{CUDAToolkit_ROOT} ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} /usr/local/cuda)
    if(EXISTS "${_root}/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "${_root}/bin/nvcc" CACHE FILEPATH "CUDA compiler")
      break()
    endif()
  endforeach()
endif()
# Architectures must be known before the language is enabled: otherwise
# CMake probes with nvcc's default, which may be one CUDA 13 no longer has.
if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "${NAS_CUDA_ARCHS}")
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  _nas_cuda_unavailable("no CUDA compiler (nvcc) was found; set CUDAToolkit_ROOT or CUDACXX")
  return()
endif()
enable_language(CUDA)
set(CMAKE_CUDA_ARCHITECTURES "${NAS_CUDA_ARCHS}")

# ---- the toolkit libraries ---------------------------------------------------
get_filename_component(_nas_nvcc_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
get_filename_component(_nas_cuda_root "${_nas_nvcc_bin}" DIRECTORY)
if(NOT CUDAToolkit_ROOT)
  set(CUDAToolkit_ROOT "${_nas_cuda_root}")
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  _nas_cuda_unavailable("nvcc found at ${CMAKE_CUDA_COMPILER} but the CUDA toolkit libraries were not")
  return()
endif()
if(NOT TARGET CUDA::cudart OR NOT TARGET CUDA::cublas)
  _nas_cuda_unavailable("CUDA toolkit ${CUDAToolkit_VERSION} found but cudart or cuBLAS is missing")
  return()
endif()

# ---- cuDNN (ships separately from the toolkit) ------------------------------------
set(_nas_cudnn_hints $ENV{CUDNN_ROOT} ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${_nas_cuda_root})
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_nas_cudnn_hints}
  PATH_SUFFIXES include include/x86_64-linux-gnu include/aarch64-linux-gnu)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${_nas_cudnn_hints}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
  _nas_cuda_unavailable("CUDA toolkit ${CUDAToolkit_VERSION} found but cuDNN (cudnn.h, libcudnn) was not; set CUDNN_ROOT")
  return()
endif()
set(_nas_cudnn_version "unknown")
foreach(_h cudnn_version.h cudnn.h)
  if(EXISTS "${CUDNN_INCLUDE_DIR}/${_h}")
    file(STRINGS "${CUDNN_INCLUDE_DIR}/${_h}" _maj REGEX "^#define CUDNN_MAJOR [0-9]+")
    file(STRINGS "${CUDNN_INCLUDE_DIR}/${_h}" _min REGEX "^#define CUDNN_MINOR [0-9]+")
    if(_maj)
      string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _maj "${_maj}")
      string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _min "${_min}")
      set(_nas_cudnn_version "${_maj}.${_min}")
      break()
    endif()
  endif()
endforeach()
if(_nas_cudnn_version MATCHES "^([0-9]+)\\." AND CMAKE_MATCH_1 LESS 8)
  _nas_cuda_unavailable("cuDNN ${_nas_cudnn_version} is too old (need 8 or 9)")
  return()
endif()

# ---- add the backend to libnas --------------------------------------------------------
file(GLOB NAS_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/trainer/cuda/*.cu)
if(NOT NAS_CUDA_SOURCES)
  _nas_cuda_unavailable("trainer/cuda/*.cu is empty")
  return()
endif()

# The top-level add_compile_options() flags are gcc flags that nvcc rejects
# (-Wall, -Werror, -fsanitize=...). Restrict them to C, here and on the
# targets already created, and hand the host-side ones to nvcc through
# -Xcompiler below.
foreach(_scope DIRECTORY TARGET)
  if(_scope STREQUAL "DIRECTORY")
    get_property(_opts DIRECTORY PROPERTY COMPILE_OPTIONS)
  else()
    get_property(_opts TARGET nas PROPERTY COMPILE_OPTIONS)
  endif()
  set(_wrapped "")
  foreach(_o IN LISTS _opts)
    if(_o MATCHES "^\\$<\\$<COMPILE_LANGUAGE:")
      list(APPEND _wrapped "${_o}")
    else()
      list(APPEND _wrapped "$<$<COMPILE_LANGUAGE:C>:${_o}>")
    endif()
  endforeach()
  if(_scope STREQUAL "DIRECTORY")
    set_property(DIRECTORY PROPERTY COMPILE_OPTIONS "${_wrapped}")
  else()
    set_property(TARGET nas PROPERTY COMPILE_OPTIONS "${_wrapped}")
  endif()
endforeach()

# The shared object: the backend plus its own copies of the two libnas
# functions it calls (nas_error_set, nas__backend_fail), so it needs no
# symbol from the binary that loads it (checked: -Wl,--no-undefined).
add_library(nas_cuda SHARED ${NAS_CUDA_SOURCES}
  ${CMAKE_SOURCE_DIR}/base/status.c ${CMAKE_SOURCE_DIR}/trainer/backend_fail.c)
set_target_properties(nas_cuda PROPERTIES
  OUTPUT_NAME nas_cuda
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_RUNTIME_LIBRARY Shared
  CUDA_ARCHITECTURES "${NAS_CUDA_ARCHS}")
target_include_directories(nas_cuda PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}
  ${CUDNN_INCLUDE_DIR})
target_link_libraries(nas_cuda PRIVATE CUDA::cudart CUDA::cublas ${CUDNN_LIBRARY})
if(NOT NAS_SANITIZE)
  target_link_options(nas_cuda PRIVATE -Wl,--no-undefined)
endif()

# libnas: the loader (trainer/backend_cuda.c) and the toolkit's headers,
# which the tests read for the status enumerators; no CUDA library.
target_compile_definitions(nas PUBLIC NAS_HAVE_CUDA=1)
target_compile_definitions(nas PRIVATE NAS_CUDA_BUILD_DIR="${CMAKE_BINARY_DIR}")
target_include_directories(nas PUBLIC ${CUDNN_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(nas PUBLIC ${CMAKE_DL_LIBS})
add_dependencies(nas nas_cuda) # building nas (and so every binary) builds the .so too

set(_nas_cuda_flags
  -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-Wno-format-truncation
  --expt-relaxed-constexpr)
if(NAS_WERROR)
  # nvcc's own warnings and the host compiler's, both as errors.
  list(APPEND _nas_cuda_flags -Werror=all-warnings -Xcompiler=-Werror)
endif()
if(NAS_SANITIZE)
  # Host-side code only; device code is checked with compute-sanitizer.
  # (one flag per -Xcompiler: it splits its argument at commas)
  list(APPEND _nas_cuda_flags -Xcompiler=-fsanitize=address -Xcompiler=-fsanitize=undefined
       -Xcompiler=-fno-omit-frame-pointer)
endif()
target_compile_options(nas_cuda PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${_nas_cuda_flags}>")

set(NAS_HAVE_CUDA ON)
message(STATUS "nas: CUDA backend BUILT as libnas_cuda.so, loaded on demand: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), "
               "cuDNN ${_nas_cudnn_version} (${CUDNN_LIBRARY}), cuBLAS, archs ${NAS_CUDA_ARCHS}")
