# Runs check_layering.cmake on the fixture tree and passes only if it fails and names every planted violation.
# usage: cmake -DCHECKER=<check_layering.cmake> -DFIXTURE=<tree> -P expect_violation.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${FIXTURE} -P ${CHECKER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(rc EQUAL 0)
    message(FATAL_ERROR "layering check passed a tree with a Qt include in core/: it cannot catch violations")
endif()
foreach(expected "core/qt_in_core.h:3: Qt include outside app/" "kernels/gl_in_kernels.h:3: ImGui/GL include in kernels/"
                 "ui/model/imgui_in_model.h:3: ImGui/GL include in ui/model/"
                 "ui/model/panel_in_model.h:3: ui/model/ includes the panels")
    string(FIND "${all}" "${expected}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "layering check did not report: ${expected}")
    endif()
endforeach()
message(STATUS "layering check caught every planted violation")
