# convjit_shapes: the benchmark shapes of bench/shapes.json and their reader, shared by the tools
# and bench/. The file is built into the library, so the programs run without the source tree.
find_package(nlohmann_json 3 REQUIRED)

set(CONVJIT_SHAPES_FILE ${PROJECT_SOURCE_DIR}/bench/shapes.json)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CONVJIT_SHAPES_FILE})
file(READ ${CONVJIT_SHAPES_FILE} CONVJIT_SHAPES_JSON)
configure_file(${PROJECT_SOURCE_DIR}/bench/builtin_shapes.hpp.in
  ${PROJECT_BINARY_DIR}/generated/builtin_shapes.hpp @ONLY)

add_library(convjit_shapes STATIC ${PROJECT_SOURCE_DIR}/bench/shapes.cpp)
# Only convjit's headers: each program links the library it measures (shared or static).
target_include_directories(convjit_shapes PUBLIC ${PROJECT_SOURCE_DIR}/bench ${PROJECT_SOURCE_DIR}/include
  PRIVATE ${PROJECT_BINARY_DIR}/generated)
target_link_libraries(convjit_shapes PRIVATE nlohmann_json::nlohmann_json)
