# check_layers.cmake - the house rules the build enforces: which folder may
# include which. Run by the build (cmake -P, a custom command in CMakeLists.txt)
# whenever a library source or header changes; a violation fails the build with
# the file, the line and the rule it breaks.
#
#   cmake -DROOT=<source dir> -DSTAMP=<file> -P cmake/check_layers.cmake
#
# A folder is one library or one stage (docs/architecture.md, "The house"):
#   ir        the graph IR                       may include: ir
#   weights   safetensors reader and writer      may include: ir
#   interp    the float64 reference interpreter  may include: ir weights
#   frontend  .graph parser, ONNX importer       may include: ir weights passes
#   passes    graph passes and the pipeline      may include: ir
#   codegen   Kernel IR, emitters, printers      may include: ir
#   runtime   libgraphc_rt (bundles, executors)  may include: ir
#   driver    the JIT API and backends           may include: everything above
#   llm       Hugging Face checkpoints as models may include: ir weights llm (and the public API)
# Besides folders, the compilers: LLVM-C headers only in codegen/ and driver/,
# NVRTC and nvJitLink only in codegen/. runtime/ includes none of them.

cmake_minimum_required(VERSION 3.25)

set(allow_ir "ir")
set(allow_weights "ir;weights")
set(allow_interp "ir;weights;interp")
set(allow_frontend "ir;weights;passes;frontend")
set(allow_passes "ir;passes")
set(allow_codegen "ir;codegen")
set(allow_runtime "ir;runtime")
set(allow_driver "ir;weights;interp;frontend;passes;codegen;runtime;driver")
set(allow_llm "ir;weights;llm")
set(compilers_codegen "llvm-c;nvrtc.h;nvJitLink.h")
set(compilers_driver "llvm-c")
set(all_compilers "llvm-c;nvrtc.h;nvJitLink.h")

set(folders ir weights interp frontend passes codegen runtime driver llm)
set(errors "")
foreach(folder IN LISTS folders)
  file(GLOB files "${ROOT}/${folder}/*.c" "${ROOT}/${folder}/*.h")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    file(RELATIVE_PATH rel "${ROOT}" "${f}")
    foreach(line IN LISTS lines)
      # A project header: "folder/name.h" (root-relative, the house style).
      if(line MATCHES "#[ \t]*include[ \t]*\"([^\"/]+)/[^\"]+\"")
        set(dep "${CMAKE_MATCH_1}")
        if(dep IN_LIST folders AND NOT dep IN_LIST allow_${folder})
          string(APPEND errors "  ${rel}: ${line}\n    (${folder}/ may include only: ${allow_${folder}})\n")
        endif()
      elseif(line MATCHES "#[ \t]*include[ \t]*\"[^\"/]+\"")
        string(APPEND errors "  ${rel}: ${line}\n    (write project includes root-relative: \"folder/name.h\")\n")
      endif()
      # A compiler's header.
      if(line MATCHES "#[ \t]*include[ \t]*<([^/>]+)")
        set(sys "${CMAKE_MATCH_1}")
        if(sys IN_LIST all_compilers AND NOT sys IN_LIST compilers_${folder})
          string(APPEND errors "  ${rel}: ${line}\n    (${folder}/ may not include a compiler's header)\n")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "graphc layering check failed (cmake/check_layers.cmake):\n${errors}")
endif()
file(WRITE "${STAMP}" "ok\n")
