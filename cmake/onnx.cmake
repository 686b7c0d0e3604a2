# cmake/onnx.cmake - ONNX export support (issue 5): protoc-c runs at build
# time on the onnx.proto Debian's libonnx-dev ships, the generated
# onnx.pb-c.c is compiled into libnas, and libnas links libprotobuf-c.
# When any piece is missing, nas still builds and `nas export --format onnx`
# says what to install (export/export_onnx.c without NAS_HAVE_ONNX).
set(NAS_ONNX_PROTO "/usr/include/onnx/onnx.proto" CACHE FILEPATH "onnx.proto compiled with protoc-c")
find_program(NAS_PROTOC_C protoc-c)
pkg_check_modules(PROTOBUF_C IMPORTED_TARGET libprotobuf-c)

if(NAS_PROTOC_C AND PROTOBUF_C_FOUND AND EXISTS "${NAS_ONNX_PROTO}")
  get_filename_component(_nas_onnx_dir "${NAS_ONNX_PROTO}" DIRECTORY)
  get_filename_component(_nas_onnx_name "${NAS_ONNX_PROTO}" NAME_WE)
  set(_nas_onnx_out "${CMAKE_BINARY_DIR}/onnx_gen")
  file(MAKE_DIRECTORY "${_nas_onnx_out}")
  add_custom_command(
    OUTPUT "${_nas_onnx_out}/${_nas_onnx_name}.pb-c.c" "${_nas_onnx_out}/${_nas_onnx_name}.pb-c.h"
    COMMAND "${NAS_PROTOC_C}" "--c_out=${_nas_onnx_out}" "-I${_nas_onnx_dir}" "${NAS_ONNX_PROTO}"
    DEPENDS "${NAS_ONNX_PROTO}"
    COMMENT "protoc-c: generating C messages from ${NAS_ONNX_PROTO}"
    VERBATIM)
  set(_nas_onnx_src "${_nas_onnx_out}/${_nas_onnx_name}.pb-c.c")
  # Generated code: not ours to fix, so its warnings are not errors.
  set_source_files_properties("${_nas_onnx_src}" PROPERTIES GENERATED TRUE
    COMPILE_OPTIONS "-Wno-error;-w")
  target_sources(nas PRIVATE "${_nas_onnx_src}")
  target_include_directories(nas PRIVATE "${_nas_onnx_out}")
  target_compile_definitions(nas PRIVATE NAS_HAVE_ONNX=1)
  target_link_libraries(nas PUBLIC PkgConfig::PROTOBUF_C)
  set(NAS_HAVE_ONNX ON)
  message(STATUS "ONNX export: on (protoc-c ${NAS_PROTOC_C}, ${NAS_ONNX_PROTO})")
else()
  set(NAS_HAVE_ONNX OFF)
  message(STATUS "ONNX export: off (needs protoc-c, libprotobuf-c-dev and ${NAS_ONNX_PROTO}: "
                 "apt-get install protobuf-c-compiler libprotobuf-c-dev libonnx-dev)")
endif()
