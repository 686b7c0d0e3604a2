# cmake/mpi.cmake - the Open MPI transport of the worker pool (issue 4):
# when NAS_MPI is on and Open MPI's C library is found (pkg-config ompi-c,
# Debian libopenmpi-dev), search/pool_mpi.c is compiled with NAS_HAVE_MPI
# and libnas links libmpi; `mpirun -n K nas run space.conf` then runs the
# controller on rank 0 and workers on ranks 1..K-1. Without it nas builds
# as before and ignores mpirun's environment (every rank would run the
# whole search: do not mpirun a build without MPI).
if(NAS_MPI)
  pkg_check_modules(OMPI IMPORTED_TARGET ompi-c)
  if(OMPI_FOUND)
    target_compile_definitions(nas PRIVATE NAS_HAVE_MPI=1)
    target_link_libraries(nas PUBLIC PkgConfig::OMPI)
    set(NAS_HAVE_MPI ON)
    message(STATUS "Open MPI transport: on (ompi-c ${OMPI_VERSION})")
  else()
    message(STATUS "Open MPI transport: off (pkg-config ompi-c not found; Debian: libopenmpi-dev)")
  endif()
else()
  message(STATUS "Open MPI transport: off (NAS_MPI=OFF)")
endif()
