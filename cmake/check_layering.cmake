# cmake/check_layering.cmake - the layering rule (README "Layout"), checked
# on every build and by the ctest test test_layering (label unit):
#
#   base <- space <- trainer <- evaluator <- store <- search <- report, export <- cli
#
# A module includes only its own headers and those of lower layers; report
# and export share a layer and include neither each other. The script scans
# the #include "..." lines of every file under the module folders and
# include/nas/, maps each included header to its module with the table
# below, and fails listing every include that reaches upwards or sideways.
#
#   cmake -DNAS_SOURCE_DIR=/path/to/nas -P cmake/check_layering.cmake
#
# A new public header must be added to NAS_PUBLIC_HEADERS (an unknown
# nas/... header is an error); a new module folder to NAS_LAYERS.

# module:layer, bottom up.
set(NAS_LAYERS base:0 space:1 trainer:2 evaluator:3 store:4 search:5 report:6 export:6 cli:7)

# public header (include/nas/...): module.
set(NAS_PUBLIC_HEADERS
  nas/status.h:base nas/rng.h:base nas/parse.h:base nas/array.h:base nas/suggest.h:base
  nas/space.h:space nas/ops.def:space nas/chain.h:space nas/layers.h:space
  nas/backend.h:trainer nas/trainer.h:trainer nas/data.h:trainer
  nas/supernet.h:trainer
  nas/evaluator.h:evaluator nas/inspect.h:evaluator nas/zerocost.h:evaluator
  nas/store.h:store
  nas/search.h:search nas/fidelity.h:search
  nas/report.h:report
  nas/export.h:export)

cmake_minimum_required(VERSION 3.20)

# Quoted includes that are no module's: generated code (cmake/onnx.cmake).
set(NAS_EXTERNAL_HEADERS onnx.pb-c.h)

if(NOT NAS_SOURCE_DIR)
  message(FATAL_ERROR "check_layering: pass -DNAS_SOURCE_DIR=<source tree>")
endif()

foreach(entry ${NAS_LAYERS})
  string(REPLACE ":" ";" kv "${entry}")
  list(GET kv 0 m)
  list(GET kv 1 l)
  set(layer_${m} ${l})
  list(APPEND modules ${m})
endforeach()
foreach(entry ${NAS_PUBLIC_HEADERS})
  string(REPLACE ":" ";" kv "${entry}")
  list(GET kv 0 h)
  list(GET kv 1 m)
  set("owner_${h}" ${m})
endforeach()

# The module a header named in `#include "inc"` from `file` (module `from`) belongs to;
# "" for an external header, "?" for an unknown one.
function(header_module inc file from out)
  if(inc MATCHES "^nas/")
    if(DEFINED "owner_${inc}")
      set(${out} "${owner_${inc}}" PARENT_SCOPE)
    else()
      set(${out} "?" PARENT_SCOPE)
    endif()
    return()
  endif()
  string(REGEX MATCH "^[^/]+" first "${inc}")
  if(inc MATCHES "/" AND first IN_LIST modules)
    set(${out} "${first}" PARENT_SCOPE)
    return()
  endif()
  get_filename_component(dir "${file}" DIRECTORY)
  if(EXISTS "${dir}/${inc}")
    set(${out} "${from}" PARENT_SCOPE) # next to the includer: its own module
  elseif(inc IN_LIST NAS_EXTERNAL_HEADERS)
    set(${out} "" PARENT_SCOPE)
  else()
    set(${out} "?" PARENT_SCOPE)
  endif()
endfunction()

set(files_checked 0)
set(violations "")
set(scan)
foreach(m ${modules})
  file(GLOB_RECURSE mf LIST_DIRECTORIES false
       "${NAS_SOURCE_DIR}/${m}/*.c" "${NAS_SOURCE_DIR}/${m}/*.h"
       "${NAS_SOURCE_DIR}/${m}/*.cu" "${NAS_SOURCE_DIR}/${m}/*.cuh")
  foreach(f ${mf})
    list(APPEND scan "${m}|${f}")
  endforeach()
endforeach()
foreach(entry ${NAS_PUBLIC_HEADERS})
  string(REPLACE ":" ";" kv "${entry}")
  list(GET kv 0 h)
  list(GET kv 1 m)
  if(EXISTS "${NAS_SOURCE_DIR}/include/${h}")
    list(APPEND scan "${m}|${NAS_SOURCE_DIR}/include/${h}")
  endif()
endforeach()
file(GLOB public LIST_DIRECTORIES false "${NAS_SOURCE_DIR}/include/nas/*")
foreach(f ${public})
  file(RELATIVE_PATH rel "${NAS_SOURCE_DIR}/include" "${f}")
  if(NOT DEFINED "owner_${rel}")
    string(APPEND violations "  include/${rel}: a public header missing from NAS_PUBLIC_HEADERS "
                             "in cmake/check_layering.cmake\n")
  endif()
endforeach()

foreach(item ${scan})
  string(FIND "${item}" "|" bar)
  string(SUBSTRING "${item}" 0 ${bar} from)
  math(EXPR start "${bar} + 1")
  string(SUBSTRING "${item}" ${start} -1 f)
  file(RELATIVE_PATH rel "${NAS_SOURCE_DIR}" "${f}")
  math(EXPR files_checked "${files_checked} + 1")
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX MATCH "\"([^\"]+)\"" _ "${line}")
    set(inc "${CMAKE_MATCH_1}")
    header_module("${inc}" "${f}" "${from}" to)
    if(to STREQUAL "")
      continue()
    elseif(to STREQUAL "?")
      string(APPEND violations "  ${rel}: #include \"${inc}\": a header of no known module "
                               "(add it to the tables in cmake/check_layering.cmake)\n")
    elseif(NOT to STREQUAL from)
      if(layer_${to} GREATER_EQUAL layer_${from})
        string(APPEND violations "  ${rel}: #include \"${inc}\": ${from} (layer ${layer_${from}}) "
                                 "may not include ${to} (layer ${layer_${to}})\n")
      endif()
    endif()
  endforeach()
endforeach()

if(files_checked EQUAL 0)
  message(FATAL_ERROR "check_layering: no sources found under ${NAS_SOURCE_DIR}")
endif()
if(violations)
  message(FATAL_ERROR "layering rule broken (base <- space <- trainer <- evaluator <- store <- "
                      "search <- report, export <- cli; README \"Layout\"):\n${violations}")
endif()
message(STATUS "layering: ${files_checked} files, every include at its own or a lower layer")
