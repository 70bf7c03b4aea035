# The MPI launcher, in one place.
#
# Note "MPI launcher"
# Every multi-rank run of the project (the tests, ./gradwire.sh demo and bench, the low-bandwidth
# harness) launches through one command generated here, so that the same suite runs under Open
# MPI and under MPICH and its derivatives. After find_package(MPI), this module reads from mpi.h
# which MPI the library is, makes sure the launcher belongs to that same MPI (FindMPI takes the
# first `mpiexec` it finds, which on a machine with both is the system's default, not necessarily
# the library's), and writes:
#   bin/gw_mpiexec   the launcher with the flags and environment that MPI needs for gradwire's
#                    runs (more ranks than cores, no binding, root): gw_mpiexec -n 4 prog args
#   bin/gw_mpi.json  the same facts for programs that build their own command lines (the
#                    low-bandwidth harness, which adds hostfiles and launch agents)
# It sets GRADWIRE_MPI_FLAVOR (openmpi | mpich), GRADWIRE_MPIEXEC (bin/gw_mpiexec) and
# GRADWIRE_MPI_TEST_ENV (what the test suite adds to every test's environment). How ranks wait for
# collectives is gradwire's own setting, GRADWIRE_MPI_WAIT (Note [Waiting for MPI]).
include(CheckSymbolExists)

# The library's MPI, from the macros its mpi.h defines.
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
set(CMAKE_REQUIRED_QUIET ON)
check_symbol_exists(OPEN_MPI mpi.h GRADWIRE_MPI_IS_OPEN_MPI)
check_symbol_exists(MPICH mpi.h GRADWIRE_MPI_IS_MPICH)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_QUIET)
if(GRADWIRE_MPI_IS_OPEN_MPI)
  set(GRADWIRE_MPI_FLAVOR openmpi)
elseif(GRADWIRE_MPI_IS_MPICH)
  set(GRADWIRE_MPI_FLAVOR mpich)  # MPICH, and Intel MPI, MVAPICH and Cray MPICH, which define it
else()
  message(FATAL_ERROR "gradwire: the MPI in ${MPI_C_INCLUDE_DIRS} is neither Open MPI nor "
    "MPICH (its mpi.h defines neither OPEN_MPI nor MPICH). gradwire builds against Open MPI or "
    "an MPICH derivative; choose one with -DMPI_C_COMPILER=... -DMPI_CXX_COMPILER=...")
endif()

# gw_launcher_flavor(<exe> <out>): openmpi, mpich or unknown, from `<exe> --version`.
function(gw_launcher_flavor exe out)
  execute_process(COMMAND ${exe} --version OUTPUT_VARIABLE text ERROR_VARIABLE text
    RESULT_VARIABLE rc TIMEOUT 30)
  if(text MATCHES "Open MPI|OpenRTE")
    set(${out} openmpi PARENT_SCOPE)
  elseif(text MATCHES "HYDRA|MPICH|Intel\\(R\\) MPI")
    set(${out} mpich PARENT_SCOPE)
  else()
    set(${out} unknown PARENT_SCOPE)
  endif()
endfunction()

# The launcher must belong to the library's MPI: FindMPI looks for `mpiexec` by name, which on a
# machine with both MPIs is whichever one the system prefers, not necessarily the library's.
gw_launcher_flavor(${MPIEXEC_EXECUTABLE} gw_launcher)
if(NOT gw_launcher STREQUAL GRADWIRE_MPI_FLAVOR)
  get_filename_component(gw_mpi_bin ${MPI_C_COMPILER} DIRECTORY)
  unset(gw_matching CACHE)
  find_program(gw_matching NAMES mpiexec.${GRADWIRE_MPI_FLAVOR} mpirun.${GRADWIRE_MPI_FLAVOR}
    mpiexec.hydra mpiexec HINTS ${gw_mpi_bin} NO_CACHE)
  set(gw_found unknown)
  if(gw_matching)
    gw_launcher_flavor(${gw_matching} gw_found)
  endif()
  if(NOT gw_found STREQUAL GRADWIRE_MPI_FLAVOR)
    message(FATAL_ERROR "gradwire: the MPI library is ${GRADWIRE_MPI_FLAVOR} but "
      "MPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE} launches ${gw_launcher}, and no "
      "${GRADWIRE_MPI_FLAVOR} launcher was found beside ${MPI_C_COMPILER}. Pass the library's own "
      "launcher: -DMPIEXEC_EXECUTABLE=/path/to/mpiexec")
  endif()
  message(STATUS "gradwire: MPIEXEC_EXECUTABLE ${MPIEXEC_EXECUTABLE} launches ${gw_launcher}, "
    "the library is ${GRADWIRE_MPI_FLAVOR}: using ${gw_matching}")
  set(MPIEXEC_EXECUTABLE ${gw_matching} CACHE FILEPATH "Executable for running MPI programs." FORCE)
endif()

# What every launch needs, by MPI (MPIEXEC_PREFLAGS, CMake's own variable, is added after).
#   Open MPI: more ranks than cores only with --oversubscribe, and no binding (the ranks of a test
#     and their engine threads share the cores); as root, the two variables it asks for.
if(GRADWIRE_MPI_FLAVOR STREQUAL openmpi)
  set(GRADWIRE_MPIEXEC_FLAGS --oversubscribe --bind-to none)
  string(CONCAT GW_MPIEXEC_ENV
    "if [ \"$(id -u)\" = 0 ]; then\n"
    "  export OMPI_ALLOW_RUN_AS_ROOT=\"\${OMPI_ALLOW_RUN_AS_ROOT:-1}\"\n"
    "  export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=\"\${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}\"\n"
    "fi")
  # Containers often forbid the cross-memory attach of Open MPI's shared-memory transport.
  set(GRADWIRE_MPI_TEST_ENV OMPI_MCA_btl_vader_single_copy_mechanism=none)
else()
  # Hydra binds nothing and starts any number of ranks by default. Waiting ranks spin in MPICH's
  # ch4 device, which has no setting to make them yield: gradwire's communicator yields instead
  # where ranks outnumber cores (GRADWIRE_MPI_WAIT=auto, Note [Waiting for MPI]).
  set(GRADWIRE_MPIEXEC_FLAGS "")
  set(GW_MPIEXEC_ENV "")
  set(GRADWIRE_MPI_TEST_ENV "")
endif()
list(APPEND GRADWIRE_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})

set(GRADWIRE_MPIEXEC ${PROJECT_BINARY_DIR}/bin/gw_mpiexec)
list(JOIN GRADWIRE_MPIEXEC_FLAGS " " GW_MPIEXEC_FLAGS_SH)
configure_file(${CMAKE_CURRENT_LIST_DIR}/gw_mpiexec.in ${GRADWIRE_MPIEXEC}
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
  WORLD_EXECUTE @ONLY)
set(gw_flags_json "")
foreach(flag ${GRADWIRE_MPIEXEC_FLAGS})
  list(APPEND gw_flags_json "\"${flag}\"")
endforeach()
list(JOIN gw_flags_json ", " GW_MPIEXEC_FLAGS_JSON)
configure_file(${CMAKE_CURRENT_LIST_DIR}/gw_mpi.json.in ${PROJECT_BINARY_DIR}/bin/gw_mpi.json @ONLY)
message(STATUS "gradwire: MPI ${GRADWIRE_MPI_FLAVOR}, launcher ${MPIEXEC_EXECUTABLE} "
  "${GW_MPIEXEC_FLAGS_SH} (bin/gw_mpiexec)")
