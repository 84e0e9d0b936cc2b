# ddprun_embed_files(OUT FILES ... HEADER h NAMESPACE ns FUNCTION f COMMENT text): a
# generated source, its path in OUT, defining ns::f(name) (declared in h) over FILES
# built into the binary by cmake/embed_files.cmake.
function(ddprun_embed_files out)
  cmake_parse_arguments(E "" "HEADER;NAMESPACE;FUNCTION;COMMENT" "FILES" ${ARGN})
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/${E_FUNCTION}_embedded.cc)
  add_custom_command(OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} "-DFILES=${E_FILES}" -DOUTPUT=${generated} -DHEADER=${E_HEADER}
            -DNAMESPACE=${E_NAMESPACE} -DFUNCTION=${E_FUNCTION}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    VERBATIM
    DEPENDS ${E_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "${E_COMMENT}")
  set(${out} ${generated} PARENT_SCOPE)
endfunction()
