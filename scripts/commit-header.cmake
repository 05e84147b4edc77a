# Writes OUT (a header defining KV_COMMIT: the source tree's commit, with
# "-dirty" when tracked files differ from it, or "" outside a git checkout),
# rewriting it only when that changes, so that main.c rebuilds only then.
# Usage: cmake -DSRC=<source dir> -DOUT=<header> -P commit-header.cmake
set(commit "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SRC}/.git")
  execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    set(commit "")
  else()
    # Refresh the index's stat data first: a touched but unchanged file is not a change.
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC}" update-index -q --refresh OUTPUT_QUIET ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC}" diff-index --quiet HEAD --
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
set(text "#define KV_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
