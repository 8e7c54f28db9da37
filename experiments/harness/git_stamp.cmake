# Writes OUT (a header defining DYNSPARSE_GIT_SHA) from `git` in SRC at every
# build, touching the file only when the text changes so nothing recompiles
# needlessly. "unknown" outside a git checkout; "-dirty" when tracked files
# differ from HEAD.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE sha RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rc EQUAL 0 OR sha STREQUAL "")
  set(sha "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes RESULT_VARIABLE rc2 ERROR_QUIET)
  if(NOT rc2 EQUAL 0 OR NOT changes STREQUAL "")
    set(sha "${sha}-dirty")
  endif()
endif()
file(WRITE "${OUT}.tmp" "#define DYNSPARSE_GIT_SHA \"${sha}\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
