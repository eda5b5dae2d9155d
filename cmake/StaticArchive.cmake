# The installed static library, libtenlane.a, defines no name but tenlane's public tl_ calls.
#
# tenlane's objects, the provider archives (LAPACKE, reference LAPACK, BLIS) and tenlane's
# own BLAS/LAPACK replacements (src/linalg: dgemm_, dgemv_, dger_, xerbla_, ...,
# which LAPACK's calls must reach) are partially linked into one object (ld -r), so LAPACK's
# calls bind inside it; then every global symbol but the public tl_ calls is made local
# (objcopy: hidden symbols and everything not named tl_*). A consumer that links its own
# BLAS or LAPACK statically keeps its own: nothing in the archive can take its place, and
# tenlane's LAPACK keeps calling tenlane's provider. What is left undefined is the C and
# Fortran runtime (Libs.private: -lgfortran -lm ...).
#
# In-tree targets (tests, benches, examples) link `tenlane_static`, the plain archive of the
# same objects, because the tests call internal tl__ helpers; it is not installed.
find_program(TL_LD NAMES ${CMAKE_LINKER} ld REQUIRED)
find_program(TL_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy REQUIRED)
set(TL_ARCHIVE_DIR ${PROJECT_BINARY_DIR}/archive)
set(TL_ARCHIVE ${TL_ARCHIVE_DIR}/libtenlane.a)
set(TL_ARCHIVE_INPUTS ${TL_PROVIDER_ARCHIVES})
add_custom_command(OUTPUT ${TL_ARCHIVE}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TL_ARCHIVE_DIR}
  COMMAND ${CMAKE_COMMAND} -E remove -f ${TL_ARCHIVE} ${TL_ARCHIVE_DIR}/tenlane.o
  COMMAND ${TL_LD} -r -o ${TL_ARCHIVE_DIR}/tenlane.o "$<TARGET_OBJECTS:tenlane_objects>"
    --start-group ${TL_ARCHIVE_INPUTS} --end-group
  COMMAND ${TL_OBJCOPY} --localize-hidden --wildcard --keep-global-symbol=tl_[a-z]*
    ${TL_ARCHIVE_DIR}/tenlane.o
  COMMAND ${CMAKE_AR} rcs ${TL_ARCHIVE} ${TL_ARCHIVE_DIR}/tenlane.o
  DEPENDS tenlane_objects ${TL_ARCHIVE_INPUTS}
  COMMAND_EXPAND_LISTS VERBATIM
  COMMENT "libtenlane.a: partial link, every name but tl_* made local")
add_custom_target(tenlane_archive ALL DEPENDS ${TL_ARCHIVE})
